package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// keyedApprovalRun is a run of approvalRun in a keyed store, ended
// awaiting the operator's answer.
func keyedApprovalRun(t *testing.T) (ws, dbPath string, store *sqlite.Store, out Outcome) {
	t.Helper()
	ws = t.TempDir()
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	key, err := trace.LoadKey(filepath.Join(t.TempDir(), "keydir", "trace.key"))
	if err != nil {
		t.Fatal(err)
	}
	dbPath = filepath.Join(t.TempDir(), "trace.db")
	store, err = sqlite.Open(dbPath, trace.NewRedactor(), sqlite.WithKey(key))
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

// TestFencedBeforeEffect: a driver paused between a call's journal entry
// and the call (a stopped process, a suspended machine) while its lease
// lapses and another driver, on another host, takes the run over and
// ends it, does not make the call when it wakes: it is fenced out before
// the effect, not only at its next commit.
func TestFencedBeforeEffect(t *testing.T) {
	requireSandbox(t)
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(filepath.Join(root, "home"), 0o755)
	t.Setenv("REIN_CACHE_DIR", filepath.Join(root, "cache"))
	dbPath := filepath.Join(root, "t.db")
	storeA, err := sqlite.Open(dbPath, trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer storeA.Close()
	mk := func(store *sqlite.Store, turns [][]ToolCall) Options {
		mode := policy.ModeAuto
		p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), NoFiles: true, Mode: &mode})
		if err != nil {
			t.Fatal(err)
		}
		return Options{Provider: &scriptModel{turns: turns}, Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
	}
	turnsA := [][]ToolCall{{call("", "write_file", `{"path":"notes.txt","content":"from the driver fenced out\n"}`)}, {}}
	oA := mk(storeA, turnsA)
	var bOut Outcome
	var bErr error
	oA.Boundary = func(name string) {
		if name != "tool-started call_1_0" {
			return
		}
		runs, _ := storeA.DurableRuns(context.Background())
		// The lease lapses while A sleeps; B, on another host, takes the
		// run and ends it.
		rawExec(t, dbPath, `UPDATE leases SET host = 'elsewhere', expires_at = ? WHERE run_id = ?`, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano), runs[0].RunID)
		storeB, err := sqlite.Open(dbPath, trace.NewRedactor())
		if err != nil {
			t.Fatal(err)
		}
		defer storeB.Close()
		turnsB := [][]ToolCall{turnsA[0], {call("", "write_file", `{"path":"notes.txt","content":"from the driver that owns the run\n"}`)}, {}}
		bOut, bErr = Resume(context.Background(), runs[0].RunID, mk(storeB, turnsB))
	}
	out, err := Run(context.Background(), Contract{Goal: "x", Workspace: ws}, oA)
	if bErr != nil || bOut.Kind != Finished {
		t.Fatalf("the driver that took the run over: %+v %v", bOut, bErr)
	}
	var fenced *trace.FencedError
	if !errors.As(err, &fenced) {
		t.Errorf("the driver fenced out: %+v %v, want a FencedError", out, err)
	}
	data, _ := os.ReadFile(filepath.Join(ws, "notes.txt"))
	if string(data) != "from the driver that owns the run\n" {
		t.Errorf("notes.txt is %q: the driver fenced out made its call", data)
	}
}

// TestLeaseOfLiveProcess: on this host, a live driver holds its run's
// lease however long ago it expired (it may only have been stopped); a
// process that took a dead driver's pid does not.
func TestLeaseOfLiveProcess(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "t.db")
	store, err := sqlite.Open(dbPath, trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := store.AcquireLease(ctx, "run1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.PIDStart == "" {
		// Linux's /proc always says (field 22 of /proc/PID/stat).
		t.Fatal("this system's /proc does not say when a process started")
	}
	rawExec(t, dbPath, `UPDATE leases SET expires_at = ? WHERE run_id = 'run1'`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano))
	var held *trace.LeaseHeldError
	if _, err := store.AcquireLease(ctx, "run1", time.Minute); !errors.As(err, &held) || !strings.Contains(err.Error(), "that process is alive") {
		t.Errorf("the lease of a live driver, expired, taken: %v", err)
	}
	// The same pid, started at another time: another process.
	rawExec(t, dbPath, `UPDATE leases SET pid_start = 'another boot:1' WHERE run_id = 'run1'`)
	l2, err := store.AcquireLease(ctx, "run1", time.Minute)
	if err != nil || l2.Generation != l.Generation+1 {
		t.Errorf("the lease of a pid taken by another process: %+v %v", l2, err)
	}
}

type rejectAll struct{}

func (rejectAll) Approve(context.Context, *policy.Verdict) (policy.Approval, error) {
	return policy.Approval{Answer: policy.Reject, Reason: "no"}, nil
}

