package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

// testSecret is the secret of testKey's key, in hex.
const testSecret = "7265696e2074657374206b6579202d2d206e6f742061207265616c206f6e6521"

func testKey(t *testing.T) *trace.Key {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.key")
	if err := os.WriteFile(path, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := trace.LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func openKeyed(t *testing.T, path string, k *trace.Key) *Store {
	t.Helper()
	s, err := Open(path, nil, WithKey(k))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func exec(t *testing.T, s *Store, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// relink makes the links from seq from to seq to (0: the last) again, as
// whoever can write the file but has no key can: SHA-256 alone, under the
// key id given ("" for none).
func relink(t *testing.T, s *Store, from, to int64, keyID string) {
	t.Helper()
	exec(t, s, `DROP TRIGGER chain_no_update`)
	if to == 0 {
		to = 1 << 62
	}
	rows, err := s.db.Query(`SELECT seq, tbl, row FROM chain WHERE seq >= ? AND seq <= ? ORDER BY seq`, from, to)
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
	s.db.QueryRow(`SELECT hash FROM chain WHERE seq < ? ORDER BY seq DESC LIMIT 1`, from).Scan(&prev)
	for _, l := range links {
		typ := recordTypes[l.tbl]
		cols := columns(typ)
		names := []string{}
		for _, c := range cols {
			names = append(names, `"`+c.name+`"`)
		}
		r, err := s.db.Query(`SELECT rowid, `+strings.Join(names, ", ")+` FROM `+l.tbl+` WHERE rowid = ?`, l.row)
		if err != nil || !r.Next() {
			t.Fatal(err)
		}
		rec, err := scan(r, typ, cols)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		hash := trace.Link(nil, prev, l.tbl, l.row, rec.Interface().(trace.Record))
		exec(t, s, `UPDATE chain SET prev = '`+prev+`', hash = '`+hash+`', key_id = '`+keyID+`' WHERE seq = `+strconv.FormatInt(l.seq, 10))
		prev = hash
	}
}

func TestKeyedChain(t *testing.T) {
	k := testKey(t)
	s := openKeyed(t, filepath.Join(t.TempDir(), "t.db"), k)
	fill(t, s, "r1")
	c, err := s.VerifyChain(context.Background(), nil)
	if err != nil || c.Links != 9 || c.Keyed != 9 || c.Unkeyed != 0 || c.KeyID != k.ID() || c.Head.Seq != 9 || len(c.Head.Hash) != 64 {
		t.Fatalf("%+v %v", c, err)
	}
	if got := c.Form(); got != "keyed (HMAC-SHA256, key id "+k.ID()+")" {
		t.Fatalf("form %q", got)
	}
	// The links are not SHA-256 alone: they cannot be made without the key.
	var hash string
	s.db.QueryRow(`SELECT hash FROM chain WHERE seq = 1`).Scan(&hash)
	runs, _ := query[trace.Run](context.Background(), s, `WHERE 1`)
	if hash == trace.Link(nil, "", "runs", 1, runs[0]) || hash != trace.Link(k, "", "runs", 1, runs[0]) {
		t.Fatal("the first link is not keyed")
	}
	// The key, printed by a command that could read it, is never stored.
	mustAppend(t, s, trace.Step{RunID: "r1", Tool: "shell", Observation: "key: " + testSecret, StartedAt: time.Now()})
	if steps, _ := s.Steps(context.Background(), "r1"); strings.Contains(steps[1].Observation, testSecret) {
		t.Fatalf("the key was stored: %q", steps[1].Observation)
	}
	// A store whose chain is keyed is not appended to without the key.
	bare, err := Open(s.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := bare.Append(context.Background(), trace.Audit{RunID: "r1", Kind: "k", At: time.Now()}); err == nil || !strings.Contains(err.Error(), "open it with its key") {
		t.Fatalf("appended without the key: %v", err)
	}
	// Nor with another key (a process with another HOME): refused,
	// naming both, and the chain still verifies whole with its own.
	otherPath := filepath.Join(t.TempDir(), "other.key")
	if err := os.WriteFile(otherPath, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := trace.LoadKey(otherPath)
	if err != nil {
		t.Fatal(err)
	}
	o := openKeyed(t, s.path, other)
	if _, err := o.Append(context.Background(), trace.Audit{RunID: "r1", Kind: "k", At: time.Now()}); err == nil ||
		!strings.Contains(err.Error(), "key id "+k.ID()) || !strings.Contains(err.Error(), "(id "+other.ID()+")") {
		t.Fatalf("appended with another key: %v", err)
	}
	if c, err := s.VerifyChain(context.Background(), nil); err != nil || c.Keyed != c.Links {
		t.Fatalf("the chain after a refused append: %+v %v", c, err)
	}
}

// TestKeyedChainForgery: whoever can write the file but has no key edits
// a record, and links the chain again from it in every way open to them;
// each is found. Rewriting the whole chain unkeyed verifies, but says so,
// and does not reach a kept head.
func TestKeyedChainForgery(t *testing.T) {
	ctx := context.Background()
	k := testKey(t)
	for name, c := range map[string]struct {
		from  int64
		keyID func() string
		says  string
	}{
		"relinked keeping the key id": {from: 3, keyID: k.ID, says: "the record was changed"},
		"relinked unkeyed":            {from: 3, keyID: func() string { return "" }, says: "is not keyed, but links before it are"},
		"relinked under another id":   {from: 3, keyID: func() string { return "0123456789abcdef" }, says: "cannot be checked"},
	} {
		t.Run(name, func(t *testing.T) {
			s := openKeyed(t, filepath.Join(t.TempDir(), "t.db"), k)
			fill(t, s, "r1")
			exec(t, s, `DROP TRIGGER policy_events_no_update`, `UPDATE policy_events SET decision = 'allow'`)
			relink(t, s, c.from, 0, c.keyID())
			_, err := s.VerifyChain(ctx, nil)
			var ve *trace.VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("forgery not found as %q: %v", c.says, err)
			}
		})
	}
	t.Run("whole chain rewritten unkeyed", func(t *testing.T) {
		s := openKeyed(t, filepath.Join(t.TempDir(), "t.db"), k)
		fill(t, s, "r1")
		before, err := s.VerifyChain(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, s, `DROP TRIGGER policy_events_no_update`, `UPDATE policy_events SET decision = 'allow'`)
		relink(t, s, 1, 0, "")
		c, err := s.VerifyChain(ctx, nil)
		if err != nil || !strings.HasPrefix(c.Form(), "unkeyed") {
			t.Fatalf("%v %q", err, c.Form())
		}
		if _, err := s.VerifyChain(ctx, &before.Head); err == nil || !strings.Contains(err.Error(), "not the kept head") {
			t.Fatalf("the kept head was reached: %v", err)
		}
	})
}

// TestKeptHead: the newest records removed with their links leave a chain
// that verifies, but not one that reaches a head kept before.
func TestKeptHead(t *testing.T) {
	ctx := context.Background()
	s := openKeyed(t, filepath.Join(t.TempDir(), "t.db"), testKey(t))
	fill(t, s, "r1")
	mid, err := s.VerifyChain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, "r2")
	c, err := s.VerifyChain(ctx, &mid.Head)
	if err != nil || !c.Extends || c.Head.Seq != 18 {
		t.Fatalf("%+v %v", c, err)
	}
	byHash := trace.Head{Hash: mid.Head.Hash}
	if c, err := s.VerifyChain(ctx, &byHash); err != nil || !c.Extends {
		t.Fatalf("by hash alone: %+v %v", c, err)
	}
	end := c.Head
	exec(t, s, `DROP TRIGGER chain_no_delete`, `DROP TRIGGER run_ends_no_delete`, `DROP TRIGGER audit_no_delete`,
		`DELETE FROM run_ends WHERE run_id = 'r2'`, `DELETE FROM audit WHERE run_id = 'r2'`, `DELETE FROM chain WHERE seq >= 17`)
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

// TestUnkeyedTraceMigrates: a trace written before keys (schema 2, links
// of SHA-256 alone) verifies as it was, and once opened with a key goes on
// keyed; its unkeyed links are then sealed: one edited and linked again
// breaks the first keyed link.
func TestUnkeyedTraceMigrates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`, migrations[0], migrations[1],
		`INSERT INTO schema_migrations VALUES (1, '2026-06-01T00:00:00Z'), (2, '2026-06-01T00:00:00Z')`,
		`INSERT INTO runs VALUES ('old', '2026-06-01T09:00:00Z', '/w', 'coding', 'ask', 'cli', 42)`,
		`INSERT INTO audit VALUES ('old', 'start', '{}', '2026-06-01T09:00:00Z')`,
		// The links as rein wrote them before keys.
		`INSERT INTO chain (tbl, row, prev, hash) VALUES ('runs', 1, '', '` + oldRunLink + `')`,
		`INSERT INTO chain (tbl, row, prev, hash) VALUES ('audit', 1, '` + oldRunLink + `', '` + oldAuditLink + `')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, v := range []int{1, 2} {
		for _, tbl := range appendOnlyFrom[v] {
			for _, op := range []string{"UPDATE", "DELETE"} {
				if _, err := db.Exec(`CREATE TRIGGER ` + tbl + `_no_` + strings.ToLower(op) + ` BEFORE ` + op + ` ON ` + tbl + ` BEGIN SELECT RAISE(ABORT, '` + appendOnly + `'); END`); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	db.Close()
	bare, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bare.VerifyChain(ctx, nil)
	bare.Close()
	if err != nil || c.Links != 2 || c.Unkeyed != 2 || !strings.HasPrefix(c.Form(), "unkeyed (SHA-256 alone") {
		t.Fatalf("the old trace: %+v %v", c, err)
	}
	k := testKey(t)
	s := openKeyed(t, path, k)
	fill(t, s, "new")
	c, err = s.VerifyChain(ctx, nil)
	if err != nil || c.Unkeyed != 2 || c.Keyed != 9 || c.FirstKeyed != 3 || !strings.Contains(c.Form(), "before link 3") {
		t.Fatalf("%+v %v %q", c, err, c.Form())
	}
	exec(t, s, `DROP TRIGGER runs_no_update`, `UPDATE runs SET workspace = '/elsewhere' WHERE id = 'old'`)
	relink(t, s, 1, 2, "")
	if err := s.Verify(ctx); err == nil || !strings.Contains(err.Error(), "chain link 3") {
		t.Fatalf("an edit of the unkeyed part, linked again, was not found: %v", err)
	}
}

// The links of the old trace's two records, SHA-256 of the previous link,
// table, row and the record's JSON as rein computed them before keys
// (worked out apart from rein): the unkeyed form must never change.
const (
	oldRunLink   = "6eafd2a6ae92324a7d17ee0d3a4b522d6a910546bb3dc315f74eac9b6d629518"
	oldAuditLink = "8a16945e78fe605c010b35f254e3ec91f9a1e5c028ad2d40d0b7b532ca5d470e"
)
