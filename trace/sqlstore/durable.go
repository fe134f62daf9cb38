package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/reinhq/rein/trace"
)

// pidAlive says whether the process of that pid, started at start (""
// when it was not known), exists on this host: a pid of a process started
// at another time is another process's.
func pidAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if !processExists(pid) {
		return false
	}
	if now := processStart(pid); start != "" && now != "" && now != start {
		return false
	}
	return true
}

// processStart is when the process of pid started: the boot's id and the
// start time in clock ticks since that boot (field 22 of /proc/PID/stat),
// or "" where /proc does not say.
func processStart(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command's name, field 2, is in parentheses and may hold
	// spaces: the fields are counted after its closing one.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3; field 22 is fields[19].
	if len(fields) < 20 {
		return ""
	}
	return strings.TrimSpace(string(boot)) + ":" + fields[19]
}

// leaseLive says whether the lease's owner may still be driving the run:
// on this host, while its process lives, whatever the lease's expiry (a
// process stopped, or on a suspended machine, wakes to a run it still
// holds); on another host, which cannot be looked into, until the lease
// expires by this host's clock.
func leaseLive(l trace.Lease, host string, now time.Time) bool {
	if l.PID == 0 {
		return false
	}
	if l.Host == host {
		return pidAlive(l.PID, l.PIDStart)
	}
	return now.Before(l.Expires)
}

// AcquireLease takes the run's lease for this process, for ttl: a run no
// one drives is taken at generation 1; one whose owner is gone is taken
// over at once with the generation bumped; one whose owner may be alive
// is refused with a LeaseHeldError naming it. An owner on this host is
// gone when its process is (its pid ended, or taken by a later process),
// and alive while it lives, however long ago its lease expired; an owner
// on another host is gone when its lease has expired by this host's
// clock, so that hosts sharing a trace must keep their clocks within a
// small part of the lease's length of each other.
func (s *Store) AcquireLease(ctx context.Context, runID string, ttl time.Duration) (trace.Lease, error) {
	host, _ := os.Hostname()
	l := trace.Lease{RunID: runID, PID: os.Getpid(), PIDStart: processStart(os.Getpid()), Host: host}
	tx, err := s.begin(ctx)
	if err != nil {
		return l, err
	}
	defer tx.Rollback()
	var old trace.Lease
	var expires string
	err = s.queryRow(ctx, tx, `SELECT pid, pid_start, host, generation, expires_at FROM leases WHERE run_id = ?`, runID).Scan(&old.PID, &old.PIDStart, &old.Host, &old.Generation, &expires)
	now := time.Now().UTC()
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return l, fmt.Errorf("trace: reading the lease of run %s: %w", runID, err)
	default:
		old.RunID = runID
		old.Expires, _ = time.Parse(time.RFC3339Nano, expires)
		if leaseLive(old, host, now) {
			return l, &trace.LeaseHeldError{Lease: old}
		}
	}
	l.Generation = old.Generation + 1
	l.Expires = now.Add(ttl)
	if _, err := s.exec(ctx, tx, `INSERT INTO leases (run_id, pid, pid_start, host, generation, expires_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET pid = excluded.pid, pid_start = excluded.pid_start, host = excluded.host, generation = excluded.generation, expires_at = excluded.expires_at`,
		runID, l.PID, l.PIDStart, l.Host, l.Generation, l.Expires.Format(time.RFC3339Nano)); err != nil {
		return l, fmt.Errorf("trace: taking the lease of run %s: %w", runID, err)
	}
	if err := tx.Commit(); err != nil {
		return l, fmt.Errorf("trace: %w", err)
	}
	return l, nil
}

