package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sub", "trace.db"), trace.NewRedactor("hunter2-secret-value"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAppend(t *testing.T, s trace.Store, r trace.Record) int64 {
	t.Helper()
	id, err := s.Append(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fill writes one record of every kind for run.
func fill(t *testing.T, s trace.Store, run string) {
	t.Helper()
	now := time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.FixedZone("CET", 3600))
	mustAppend(t, s, trace.Run{ID: run, StartedAt: now, Workspace: "/w", Surface: "coding", Mode: "ask", Source: "cli", PID: 42})
	step := mustAppend(t, s, trace.Step{RunID: run, Index: 0, Tool: "shell", Args: `{"line":"echo hi"}`, Status: "ok", Observation: "hi", StartedAt: now, DurationMS: 1.25})
	mustAppend(t, s, trace.PolicyEvent{RunID: run, StepID: step, Kind: "refusal", Decision: "deny", Rule: "rm -rf*", Layer: "project", File: "/w/.rein/policy.toml", Reason: "no", At: now})
	mustAppend(t, s, trace.Handle{RunID: run, StepID: step, Handle: "h1", Line: "sleep 1", Rung: "bwrap", Capture: "/c", StartedAt: now})
	mustAppend(t, s, trace.HandleOutput{RunID: run, Handle: "h1", Offset: 0, Skipped: 3, Data: "abc", At: now})
	mustAppend(t, s, trace.SandboxEvent{RunID: run, StepID: step, Kind: "limits", Detail: `{"memory":1}`, At: now})
	mustAppend(t, s, trace.Edit{RunID: run, StepID: step, Path: "a.go", Diff: "--- a\n+++ b\n", At: now})
	mustAppend(t, s, trace.Audit{RunID: run, Kind: "tool", Meta: `{"tool":"shell"}`, At: now})
	mustAppend(t, s, trace.RunEnd{RunID: run, EndedAt: now.Add(time.Second), Status: "ok"})
}

