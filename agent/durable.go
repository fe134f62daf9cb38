package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// CheckpointFormat is the version of the checkpoints this rein writes. A
// checkpoint of a newer format is refused, with its reason, rather than
// read as something it is not; an older one is read as it was written.
const CheckpointFormat = 1

// Durable runs: the lease a driver holds and how often it renews it; the
// size from which a message's text is kept once as a blob, by address.
const (
	leaseTTL     = 30 * time.Second
	leaseRenewal = 10 * time.Second
	// leaseMargin bounds how long the renewal before an effect may take:
	// past it the lease renewed is too near its end to act under.
	leaseMargin = leaseTTL / 2
	blobMin     = 1 << 10
	chunkLen    = 16
)

// chunk is a run of chunkLen messages as last kept, and its address.
type chunk struct {
	msgs []Message
	addr string
}

// ErrNotResumable is what Resume fails with for a run that cannot go on:
// it has no checkpoint, or it has ended.
var ErrNotResumable = errors.New("agent: the run cannot be resumed")

// FormatError is a checkpoint this rein cannot read: written by a newer
// rein in a format it does not know.
type FormatError struct {
	Run    string
	Format int
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("agent: run %s's checkpoint is of format %d, newer than this rein reads (%d): resume it with the rein that wrote it, or a newer one", e.Run, e.Format, CheckpointFormat)
}

// checkpointState is a State as a checkpoint keeps it: the messages'
// large texts by address, and what the driver needs besides the state to
// go on (the protected files as the run began, the workspace as it was
// when the running calls started).
type checkpointState struct {
	State
	// Chunks are the addresses of the transcript's first messages,
	// chunkLen to a blob, and Transcript the messages after them: a
	// checkpoint costs what the step changed, not the whole transcript.
	Chunks     []string                    `json:"chunks,omitempty"`
	Transcript []storedMessage             `json:"transcript"`
	Baseline   map[string]storedProtection `json:"baseline,omitempty"`
	// Snapshot is the address of the workspace's listing taken when the
	// running calls started.
	Snapshot string `json:"snapshot,omitempty"`
	// Router is what the run's router knew that the trace does not say
	// (the refusals counted, the sandbox down), given back to the router
	// of the run's next process.
	Router *tool.Carried `json:"router,omitempty"`
}

type storedMessage struct {
	Message
	// Blob is the address Text is kept at, when it is not inline.
	Blob string `json:"blob,omitempty"`
}

type storedProtection struct {
	Hash string `json:"hash"`
	Blob string `json:"blob,omitempty"`
}