// fence checks within tx that l still holds its run's lease, and extends
// it by ttl.
func (s *Store) fence(ctx context.Context, tx *sql.Tx, l trace.Lease, ttl time.Duration) error {
	var gen int64
	var pid int
	err := s.queryRow(ctx, tx, `SELECT generation, pid FROM leases WHERE run_id = ?`, l.RunID).Scan(&gen, &pid)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return &trace.FencedError{RunID: l.RunID, Held: l.Generation}
	case err != nil:
		return fmt.Errorf("trace: reading the lease of run %s: %w", l.RunID, err)
	case gen != l.Generation:
		return &trace.FencedError{RunID: l.RunID, Held: l.Generation, Current: gen}
	case pid == 0:
		return &trace.FencedError{RunID: l.RunID, Held: l.Generation, Current: 0}
	}
	if ttl > 0 {
		if _, err := s.exec(ctx, tx, `UPDATE leases SET expires_at = ? WHERE run_id = ?`, time.Now().UTC().Add(ttl).Format(time.RFC3339Nano), l.RunID); err != nil {
			return fmt.Errorf("trace: extending the lease of run %s: %w", l.RunID, err)
		}
	}
	return nil
}

// RenewLease extends l by ttl, or fails with a FencedError when it was
// taken over.
func (s *Store) RenewLease(ctx context.Context, l trace.Lease, ttl time.Duration) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l, ttl); err != nil {
		return err
	}
	return tx.Commit()
}

// ReleaseLease gives the run up: the next driver takes it at once. A
// lease taken over meanwhile is left as it is.
func (s *Store) ReleaseLease(ctx context.Context, l trace.Lease) error {
	_, err := s.exec(ctx, nil, `UPDATE leases SET pid = 0, expires_at = ? WHERE run_id = ? AND generation = ?`,
		time.Now().UTC().Format(time.RFC3339Nano), l.RunID, l.Generation)
	if err != nil {
		return fmt.Errorf("trace: releasing the lease of run %s: %w", l.RunID, err)
	}
	return nil
}

