package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
	"github.com/reinhq/rein/trace/tracetest"
)

// openConformance opens the SQLite store of the conformance suite.
func openConformance(_ context.Context, dir string) (trace.Durable, error) {
	return Open(filepath.Join(dir, "trace.db"), trace.NewRedactor())
}

func TestDurableConformance(t *testing.T) { tracetest.Run(t, openConformance) }

// TestSchema: the rules of the trace's schema, on a file.
func TestSchema(t *testing.T) {
	tracetest.Schema(t, tracetest.SQL{
		Open: func(_ context.Context, dir string, r *trace.Redactor, key *trace.Key) (*sqlstore.Store, error) {
			var opts []Option
			if key != nil {
				opts = append(opts, WithKey(key))
			}
			return Open(filepath.Join(dir, "trace.db"), r, opts...)
		},
		Unguard: func(db *sql.DB, table string) error {
			for _, op := range []string{"update", "delete"} {
				if _, err := db.Exec(`DROP TRIGGER ` + table + `_no_` + op); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
