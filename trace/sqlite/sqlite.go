// Package sqlite owns the SQLite store of the trace (trace.Store and
// trace.Durable): one file in WAL mode that several processes append to at
// once, its schema versioned by migrations, every table append-only
// (enforced by triggers, not promised) but the leases of durable runs,
// every record redacted, then linked in the trace's keyed hash chain
// (trace.Link) and verified against it, and the leases, checkpoints and
// decisions of durable runs. It is the only package of rein that links
// modernc.org/sqlite.
//
// It imports only trace of rein: it stores plain records and must not
// learn how a decision was made or a command confined.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/trace"
)

// Store is the trace in one SQLite file, in WAL mode, with a busy
// timeout and immediate transactions so that several processes can append
// to it at once. It is a trace.Durable.
type Store struct {
	db     *sql.DB
	redact *trace.Redactor
	key    *trace.Key
	path   string

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

var _ trace.Durable = (*Store)(nil)

// appendOnly is what an UPDATE or DELETE on the trace fails with.
const appendOnly = "the trace is append-only"

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

// chained are the tables whose every row is in the chain.
var chained = []string{"runs", "run_ends", "steps", "policy_events", "process_handles", "handle_output", "sandbox_events", "edits", "audit",
	"provider_calls", "gate_attempts", "checkpoints", "blobs", "approval_requests", "approval_decisions", "summaries", "step_times",
	"conversation_turns"}

// Option is an option of Open.
type Option func(*Store)

// WithKey keys the links the store writes with k (HMAC-SHA256). Without
// it, links are of SHA-256 alone, which anyone who can write the file can
// make again, and a store whose chain is keyed is refused for appending.
func WithKey(k *trace.Key) Option { return func(s *Store) { s.key = k } }

// Open opens (creating it and its directory where missing) the store at
// path and brings its schema up to date. Every text is redacted by r
// (nil: the patterns only) before it is written.
func Open(path string, r *trace.Redactor, opts ...Option) (*Store, error) {
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
	s := &Store{db: db, redact: r, path: path, stmts: map[string]*sql.Stmt{}}
	for _, o := range opts {
		o(s)
	}
	if s.key != nil {
		// A command that could read the key (on the none rung) and print
		// it would hand it to whoever reads the trace.
		s.redact = s.redact.WithKey(s.key)
	}
	// The first connection of a store none has made yet switches it to
	// WAL, which SQLite refuses at once (SQLITE_BUSY, without the busy
	// handler) while another process does the same: the switch is tried
	// again, for as long as the busy timeout.
	for deadline := time.Now().Add(busyTimeout); ; {
		err := s.migrate()
		if err == nil {
			break
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond)
	}
	// Every statement a write uses is prepared now, while the one
	// connection is free: a transaction holds it later.
	queries := []string{headQuery, linkQuery}
	for _, t := range recordTypes {
		queries = append(queries, insertQuery(trace.Table(reflect.New(t).Elem().Interface().(trace.Record)), columns(t)))
	}
	for _, q := range queries {
		st, err := db.Prepare(q)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("trace: %w", err)
		}
		s.stmts[q] = st
	}
	return s, nil
}

const (
	headQuery = `SELECT hash, key_id FROM chain ORDER BY seq DESC LIMIT 1`
	linkQuery = `INSERT INTO chain (tbl, row, prev, hash, key_id) VALUES (?, ?, ?, ?, ?)`
)

func insertQuery(tbl string, cols []column) string {
	names, marks := make([]string, len(cols)), make([]string, len(cols))
	for j, c := range cols {
		names[j], marks[j] = `"`+c.name+`"`, "?"
	}
	return fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, tbl, strings.Join(names, ", "), strings.Join(marks, ", "))
}

// busyTimeout is how long a write waits for another's.
const busyTimeout = 10 * time.Second

// Path is where the store is.
func (s *Store) Path() string { return s.path }

