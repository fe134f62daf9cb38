package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

// keyedApprovalRun is a run of approvalRun in a keyed store, ended
// awaiting the operator's answer.
func keyedApprovalRun(t *testing.T) (ws, dbPath string, store *trace.SQLite, out Outcome) {
	t.Helper()
	ws = t.TempDir()
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	key, err := trace.LoadKey(filepath.Join(t.TempDir(), "keydir", "trace.key"))
	if err != nil {
		t.Fatal(err)
	}
	dbPath = filepath.Join(t.TempDir(), "trace.db")
	store, err = trace.Open(dbPath, trace.NewRedactor(), trace.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	out, err = approvalRun(t, ws, store, "")
	if err != nil || out.Kind != AwaitingApproval {
		t.Fatalf("the run: %+v %v", out, err)
	}
	return ws, dbPath, store, out
}

// rawExec runs statements on the store's file behind rein's back, as
// whoever can write the file can.
func rawExec(t *testing.T, dbPath string, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(q, err)
	}
}

// TestResumeRefusesUnlinkedDecision: an answer written into the trace
// by other means than rein approve (an INSERT: the triggers stop only
// changes and deletions) is refused, naming why; the asked call is not
// made.
func TestResumeRefusesUnlinkedDecision(t *testing.T) {
	requireSandbox(t)
	ws, dbPath, store, out := keyedApprovalRun(t)
	rawExec(t, dbPath, `INSERT INTO approval_decisions (run_id, request, answer, note, by, at) VALUES (?, ?, 'yes', '', 'operator@host', ?)`,
		out.Run, out.Waiting.Request, time.Now().UTC().Format(time.RFC3339Nano))
	final, err := approvalRun(t, ws, store, out.Run)
	var ue *trace.UnlinkedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "answer to request "+out.Waiting.Request) || !strings.Contains(err.Error(), "is not in its keyed chain") {
		t.Errorf("resumed on an unlinked answer: %+v %v", final, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err == nil {
		t.Error("the asked call was made on an answer rein did not record")
	}
	// A request written the same way is refused too.
	rawExec(t, dbPath, `INSERT INTO approval_requests (run_id, request, kind, call_id, tool, args, shown, at) VALUES (?, 'r0badf00d', 'approval', 'x', 'shell', '{}', '', ?)`,
		out.Run, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := store.ApprovalRequests(context.Background(), out.Run); !errors.As(err, &ue) || !strings.Contains(err.Error(), "request r0badf00d") {
		t.Errorf("an unlinked request: %v", err)
	}
}

// TestResumeRefusesUnlinkedCheckpoint: a checkpoint (and the blob it
// names) written into the trace by other means than rein's is refused
// before anything is done on it: the budget it sets is not taken up, and
// the file it keeps as protected is not written.
func TestResumeRefusesUnlinkedCheckpoint(t *testing.T) {
	requireSandbox(t)
	ws, dbPath, store, out := keyedApprovalRun(t)
	ctx := context.Background()
	cp, err := store.LastCheckpoint(ctx, out.Run)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(cp.State), &m); err != nil {
		t.Fatal(err)
	}
	payload := "written from a checkpoint rein did not write\n"
	addr := address(payload)
	m["baseline"] = map[string]any{"planted.txt": map[string]any{"hash": "x", "blob": addr}}
	m["waiting"], m["pending"] = nil, nil
	m["contract"].(map[string]any)["budget"].(map[string]any)["steps"] = 1000000
	state, _ := json.Marshal(m)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	rawExec(t, dbPath, `INSERT INTO blobs (run_id, hash, data, at) VALUES (?, ?, ?, ?)`, out.Run, addr, payload, now)
	rawExec(t, dbPath, `INSERT INTO checkpoints (run_id, seq, generation, format, status, waiting, state, at) VALUES (?, ?, ?, 1, 'running', '', ?, ?)`,
		out.Run, cp.Seq+1, cp.Generation, string(state), now)
	final, err := approvalRun(t, ws, store, out.Run)
	var ue *trace.UnlinkedError
	want := "checkpoint " + itoa(cp.Seq+1) + " of run " + out.Run
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
		t.Errorf("resumed on an unlinked checkpoint: %+v %v, want an error naming %q", final, err, want)
	}
	for _, f := range []string{"approved.txt", "planted.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s exists after the refused resumption", f)
		}
	}
	if _, err := store.Blobs(ctx, out.Run); !errors.As(err, &ue) || !strings.Contains(err.Error(), "blob "+addr) {
		t.Errorf("an unlinked blob: %v", err)
	}
	if _, err := LoadState(ctx, store, out.Run); !errors.As(err, &ue) {
		t.Errorf("the state of an unlinked checkpoint read: %v", err)
	}
	// No checkpoint rein writes after takes the budget up.
	if cp2, err := store.LastCheckpoint(ctx, out.Run); err == nil && strings.Contains(cp2.State, `"steps":1000000`) {
		t.Error("a checkpoint in the chain carries the budget of the unlinked one")
	}
}

// TestRestoreProtectedOnlyProtected: the put-back of protected files
// writes and removes only what a protect glob matches inside the
// workspace; an entry of the baseline outside them (a checkpoint rein
// did not write) is refused and never written.
func TestRestoreProtectedOnlyProtected(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "tests", "a_test.go"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("the model's"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := map[string]protectedFile{
		"tests/a_test.go": {hash: "h1", data: []byte("original")},
		"planted.txt":     {hash: "h2", data: []byte("planted")},
		"../outside.txt":  {hash: "h3", data: []byte("outside")},
	}
	now := map[string]protectedFile{"tests/a_test.go": {hash: "h0"}, "keep.txt": {hash: "h4"}}
	err := restoreProtected(ws, []string{"tests/**"}, base, now)
	if err == nil || !strings.Contains(err.Error(), "planted.txt is matched by no protect glob") || !strings.Contains(err.Error(), "../outside.txt is not a path inside the workspace") {
		t.Errorf("restore: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "tests", "a_test.go")); string(data) != "original" {
		t.Errorf("the protected file is %q, want it put back", data)
	}
	for _, p := range []string{filepath.Join(ws, "planted.txt"), filepath.Join(filepath.Dir(ws), "outside.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "keep.txt")); err != nil {
		t.Errorf("keep.txt, which no glob protects, was removed: %v", err)
	}
	// A protected file under a directory replaced by a link is not written
	// through it.
	os.RemoveAll(filepath.Join(ws, "tests"))
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(ws, "tests")); err != nil {
		t.Fatal(err)
	}
	if err := restoreProtected(ws, []string{"tests/**"}, map[string]protectedFile{"tests/a_test.go": {hash: "h1", data: []byte("original")}}, map[string]protectedFile{}); err == nil {
		t.Error("restored through a link")
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "a_test.go")); err == nil {
		t.Error("written through a link")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