func address(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blob keeps data as a blob of the next commit, once, and returns its
// address.
func (d *driver) blob(data string) string {
	a := address(data)
	if !d.blobs[a] {
		if _, ok := d.newBlobs[a]; !ok {
			d.newBlobs[a] = data
		}
	}
	return a
}

// encode is the checkpoint of the driver's state.
func (d *driver) encode() (string, error) {
	cs := checkpointState{State: *d.state, Snapshot: d.snapshot}
	t := d.state.Transcript
	full := len(t) / chunkLen
	for i := range full {
		part := t[i*chunkLen : (i+1)*chunkLen]
		// Setting an old observation aside changes its chunk, which is
		// kept again; the others are named as they were.
		if i < len(d.chunks) && slices.EqualFunc(part, d.chunks[i].msgs, sameMessage) {
			cs.Chunks = append(cs.Chunks, d.chunks[i].addr)
			continue
		}
		data, err := json.Marshal(d.storedMessages(part))
		if err != nil {
			return "", err
		}
		c := chunk{msgs: slices.Clone(part), addr: d.blob(string(data))}
		if i < len(d.chunks) {
			d.chunks[i] = c
		} else {
			d.chunks = append(d.chunks, c)
		}
		cs.Chunks = append(cs.Chunks, c.addr)
	}
	cs.Transcript = d.storedMessages(t[full*chunkLen:])
	if d.seq == 0 {
		// The protected files are kept with the first checkpoint; later
		// ones name the same blobs.
		d.baselineBlobs = map[string]storedProtection{}
		for p, f := range d.baseline {
			sp := storedProtection{Hash: f.hash}
			if f.data != nil {
				sp.Blob = d.blob(string(f.data))
			}
			d.baselineBlobs[p] = sp
		}
	}
	cs.Baseline = d.baselineBlobs
	if d.router != nil {
		if c := d.router.Carried(); len(c.Refusals) > 0 || c.SandboxDown != "" {
			cs.Router = &c
		}
	}
	data, err := json.Marshal(cs)
	return string(data), err
}

// storedMessages are msgs as a checkpoint keeps them: a large text by
// its address.
func (d *driver) storedMessages(msgs []Message) []storedMessage {
	out := make([]storedMessage, len(msgs))
	for i, m := range msgs {
		sm := storedMessage{Message: m}
		if len(m.Text) >= blobMin {
			sm.Blob, sm.Text = d.blob(m.Text), ""
		}
		out[i] = sm
	}
	return out
}

// decode reads a checkpoint back into a state, the protected files and
// the snapshot's address.
func decode(cp *trace.Checkpoint, blobs map[string]string) (*State, map[string]protectedFile, map[string]storedProtection, string, error) {
	if cp.Format > CheckpointFormat {
		return nil, nil, nil, "", &FormatError{Run: cp.RunID, Format: cp.Format}
	}
	if cp.Format < 1 {
		return nil, nil, nil, "", fmt.Errorf("agent: run %s's checkpoint has no format number (%d): it was not written by rein", cp.RunID, cp.Format)
	}
	var cs checkpointState
	if err := json.Unmarshal([]byte(cp.State), &cs); err != nil {
		return nil, nil, nil, "", fmt.Errorf("agent: run %s's checkpoint %d is not readable: %w", cp.RunID, cp.Seq, err)
	}
	s := cs.State
	s.Transcript = nil
	stored := []storedMessage{}
	for _, a := range cs.Chunks {
		data, ok := blobs[a]
		var part []storedMessage
		if !ok || json.Unmarshal([]byte(data), &part) != nil || len(part) != chunkLen {
			return nil, nil, nil, "", fmt.Errorf("agent: run %s's checkpoint %d names a part of its transcript %s the store lacks whole", cp.RunID, cp.Seq, a)
		}
		stored = append(stored, part...)
	}
	for _, sm := range append(stored, cs.Transcript...) {
		m := sm.Message
		if sm.Blob != "" {
			text, ok := blobs[sm.Blob]
			if !ok {
				return nil, nil, nil, "", fmt.Errorf("agent: run %s's checkpoint %d names a part %s the store lacks", cp.RunID, cp.Seq, sm.Blob)
			}
			m.Text = text
		}
		s.Transcript = append(s.Transcript, m)
	}
	base := map[string]protectedFile{}
	for p, sp := range cs.Baseline {
		f := protectedFile{hash: sp.Hash}
		if sp.Blob != "" {
			data, ok := blobs[sp.Blob]
			if !ok {
				return nil, nil, nil, "", fmt.Errorf("agent: run %s's checkpoint names the protected file %s's copy %s, which the store lacks", cp.RunID, p, sp.Blob)
			}
			f.data = []byte(data)
		}
		base[p] = f
	}
	return &s, base, cs.Baseline, cs.Snapshot, nil
}

// status is a state's word for rein runs.
func status(s *State) (string, string) {
	switch {
	case s.Waiting != nil:
		return string(s.Waiting.Kind), s.Waiting.Request
	case s.Done != nil:
		return string(s.Done.Kind), ""
	}
	return "running", ""
}

// commit records the batches; in a durable run it also commits the
// checkpoint of the state, with the budget spent and the time active, in
// the same transaction, under the run's lease. A commit that fails stops
// the run: nothing more happens unrecorded.
func (d *driver) commit(ctx context.Context, batches ...[]trace.Record) error {
	ctx = context.WithoutCancel(ctx)
	if d.durable == nil {
		if d.o.Tool.Store == nil {
			return nil
		}
		for _, b := range batches {
			if len(b) > 0 {
				d.o.Tool.Store.AppendAll(ctx, b...)
			}
		}
		return nil
	}
	if err := d.failure(); err != nil {
		return err
	}
	s := d.state
	s.Apply(loop.Accounted{Active: d.activeBase + time.Since(d.segStart)}, d.o.Now())
	state, err := d.encode()
	if err != nil {
		return d.fail(fmt.Errorf("agent: encoding the checkpoint: %w", err))
	}
	var blobs []trace.Record
	keys := make([]string, 0, len(d.newBlobs))
	for a := range d.newBlobs {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	for _, a := range keys {
		blobs = append(blobs, trace.Blob{RunID: d.router.RunID(), Hash: a, Data: d.newBlobs[a], At: time.Now()})
	}
	st, waiting := status(s)
	cp := trace.Checkpoint{Seq: d.seq + 1, Format: CheckpointFormat, Status: st, Waiting: waiting, State: state, At: time.Now()}
	if err := d.durable.Commit(ctx, d.lease, leaseTTL, cp, append([][]trace.Record{blobs}, batches...)...); err != nil {
		return d.fail(err)
	}
	d.seq++
	for _, a := range keys {
		d.blobs[a] = true
	}
	clear(d.newBlobs)
	return nil
}

// fail stops the run at a commit that failed: fenced out by another
// driver, or the store down.
func (d *driver) fail(err error) error {
	d.mu.Lock()
	if d.failed == nil {
		d.failed = err
	}
	d.mu.Unlock()
	if errors.As(err, new(*trace.FencedError)) {
		d.held.mu.Lock()
		d.held.fenced = err
		d.held.mu.Unlock()
	}
	if d.stop != nil {
		d.stop(err)
	}
	return err
}

// failure is the commit that failed, or nil.
func (d *driver) failure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// heldRecords is the store the router of a durable run writes to: what a
// call records is held, by the call's key, until the driver commits it
// with the call's end and the checkpoint; everything else goes through.
type heldRecords struct {
	trace.Durable
	mu     sync.Mutex
	held   map[string][][]trace.Record
	fenced error
}

type callKey struct{}

// withCall is ctx for the call of key k: what the router records of it
// is held under k, and the approver knows which call asks.
func withCall(ctx context.Context, k string) context.Context {
	return context.WithValue(ctx, callKey{}, k)
}

func (h *heldRecords) AppendAll(ctx context.Context, recs ...trace.Record) ([]int64, error) {
	k, ok := ctx.Value(callKey{}).(string)
	if !ok {
		h.mu.Lock()
		fenced := h.fenced
		h.mu.Unlock()
		if fenced != nil {
			// The run is another driver's now: this one records nothing
			// more of it, its end included.
			return nil, fenced
		}
		return h.Durable.AppendAll(ctx, recs...)
	}
	h.mu.Lock()
	h.held[k] = append(h.held[k], recs)
	h.mu.Unlock()
	return make([]int64, len(recs)), nil
}

func (h *heldRecords) Append(ctx context.Context, r trace.Record) (int64, error) {
	ids, err := h.AppendAll(ctx, r)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// take hands over what was held for key k, and forgets it.
func (h *heldRecords) take(k string) [][]trace.Record {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.held[k]
	delete(h.held, k)
	return out
}

// Defer is the approver that leaves every ask to an operator: in a
// durable run, the ask ends the process with awaiting_approval and a
// request id, the action kept exactly as it is shown; rein approve
// records the answer and the resumed run acts on it once the policy,
// checked again, still asks. Outside a durable run no one else decides,
// and the ask is denied.
type Defer struct{}

// Approve defers; a durable run's driver answers in its place.
func (Defer) Approve(context.Context, *policy.Verdict) (policy.Approval, error) {
	return policy.Approval{Answer: policy.Defer, Reason: "deferred, and the run is not durable (its store keeps no checkpoints)"}, nil
}

// deferrer is Defer in a durable run.
type deferrer struct{ d *driver }

// deferral is an ask put to an operator by the call in progress.
type deferral struct {
	waiting Waiting
	call    ToolCall
}

func (a deferrer) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	d := a.d
	k, _ := ctx.Value(callKey{}).(string)
	d.mu.Lock()
	c, ok := d.calls[k]
	d.mu.Unlock()
	if !ok {
		return policy.Approval{Answer: policy.Defer, Reason: "asked outside a call of the run"}, nil
	}
	shown := shownAsk(c, v)
	// The answer an operator gave to this call, asked as it is asked
	// now: an answer to something else is no answer to this.
	reqs, err := d.durable.ApprovalRequests(ctx, d.router.RunID())
	if err != nil {
		return policy.Approval{}, d.fail(err)
	}
	for _, r := range reqs {
		if r.Kind != "approval" || r.CallID != c.ID || r.Shown != shown {
			continue
		}
		dec, err := d.durable.Decision(ctx, r.RunID, r.Request)
		if err != nil {
			return policy.Approval{}, d.fail(err)
		}
		if dec == nil {
			continue
		}
		why := fmt.Sprintf("request %s answered %s by %s", r.Request, dec.Answer, dec.By)
		if dec.Note != "" {
			why += ": " + dec.Note
		}
		if dec.Answer == "yes" {
			return policy.Approval{Answer: policy.Approve, Reason: why}, nil
		}
		return policy.Approval{Answer: policy.Reject, Reason: why}, nil
	}
	id := newRequestID()
	d.mu.Lock()
	d.deferred[k] = &deferral{waiting: Waiting{Kind: AwaitingApproval, Request: id, CallID: c.ID, Shown: shown}, call: c}
	d.mu.Unlock()
	// Provisional: the call is made again once the answer is in.
	tool.AwaitingAnswer(ctx)
	return policy.Approval{Answer: policy.Defer, Reason: "deferred to an operator as request " + id}, nil
}

func newRequestID() string {
	var b [4]byte
	rand.Read(b[:])
	return "r" + hex.EncodeToString(b[:])
}

// shownAsk is an asked call as the operator is shown it: the call, and
// each stage and path the policy asks about, with its reason.
func shownAsk(c ToolCall, v *policy.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", c.Name, policy.Printable(c.Args))
	for _, s := range v.Stages {
		if s.Decision == policy.Ask {
			fmt.Fprintf(&b, "  stage %d: %s\n    %s\n", s.Index, policy.Printable(strings.Join(s.Argv, " ")), policy.Printable(s.Reason))
		}
	}
	for _, p := range v.Paths {
		if p.Decision == policy.Ask {
			fmt.Fprintf(&b, "  %s %s\n    %s\n", p.Access, policy.Printable(p.Path), policy.Printable(p.Reason))
		}
	}
	if len(v.Stages) == 0 && len(v.Paths) == 0 {
		fmt.Fprintf(&b, "  %s\n", policy.Printable(v.Reason))
	}
	return b.String()
}

// The bounds of a workspace snapshot: the entries listed, and the changes
// shown to the model.
const (
	maxSnapshotEntries = 20_000
	maxChangesShown    = 50
	maxHashedBytes     = 1 << 20
)

// snapshotEntry is a workspace entry as a snapshot lists it: cheap to
// take (a stat, no read), enough to see that it changed.
type snapshotEntry struct {
	Size  int64       `json:"size"`
	MTime int64       `json:"mtime"`
	Mode  fs.FileMode `json:"mode"`
}

type snapshot struct {
	Entries map[string]snapshotEntry `json:"entries"`
	// Truncated says the workspace had more entries than a snapshot
	// lists.
	Truncated bool `json:"truncated,omitempty"`
}

// takeSnapshot lists the workspace's entries (not .git's), bounded.
func takeSnapshot(ws string) snapshot {
	s := snapshot{Entries: map[string]snapshotEntry{}}
	filepath.WalkDir(ws, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return nil
		}
		rel, _ := filepath.Rel(ws, p)
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		if len(s.Entries) >= maxSnapshotEntries {
			s.Truncated = true
			return filepath.SkipAll
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		s.Entries[filepath.ToSlash(rel)] = snapshotEntry{Size: info.Size(), MTime: info.ModTime().UnixNano(), Mode: info.Mode()}
		return nil
	})
	return s
}

// changeSince lists what differs in the workspace from the snapshot:
// each path added, changed or removed, with its size and, for a file
// small enough, the first hex digits of its hash now.
func changeSince(ws string, before snapshot) string {
	now := takeSnapshot(ws)
	var lines []string
	hash := func(p string, e snapshotEntry) string {
		if !e.Mode.IsRegular() || e.Size > maxHashedBytes {
			return ""
		}
		data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(p)))
		if err != nil {
			return ""
		}
		sum := sha256.Sum256(data)
		return ", sha256 " + hex.EncodeToString(sum[:6])
	}
	for p, e := range now.Entries {
		b, ok := before.Entries[p]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("added %s (%d bytes%s)", p, e.Size, hash(p, e)))
		case b != e && !(e.Mode.IsDir() && b.Mode.IsDir()):
			lines = append(lines, fmt.Sprintf("changed %s (%d bytes, was %d%s)", p, e.Size, b.Size, hash(p, e)))
		}
	}
	for p, b := range before.Entries {
		if _, ok := now.Entries[p]; !ok {
			lines = append(lines, fmt.Sprintf("removed %s (was %d bytes)", p, b.Size))
		}
	}
	sort.Slice(lines, func(i, j int) bool { return pathOfLine(lines[i]) < pathOfLine(lines[j]) })
	var b strings.Builder
	switch {
	case len(lines) == 0:
		b.WriteString("no change in the workspace since the call started")
	default:
		fmt.Fprintf(&b, "%d change(s) in the workspace since the call started:", len(lines))
		for i, l := range lines {
			if i == maxChangesShown {
				fmt.Fprintf(&b, "\n  ... and %d more", len(lines)-i)
				break
			}
			b.WriteString("\n  " + l)
		}
	}
	if before.Truncated || now.Truncated {
		fmt.Fprintf(&b, "\n(the workspace has more than %d entries; the listing compares the first %d only)", maxSnapshotEntries, maxSnapshotEntries)
	}
	return b.String()
}

