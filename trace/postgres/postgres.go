// Package postgres owns the PostgreSQL store of the trace (trace.Store
// and trace.Durable): one database that the rein processes of many hosts
// append to at once, with the schema of its migrations, every table
// append-only in the database (a trigger refuses UPDATE, DELETE and
// TRUNCATE) but the leases of durable runs. What every store does (the
// redaction, the keyed hash chain, the leases, checkpoints and
// decisions) is package sqlstore's; this package connects to the server
// and says what PostgreSQL needs: its types, numbered placeholders, one
// writer at a time (an advisory lock of the database, as SQLite's
// immediate transactions do on a file), and text without NUL or invalid
// UTF-8, which PostgreSQL's text cannot hold. It is the only package of
// rein that links github.com/jackc/pgx.
//
// It imports only trace and trace/sqlstore of rein: it stores plain
// records and must not learn how a decision was made or a command
// confined.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// Store is the trace in a PostgreSQL database. It is a trace.Durable.
type Store = sqlstore.Store

// IsURL says whether s names a PostgreSQL server (a postgres:// or
// postgresql:// URL) rather than a file.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// writersLock is the key of the advisory lock every write transaction
// takes first ("rein" in ASCII): writers of one database take turns, so
// the chain has one head. Advisory locks are the database's own, so
// stores in other databases of the server do not wait for it.
const writersLock = 0x7265696e

// migrations are applied in order, each once; a store records the ones it
// has in schema_migrations. A migration is never edited once released:
// changes are new migrations. Every record table has a rowid, the row's
// number, in the order rows were written; times are RFC 3339 text in UTC,
// as the chain hashes them.
var migrations = []string{
	// 1: the function the append-only triggers call, and the tables of
	// schema 9 of the SQLite store.
	`CREATE FUNCTION rein_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		RAISE EXCEPTION '` + sqlstore.AppendOnlyMessage + `' USING ERRCODE = 'insufficient_privilege';
	END $$;
	CREATE TABLE runs (rowid BIGSERIAL PRIMARY KEY, "id" TEXT NOT NULL UNIQUE, "started_at" TEXT NOT NULL, "workspace" TEXT NOT NULL,
		"surface" TEXT NOT NULL, "mode" TEXT NOT NULL, "source" TEXT NOT NULL, "pid" BIGINT NOT NULL);
	CREATE TABLE run_ends (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "ended_at" TEXT NOT NULL, "status" TEXT NOT NULL);
	CREATE INDEX run_ends_run ON run_ends (run_id);
	CREATE TABLE steps (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "index" BIGINT NOT NULL, "tool" TEXT NOT NULL, "args" TEXT NOT NULL,
		"status" TEXT NOT NULL, "reason" TEXT NOT NULL, "result_id" TEXT NOT NULL, "observation" TEXT NOT NULL,
		"started_at" TEXT NOT NULL, "duration_ms" DOUBLE PRECISION NOT NULL);
	CREATE INDEX steps_run ON steps (run_id);
	CREATE TABLE policy_events (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step_id" BIGINT NOT NULL, "kind" TEXT NOT NULL,
		"decision" TEXT NOT NULL, "rule" TEXT NOT NULL, "layer" TEXT NOT NULL, "file" TEXT NOT NULL, "reason" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX policy_events_run ON policy_events (run_id);
	CREATE TABLE process_handles (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step_id" BIGINT NOT NULL, "handle" TEXT NOT NULL,
		"line" TEXT NOT NULL, "rung" TEXT NOT NULL, "capture" TEXT NOT NULL, "started_at" TEXT NOT NULL);
	CREATE INDEX process_handles_run ON process_handles (run_id);
	CREATE TABLE handle_output (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "handle" TEXT NOT NULL, "offset" BIGINT NOT NULL,
		"skipped" BIGINT NOT NULL, "data" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX handle_output_run ON handle_output (run_id, handle);
	CREATE TABLE sandbox_events (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step_id" BIGINT NOT NULL, "kind" TEXT NOT NULL,
		"detail" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX sandbox_events_run ON sandbox_events (run_id);
	CREATE TABLE edits (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step_id" BIGINT NOT NULL, "path" TEXT NOT NULL,
		"diff" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX edits_run ON edits (run_id);
	CREATE TABLE audit (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "kind" TEXT NOT NULL, "meta" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE TABLE chain (seq BIGSERIAL PRIMARY KEY, tbl TEXT NOT NULL, "row" BIGINT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL,
		key_id TEXT NOT NULL DEFAULT '', UNIQUE (tbl, "row"));
	CREATE TABLE provider_calls (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step" BIGINT NOT NULL, "attempt" BIGINT NOT NULL,
		"provider" TEXT NOT NULL, "model" TEXT NOT NULL, "input_tokens" BIGINT NOT NULL, "output_tokens" BIGINT NOT NULL,
		"cache_read_tokens" BIGINT NOT NULL, "cache_write_tokens" BIGINT NOT NULL, "latency_ms" DOUBLE PRECISION NOT NULL,
		"first_token_ms" DOUBLE PRECISION NOT NULL, "finish" TEXT NOT NULL, "failure" TEXT NOT NULL, "request" TEXT NOT NULL,
		"response" TEXT NOT NULL, "error" TEXT NOT NULL, "at" TEXT NOT NULL, "purpose" TEXT NOT NULL DEFAULT '');
	CREATE INDEX provider_calls_run ON provider_calls (run_id);
	CREATE TABLE gate_attempts (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step" BIGINT NOT NULL, "line" TEXT NOT NULL,
		"status" TEXT NOT NULL, "exit_code" BIGINT NOT NULL, "tampered" TEXT NOT NULL, "result_id" TEXT NOT NULL,
		"duration_ms" DOUBLE PRECISION NOT NULL, "at" TEXT NOT NULL, "evidence" TEXT NOT NULL DEFAULT '', "tests" TEXT NOT NULL DEFAULT '');
	CREATE INDEX gate_attempts_run ON gate_attempts (run_id);
	CREATE TABLE checkpoints (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "seq" BIGINT NOT NULL, "generation" BIGINT NOT NULL,
		"format" BIGINT NOT NULL, "status" TEXT NOT NULL, "waiting" TEXT NOT NULL, "state" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX checkpoints_run ON checkpoints (run_id, seq);
	CREATE TABLE blobs (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "hash" TEXT NOT NULL, "data" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX blobs_run ON blobs (run_id, hash);
	CREATE TABLE approval_requests (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "request" TEXT NOT NULL, "kind" TEXT NOT NULL,
		"call_id" TEXT NOT NULL, "tool" TEXT NOT NULL, "args" TEXT NOT NULL, "shown" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE UNIQUE INDEX approval_requests_key ON approval_requests (run_id, request);
	CREATE TABLE approval_decisions (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "request" TEXT NOT NULL, "answer" TEXT NOT NULL,
		"note" TEXT NOT NULL, "by" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE UNIQUE INDEX approval_decisions_key ON approval_decisions (run_id, request);
	CREATE TABLE leases (run_id TEXT PRIMARY KEY, pid BIGINT NOT NULL, host TEXT NOT NULL, generation BIGINT NOT NULL,
		expires_at TEXT NOT NULL, pid_start TEXT NOT NULL DEFAULT '');
	CREATE TABLE summaries (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step" BIGINT NOT NULL, "first_step" BIGINT NOT NULL,
		"last_step" BIGINT NOT NULL, "messages" BIGINT NOT NULL, "chars" BIGINT NOT NULL, "input_tokens" BIGINT NOT NULL,
		"output_tokens" BIGINT NOT NULL, "request" TEXT NOT NULL, "text" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX summaries_run ON summaries (run_id);
	CREATE TABLE step_times (rowid BIGSERIAL PRIMARY KEY, "run_id" TEXT NOT NULL, "step" BIGINT NOT NULL, "model_ms" DOUBLE PRECISION NOT NULL,
		"first_token_ms" DOUBLE PRECISION NOT NULL, "tools_ms" DOUBLE PRECISION NOT NULL, "rein_ms" DOUBLE PRECISION NOT NULL,
		"input_tokens" BIGINT NOT NULL, "cache_read_tokens" BIGINT NOT NULL, "cache_write_tokens" BIGINT NOT NULL, "at" TEXT NOT NULL);
	CREATE INDEX step_times_run ON step_times (run_id, step);
	CREATE TABLE conversation_turns (rowid BIGSERIAL PRIMARY KEY, "conv" TEXT NOT NULL, "turn" BIGINT NOT NULL, "run_id" TEXT NOT NULL,
		"from_conv" TEXT NOT NULL, "from_turn" BIGINT NOT NULL, "config" TEXT NOT NULL, "at" TEXT NOT NULL);
	CREATE UNIQUE INDEX conversation_turns_key ON conversation_turns (conv, turn);`,
}

