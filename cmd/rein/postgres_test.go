//go:build linux

package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/trace"
)

// TestTracePostgres: REIN_TRACE naming a PostgreSQL server keeps every
// command's trace there: a deferred run, rein runs, rein approve and rein
// run resume work against it; its chain is keyed with the key the user's
// policy names ([trace] key_file), rein trace verify checks it; a writer
// with another key is refused, as for a file; the rows are append-only in
// the database; a project file cannot name the key.
func TestTracePostgres(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	url := testenv.Postgres(t)
	t.Setenv("REIN_TRACE", url)
	keys := t.TempDir()
	keyFile := filepath.Join(keys, "fleet.key")
	user := filepath.Join(t.TempDir(), "user.toml")
	if err := os.WriteFile(user, []byte("[trace]\nkey_file = \""+keyFile+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REIN_USER_POLICY", user)
	// Set here so that the value the policy puts in this process is
	// undone when the test ends.
	t.Setenv("REIN_TRACE_KEY", "")

	srv, n := scriptedModel(t, `shell {"line":"touch approved.txt"}`, "Done.")
	model := []string{"--provider", "ollama", "--base-url", srv.URL + "/v1", "--model", "m"}
	code, out, errOut := rein(t, append(append([]string{"run"}, model...), "--approve", "defer", "--json", "touch it")...)
	var o agent.Outcome
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 6 || o.Kind != agent.AwaitingApproval || o.Waiting == nil {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if got := os.Getenv("REIN_TRACE_KEY"); got != keyFile {
		t.Fatalf("the policy's key file is not the process's trace key: %q", got)
	}
	key, err := trace.LoadKey(keyFile)
	if err != nil {
		t.Fatalf("the key_file was not made: %v", err)
	}
	code, out, _ = rein(t, "runs")
	if code != 0 || !strings.Contains(out, o.Run) || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("rein runs: exit %d\n%s", code, out)
	}
	if code, out, errOut := rein(t, "approve", o.Run, o.Waiting.Request, "--yes"); code != 0 || !strings.Contains(out, "answered yes") {
		t.Fatalf("rein approve: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = rein(t, append(append([]string{"run", "resume"}, model...), o.Run)...)
	if code != 0 || !strings.Contains(out, "finished") || *n != 2 {
		t.Fatalf("rein run resume: exit %d (%d model calls)\n%s\n%s", code, *n, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	code, out, errOut = rein(t, "trace", "verify")
	if code != 0 || !strings.Contains(out, "chain: keyed (HMAC-SHA256, key id "+key.ID()+")") || strings.Contains(out+errOut, "@") {
		t.Fatalf("rein trace verify: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = rein(t, "trace", "show", o.Run)
	if code != 0 || !strings.Contains(out, "touch approved.txt") {
		t.Errorf("rein trace show: exit %d\n%s", code, out)
	}

	// Another host's key: refused for writing, naming both keys.
	other := filepath.Join(keys, "other.key")
	t.Setenv("REIN_TRACE_KEY", other)
	code, _, errOut = rein(t, "tool", "read_file", `{"path":"main.go"}`)
	if code == 0 || !strings.Contains(errOut, "keyed with key id "+key.ID()) {
		t.Fatalf("a writer with another key: exit %d %s", code, errOut)
	}
	t.Setenv("REIN_TRACE_KEY", keyFile)

	// The database refuses an edit, whoever connects.
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE approval_decisions SET answer = 'no'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("an edit of an answer: %v", err)
	}

	// A project file may not name the key.
	if err := os.MkdirAll(filepath.Join(ws, ".rein"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".rein", "policy.toml"), []byte("[trace]\nkey_file = \"/tmp/mine.key\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := rein(t, "policy", "check", "--", "ls"); code != exitUsage || !strings.Contains(errOut, "trace.key_file") {
		t.Fatalf("a project's key_file: exit %d %s", code, errOut)
	}
}
