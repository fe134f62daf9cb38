// Package sqlstore owns the trace store over database/sql that both of
// rein's stores are (trace/sqlite on one file, trace/postgres on a
// server): the records written redacted and linked in the trace's keyed
// hash chain (trace.Link) in the transaction that writes them, read back
// and verified against it; the leases, checkpoints and decisions of
// durable runs; and the migrations that version a schema, each table made
// append-only in the database by the statements its Dialect gives. A
// Dialect says what differs between databases: the schema's types, the
// placeholders, how writers are serialised, what text can be stored.
//
// It imports only trace of rein and database/sql, and links no driver: a
// store's package opens the database and hands it over.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/trace"
)

// Dialect is what one database needs of the store.
type Dialect struct {
	// Name names the database in messages.
	Name string
	// Migrations are applied in order, each once; a store records the
	// ones it has in schema_migrations (made by MigrationsTable). A
	// migration is never edited once released: changes are new ones.
	Migrations      []string
	MigrationsTable string
	// AppendOnly names the tables each migration (from 1) adds, made
	// append-only by the statements Guard gives when it is applied.
	AppendOnly map[int][]string
	Guard      func(table string) []string
	// Numbered rewrites each ? placeholder to $1, $2, ...
	Numbered bool
	// Lock, run first in every write transaction, serialises it against
	// every other writer of the store, in any process or host (nil: the
	// database does, as SQLite's immediate transactions).
	Lock func(ctx context.Context, tx *sql.Tx) error
	// Retry says the migration failed for a moment's contention and is
	// tried again for as long as RetryFor.
	Retry    func(error) bool
	RetryFor time.Duration
	// LegacyUnkeyed admits links of SHA-256 alone before the keyed ones
	// of a keyed store: SQLite files written before rein had keys. A
	// store without it is keyed from its first link or never: a keyed
	// store refuses every unkeyed link, so that whoever can write the
	// database but has no key cannot put an unkeyed history in its place.
	LegacyUnkeyed bool
	// Text makes a text one the database holds as it is (nil: any is),
	// applied before a record is linked, so the link hashes what is
	// stored.
	Text func(string) string
}