// Commit appends the batches (each as AppendAll does: a record after a
// Step gets its id) and the checkpoint cp in one transaction, under the
// lease l, which it extends by ttl. A lease taken over fails the commit
// with a FencedError and writes nothing.
func (s *Store) Commit(ctx context.Context, l trace.Lease, ttl time.Duration, cp trace.Checkpoint, batches ...[]trace.Record) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.fence(ctx, tx, l, ttl); err != nil {
		return err
	}
	for _, b := range batches {
		if len(b) == 0 {
			continue
		}
		if _, err := s.appendTx(ctx, tx, b); err != nil {
			return err
		}
	}
	cp.RunID, cp.Generation = l.RunID, l.Generation
	if _, err := s.appendTx(ctx, tx, []trace.Record{cp}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// LastCheckpoint is the run's newest checkpoint, or nil when it has none.
func (s *Store) LastCheckpoint(ctx context.Context, runID string) (*trace.Checkpoint, error) {
	cps, err := query[trace.Checkpoint](ctx, s, `WHERE run_id = ? ORDER BY seq DESC, rowid DESC LIMIT 1`, runID)
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	if err := s.linked(ctx, "checkpoints", cps[0].ID, cps[0], fmt.Sprintf("checkpoint %d of run %s", cps[0].Seq, runID)); err != nil {
		return nil, err
	}
	return &cps[0], nil
}

// Blobs are the run's blobs by address.
func (s *Store) Blobs(ctx context.Context, runID string) (map[string]string, error) {
	bs, err := query[trace.Blob](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(bs))
	for _, b := range bs {
		if err := s.linked(ctx, "blobs", b.ID, b, fmt.Sprintf("blob %s of run %s", b.Hash, runID)); err != nil {
			return nil, err
		}
		if _, ok := out[b.Hash]; !ok {
			out[b.Hash] = b.Data
		}
	}
	return out, nil
}

// ApprovalRequests lists the run's requests, oldest first.
func (s *Store) ApprovalRequests(ctx context.Context, runID string) ([]trace.ApprovalRequest, error) {
	rs, err := query[trace.ApprovalRequest](ctx, s, `WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if err := s.linked(ctx, "approval_requests", r.ID, r, fmt.Sprintf("request %s of run %s", r.Request, runID)); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// Decision is the answer to a request, or nil while there is none.
func (s *Store) Decision(ctx context.Context, runID, request string) (*trace.ApprovalDecision, error) {
	ds, err := query[trace.ApprovalDecision](ctx, s, `WHERE run_id = ? AND request = ?`, runID, request)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	if err := s.linked(ctx, "approval_decisions", ds[0].ID, ds[0], fmt.Sprintf("answer to request %s of run %s", request, runID)); err != nil {
		return nil, err
	}
	return &ds[0], nil
}

// linked checks that rec, read from row of tbl, is in the chain as it
// was written: its link exists, is made with the store's key (or, in a
// chain of SHA-256 alone, with none), hashes the link before it and the
// row as it is now, and names the link before it as it is.
func (s *Store) linked(ctx context.Context, tbl string, row int64, rec trace.Record, what string) error {
	fail := func(format string, args ...any) error {
		return &trace.UnlinkedError{What: what, Table: tbl, Row: row, Reason: fmt.Sprintf(format, args...), Keyed: s.key != nil}
	}
	var seq int64
	var prev, hash, keyID string
	err := s.queryRow(ctx, nil, `SELECT seq, prev, hash, key_id FROM chain WHERE tbl = ? AND "row" = ?`, tbl, row).Scan(&seq, &prev, &hash, &keyID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fail("it has no link: it was added outside the chain")
	case err != nil:
		return fmt.Errorf("trace: reading the link of %s: %w", what, err)
	}
	var key *trace.Key
	switch {
	case keyID == "" && s.key != nil && !s.dialect.LegacyUnkeyed:
		return fail("its link %d is not keyed: a %s trace is keyed from its first link, so this one was made without the key", seq, s.dialect.Name)
	case keyID == "" && s.key != nil:
		// Links of SHA-256 alone are the store's from before it was
		// keyed: none may follow a keyed one.
		var n int
		if err := s.queryRow(ctx, nil, `SELECT COUNT(*) FROM (SELECT 1 FROM chain WHERE seq < ? AND key_id != '' LIMIT 1) AS keyed`, seq).Scan(&n); err != nil {
			return fmt.Errorf("trace: reading the chain: %w", err)
		}
		if n > 0 {
			return fail("its link %d is not keyed, and links before it are", seq)
		}
	case keyID == "":
	case s.key != nil && keyID == s.key.ID():
		key = s.key
	case s.key == nil:
		return fail("its link %d is keyed (key id %s), and the store was opened without a key to check it", seq, keyID)
	default:
		return fail("its link %d is keyed with the key of id %s, not with this store's (id %s): it cannot be checked", seq, keyID, s.key.ID())
	}
	if trace.Link(key, prev, tbl, row, rec) != hash {
		return fail("the row is not what its link %d was made of", seq)
	}
	var before string
	err = s.queryRow(ctx, nil, `SELECT hash FROM chain WHERE seq < ? ORDER BY seq DESC LIMIT 1`, seq).Scan(&before)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		before = ""
	case err != nil:
		return fmt.Errorf("trace: reading the chain: %w", err)
	}
	if before != prev {
		return fail("its link %d names a link before it that is not the one there", seq)
	}
	return nil
}

// AnsweredError is a second answer to a request, refused: the first one
// stands.
type AnsweredError struct{ First trace.ApprovalDecision }

func (e *AnsweredError) Error() string {
	return fmt.Sprintf("trace: request %s of run %s was already answered %s at %s: the first answer stands",
		e.First.Request, e.First.RunID, e.First.Answer, e.First.At.Format(time.RFC3339))
}

// Decide records the answer to a request of a run: the request must
// exist, the answer must be one its kind takes (an approval or a
// recovery: yes or no; a plan: yes, no or revise with a note; a question:
// answer, its text the note), and the first answer wins (a second is an
// AnsweredError).
func (s *Store) Decide(ctx context.Context, d trace.ApprovalDecision) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var kind string
	err = s.queryRow(ctx, tx, `SELECT kind FROM approval_requests WHERE run_id = ? AND request = ? ORDER BY rowid LIMIT 1`, d.RunID, d.Request).Scan(&kind)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("trace: run %s has no request %s (rein runs lists what each run waits on)", d.RunID, d.Request)
	case err != nil:
		return fmt.Errorf("trace: %w", err)
	}
	if err := answerFits(kind, d); err != nil {
		return fmt.Errorf("trace: request %s of run %s: %w", d.Request, d.RunID, err)
	}
	var first trace.ApprovalDecision
	var at string
	err = s.queryRow(ctx, tx, `SELECT answer, note, "by", at FROM approval_decisions WHERE run_id = ? AND request = ?`, d.RunID, d.Request).Scan(&first.Answer, &first.Note, &first.By, &at)
	switch {
	case err == nil:
		first.RunID, first.Request = d.RunID, d.Request
		first.At, _ = time.Parse(time.RFC3339Nano, at)
		return &AnsweredError{First: first}
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("trace: %w", err)
	}
	if d.At.IsZero() {
		d.At = time.Now()
	}
	if _, err := s.appendTx(ctx, tx, []trace.Record{d}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// answerFits says why d is not an answer a request of kind takes.
func answerFits(kind string, d trace.ApprovalDecision) error {
	switch kind {
	case "cancel", "fold":
		// An operator's own request to the run: the run takes it, and
		// says when; answering it would undo it unseen.
		return fmt.Errorf("it is an operator's %s of the run, which the run takes itself: it is not answered", kind)
	case "question":
		if d.Answer != "answer" || strings.TrimSpace(d.Note) == "" {
			return fmt.Errorf("it is the model's question: its answer is text (rein answer), not %q", d.Answer)
		}
	case "plan":
		switch {
		case d.Answer == "revise" && strings.TrimSpace(d.Note) == "":
			return fmt.Errorf("a plan sent back needs the note the model gets")
		case d.Answer != "yes" && d.Answer != "no" && d.Answer != "revise":
			return fmt.Errorf("it is the model's plan: its answer is yes, no or revise with a note, not %q", d.Answer)
		}
	default:
		if d.Answer != "yes" && d.Answer != "no" {
			return fmt.Errorf("it is a %s: its answer is yes or no, not %q", kind, d.Answer)
		}
	}
	return nil
}

// HasRun says whether the store holds anything of run id: its start, or
// a checkpoint.
func (s *Store) HasRun(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.queryRow(ctx, nil, `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE id = ? LIMIT 1) AS r) + (SELECT COUNT(*) FROM (SELECT 1 FROM checkpoints WHERE run_id = ? LIMIT 1) AS c)`, id, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("trace: %w", err)
	}
	return n > 0, nil
}

// DurableRun is a run with checkpoints as listed: its newest checkpoint's
// status and what it waits on, and its lease.
type DurableRun struct {
	RunID     string       `json:"run"`
	StartedAt time.Time    `json:"started_at"`
	Status    string       `json:"status"`
	Waiting   string       `json:"waiting,omitempty"`
	At        time.Time    `json:"checkpoint_at"`
	Lease     *trace.Lease `json:"lease,omitempty"`
	// Driven says a live driver holds the lease.
	Driven bool `json:"driven"`
}

// DurableRuns lists the runs that have checkpoints, newest first.
func (s *Store) DurableRuns(ctx context.Context) ([]DurableRun, error) {
	rows, err := s.queryRows(ctx, `SELECT c.run_id, COALESCE(r.started_at, ''), c.status, c.waiting, c.at,
		COALESCE(l.pid, -1), COALESCE(l.pid_start, ''), COALESCE(l.host, ''), COALESCE(l.generation, 0), COALESCE(l.expires_at, '')
		FROM checkpoints c LEFT JOIN runs r ON r.id = c.run_id LEFT JOIN leases l ON l.run_id = c.run_id
		WHERE c.rowid = (SELECT MAX(rowid) FROM checkpoints WHERE run_id = c.run_id)
		ORDER BY c.rowid DESC`)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer rows.Close()
	host, _ := os.Hostname()
	now := time.Now()
	var out []DurableRun
	for rows.Next() {
		var r DurableRun
		var started, at, expires string
		var l trace.Lease
		if err := rows.Scan(&r.RunID, &started, &r.Status, &r.Waiting, &at, &l.PID, &l.PIDStart, &l.Host, &l.Generation, &expires); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		r.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
		r.At, _ = time.Parse(time.RFC3339Nano, at)
		if l.PID >= 0 {
			l.RunID = r.RunID
			l.Expires, _ = time.Parse(time.RFC3339Nano, expires)
			r.Lease = &l
			r.Driven = leaseLive(l, host, now)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