func (s *Store) migrate() error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("trace: %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("trace: %s: %w", s.path, err)
	}
	var have int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("trace: %s: %w", s.path, err)
	}
	if have > len(migrations) {
		return fmt.Errorf("trace: %s has schema version %d, newer than this rein knows (%d)", s.path, have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.Exec(migrations[v-1]); err != nil {
			return fmt.Errorf("trace: migration %d: %w", v, err)
		}
		{
			for _, t := range appendOnlyFrom[v] {
				for _, op := range []string{"UPDATE", "DELETE"} {
					q := fmt.Sprintf(`CREATE TRIGGER %s_no_%s BEFORE %s ON %s BEGIN SELECT RAISE(ABORT, '%s'); END`, t, strings.ToLower(op), op, t, appendOnly)
					if _, err := tx.Exec(q); err != nil {
						return fmt.Errorf("trace: migration %d: %w", v, err)
					}
				}
			}
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("trace: migration %d: %w", v, err)
		}
	}
	return tx.Commit()
}

// Close closes the store.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.mu.Unlock()
	return s.db.Close()
}

// column is one field of a record and its column.
type column struct {
	name  string
	index int
}

var columnsCache sync.Map // reflect.Type -> []column

// columns lists a record type's stored fields: every field with a JSON
// name but the ID, which is the row's rowid.
func columns(t reflect.Type) []column {
	if c, ok := columnsCache.Load(t); ok {
		return c.([]column)
	}
	var out []column
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "id" && t.Name() != "Run" {
			continue
		}
		out = append(out, column{name: name, index: i})
	}
	columnsCache.Store(t, out)
	return out
}

func (s *Store) stmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.stmts[q]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("a statement that was not prepared: %s", q)
	}
	return tx.StmtContext(ctx, st), nil
}

// Append redacts r, writes it and links it into the hash chain, in one
// transaction; it returns the record's id.
func (s *Store) Append(ctx context.Context, r trace.Record) (int64, error) {
	ids, err := s.AppendAll(ctx, r)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AppendAll appends records in one transaction, in order, and returns
// their ids. A record after a Step whose StepID is zero gets that step's
// id: a call and what it decided and did are written together.
func (s *Store) AppendAll(ctx context.Context, recs ...trace.Record) ([]int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer tx.Rollback()
	ids, err := s.appendTx(ctx, tx, recs)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return ids, nil
}

// appendTx appends records within tx, linking each into the chain after
// the head tx sees.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, recs []trace.Record) ([]int64, error) {
	head, err := s.stmt(ctx, tx, headQuery)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var prev, headKey string
	if err := head.QueryRowContext(ctx).Scan(&prev, &headKey); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("trace: reading the chain's head: %w", err)
	}
	keyID := ""
	if s.key != nil {
		keyID = s.key.ID()
		if headKey != "" && headKey != keyID {
			// A link of another key after this one's leaves a chain
			// neither key can check whole.
			return nil, fmt.Errorf("trace: the chain of %s is keyed with key id %s, not with this store's key (id %s): open it with the key it was written with (a store several writers share is keyed with one key given to each)", s.path, headKey, keyID)
		}
	} else if headKey != "" {
		// An unkeyed link after keyed ones is what a forger would write:
		// Verify fails on it.
		return nil, fmt.Errorf("trace: the chain of %s is keyed (key id %s): open it with its key", s.path, headKey)
	}
	link, err := s.stmt(ctx, tx, linkQuery)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	ids := make([]int64, len(recs))
	var step int64
	for i, r := range recs {
		v := reflect.ValueOf(r)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		rec := reflect.New(v.Type()).Elem()
		rec.Set(v)
		if f := rec.FieldByName("StepID"); f.IsValid() && f.Int() == 0 && step != 0 {
			f.SetInt(step)
		}
		s.redactFields(rec)
		cols := columns(rec.Type())
		args := make([]any, len(cols))
		for j, c := range cols {
			args[j] = toSQL(rec.Field(c.index))
		}
		tbl := trace.Table(r)
		st, err := s.stmt(ctx, tx, insertQuery(tbl, cols))
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("trace: appending to %s: %w", tbl, err)
		}
		row, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		if f := rec.FieldByName("ID"); f.IsValid() && f.Kind() == reflect.Int64 {
			f.SetInt(row)
		}
		if tbl == "steps" {
			step = row
		}
		hash := trace.Link(s.key, prev, tbl, row, rec.Interface().(trace.Record))
		if _, err := link.ExecContext(ctx, tbl, row, prev, hash, keyID); err != nil {
			return nil, fmt.Errorf("trace: linking the chain: %w", err)
		}
		prev, ids[i] = hash, row
	}
	return ids, nil
}

