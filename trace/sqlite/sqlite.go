// Package sqlite owns the SQLite store of the trace (trace.Store and
// trace.Durable): one file in WAL mode that several processes append to at
// once, with the schema of its migrations, every table append-only
// (enforced by triggers, not promised) but the leases of durable runs.
// What every store does (the redaction, the keyed hash chain, the leases,
// checkpoints and decisions) is package sqlstore's; this package opens
// the file and says what SQLite needs. It is the only package of rein that
// links modernc.org/sqlite.
//
// It imports only trace and trace/sqlstore of rein: it stores plain
// records and must not learn how a decision was made or a command
// confined.
package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// Store is the trace in one SQLite file, in WAL mode, with a busy
// timeout and immediate transactions so that several processes can append
// to it at once. It is a trace.Durable.
type Store = sqlstore.Store

// DurableRun is a run with checkpoints as listed.
type DurableRun = sqlstore.DurableRun

// AnsweredError is a second answer to a request, refused: the first one
// stands.
type AnsweredError = sqlstore.AnsweredError

// appendOnly is what an UPDATE or DELETE on the trace fails with.
const appendOnly = sqlstore.AppendOnlyMessage

// migrations are applied in order, each once; a store records the ones it
// has in schema_migrations. A migration is never edited once released:
// changes are new migrations.
var migrations = []string{
	// 1: the tables, the hash chain, and the triggers that make every
	// table append-only.
	`CREATE TABLE runs (id TEXT NOT NULL UNIQUE, started_at TEXT NOT NULL, workspace TEXT NOT NULL, surface TEXT NOT NULL,
		mode TEXT NOT NULL, source TEXT NOT NULL, pid INTEGER NOT NULL);
	CREATE TABLE run_ends (run_id TEXT NOT NULL, ended_at TEXT NOT NULL, status TEXT NOT NULL);
	CREATE TABLE steps (run_id TEXT NOT NULL, "index" INTEGER NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL,
		status TEXT NOT NULL, reason TEXT NOT NULL, result_id TEXT NOT NULL, observation TEXT NOT NULL,
		started_at TEXT NOT NULL, duration_ms REAL NOT NULL);
	CREATE INDEX steps_run ON steps (run_id);
	CREATE TABLE policy_events (run_id TEXT NOT NULL, step_id INTEGER NOT NULL, kind TEXT NOT NULL, decision TEXT NOT NULL,
		rule TEXT NOT NULL, layer TEXT NOT NULL, file TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX policy_events_run ON policy_events (run_id);
	CREATE TABLE process_handles (run_id TEXT NOT NULL, step_id INTEGER NOT NULL, handle TEXT NOT NULL, line TEXT NOT NULL,
		rung TEXT NOT NULL, capture TEXT NOT NULL, started_at TEXT NOT NULL);
	CREATE INDEX process_handles_run ON process_handles (run_id);
	CREATE TABLE handle_output (run_id TEXT NOT NULL, handle TEXT NOT NULL, offset INTEGER NOT NULL, skipped INTEGER NOT NULL,
		data TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX handle_output_run ON handle_output (run_id, handle);
	CREATE TABLE sandbox_events (run_id TEXT NOT NULL, step_id INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX sandbox_events_run ON sandbox_events (run_id);
	CREATE TABLE edits (run_id TEXT NOT NULL, step_id INTEGER NOT NULL, path TEXT NOT NULL, diff TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX edits_run ON edits (run_id);
	CREATE TABLE audit (run_id TEXT NOT NULL, kind TEXT NOT NULL, meta TEXT NOT NULL, at TEXT NOT NULL);
	CREATE TABLE chain (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, row INTEGER NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL,
		UNIQUE (tbl, row));`,
	// 2: an agent run's model calls and gate attempts.
	`CREATE TABLE provider_calls (run_id TEXT NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL, provider TEXT NOT NULL,
		model TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
		cache_write_tokens INTEGER NOT NULL, latency_ms REAL NOT NULL, first_token_ms REAL NOT NULL, finish TEXT NOT NULL,
		failure TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL, error TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX provider_calls_run ON provider_calls (run_id);
	CREATE TABLE gate_attempts (run_id TEXT NOT NULL, step INTEGER NOT NULL, line TEXT NOT NULL, status TEXT NOT NULL,
		exit_code INTEGER NOT NULL, tampered TEXT NOT NULL, result_id TEXT NOT NULL, duration_ms REAL NOT NULL, at TEXT NOT NULL);
	CREATE INDEX gate_attempts_run ON gate_attempts (run_id);`,
	// 3: the key each link was made with: "" for a link of SHA-256 alone,
	// else the ID of the HMAC-SHA256 key.
	`ALTER TABLE chain ADD COLUMN key_id TEXT NOT NULL DEFAULT '';`,
	// 4: durable runs: a checkpoint per step, the large parts of runs by
	// content address, the deferred requests and their answers (all
	// append-only and chained), and the lease of each run's one driver
	// (the only table rows of which change).
	`CREATE TABLE checkpoints (run_id TEXT NOT NULL, seq INTEGER NOT NULL, generation INTEGER NOT NULL, format INTEGER NOT NULL,
		status TEXT NOT NULL, waiting TEXT NOT NULL, state TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX checkpoints_run ON checkpoints (run_id, seq);
	CREATE TABLE blobs (run_id TEXT NOT NULL, hash TEXT NOT NULL, data TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX blobs_run ON blobs (run_id, hash);
	CREATE TABLE approval_requests (run_id TEXT NOT NULL, request TEXT NOT NULL, kind TEXT NOT NULL, call_id TEXT NOT NULL,
		tool TEXT NOT NULL, args TEXT NOT NULL, shown TEXT NOT NULL, at TEXT NOT NULL);
	CREATE UNIQUE INDEX approval_requests_key ON approval_requests (run_id, request);
	CREATE TABLE approval_decisions (run_id TEXT NOT NULL, request TEXT NOT NULL, answer TEXT NOT NULL, note TEXT NOT NULL,
		by TEXT NOT NULL, at TEXT NOT NULL);
	CREATE UNIQUE INDEX approval_decisions_key ON approval_decisions (run_id, request);
	CREATE TABLE leases (run_id TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, generation INTEGER NOT NULL,
		expires_at TEXT NOT NULL);`,
	// 5: the start of the lease's process (its boot and its start time
	// on that boot), so that a pid used again by another process is not
	// taken for the driver.
	`ALTER TABLE leases ADD COLUMN pid_start TEXT NOT NULL DEFAULT '';`,
	// 6: what each gate attempt was judged by, and its runner's counts
	// of the tests (empty in the rows written before, whose links hash
	// the same: an empty field is left out of a record's JSON).
	`ALTER TABLE gate_attempts ADD COLUMN evidence TEXT NOT NULL DEFAULT '';
	ALTER TABLE gate_attempts ADD COLUMN tests TEXT NOT NULL DEFAULT '';`,
	// 7: the summaries an agent run's oldest steps were folded into, and
	// what each model call was for (empty for a step's, in the rows
	// before too).
	`CREATE TABLE summaries (run_id TEXT NOT NULL, step INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL,
		messages INTEGER NOT NULL, chars INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
		request TEXT NOT NULL, text TEXT NOT NULL, at TEXT NOT NULL);
	CREATE INDEX summaries_run ON summaries (run_id);
	ALTER TABLE provider_calls ADD COLUMN purpose TEXT NOT NULL DEFAULT '';`,
	// 8: where each step of an agent run spent its time and tokens.
	`CREATE TABLE step_times (run_id TEXT NOT NULL, step INTEGER NOT NULL, model_ms REAL NOT NULL, first_token_ms REAL NOT NULL,
		tools_ms REAL NOT NULL, rein_ms REAL NOT NULL, input_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
		cache_write_tokens INTEGER NOT NULL, at TEXT NOT NULL);
	CREATE INDEX step_times_run ON step_times (run_id, step);`,
	// 9: conversations, a turn each row, one row a turn.
	`CREATE TABLE conversation_turns (conv TEXT NOT NULL, turn INTEGER NOT NULL, run_id TEXT NOT NULL, from_conv TEXT NOT NULL,
		from_turn INTEGER NOT NULL, config TEXT NOT NULL, at TEXT NOT NULL);
	CREATE UNIQUE INDEX conversation_turns_key ON conversation_turns (conv, turn);`,
}

