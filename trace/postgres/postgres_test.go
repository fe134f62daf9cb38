package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
	"github.com/reinhq/rein/trace/tracetest"
)

func TestMain(m *testing.M) {
	if code, ok := tracetest.Child(openConformance); ok {
		os.Exit(code)
	}
	code := m.Run()
	testenv.DropPostgres()
	os.Exit(code)
}

// server fails (or skips, where nothing is required) a test with no
// server to reach.
func server(t *testing.T) {
	t.Helper()
	testenv.Postgres(t)
}

// openIn opens the store of the database named for dir.
func openIn(dir string, r *trace.Redactor, key *trace.Key) (*sqlstore.Store, error) {
	u, err := testenv.PostgresDatabase(dir)
	if err != nil {
		return nil, err
	}
	var opts []Option
	if key != nil {
		opts = append(opts, WithKey(key))
	}
	return Open(u, r, opts...)
}

func openConformance(_ context.Context, dir string) (trace.Durable, error) {
	return openIn(dir, trace.NewRedactor(), nil)
}

func TestDurableConformance(t *testing.T) {
	server(t)
	tracetest.Run(t, openConformance)
}

// TestSchema: the rules of the trace's schema, on a server.
func TestSchema(t *testing.T) {
	server(t)
	tracetest.Schema(t, tracetest.SQL{
		Open: func(_ context.Context, dir string, r *trace.Redactor, key *trace.Key) (*sqlstore.Store, error) {
			return openIn(dir, r, key)
		},
		Unguard: func(db *sql.DB, table string) error {
			_, err := db.Exec(fmt.Sprintf(`DROP TRIGGER %s_append_only ON %s`, table, table))
			return err
		},
		KeyedOnly: true,
	})
}

// TestTruncateRefused: TRUNCATE, which no row trigger sees, is refused
// on every table of the trace, and on the leases too none but rein's
// statements change rows (UPDATE through the store only).
func TestTruncateRefused(t *testing.T) {
	server(t)
	s, err := openIn(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tracetest.Fill(t, s, "r1")
	for _, tbl := range append([]string{"chain", "schema_migrations"}, sqlstore.Chained...) {
		if _, err := s.DB().Exec(`TRUNCATE ` + tbl); err == nil || !strings.Contains(err.Error(), sqlstore.AppendOnlyMessage) {
			t.Errorf("TRUNCATE %s: %v", tbl, err)
		}
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMigrations: a second open finds the schema made; a database of a
// newer schema than this rein knows is refused, not written; a URL's
// password never shows in where the store says it is.
func TestMigrations(t *testing.T) {
	server(t)
	dir := t.TempDir()
	for range 2 {
		s, err := openIn(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		s.DB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
		if v != len(migrations) {
			t.Fatalf("version %d", v)
		}
		s.Close()
	}
	u, _ := testenv.PostgresDatabase(dir)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER schema_migrations_append_only ON schema_migrations`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, 'later')`, len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := openIn(dir, nil, nil); err == nil || !strings.Contains(err.Error(), "newer than this rein knows") {
		t.Fatalf("a newer schema: %v", err)
	}
	for dsn, want := range map[string]string{
		"postgres://rein:s3cret@db.example:5432/trace?sslmode=verify-full":        "postgres://rein@db.example:5432/trace?sslmode=verify-full",
		"postgresql://db.example/trace?user=rein&password=s3cret&sslmode=require": "postgresql://db.example/trace?sslmode=require&user=rein",
	} {
		if got := Where(dsn); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Where(%q) = %q, want %q", dsn, got, want)
		}
	}
	if _, err := Open("/tmp/trace.db", nil); err == nil {
		t.Fatal("a file path was opened as a server")
	}
	if _, err := Open("postgres://rein:s3cret@127.0.0.1:1/none?connect_timeout=2", nil); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("an unreachable server: %v", err)
	}
}

// BenchmarkAppendStep is the trace's cost of one recorded step on the
// server, its link keyed; BenchmarkAppendStepSQLite (trace/sqlite's
// BenchmarkAppendStep) is the same step on a file.
func BenchmarkAppendStep(b *testing.B) {
	if _, err := testenv.PostgresDatabase(b.TempDir()); err != nil {
		testenv.Missing(b, "no PostgreSQL server: %v", err)
	}
	s, err := openIn(b.TempDir(), trace.NewRedactor("some-secret-value"), tracetest.TestKey(b))
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