// redactFields redacts every text of rec and puts its times in UTC, the
// form they are stored and hashed in.
func (s *Store) redactFields(rec reflect.Value) {
	for i := 0; i < rec.NumField(); i++ {
		f := rec.Field(i)
		switch {
		case f.Kind() == reflect.String:
			f.SetString(s.redact.Redact(f.String()))
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(f.Interface().(time.Time).UTC().Round(0)))
		}
	}
}

func toSQL(f reflect.Value) any {
	if t, ok := f.Interface().(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return f.Interface()
}

// query reads the rows of tbl matching where into records like proto.
func query[T trace.Record](ctx context.Context, s *Store, where string, args ...any) ([]T, error) {
	var zero T
	t := reflect.TypeOf(zero)
	cols := columns(t)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = `"` + c.name + `"`
	}
	q := fmt.Sprintf(`SELECT rowid, %s FROM %s %s`, strings.Join(names, ", "), trace.Table(zero), where)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		rec, err := scan(rows, t, cols)
		if err != nil {
			return nil, err
		}
		out = append(out, rec.Interface().(T))
	}
	return out, rows.Err()
}

// scan reads one row (rowid first) into a new record of type t.
func scan(rows *sql.Rows, t reflect.Type, cols []column) (reflect.Value, error) {
	rec := reflect.New(t).Elem()
	var rowid int64
	dst := []any{&rowid}
	times := map[int]*string{}
	for _, c := range cols {
		f := rec.Field(c.index)
		if f.Type() == reflect.TypeOf(time.Time{}) {
			var s string
			times[c.index] = &s
			dst = append(dst, &s)
			continue
		}
		dst = append(dst, f.Addr().Interface())
	}
	if err := rows.Scan(dst...); err != nil {
		return rec, fmt.Errorf("trace: %w", err)
	}
	for i, s := range times {
		tm, err := time.Parse(time.RFC3339Nano, *s)
		if err != nil {
			return rec, fmt.Errorf("trace: a malformed time %q: %w", *s, err)
		}
		rec.Field(i).Set(reflect.ValueOf(tm))
	}
	if f := rec.FieldByName("ID"); f.IsValid() && f.Kind() == reflect.Int64 {
		f.SetInt(rowid)
	}
	return rec, nil
}

