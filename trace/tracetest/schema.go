package tracetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// SQL is a store of package sqlstore (the SQLite store, the PostgreSQL
// one) under the Schema suite.
type SQL struct {
	// Open opens the store at dir (a directory of its own, made for the
	// test; a second open of the same dir is the same store), its texts
	// redacted by r and its links keyed with key (nil: none).
	Open func(ctx context.Context, dir string, r *trace.Redactor, key *trace.Key) (*sqlstore.Store, error)
	// Unguard lifts the append-only guard of a table, as whoever owns the
	// database can.
	Unguard func(db *sql.DB, table string) error
	// KeyedOnly says a keyed store refuses every unkeyed link (its
	// Dialect has no LegacyUnkeyed): a chain rewritten without the key
	// fails to verify at once, not only against a kept head.
	KeyedOnly bool
}

// Secret is a value the Schema suite's stores are given to redact.
const Secret = "hunter2-secret-value"

// Schema runs the rules of the trace's schema against a store: records
// read back as written; UPDATE, DELETE and (where the database has it)
// TRUNCATE refused by the database itself; every tampering (an edited,
// deleted or inserted row, an edited link) found by VerifyChain; secrets
// redacted before they reach the database; concurrent writers on two
// stores of one database all landing on one chain; the chain keyed, a
// store of another key or none refused, forgery without the key found, and
// a cut end found against a kept head.
func Schema(t *testing.T, c SQL) {
	t.Run("AppendAndQuery", func(t *testing.T) { appendAndQuery(t, c) })
	t.Run("AppendOnly", func(t *testing.T) { appendOnly(t, c) })
	t.Run("VerifyDetectsTampering", func(t *testing.T) { verifyDetectsTampering(t, c) })
	t.Run("RedactedBeforePersisted", func(t *testing.T) { redactedBeforePersisted(t, c) })
	t.Run("ConcurrentWriters", func(t *testing.T) { concurrentWriters(t, c) })
	t.Run("KeyedChain", func(t *testing.T) { keyedChain(t, c) })
	t.Run("KeyedChainForgery", func(t *testing.T) { keyedChainForgery(t, c) })
	t.Run("KeptHead", func(t *testing.T) { keptHead(t, c) })
	t.Run("Pages", func(t *testing.T) { pages(t, c) })
}