// TestRepeatedRefusalsAcrossResumes: the refusals counted towards the
// repeated-refusal stop are kept with the run: a model that has asks
// deferred between the same refusal (each deferral ends the process) is
// stopped at the limit as it is when the asks are answered at once.
func TestRepeatedRefusalsAcrossResumes(t *testing.T) {
	requireSandbox(t)
	deny := call("", "shell", `{"line":"touch forbidden.txt"}`)
	ask := func(n int) ToolCall { return call("", "shell", fmt.Sprintf(`{"line":"touch ask%d.txt"}`, n)) }
	turns := [][]ToolCall{{deny}, {ask(1)}, {deny}, {ask(2)}, {deny}, {ask(3)}, {deny}, {ask(4)}, {deny}, {}}
	drive := func(ws string, store *sqlite.Store, approver policy.Approver, resume string) (Outcome, error) {
		mode := policy.ModeAuto
		p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode, Rules: []policy.Rule{
			{Act: policy.ActExec, Effect: policy.Deny, Pattern: "touch forbidden.txt"},
			{Act: policy.ActExec, Effect: policy.Ask, Pattern: "touch ask*"}}})
		if err != nil {
			t.Fatal(err)
		}
		p.RepeatedRefusals = 3
		o := Options{Provider: &scriptModel{turns: turns}, Tool: tool.Config{Policy: p, Store: store, Approver: approver, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
		if resume != "" {
			return Resume(context.Background(), resume, o)
		}
		return Run(context.Background(), Contract{Goal: "x", Workspace: ws, Budget: Budget{Steps: 40}}, o)
	}
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	open := func() *sqlite.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), trace.NewRedactor())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	refusals := func(store *sqlite.Store, run string) int {
		steps, _ := store.Steps(context.Background(), run)
		n := 0
		for _, s := range steps {
			if strings.Contains(s.Args, "forbidden") && s.Status == "denied" {
				n++
			}
		}
		return n
	}
	// Answered at once.
	store := open()
	at, err := drive(t.TempDir(), store, rejectAll{}, "")
	if err != nil || at.Kind != RefusedRepeatedly || refusals(store, at.Run) != 3 {
		t.Fatalf("answered at once: %s (%s) %v, %d refusals", at.Kind, at.Reason, err, refusals(store, at.Run))
	}
	// Deferred, answered no, resumed.
	ws, store := t.TempDir(), open()
	out, err := drive(ws, store, Defer{}, "")
	for i := 0; i < 6 && err == nil && out.Kind == AwaitingApproval; i++ {
		if err := store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "no", By: "op"}); err != nil {
			t.Fatal(err)
		}
		out, err = drive(ws, store, Defer{}, out.Run)
	}
	if err != nil || out.Kind != RefusedRepeatedly || refusals(store, out.Run) != 3 {
		t.Errorf("deferred and resumed: %s (%s) %v, %d refusals, want %s at 3", out.Kind, out.Reason, err, refusals(store, out.Run), RefusedRepeatedly)
	}
}

// TestCarriedSandboxDown: why the sandbox is down is given back to the
// router of a resumed run: its writes stay refused.
func TestCarriedSandboxDown(t *testing.T) {
	ws := t.TempDir()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.NewRouter(reg, tool.Config{Policy: p, Results: &tool.Results{Dir: t.TempDir()}, Carried: &tool.Carried{SandboxDown: "the sandbox failed its check"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close("done")
	env := r.Call(context.Background(), "write_file", json.RawMessage(`{"path":"a.txt","content":"a"}`))
	if env.Status != tool.Denied || !strings.Contains(env.Reason, "the sandbox is down in this run") {
		t.Errorf("a write with the sandbox down: %s %s", env.Status, env.Reason)
	}
	if c := r.Carried(); c.SandboxDown != "the sandbox failed its check" {
		t.Errorf("carried on: %+v", c)
	}
}

// idModel is scriptModel with $ID in a call's arguments replaced by the
// last result id the transcript shows.
type idModel struct{ scriptModel }

var resultIDRe = regexp.MustCompile(`"id": "(r-[0-9a-f]+)"`)

func (m *idModel) Stream(ctx context.Context, req Request) (*Response, error) {
	resp, err := m.scriptModel.Stream(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	id := ""
	for _, msg := range req.Messages {
		if s := resultIDRe.FindStringSubmatch(msg.Text); s != nil {
			id = s[1]
		}
	}
	calls := slices.Clone(resp.ToolCalls)
	for i := range calls {
		calls[i].Args = strings.ReplaceAll(calls[i].Args, "$ID", id)
	}
	resp.ToolCalls = calls
	return resp, nil
}

// TestResultsAcrossResumes: a result kept before a deferral ended the
// process is read with read_result after the resumption; the results go
// when the run has its final outcome.
func TestResultsAcrossResumes(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("REIN_CACHE_DIR", cache)
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	turns := [][]ToolCall{{call("", "shell", `{"line":"seq 1 30000"}`)}, {call("", "shell", `{"line":"touch approved.txt"}`)}, {call("", "read_result", `{"id":"$ID","offset":0}`)}, {}}
	drive := func(resume string) (Outcome, error) {
		mode := policy.ModeAuto
		p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode, Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Ask, Pattern: "touch approved.txt"}}})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Provider: &idModel{scriptModel{turns: turns}}, Tool: tool.Config{Policy: p, Store: store, Approver: Defer{}, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
		if resume != "" {
			return Resume(context.Background(), resume, o)
		}
		return Run(context.Background(), Contract{Goal: "x", Workspace: ws}, o)
	}
	out, err := drive("")
	if err != nil || out.Kind != AwaitingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	if err := store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "yes", By: "op"}); err != nil {
		t.Fatal(err)
	}
	if out, err = drive(out.Run); err != nil || out.Kind != Finished {
		t.Fatalf("resumed: %+v %v", out, err)
	}
	steps, _ := store.Steps(context.Background(), out.Run)
	read := false
	for _, s := range steps {
		if s.Tool == "read_result" {
			read = true
			if s.Status != "ok" || !strings.Contains(s.Observation, "\n1\n2\n3\n") {
				t.Errorf("read_result after the resumption: %s %.300q", s.Status, s.Observation)
			}
		}
	}
	if !read {
		t.Fatal("no read_result was made")
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "*", "results", out.Run+"*"))
	dirs2, _ := filepath.Glob(filepath.Join(cache, "results", out.Run+"*"))
	if len(dirs)+len(dirs2) != 0 {
		t.Errorf("the results outlive the run's end: %v %v", dirs, dirs2)
	}
}