func pathOfLine(l string) string {
	_, rest, _ := strings.Cut(l, " ")
	p, _, _ := strings.Cut(rest, " (")
	return p
}

// holdLease renews the run's lease just before an effect (a call that
// may change the workspace, a gate attempt): the effect starts only while
// the lease is still this driver's, renewed within leaseMargin, so that a
// driver that was paused past its lease (a stopped process, a suspended
// machine) and fenced out does not act on a run another driver owns.
func (d *driver) holdLease(ctx context.Context) error {
	if d.durable == nil {
		return nil
	}
	if err := d.failure(); err != nil {
		return err
	}
	start := time.Now()
	if err := d.durable.RenewLease(context.WithoutCancel(ctx), d.lease, leaseTTL); err != nil {
		return d.fail(err)
	}
	if took := time.Since(start); took > leaseMargin {
		return d.fail(fmt.Errorf("agent: renewing run %s's lease took %s, more than the %s an effect may start within: the lease may have lapsed meanwhile, so nothing more is done; resume the run", d.lease.RunID, took.Round(time.Millisecond), leaseMargin))
	}
	return nil
}

// heartbeat renews the run's lease while the driver lives, so that a long
// call (a command of minutes) does not let the lease lapse; a renewal
// fenced out stops the run.
func (d *driver) heartbeat(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseRenewal)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				var fenced *trace.FencedError
				if err := d.durable.RenewLease(ctx, d.lease, leaseTTL); errors.As(err, &fenced) {
					d.fail(err)
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Resume continues the durable run runID of the store in o.Tool.Store
// from its last checkpoint: the steps committed are not repeated and
// nothing is charged twice; the policy in o (loaded again by the caller)
// decides every call from here, and the gate is checked against it again;
// the handles of the process before are orphaned; a call that was
// running when that process died is made again when it is read-only, and
// otherwise told to the model as interrupted with the workspace's change
// since it started (or, with the contract's recovery "wait", left to an
// operator). A run waiting for a decision goes on once it is recorded
// (rein approve), and ends awaiting it again until then. A second driver
// of a run is refused (a trace.LeaseHeldError naming the first's pid and
// host); a dead one's lease is taken over.
func Resume(ctx context.Context, runID string, o Options) (Outcome, error) {
	store, ok := o.Tool.Store.(trace.Durable)
	if !ok || store == nil {
		return Outcome{}, fmt.Errorf("agent: resuming run %s needs a durable store (the SQLite trace it was recorded in)", runID)
	}
	cp, err := store.LastCheckpoint(ctx, runID)
	if err != nil {
		return Outcome{}, err
	}
	if cp == nil {
		return Outcome{}, fmt.Errorf("%w: run %s has no checkpoint in the store (it was not an agent run, or not a durable one)", ErrNotResumable, runID)
	}
	if cp.Format > CheckpointFormat {
		return Outcome{}, &FormatError{Run: runID, Format: cp.Format}
	}
	lease, err := store.AcquireLease(ctx, runID, leaseTTL)
	if err != nil {
		return Outcome{}, err
	}
	// The lease may have changed hands since the read: the checkpoint
	// read under it is the one to go on from.
	if cp, err = store.LastCheckpoint(ctx, runID); err != nil {
		store.ReleaseLease(ctx, lease)
		return Outcome{}, err
	}
	blobs, err := store.Blobs(ctx, runID)
	if err != nil {
		store.ReleaseLease(ctx, lease)
		return Outcome{}, err
	}
	s, base, baseBlobs, snap, err := decode(cp, blobs)
	if err != nil {
		store.ReleaseLease(ctx, lease)
		return Outcome{}, err
	}
	for p := range base {
		if !slices.ContainsFunc(s.Contract.Protect, func(g string) bool { ok, _ := doublestar.Match(g, p); return ok }) {
			store.ReleaseLease(ctx, lease)
			return Outcome{}, fmt.Errorf("agent: run %s's checkpoint %d keeps the protected file %q, which no protect glob of its contract matches: the checkpoint was not written by rein, refused", runID, cp.Seq, p)
		}
	}
	if s.Done != nil {
		store.ReleaseLease(ctx, lease)
		out := *s.Done
		out.Run, out.Active, out.Elapsed = runID, s.Active, time.Since(s.StartedAt)
		return out, fmt.Errorf("%w: run %s has ended (%s: %s)", ErrNotResumable, runID, s.Done.Kind, s.Done.Reason)
	}
	var carried struct {
		Router *tool.Carried `json:"router"`
	}
	json.Unmarshal([]byte(cp.State), &carried) // decode read it whole
	rp := &resumePoint{state: s, baseline: base, baselineBlobs: baseBlobs, snapshot: snap, lease: lease, seq: cp.Seq, blobs: blobs, carried: carried.Router}
	return start(ctx, s.Contract, o, rp)
}

// resumePoint is what a resumed run starts from.
type resumePoint struct {
	state         *State
	baseline      map[string]protectedFile
	baselineBlobs map[string]storedProtection
	snapshot      string
	lease         trace.Lease
	seq           int64
	blobs         map[string]string
	carried       *tool.Carried
}

// lastRequest is the whole of the last request the trace keeps of the
// run, so that the resumed run records its next as what it adds.
func lastRequest(ctx context.Context, store trace.Store, runID string) (*Request, error) {
	calls, err := store.ProviderCalls(ctx, runID)
	if err != nil {
		return nil, err
	}
	var prev *Request
	for _, c := range calls {
		var rec recordedRequest
		if err := json.Unmarshal([]byte(c.Request), &rec); err != nil {
			return nil, fmt.Errorf("agent: run %s's recorded call %d: %w", runID, c.ID, err)
		}
		whole, err := rec.expand(prev)
		if err != nil {
			return nil, fmt.Errorf("agent: run %s's recorded call %d: %w", runID, c.ID, err)
		}
		prev = &whole
	}
	return prev, nil
}

// resumed settles, on resumption, the call that was running when the
// driver died (loop.Resumed): the driver gives the loop the workspace's
// change since the call started, and a request id and its text in case
// the contract leaves the call to an operator.
func (d *driver) resumed(ctx context.Context) {
	s := d.state
	in := loop.Resumed{Run: d.router.RunID(), ReadOnly: d.readOnlyTools(), Stopped: d.router.Stopped()}
	settling := len(s.Running) > 0 && s.Waiting == nil && len(s.Results) < len(s.Pending)
	var next ToolCall
	if settling {
		next = s.Pending[len(s.Results)]
		settling = !d.readOnly(next.Name)
	}
	if settling {
		in.Change = "the workspace's state when it started was not kept"
		if d.snapshot != "" {
			var before snapshot
			if data, ok := d.resumedBlobs[d.snapshot]; ok && json.Unmarshal([]byte(data), &before) == nil {
				in.Change = changeSince(d.c.Workspace, before)
			}
		}
		in.Request = newRequestID()
		in.Shown = fmt.Sprintf("%s %s\n  was running when rein's process died; its result is unknown.\n  %s\n  --yes makes the call again; --no tells the model it was interrupted.\n",
			next.Name, policy.Printable(next.Args), strings.ReplaceAll(in.Change, "\n", "\n  "))
	}
	s.Apply(in, d.o.Now())
	if !settling {
		return
	}
	d.snapshot = ""
	var recs []trace.Record
	if w := s.Waiting; w != nil && w.Kind == AwaitingRecovery {
		recs = append(recs, trace.ApprovalRequest{RunID: d.router.RunID(), Request: w.Request, Kind: "recovery", CallID: next.ID,
			Tool: next.Name, Args: next.Args, Shown: w.Shown, At: time.Now()})
	}
	d.commit(ctx, recs)
}

// await settles the decision the run waits for: none yet ends the
// process with the run still waiting; an answer lets it go on.
func (d *driver) await(ctx context.Context, w Waiting) *Outcome {
	s := d.state
	dec, err := d.durable.Decision(ctx, d.router.RunID(), w.Request)
	if err != nil {
		// Nothing is done on an answer that cannot be read, or that rein
		// did not record: the run stops with why.
		d.fail(err)
		out := s.Parked()
		out.Reason = fmt.Sprintf("waiting for request %s, whose answer could not be read: %v", w.Request, err)
		return &out
	}
	if dec == nil {
		out := s.Parked()
		return &out
	}
	s.Apply(loop.Decided{Request: w.Request, Yes: dec.Answer == "yes", Note: dec.Note, Stopped: d.router.Stopped()}, d.o.Now())
	d.snapshot = ""
	d.commit(ctx)
	return nil
}

// LoadState reads the state of run runID as its last checkpoint keeps
// it (what rein run resume needs before it drives it: the contract, the
// decision it waits for), refusing a newer format.
func LoadState(ctx context.Context, store trace.Durable, runID string) (*State, error) {
	cp, err := store.LastCheckpoint(ctx, runID)
	if err != nil {
		return nil, err
	}
	if cp == nil {
		return nil, fmt.Errorf("%w: run %s has no checkpoint in the store (it was not an agent run, or not a durable one)", ErrNotResumable, runID)
	}
	blobs, err := store.Blobs(ctx, runID)
	if err != nil {
		return nil, err
	}
	s, _, _, _, err := decode(cp, blobs)
	return s, err
}