// Store is the trace in a SQL database: a trace.Durable, safe for
// concurrent use and for several processes (and, on a server, hosts)
// writing at once.
type Store struct {
	db      *sql.DB
	dialect *Dialect
	redact  *trace.Redactor
	key     *trace.Key
	where   string

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

var _ trace.Durable = (*Store)(nil)

// AppendOnlyMessage is what an UPDATE or DELETE on the trace fails with.
const AppendOnlyMessage = "the trace is append-only"

// Chained are the tables whose every row is in the chain.
var Chained = []string{"runs", "run_ends", "steps", "policy_events", "process_handles", "handle_output", "sandbox_events", "edits", "audit",
	"provider_calls", "gate_attempts", "checkpoints", "blobs", "approval_requests", "approval_decisions", "summaries", "step_times",
	"conversation_turns"}

// Open brings the schema of db up to date and returns the store over it:
// where names it in messages (a file's path, a server's address without
// its password); every text is redacted by r (nil: the patterns only)
// before it is written; key (nil: none) keys the links it writes
// (HMAC-SHA256). Without a key links are of SHA-256 alone, which anyone
// who can write the database can make again, and a store whose chain is
// keyed is refused for appending. The store owns db from then: Close
// closes it, and so does a failed Open.
func Open(db *sql.DB, d *Dialect, where string, r *trace.Redactor, key *trace.Key) (*Store, error) {
	s := &Store{db: db, dialect: d, redact: r, key: key, where: where, stmts: map[string]*sql.Stmt{}}
	if s.key != nil {
		// A command that could read the key (on the none rung) and print
		// it would hand it to whoever reads the trace.
		s.redact = s.redact.WithKey(s.key)
	}
	for deadline := time.Now().Add(d.RetryFor); ; {
		err := s.migrate()
		if err == nil {
			break
		}
		if d.Retry == nil || !d.Retry(err) || time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond)
	}
	// Every statement a write uses is prepared now, while the
	// connections are free: a transaction holds one later (SQLite's
	// store has only one).
	queries := []string{headQuery, linkQuery}
	for _, t := range recordTypes {
		queries = append(queries, insertQuery(trace.Table(reflect.New(t).Elem().Interface().(trace.Record)), columns(t)))
	}
	for _, q := range queries {
		st, err := db.Prepare(s.bind(q))
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
	linkQuery = `INSERT INTO chain (tbl, "row", prev, hash, key_id) VALUES (?, ?, ?, ?, ?)`
)

func insertQuery(tbl string, cols []column) string {
	names, marks := make([]string, len(cols)), make([]string, len(cols))
	for j, c := range cols {
		names[j], marks[j] = `"`+c.name+`"`, "?"
	}
	return fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s) RETURNING rowid`, tbl, strings.Join(names, ", "), strings.Join(marks, ", "))
}

// bind writes q's placeholders as the dialect takes them.
func (s *Store) bind(q string) string {
	if !s.dialect.Numbered || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// text makes the string arguments of a query the texts the database
// holds, as the records were written: an id with a byte the database
// cannot hold is looked up as it was stored.
func (s *Store) text(args []any) []any {
	if s.dialect.Text == nil {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		if v, ok := a.(string); ok {
			a = s.dialect.Text(v)
		}
		out[i] = a
	}
	return out
}

// exec, queryRow and queryRows run q (its placeholders ?) on db or tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	args = s.text(args)
	if tx != nil {
		return tx.ExecContext(ctx, s.bind(q), args...)
	}
	return s.db.ExecContext(ctx, s.bind(q), args...)
}

func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	args = s.text(args)
	if tx != nil {
		return tx.QueryRowContext(ctx, s.bind(q), args...)
	}
	return s.db.QueryRowContext(ctx, s.bind(q), args...)
}

func (s *Store) queryRows(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	args = s.text(args)
	return s.db.QueryContext(ctx, s.bind(q), args...)
}

// begin starts a write transaction, serialised against every other
// writer.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if s.dialect.Lock != nil {
		if err := s.dialect.Lock(ctx, tx); err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("trace: waiting for the other writers of %s: %w", s.where, err)
		}
	}
	return tx, nil
}

// Path names the store: a file's path, or a server's address without its
// password.
func (s *Store) Path() string { return s.where }

// DB is the database under the store, for whoever reads it as SQL. A
// write through it is no record of rein's: it is not linked, and
// VerifyChain reports it.
func (s *Store) DB() *sql.DB { return s.db }

func (s *Store) migrate() error {
	ctx := context.Background()
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("trace: %s: %w", s.where, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(s.dialect.MigrationsTable); err != nil {
		return fmt.Errorf("trace: %s: %w", s.where, err)
	}
	var have int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("trace: %s: %w", s.where, err)
	}
	ms := s.dialect.Migrations
	if have > len(ms) {
		return fmt.Errorf("trace: %s has schema version %d, newer than this rein knows (%d)", s.where, have, len(ms))
	}
	for v := have + 1; v <= len(ms); v++ {
		if _, err := tx.Exec(ms[v-1]); err != nil {
			return fmt.Errorf("trace: migration %d: %w", v, err)
		}
		for _, t := range s.dialect.AppendOnly[v] {
			for _, q := range s.dialect.Guard(t) {
				if _, err := tx.Exec(q); err != nil {
					return fmt.Errorf("trace: migration %d: %w", v, err)
				}
			}
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
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
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
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
			return nil, fmt.Errorf("trace: the chain of %s is keyed with key id %s, not with this store's key (id %s): open it with the key it was written with (a store several writers share is keyed with one key given to each)", s.where, headKey, keyID)
		}
		if headKey == "" && prev != "" && !s.dialect.LegacyUnkeyed {
			return nil, fmt.Errorf("trace: the chain of %s has links made without a key: a %s trace is keyed from its first link, so this one was written without the key, and is not appended to (rein trace verify says where)", s.where, s.dialect.Name)
		}
	} else if headKey != "" {
		// An unkeyed link after keyed ones is what a forger would write:
		// Verify fails on it.
		return nil, fmt.Errorf("trace: the chain of %s is keyed (key id %s): open it with its key", s.where, headKey)
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
		if err := s.idsFit(rec, trace.Table(r)); err != nil {
			return nil, err
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
		var row int64
		if err := st.QueryRowContext(ctx, args...).Scan(&row); err != nil {
			return nil, fmt.Errorf("trace: appending to %s: %w", tbl, err)
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

// idFields are the columns that name a run, a request, a conversation, a
// handle or a blob: what records are looked up by.
var idFields = map[string]bool{"id": true, "run_id": true, "request": true, "conv": true, "from_conv": true, "handle": true, "call_id": true, "result_id": true, "hash": true}

// idsFit refuses a record whose ids the database would store otherwise
// than given (a NUL, or invalid UTF-8, where the dialect's Text changes
// them): two ids would become one.
func (s *Store) idsFit(rec reflect.Value, tbl string) error {
	if s.dialect.Text == nil {
		return nil
	}
	for _, c := range columns(rec.Type()) {
		f := rec.Field(c.index)
		if idFields[c.name] && f.Kind() == reflect.String && s.dialect.Text(f.String()) != f.String() {
			return fmt.Errorf("trace: %s %q of a record of %s holds a byte a %s trace cannot store (NUL, or invalid UTF-8): refused", c.name, f.String(), tbl, s.dialect.Name)
		}
	}
	return nil
}

// redactFields redacts every text of rec (and makes it one the database
// holds) and puts its times in UTC, the form they are stored and hashed
// in.
func (s *Store) redactFields(rec reflect.Value) {
	for i := 0; i < rec.NumField(); i++ {
		f := rec.Field(i)
		switch {
		case f.Kind() == reflect.String:
			text := s.redact.Redact(f.String())
			if s.dialect.Text != nil {
				text = s.dialect.Text(text)
			}
			f.SetString(text)
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
	return queryCols[T](ctx, s, nil, where, args...)
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
	q := `ORDER BY rowid DESC`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	return s.runs(ctx, q)
}

// runs lists the runs where says, each with its end and its counts.
func (s *Store) runs(ctx context.Context, where string, args ...any) ([]trace.RunSummary, error) {
	runs, err := query[trace.Run](ctx, s, where, args...)
	if err != nil {
		return nil, err
	}
	out := make([]trace.RunSummary, len(runs))
	for i, r := range runs {
		out[i].Run = r
		var ended, status sql.NullString
		err := s.queryRow(ctx, nil, `SELECT
			(SELECT ended_at FROM run_ends WHERE run_id = ? ORDER BY rowid DESC LIMIT 1),
			(SELECT status FROM run_ends WHERE run_id = ? ORDER BY rowid DESC LIMIT 1),
			(SELECT COUNT(*) FROM steps WHERE run_id = ?),
			(SELECT COUNT(*) FROM policy_events WHERE run_id = ? AND kind = 'refusal'),
			(SELECT COUNT(*) FROM process_handles WHERE run_id = ?)`, r.ID, r.ID, r.ID, r.ID, r.ID).Scan(&ended, &status, &out[i].Steps, &out[i].Refusals, &out[i].Handles)
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

// missingError is a link's record that is not there to read.
type missingError struct{ reason string }

func (e *missingError) Error() string { return "trace: " + e.reason }

// Record reads the record at row of table, as a link of the chain names
// it.
func (s *Store) Record(ctx context.Context, table string, row int64) (trace.Record, error) {
	t, ok := recordTypes[table]
	if !ok {
		return nil, &missingError{"names no table of the trace"}
	}
	cols := columns(t)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = `"` + c.name + `"`
	}
	r, err := s.queryRows(ctx, fmt.Sprintf(`SELECT rowid, %s FROM %s WHERE rowid = ?`, strings.Join(names, ", "), table), row)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer r.Close()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		return nil, &missingError{"the record is missing"}
	}
	rec, err := scan(r, t, cols)
	if err != nil {
		return nil, &missingError{err.Error()}
	}
	return rec.Interface().(trace.Record), nil
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
	rows, err := s.queryRows(ctx, `SELECT seq, tbl, "row", prev, hash, key_id FROM chain ORDER BY seq`)
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
		case l.keyID == "" && s.key != nil && !s.dialect.LegacyUnkeyed:
			return c, fail("is not keyed: a %s trace is keyed from its first link, so this link was made without the key", s.dialect.Name)
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
		rec, err := s.Record(ctx, l.tbl, l.row)
		var missing *missingError
		switch {
		case errors.As(err, &missing):
			return c, fail("%s", missing.reason)
		case err != nil:
			return c, err
		}
		if (key != nil || l.keyID == "") && trace.Link(key, prev, l.tbl, l.row, rec) != l.hash {
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
	for _, t := range Chained {
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
