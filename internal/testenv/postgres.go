package testenv

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// PostgresEnv names the PostgreSQL server the tests use, a URL whose
// database the tests' own are made beside; without it, the server on
// this host's socket (as .ci/run starts Debian's), as the user running
// the tests.
const PostgresEnv = "REIN_TEST_POSTGRES"

// postgresServer is the server's URL.
func postgresServer() string {
	if u := os.Getenv(PostgresEnv); u != "" {
		return u
	}
	return "postgres:///postgres?host=/var/run/postgresql"
}

var (
	pgMu    sync.Mutex
	pgMade  = map[string]bool{}
	pgOwner bool
)

// pgRunEnv names the databases of one test process and the processes it
// starts (PostgresRun).
const pgRunEnv = "REIN_TEST_POSTGRES_RUN"

func pgPrefix() string {
	if r := os.Getenv(pgRunEnv); r != "" {
		return "rein_test_" + r + "_"
	}
	return "rein_test_"
}

// PostgresRun names the databases this process and the processes it
// starts make as its own, so that DropPostgres drops them all, whichever
// process made each: a TestMain whose tests start child processes calls
// it first.
func PostgresRun() {
	var b [4]byte
	rand.Read(b[:])
	os.Setenv(pgRunEnv, hex.EncodeToString(b[:]))
	pgOwner = true
}

// PostgresDatabase is the URL of a database of the tests' server named
// for key (a test's directory: the same key, in this process or a child,
// is the same database), made empty the first time. It fails where there
// is no server to reach.
func PostgresDatabase(key string) (string, error) {
	sum := sha256.Sum256([]byte(key))
	name := pgPrefix() + hex.EncodeToString(sum[:8])
	u, err := url.Parse(postgresServer())
	if err != nil {
		return "", fmt.Errorf("%s does not parse: %w", PostgresEnv, err)
	}
	pgMu.Lock()
	defer pgMu.Unlock()
	if !pgMade[name] {
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			return "", err
		}
		defer db.Close()
		_, err = db.Exec(`CREATE DATABASE ` + name)
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && pe.Code == "42P04") { // duplicate_database
			return "", fmt.Errorf("making the test database on %s: %w", u.Redacted(), err)
		}
		if err == nil {
			pgMade[name] = true
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Postgres is the URL of a new, empty database of the tests' server,
// dropped when t ends; with no server to reach, t fails where one is
// required and skips elsewhere.
func Postgres(t testing.TB) string {
	t.Helper()
	u, err := PostgresDatabase(t.TempDir())
	if err != nil {
		Missing(t, "no PostgreSQL server for the tests (set %s, or start one on the local socket): %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		if pu, err := url.Parse(u); err == nil {
			dropPostgres(pu.Path[1:])
		}
	})
	return u
}

// DropPostgres drops every database PostgresDatabase made in this
// process (and, after PostgresRun, in the processes it started): a
// TestMain calls it after the tests.
func DropPostgres() {
	pgMu.Lock()
	var names []string
	for name := range pgMade {
		names = append(names, name)
	}
	pgMu.Unlock()
	if pgOwner {
		if db, err := sql.Open("pgx", postgresServer()); err == nil {
			rows, err := db.Query(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, pgPrefix())
			for err == nil && rows.Next() {
				var n string
				if rows.Scan(&n) == nil {
					names = append(names, n)
				}
			}
			if rows != nil {
				rows.Close()
			}
			db.Close()
		}
	}
	dropPostgres(names...)
}

func dropPostgres(names ...string) {
	if len(names) == 0 {
		return
	}
	db, err := sql.Open("pgx", postgresServer())
	if err != nil {
		return
	}
	defer db.Close()
	for _, name := range names {
		if _, err := db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err == nil {
			pgMu.Lock()
			delete(pgMade, name)
			pgMu.Unlock()
		}
	}
}