// appendOnlyFrom are the tables each migration adds, made append-only by
// triggers when it is applied.
var appendOnlyFrom = map[int][]string{
	1: {"runs", "run_ends", "steps", "policy_events", "process_handles", "handle_output", "sandbox_events", "edits", "audit", "chain", "schema_migrations"},
	2: {"provider_calls", "gate_attempts"},
	4: {"checkpoints", "blobs", "approval_requests", "approval_decisions"},
	7: {"summaries"},
	8: {"step_times"},
	9: {"conversation_turns"},
}

// dialect is SQLite's: triggers keep the tables append-only, and the
// immediate transactions serialise writers.
var dialect = &sqlstore.Dialect{
	Name:            "SQLite",
	Migrations:      migrations,
	MigrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`,
	AppendOnly:      appendOnlyFrom,
	Guard: func(t string) []string {
		var qs []string
		for _, op := range []string{"UPDATE", "DELETE"} {
			qs = append(qs, fmt.Sprintf(`CREATE TRIGGER %s_no_%s BEFORE %s ON %s BEGIN SELECT RAISE(ABORT, '%s'); END`, t, strings.ToLower(op), op, t, appendOnly))
		}
		return qs
	},
	// The first connection of a store none has made yet switches it to
	// WAL, which SQLite refuses at once (SQLITE_BUSY, without the busy
	// handler) while another process does the same: the switch is tried
	// again, for as long as the busy timeout.
	Retry: func(err error) bool {
		var se *sqlite.Error
		return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
	},
	RetryFor: busyTimeout,
	// Files written before rein had keys go on keyed.
	LegacyUnkeyed: true,
}

// Option is an option of Open.
type Option func(*options)

type options struct{ key *trace.Key }

// WithKey keys the links the store writes with k (HMAC-SHA256). Without
// it, links are of SHA-256 alone, which anyone who can write the file can
// make again, and a store whose chain is keyed is refused for appending.
func WithKey(k *trace.Key) Option { return func(o *options) { o.key = k } }

// Open opens (creating it and its directory where missing) the store at
// path and brings its schema up to date. Every text is redacted by r
// (nil: the patterns only) before it is written.
func Open(path string, r *trace.Redactor, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("trace: the store path %q may not contain ? or #", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	// SQLite follows links and writes through hard links: a store, or its
	// WAL, that is anything but a plain file of its own is refused.
	for _, f := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		fi, err := os.Lstat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		if links, _, ok := fileOwner(fi); !fi.Mode().IsRegular() || !ok || links != 1 {
			return nil, fmt.Errorf("trace: %s is not a plain file (a link, or a file with other names): refused", f)
		}
	}
	// WAL with synchronous NORMAL survives a crash of any process (not a
	// power loss of the last transactions); the busy timeout and
	// immediate transactions let concurrent writers wait for each other
	// instead of failing.
	dsn := "file:" + path + fmt.Sprintf("?_pragma=busy_timeout(%d)&", busyTimeout.Milliseconds()) + "_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("trace: opening %s: %w", path, err)
	}
	// One connection: writes are serialized by the immediate transactions
	// anyway, and statements stay prepared on it.
	db.SetMaxOpenConns(1)
	return sqlstore.Open(db, dialect, path, r, o.key)
}

// busyTimeout is how long a write waits for another's.
const busyTimeout = 10 * time.Second