func TestAppendAndQuery(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	fill(t, s, "r1")
	fill(t, s, "r2")
	runs, err := s.Runs(ctx, 0)
	if err != nil || len(runs) != 2 || runs[0].ID != "r2" || runs[0].Steps != 1 || runs[0].Refusals != 1 || runs[0].Handles != 1 || runs[0].Status != "ok" || runs[0].EndedAt == nil {
		t.Fatalf("%+v %v", runs, err)
	}
	if !runs[0].StartedAt.Equal(time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.UTC)) || runs[0].PID != 42 {
		t.Fatalf("times and numbers survive: %+v", runs[0])
	}
	steps, err := s.Steps(ctx, "r1")
	if err != nil || len(steps) != 1 || steps[0].Tool != "shell" || steps[0].DurationMS != 1.25 || steps[0].ID == 0 {
		t.Fatalf("%+v %v", steps, err)
	}
	ev, _ := s.PolicyEvents(ctx, "")
	if len(ev) != 2 || ev[0].Rule != "rm -rf*" || ev[0].StepID != steps[0].ID {
		t.Fatalf("%+v", ev)
	}
	out, _ := s.HandleOutput(ctx, "r1", "h1")
	if len(out) != 1 || out[0].Data != "abc" || out[0].Skipped != 3 {
		t.Fatalf("%+v", out)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAppendOnly: UPDATE and DELETE are refused by the store itself.
func TestAppendOnly(t *testing.T) {
	s := open(t)
	fill(t, s, "r1")
	for _, q := range []string{
		`UPDATE steps SET status = 'ok' WHERE 1`,
		`DELETE FROM policy_events`,
		`DELETE FROM chain`,
		`UPDATE chain SET hash = ''`,
		`DELETE FROM schema_migrations`,
	} {
		if _, err := s.db.Exec(q); err == nil || !strings.Contains(err.Error(), appendOnly) {
			t.Errorf("%s: %v", q, err)
		}
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyDetectsTampering: with the triggers dropped (as anyone with
// the file can), an edited row, a deleted row, an inserted row and an
// edited link are each found.
func TestVerifyDetectsTampering(t *testing.T) {
	for name, tamper := range map[string][]string{
		"edited step":      {`DROP TRIGGER steps_no_update`, `UPDATE steps SET observation = 'nothing to see' WHERE rowid = 1`},
		"edited refusal":   {`DROP TRIGGER policy_events_no_update`, `UPDATE policy_events SET decision = 'allow'`},
		"deleted refusal":  {`DROP TRIGGER policy_events_no_delete`, `DELETE FROM policy_events`},
		"inserted step":    {`INSERT INTO steps (run_id, "index", tool, args, status, reason, result_id, observation, started_at, duration_ms) VALUES ('r1', 9, 'x', '{}', 'ok', '', '', '', '2026-12-01T00:00:00Z', 0)`},
		"edited link":      {`DROP TRIGGER chain_no_update`, `UPDATE chain SET hash = 'ff' WHERE seq = 2`},
		"edited handle io": {`DROP TRIGGER handle_output_no_update`, `UPDATE handle_output SET data = 'xyz'`},
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			fill(t, s, "r1")
			for _, q := range tamper {
				if _, err := s.db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			err := s.Verify(context.Background())
			var ve *trace.VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("tampering not detected: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestRedactedBeforePersisted: a secret in any text never reaches the
// file.
func TestRedactedBeforePersisted(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	mustAppend(t, s, trace.Run{ID: "r", StartedAt: time.Now()})
	mustAppend(t, s, trace.Step{RunID: "r", Tool: "shell", Args: `{"line":"curl -H 'Authorization: Bearer abcdefghijklmnop' x"}`,
		Observation: "token is hunter2-secret-value and ghp_" + strings.Repeat("a", 36), StartedAt: time.Now()})
	// write_file's content, the hook's Write input and a command line: the
	// secrets are found in the values the JSON decodes to.
	mustAppend(t, s, trace.Step{RunID: "r", Tool: "write_file", Args: `{"path":"c.json","content":"{\"password\": \"hunter2\"}"}`, StartedAt: time.Now()})
	mustAppend(t, s, trace.Step{RunID: "r", Tool: "Write", Args: `{"file_path":"/w/c.json","content":"{\n  \"api_key\": \"hunter2\"\n}"}`, StartedAt: time.Now()})
	mustAppend(t, s, trace.Step{RunID: "r", Tool: "shell", Args: `{"line":"mysql -phunter2 db \u0026\u0026 tool --password hunter2 pw=hunter2"}`, StartedAt: time.Now()})
	steps, _ := s.Steps(ctx, "r")
	for _, st := range steps[1:] {
		if strings.Contains(st.Args, "hunter2") || !strings.Contains(st.Args, trace.Redacted) {
			t.Errorf("stored %s", st.Args)
		}
	}
	if strings.Contains(steps[0].Args, "abcdefghijklmnop") || strings.Contains(steps[0].Observation, "hunter2") || strings.Contains(steps[0].Observation, "ghp_") {
		t.Fatalf("%+v", steps[0])
	}
	db, err := sql.Open("sqlite", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM steps WHERE observation LIKE '%hunter2%' OR args LIKE '%abcdefghijklmnop%' OR args LIKE '%hunter2%'`).Scan(&n)
	if n != 0 {
		t.Fatal("a secret was persisted")
	}
}

// TestConcurrentWriters: writers in parallel, on two connections to one
// file, all land and the chain holds.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(filepath.Join(dir, "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(filepath.Join(dir, "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{a, b}[i%2]
			for j := range 25 {
				if _, err := s.Append(context.Background(), trace.Audit{RunID: fmt.Sprint(i), Kind: "k", Meta: fmt.Sprint(j), At: time.Now()}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var n int
	a.db.QueryRow(`SELECT COUNT(*) FROM audit`).Scan(&n)
	if n != 200 {
		t.Fatalf("%d records", n)
	}
	if err := a.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	for range 2 {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		s.db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
		if v != len(migrations) {
			t.Fatalf("version %d", v)
		}
		s.Close()
	}
	if _, err := Open(filepath.Join(t.TempDir(), "a?b"), nil); err == nil {
		t.Fatal("a path with ? was accepted")
	}
}

// BenchmarkAppendStep is the trace's cost of one recorded step, its link
// keyed.
func BenchmarkAppendStep(b *testing.B) {
	k, err := trace.LoadKey(filepath.Join(b.TempDir(), "keys", "trace.key"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor("some-secret-value"), WithKey(k))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Append(ctx, trace.Run{ID: "r", StartedAt: time.Now()})
	obs := strings.Repeat("output line of a tool call\n", 40)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Append(ctx, trace.Step{RunID: "r", Index: i, Tool: "read_file", Args: `{"path":"main.go"}`, Status: "ok", Observation: obs, StartedAt: time.Now(), DurationMS: 0.1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactJSON is a write_file call's arguments: a JSON document
// whose content is a file of 1 KiB holding JSON.
func BenchmarkRedactJSON(b *testing.B) {
	r := trace.NewRedactor("some-secret-value")
	content := strings.Repeat(`{"name": "a tool call", "count": 3, "tags": ["x", "y"]}`+"\n", 18)
	data, _ := json.Marshal(map[string]string{"path": "testdata/cases.json", "content": content})
	args := string(data)
	for b.Loop() {
		r.Redact(args)
	}
}

func BenchmarkRedact(b *testing.B) {
	r := trace.NewRedactor("some-secret-value")
	obs := strings.Repeat("output line of a tool call\n", 40)
	for b.Loop() {
		r.Redact(obs)
	}
}

// TestOpenRefusesLinks: a store that is a link, or a file with another
// name, is refused: SQLite would write through it.
func TestOpenRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("not yours"), 0o644)
	link := filepath.Join(dir, "link.db")
	os.Symlink(victim, link)
	if _, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "not a plain file") {
		t.Fatalf("a linked store was opened: %v", err)
	}
	hard := filepath.Join(dir, "hard.db")
	os.Link(victim, hard)
	if _, err := Open(hard, nil); err == nil {
		t.Fatal("a store with another name was opened")
	}
	wal := filepath.Join(dir, "w.db")
	os.Symlink(victim, wal+"-wal")
	if _, err := Open(wal, nil); err == nil {
		t.Fatal("a store whose WAL is a link was opened")
	}
	if data, _ := os.ReadFile(victim); string(data) != "not yours" {
		t.Fatal("the link's target was written")
	}
}