// Steps lists a run's steps in order.
func (s *Store) Steps(ctx context.Context, runID string) ([]trace.Step, error) {
	return query[trace.Step](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// PolicyEvents lists a run's refusals and approvals; an empty runID lists
// every run's.
func (s *Store) PolicyEvents(ctx context.Context, runID string) ([]trace.PolicyEvent, error) {
	if runID == "" {
		return query[trace.PolicyEvent](ctx, s, `ORDER BY rowid`)
	}
	return query[trace.PolicyEvent](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// Handles lists a run's background handles.
func (s *Store) Handles(ctx context.Context, runID string) ([]trace.Handle, error) {
	return query[trace.Handle](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// HandleOutput lists what was read from one handle, in order.
func (s *Store) HandleOutput(ctx context.Context, runID, handle string) ([]trace.HandleOutput, error) {
	return query[trace.HandleOutput](ctx, s, `WHERE run_id = ? AND handle = ? ORDER BY rowid`, runID, handle)
}

// SandboxEvents lists a run's sandbox events.
func (s *Store) SandboxEvents(ctx context.Context, runID string) ([]trace.SandboxEvent, error) {
	return query[trace.SandboxEvent](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// Edits lists a run's writes.
func (s *Store) Edits(ctx context.Context, runID string) ([]trace.Edit, error) {
	return query[trace.Edit](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// ProviderCalls lists an agent run's model calls, every attempt.
func (s *Store) ProviderCalls(ctx context.Context, runID string) ([]trace.ProviderCall, error) {
	return query[trace.ProviderCall](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// GateAttempts lists an agent run's gate attempts.
func (s *Store) GateAttempts(ctx context.Context, runID string) ([]trace.GateAttempt, error) {
	return query[trace.GateAttempt](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// Summaries lists an agent run's summaries, oldest first.
func (s *Store) Summaries(ctx context.Context, runID string) ([]trace.Summary, error) {
	return query[trace.Summary](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// ConversationTurns lists a conversation's turns, turn 0 first.
func (s *Store) ConversationTurns(ctx context.Context, conv string) ([]trace.ConversationTurn, error) {
	return query[trace.ConversationTurn](ctx, s, `WHERE conv = ? ORDER BY turn`, conv)
}

// ConversationStarts lists every conversation's turn 0, oldest first.
func (s *Store) ConversationStarts(ctx context.Context) ([]trace.ConversationTurn, error) {
	return query[trace.ConversationTurn](ctx, s, `WHERE turn = 0 ORDER BY rowid`)
}

// StepTimes lists where each step of an agent run spent its time, in
// order.
func (s *Store) StepTimes(ctx context.Context, runID string) ([]trace.StepTime, error) {
	return query[trace.StepTime](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
}

// Runs lists the newest runs first, at most limit (0: all).
func (s *Store) Runs(ctx context.Context, limit int) ([]trace.RunSummary, error) {
	q := `WHERE 1 ORDER BY rowid DESC`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	runs, err := query[trace.Run](ctx, s, q)
	if err != nil {
		return nil, err
	}
	out := make([]trace.RunSummary, len(runs))
	for i, r := range runs {
		out[i].Run = r
		var ended, status sql.NullString
		err := s.db.QueryRowContext(ctx, `SELECT
			(SELECT ended_at FROM run_ends WHERE run_id = ?1 ORDER BY rowid DESC LIMIT 1),
			(SELECT status FROM run_ends WHERE run_id = ?1 ORDER BY rowid DESC LIMIT 1),
			(SELECT COUNT(*) FROM steps WHERE run_id = ?1),
			(SELECT COUNT(*) FROM policy_events WHERE run_id = ?1 AND kind = 'refusal'),
			(SELECT COUNT(*) FROM process_handles WHERE run_id = ?1)`, r.ID).Scan(&ended, &status, &out[i].Steps, &out[i].Refusals, &out[i].Handles)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		if ended.Valid {
			if t, err := time.Parse(time.RFC3339Nano, ended.String); err == nil {
				out[i].EndedAt = &t
			}
			out[i].Status = status.String
		}
	}
	return out, nil
}

// recordTypes maps a chained table to its record type.
var recordTypes = map[string]reflect.Type{
	"runs": reflect.TypeOf(trace.Run{}), "run_ends": reflect.TypeOf(trace.RunEnd{}), "steps": reflect.TypeOf(trace.Step{}),
	"policy_events": reflect.TypeOf(trace.PolicyEvent{}), "process_handles": reflect.TypeOf(trace.Handle{}),
	"handle_output": reflect.TypeOf(trace.HandleOutput{}), "sandbox_events": reflect.TypeOf(trace.SandboxEvent{}),
	"edits": reflect.TypeOf(trace.Edit{}), "audit": reflect.TypeOf(trace.Audit{}),
	"provider_calls": reflect.TypeOf(trace.ProviderCall{}), "gate_attempts": reflect.TypeOf(trace.GateAttempt{}),
	"checkpoints": reflect.TypeOf(trace.Checkpoint{}), "blobs": reflect.TypeOf(trace.Blob{}),
	"approval_requests": reflect.TypeOf(trace.ApprovalRequest{}), "approval_decisions": reflect.TypeOf(trace.ApprovalDecision{}),
	"summaries": reflect.TypeOf(trace.Summary{}), "step_times": reflect.TypeOf(trace.StepTime{}),
	"conversation_turns": reflect.TypeOf(trace.ConversationTurn{}),
}

// Verify checks the chain (VerifyChain without a kept head).
func (s *Store) Verify(ctx context.Context) error {
	_, err := s.VerifyChain(ctx, nil)
	return err
}

// VerifyChain recomputes every link of the chain from the records it
// names, with the store's key where a link is keyed, and checks that every
// record is linked: an edited, deleted, reordered or inserted record, an
// edited link, an unkeyed link after keyed ones, or a link keyed with a key
// the store was not given (which cannot be checked) is reported. With
// kept, a head read from the chain earlier, it also checks that the chain
// still extends it: the newest records removed together with their links
// are detected only that way. The chain found is returned with the error.
func (s *Store) VerifyChain(ctx context.Context, kept *trace.Head) (*trace.Chain, error) {
	c := &trace.Chain{}
	if s.key != nil {
		c.KeyID = s.key.ID()
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, tbl, row, prev, hash, key_id FROM chain ORDER BY seq`)
	if err != nil {
		return c, fmt.Errorf("trace: %w", err)
	}
	type link struct {
		seq, row               int64
		tbl, prev, hash, keyID string
	}
	var links []link
	for rows.Next() {
		var l link
		if err := rows.Scan(&l.seq, &l.tbl, &l.row, &l.prev, &l.hash, &l.keyID); err != nil {
			rows.Close()
			return c, fmt.Errorf("trace: %w", err)
		}
		links = append(links, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("trace: %w", err)
	}
	prev := ""
	linked := map[string]int64{}
	var unchecked *trace.VerifyError
	for _, l := range links {
		fail := func(format string, args ...any) error {
			return &trace.VerifyError{Seq: l.seq, Table: l.tbl, Row: l.row, Reason: fmt.Sprintf(format, args...)}
		}
		if l.prev != prev {
			return c, fail("links to %.12s, but the link before it is %.12s", l.prev, prev)
		}
		var key *trace.Key
		switch {
		case l.keyID == "" && c.Keyed+c.OtherKey > 0:
			return c, fail("is not keyed, but links before it are: the chain was linked again without the key")
		case l.keyID == "":
			c.Unkeyed++
		case s.key != nil && l.keyID == s.key.ID():
			key = s.key
			c.Keyed++
			if c.FirstKeyed == 0 {
				c.FirstKeyed = l.seq
			}
		default:
			c.OtherKey++
			if c.FirstKeyed == 0 {
				c.FirstKeyed = l.seq
			}
			if unchecked == nil {
				reason := fmt.Sprintf("is keyed with the key of id %s, and no key was given to check it", l.keyID)
				if s.key != nil {
					reason = fmt.Sprintf("is keyed with the key of id %s, not with the key given (id %s): it cannot be checked", l.keyID, s.key.ID())
				}
				unchecked = fail("%s", reason).(*trace.VerifyError)
			}
		}
		t, ok := recordTypes[l.tbl]
		if !ok {
			return c, fail("names no table of the trace")
		}
		cols := columns(t)
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = `"` + c.name + `"`
		}
		r, err := s.db.QueryContext(ctx, fmt.Sprintf(`SELECT rowid, %s FROM %s WHERE rowid = ?`, strings.Join(names, ", "), l.tbl), l.row)
		if err != nil {
			return c, fmt.Errorf("trace: %w", err)
		}
		if !r.Next() {
			r.Close()
			return c, fail("the record is missing")
		}
		rec, err := scan(r, t, cols)
		r.Close()
		if err != nil {
			return c, fail("%v", err)
		}
		if (key != nil || l.keyID == "") && trace.Link(key, prev, l.tbl, l.row, rec.Interface().(trace.Record)) != l.hash {
			return c, fail("the record was changed")
		}
		prev = l.hash
		linked[l.tbl]++
		c.Links++
		c.Head = trace.Head{Seq: l.seq, Hash: l.hash}
		if kept != nil && (kept.Seq == l.seq || kept.Seq == 0 && kept.Hash == l.hash) {
			if l.hash != kept.Hash {
				return c, fail("is not the kept head %s: the chain was changed at or before it and linked again", kept)
			}
			c.Extends = true
		}
	}
	for _, t := range chained {
		var n int64
		if err := s.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %s`, t)).Scan(&n); err != nil {
			return c, fmt.Errorf("trace: %w", err)
		}
		if n != linked[t] {
			return c, &trace.VerifyError{Table: t, Reason: fmt.Sprintf("%d records but %d links: a record was added outside the chain", n, linked[t])}
		}
	}
	if kept != nil && !c.Extends {
		if kept.Seq > c.Head.Seq {
			return c, &trace.VerifyError{Reason: fmt.Sprintf("the chain ends at link %d, before the kept head %s: records were removed from its end", c.Head.Seq, kept)}
		}
		return c, &trace.VerifyError{Reason: fmt.Sprintf("no link of the chain is the kept head %s: records were removed from its end, or it was changed and linked again", kept.Hash)}
	}
	if unchecked != nil {
		return c, unchecked
	}
	return c, nil
}
