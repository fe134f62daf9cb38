package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace/tracetest"
)

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
	k := tracetest.TestKey(t)
	s, err := Open(path, nil, WithKey(k))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tracetest.Fill(t, s, "new")
	c, err = s.VerifyChain(ctx, nil)
	if err != nil || c.Unkeyed != 2 || c.Keyed != 9 || c.FirstKeyed != 3 || !strings.Contains(c.Form(), "before link 3") {
		t.Fatalf("%+v %v %q", c, err, c.Form())
	}
	for _, q := range []string{`DROP TRIGGER runs_no_update`, `DROP TRIGGER chain_no_update`, `UPDATE runs SET workspace = '/elsewhere' WHERE id = 'old'`} {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tracetest.Relink(t, s, 1, 2, "")
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