func (c SQL) open(t *testing.T, dir string, key *trace.Key) *sqlstore.Store {
	t.Helper()
	s, err := c.Open(context.Background(), dir, trace.NewRedactor(Secret), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// exec runs statements on the store's database as its owner could.
func (c SQL) exec(t *testing.T, s *sqlstore.Store, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func (c SQL) unguard(t *testing.T, s *sqlstore.Store, tables ...string) {
	t.Helper()
	for _, tbl := range tables {
		if err := c.Unguard(s.DB(), tbl); err != nil {
			t.Fatalf("lifting the guard of %s: %v", tbl, err)
		}
	}
}

// TestSecret is the secret of TestKey's key, in hex.
const TestSecret = "7265696e2074657374206b6579202d2d206e6f742061207265616c206f6e6521"

// TestKey is a key of a fixed secret, TestSecret.
func TestKey(t testing.TB) *trace.Key {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.key")
	if err := os.WriteFile(path, []byte(TestSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := trace.LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustAppend(t *testing.T, s trace.Store, r trace.Record) int64 {
	t.Helper()
	id, err := s.Append(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Fill writes one record of each of nine kinds for run: nine links.
func Fill(t *testing.T, s trace.Store, run string) {
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

func appendAndQuery(t *testing.T, c SQL) {
	s := c.open(t, t.TempDir(), nil)
	ctx := context.Background()
	Fill(t, s, "r1")
	Fill(t, s, "r2")
	runs, err := s.Runs(ctx, 0)
	if err != nil || len(runs) != 2 || runs[0].ID != "r2" || runs[0].Steps != 1 || runs[0].Refusals != 1 || runs[0].Handles != 1 || runs[0].Status != "ok" || runs[0].EndedAt == nil {
		t.Fatalf("%+v %v", runs, err)
	}
	if !runs[0].StartedAt.Equal(time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.UTC)) || runs[0].PID != 42 {
		t.Fatalf("times and numbers survive: %+v", runs[0])
	}
	if one, err := s.Runs(ctx, 1); err != nil || len(one) != 1 || one[0].ID != "r2" {
		t.Fatalf("the newest run: %+v %v", one, err)
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
	// Text as every store holds it: valid UTF-8, no NUL (the bytes of
	// binary output a command printed).
	mustAppend(t, s, trace.Step{RunID: "r3", Tool: "shell", Observation: "a\x00b\xffc é", StartedAt: time.Now()})
	if st, err := s.Steps(ctx, "r3"); err != nil || len(st) != 1 || !strings.HasSuffix(st[0].Observation, "c é") {
		t.Fatalf("binary output: %+v %v", st, err)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// appendOnly: UPDATE and DELETE are refused by the database itself.
func appendOnly(t *testing.T, c SQL) {
	s := c.open(t, t.TempDir(), nil)
	Fill(t, s, "r1")
	for _, q := range []string{
		`UPDATE steps SET status = 'ok'`,
		`UPDATE steps SET status = 'ok' WHERE run_id = 'nobody'`,
		`DELETE FROM policy_events`,
		`DELETE FROM chain`,
		`UPDATE chain SET hash = ''`,
		`DELETE FROM schema_migrations`,
		`DELETE FROM audit`,
		`UPDATE runs SET workspace = '/elsewhere'`,
	} {
		_, err := s.DB().Exec(q)
		if err == nil && strings.Contains(q, "nobody") {
			// A row trigger (SQLite's) sees no row to refuse: nothing
			// changed either.
			continue
		}
		if err == nil || !strings.Contains(err.Error(), sqlstore.AppendOnlyMessage) {
			t.Errorf("%s: %v", q, err)
		}
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// verifyDetectsTampering: with the guards lifted (as whoever owns the
// database can), an edited row, a deleted row, an inserted row and an
// edited link are each found.
func verifyDetectsTampering(t *testing.T, c SQL) {
	for name, tc := range map[string]struct {
		unguard []string
		qs      []string
	}{
		"edited step":     {[]string{"steps"}, []string{`UPDATE steps SET observation = 'nothing to see' WHERE rowid = 1`}},
		"edited refusal":  {[]string{"policy_events"}, []string{`UPDATE policy_events SET decision = 'allow'`}},
		"deleted refusal": {[]string{"policy_events"}, []string{`DELETE FROM policy_events`}},
		"inserted step": {nil, []string{`INSERT INTO steps (run_id, "index", tool, args, status, reason, result_id, observation, started_at, duration_ms) ` +
			`VALUES ('r1', 9, 'x', '{}', 'ok', '', '', '', '2026-12-01T00:00:00Z', 0)`}},
		"edited link":      {[]string{"chain"}, []string{`UPDATE chain SET hash = 'ff' WHERE seq = 2`}},
		"edited handle io": {[]string{"handle_output"}, []string{`UPDATE handle_output SET data = 'xyz'`}},
	} {
		t.Run(name, func(t *testing.T) {
			s := c.open(t, t.TempDir(), nil)
			Fill(t, s, "r1")
			c.unguard(t, s, tc.unguard...)
			c.exec(t, s, tc.qs...)
			err := s.Verify(context.Background())
			var ve *trace.VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("tampering not detected: %v", err)
			}
		})
	}
}

// redactedBeforePersisted: a secret in any text never reaches the
// database.
func redactedBeforePersisted(t *testing.T, c SQL) {
	s := c.open(t, t.TempDir(), nil)
	ctx := context.Background()
	mustAppend(t, s, trace.Run{ID: "r", StartedAt: time.Now()})
	mustAppend(t, s, trace.Step{RunID: "r", Tool: "shell", Args: `{"line":"curl -H 'Authorization: Bearer abcdefghijklmnop' x"}`,
		Observation: "token is " + Secret + " and ghp_" + strings.Repeat("a", 36), StartedAt: time.Now()})
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
	var n int
	s.DB().QueryRow(`SELECT COUNT(*) FROM steps WHERE observation LIKE '%hunter2%' OR args LIKE '%abcdefghijklmnop%' OR args LIKE '%hunter2%'`).Scan(&n)
	if n != 0 {
		t.Fatal("a secret was persisted")
	}
}

// concurrentWriters: writers in parallel, on two stores of one database,
// all land and the chain holds.
func concurrentWriters(t *testing.T, c SQL) {
	dir := t.TempDir()
	a, b := c.open(t, dir, nil), c.open(t, dir, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := []*sqlstore.Store{a, b}[i%2]
			for j := range 25 {
				if _, err := s.Append(context.Background(), trace.Audit{RunID: fmt.Sprint(i), Kind: "k", Meta: fmt.Sprint(j), At: time.Now()}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var n int
	a.DB().QueryRow(`SELECT COUNT(*) FROM audit`).Scan(&n)
	if n != 200 {
		t.Fatalf("%d records", n)
	}
	if err := a.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func keyedChain(t *testing.T, c SQL) {
	ctx := context.Background()
	k := TestKey(t)
	dir := t.TempDir()
	s := c.open(t, dir, k)
	Fill(t, s, "r1")
	ch, err := s.VerifyChain(ctx, nil)
	if err != nil || ch.Links != 9 || ch.Keyed != 9 || ch.Unkeyed != 0 || ch.KeyID != k.ID() || ch.Head.Seq != 9 || len(ch.Head.Hash) != 64 {
		t.Fatalf("%+v %v", ch, err)
	}
	if got := ch.Form(); got != "keyed (HMAC-SHA256, key id "+k.ID()+")" {
		t.Fatalf("form %q", got)
	}
	// The links are not SHA-256 alone: they cannot be made without the key.
	var hash string
	s.DB().QueryRow(`SELECT hash FROM chain WHERE seq = 1`).Scan(&hash)
	first, err := s.Record(ctx, "runs", 1)
	if err != nil {
		t.Fatal(err)
	}
	if hash == trace.Link(nil, "", "runs", 1, first) || hash != trace.Link(k, "", "runs", 1, first) {
		t.Fatal("the first link is not keyed")
	}
	// The key, printed by a command that could read it, is never stored.
	mustAppend(t, s, trace.Step{RunID: "r1", Tool: "shell", Observation: "key: " + TestSecret, StartedAt: time.Now()})
	if steps, _ := s.Steps(ctx, "r1"); strings.Contains(steps[1].Observation, TestSecret) {
		t.Fatalf("the key was stored: %q", steps[1].Observation)
	}
	// A store whose chain is keyed is not appended to without the key.
	bare := c.open(t, dir, nil)
	if _, err := bare.Append(ctx, trace.Audit{RunID: "r1", Kind: "k", At: time.Now()}); err == nil || !strings.Contains(err.Error(), "open it with its key") {
		t.Fatalf("appended without the key: %v", err)
	}
	// Nor with another key (a process with another HOME, a host given
	// another key): refused, naming both, and the chain still verifies
	// whole with its own.
	otherPath := filepath.Join(t.TempDir(), "other.key")
	if err := os.WriteFile(otherPath, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := trace.LoadKey(otherPath)
	if err != nil {
		t.Fatal(err)
	}
	o := c.open(t, dir, other)
	if _, err := o.Append(ctx, trace.Audit{RunID: "r1", Kind: "k", At: time.Now()}); err == nil ||
		!strings.Contains(err.Error(), "key id "+k.ID()) || !strings.Contains(err.Error(), "(id "+other.ID()+")") {
		t.Fatalf("appended with another key: %v", err)
	}
	if ch, err := s.VerifyChain(ctx, nil); err != nil || ch.Keyed != ch.Links {
		t.Fatalf("the chain after a refused append: %+v %v", ch, err)
	}
}

// Relink makes the links from seq from to seq to (0: the last) again, as
// whoever can write the database but has no key can: SHA-256 alone,
// under the key id given ("" for none). The chain's guard must be lifted.
func Relink(t *testing.T, s *sqlstore.Store, from, to int64, keyID string) {
	t.Helper()
	ctx := context.Background()
	if to == 0 {
		to = 1 << 62
	}
	rows, err := s.DB().Query(fmt.Sprintf(`SELECT seq, tbl, "row" FROM chain WHERE seq >= %d AND seq <= %d ORDER BY seq`, from, to))
	if err != nil {
		t.Fatal(err)
	}
	type link struct {
		seq, row int64
		tbl      string
	}
	var links []link
	for rows.Next() {
		var l link
		rows.Scan(&l.seq, &l.tbl, &l.row)
		links = append(links, l)
	}
	rows.Close()
	var prev string
	s.DB().QueryRow(fmt.Sprintf(`SELECT hash FROM chain WHERE seq < %d ORDER BY seq DESC LIMIT 1`, from)).Scan(&prev)
	for _, l := range links {
		rec, err := s.Record(ctx, l.tbl, l.row)
		if err != nil {
			t.Fatal(err)
		}
		hash := trace.Link(nil, prev, l.tbl, l.row, rec)
		if _, err := s.DB().Exec(`UPDATE chain SET prev = '` + prev + `', hash = '` + hash + `', key_id = '` + keyID + `' WHERE seq = ` + strconv.FormatInt(l.seq, 10)); err != nil {
			t.Fatal(err)
		}
		prev = hash
	}
}

// keyedChainForgery: whoever can write the database but has no key
// edits a record, and links the chain again from it in every way open to
// them; each is found. Rewriting the whole chain unkeyed verifies, but
// says so, and does not reach a kept head.
func keyedChainForgery(t *testing.T, c SQL) {
	ctx := context.Background()
	k := TestKey(t)
	for name, tc := range map[string]struct {
		from  int64
		keyID func() string
		says  string
	}{
		"relinked keeping the key id": {from: 3, keyID: k.ID, says: "the record was changed"},
		"relinked unkeyed":            {from: 3, keyID: func() string { return "" }, says: "is not keyed"},
		"relinked under another id":   {from: 3, keyID: func() string { return "0123456789abcdef" }, says: "cannot be checked"},
	} {
		t.Run(name, func(t *testing.T) {
			s := c.open(t, t.TempDir(), k)
			Fill(t, s, "r1")
			c.unguard(t, s, "policy_events", "chain")
			c.exec(t, s, `UPDATE policy_events SET decision = 'allow'`)
			Relink(t, s, tc.from, 0, tc.keyID())
			_, err := s.VerifyChain(ctx, nil)
			var ve *trace.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("forgery not found as %q: %v", tc.says, err)
			}
		})
	}
	t.Run("whole chain rewritten unkeyed", func(t *testing.T) {
		s := c.open(t, t.TempDir(), k)
		Fill(t, s, "r1")
		before, err := s.VerifyChain(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.unguard(t, s, "policy_events", "chain")
		c.exec(t, s, `UPDATE policy_events SET decision = 'allow'`)
		Relink(t, s, 1, 0, "")
		ch, err := s.VerifyChain(ctx, nil)
		if c.KeyedOnly {
			if err == nil || !strings.Contains(err.Error(), "chain link 1 ") || !strings.Contains(err.Error(), "is not keyed") {
				t.Fatalf("a keyed store's chain rewritten without the key: %v", err)
			}
			if _, err := s.Append(ctx, trace.Audit{RunID: "r1", Kind: "k", At: time.Now()}); err == nil || !strings.Contains(err.Error(), "made without a key") {
				t.Fatalf("appended after an unkeyed history: %v", err)
			}
			return
		}
		if err != nil || !strings.HasPrefix(ch.Form(), "unkeyed") {
			t.Fatalf("%v %q", err, ch.Form())
		}
		if _, err := s.VerifyChain(ctx, &before.Head); err == nil || !strings.Contains(err.Error(), "not the kept head") {
			t.Fatalf("the kept head was reached: %v", err)
		}
	})
}

// keptHead: the newest records removed with their links leave a chain
// that verifies, but not one that reaches a head kept before.
func keptHead(t *testing.T, c SQL) {
	ctx := context.Background()
	s := c.open(t, t.TempDir(), TestKey(t))
	Fill(t, s, "r1")
	mid, err := s.VerifyChain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	Fill(t, s, "r2")
	ch, err := s.VerifyChain(ctx, &mid.Head)
	if err != nil || !ch.Extends || ch.Head.Seq != 18 {
		t.Fatalf("%+v %v", ch, err)
	}
	byHash := trace.Head{Hash: mid.Head.Hash}
	if ch, err := s.VerifyChain(ctx, &byHash); err != nil || !ch.Extends {
		t.Fatalf("by hash alone: %+v %v", ch, err)
	}
	end := ch.Head
	c.unguard(t, s, "chain", "run_ends", "audit")
	c.exec(t, s, `DELETE FROM run_ends WHERE run_id = 'r2'`, `DELETE FROM audit WHERE run_id = 'r2'`, `DELETE FROM chain WHERE seq >= 17`)
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("a chain cut at its end verifies on its own: %v", err)
	}
	if _, err := s.VerifyChain(ctx, &end); err == nil || !strings.Contains(err.Error(), "removed from its end") {
		t.Fatalf("the cut was not found: %v", err)
	}
	endHash := trace.Head{Hash: end.Hash}
	if _, err := s.VerifyChain(ctx, &endHash); err == nil || !strings.Contains(err.Error(), "no link of the chain is the kept head") {
		t.Fatalf("the cut was not found by hash: %v", err)
	}
}

// pages: a run read a page at a time (rows after a row, columns left
// out), the records of a range of its steps, the runs paged and by id,
// its model calls' tokens alone, and its child runs by their ids, a
// prefix of characters that are not bytes too.
func pages(t *testing.T, c SQL) {
	s := c.open(t, t.TempDir(), nil)
	ctx := context.Background()
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	for _, id := range []string{"é-run", "é-run.1.0", "é-runner", "é-run.1.0.2.1", "other"} {
		mustAppend(t, s, trace.Run{ID: id, StartedAt: at})
	}
	var ids []int64
	for i := range 5 {
		ids = append(ids, mustAppend(t, s, trace.Step{RunID: "é-run", Index: i, Tool: "shell", Args: fmt.Sprintf(`{"line":"echo %d"}`, i), Observation: "out", StartedAt: at}))
		mustAppend(t, s, trace.PolicyEvent{RunID: "é-run", StepID: ids[i], Kind: "refusal", Decision: "deny", Reason: fmt.Sprint(i), At: at})
		mustAppend(t, s, trace.ProviderCall{RunID: "é-run", Step: i + 1, Attempt: 1, Input: int64(10 * i), Output: 1, Request: "the transcript", At: at})
	}
	mustAppend(t, s, trace.Step{RunID: "other", Tool: "shell", StartedAt: at})
	page, err := sqlstore.Page[trace.Step](ctx, s, "é-run", ids[1], 2, "observation")
	if err != nil || len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[3] || page[0].Index != 2 || page[0].Observation != "" || page[0].Args != `{"line":"echo 2"}` {
		t.Fatalf("Page: %+v %v", page, err)
	}
	if last, err := sqlstore.Page[trace.Step](ctx, s, "é-run", ids[4], 10); err != nil || len(last) != 0 {
		t.Fatalf("Page past the end: %+v %v", last, err)
	}
	calls, err := sqlstore.Page[trace.ProviderCall](ctx, s, "é-run", 0, 10, "request")
	if err != nil || len(calls) != 5 || calls[4].Request != "" || calls[4].Input != 40 {
		t.Fatalf("Page of calls: %+v %v", calls, err)
	}
	evs, err := sqlstore.OfSteps[trace.PolicyEvent](ctx, s, "é-run", ids[1], ids[2])
	if err != nil || len(evs) != 2 || evs[0].Reason != "1" || evs[1].Reason != "2" {
		t.Fatalf("OfSteps: %+v %v", evs, err)
	}
	if one, err := sqlstore.One[trace.Step](ctx, s, "é-run", ids[3]); err != nil || one == nil || one.Index != 3 {
		t.Fatalf("One: %+v %v", one, err)
	}
	if one, err := sqlstore.One[trace.Step](ctx, s, "other", ids[3]); err != nil || one != nil {
		t.Fatalf("One of another run: %+v %v", one, err)
	}
	runs, err := s.RunsPage(ctx, 1, 2)
	if err != nil || len(runs) != 2 || runs[0].ID != "é-run.1.0.2.1" || runs[1].ID != "é-runner" {
		t.Fatalf("RunsPage: %+v %v", runs, err)
	}
	if r, err := s.RunByID(ctx, "é-run"); err != nil || r == nil || r.Steps != 5 || r.Refusals != 5 {
		t.Fatalf("RunByID: %+v %v", r, err)
	}
	if r, err := s.RunByID(ctx, "none"); err != nil || r != nil {
		t.Fatalf("RunByID of none: %+v %v", r, err)
	}
	use, err := s.Usage(ctx, "é-run")
	if err != nil || len(use) != 5 || use[3].Step != 4 || use[3].Input != 30 || use[3].Output != 1 {
		t.Fatalf("Usage: %+v %v", use, err)
	}
	kids, err := s.ChildRuns(ctx, "é-run")
	if err != nil || strings.Join(kids, " ") != "é-run.1.0 é-run.1.0.2.1" {
		t.Fatalf("ChildRuns: %q %v", kids, err)
	}
}