// dialect is PostgreSQL's.
var dialect = &sqlstore.Dialect{
	Name:            "PostgreSQL",
	Migrations:      migrations,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)`,
	AppendOnly: map[int][]string{
		1: append([]string{"schema_migrations", "chain"}, sqlstore.Chained...),
	},
	// A statement trigger: it refuses an UPDATE or DELETE that matches
	// no row too, and a TRUNCATE, which row triggers never see.
	Guard: func(t string) []string {
		return []string{fmt.Sprintf(`CREATE TRIGGER %s_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION rein_append_only()`, t, t)}
	},
	Numbered: true,
	Lock: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writersLock))
		return err
	},
	Text: func(s string) string {
		s = strings.ToValidUTF8(s, "\uFFFD")
		return strings.ReplaceAll(s, "\x00", "\uFFFD")
	},
}

// Option is an option of Open.
type Option func(*options)

type options struct{ key *trace.Key }

// WithKey keys the links the store writes with k (HMAC-SHA256). Every
// writer of a shared store is given the same key: a store whose chain is
// keyed with another key is refused for appending, and without a key
// links are of SHA-256 alone, which anyone who can write the database can
// make again.
func WithKey(k *trace.Key) Option { return func(o *options) { o.key = k } }

// Open connects to the database at dsn (a postgres:// or postgresql://
// URL, with pgx's parameters) and brings its schema up to date. Every
// text is redacted by r (nil: the patterns only) before it is written.
func Open(dsn string, r *trace.Redactor, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if !IsURL(dsn) {
		return nil, fmt.Errorf("trace: %q is not a postgres:// or postgresql:// URL", Where(dsn))
	}
	where := Where(dsn)
	// A scheme is case-insensitive; pgx reads only the lower case.
	scheme, rest, _ := strings.Cut(dsn, "://")
	dsn = strings.ToLower(scheme) + "://" + rest
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", where, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("trace: connecting to %s: %w", where, err)
	}
	db.SetMaxOpenConns(8)
	return sqlstore.Open(db, dialect, where, r, o.key)
}

// Where is dsn as messages show it: without a password, in the URL's
// user or in a parameter.
func Where(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "a PostgreSQL URL that does not parse"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// The driver "pgx" of database/sql.
var _ = stdlib.GetDefaultDriver
