package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// CheckpointFormat is the version of the checkpoints this rein writes. A
// checkpoint of a newer format is refused, with its reason, rather than
// read as something it is not; an older one is read as it was written.
const CheckpointFormat = 1

// The size from which a message's text is kept once as a blob, by
// address, and the messages a blob of the transcript holds.
const (
	blobMin  = 1 << 10
	chunkLen = 16
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
		if c := d.router.Carried(); len(c.Refusals) > 0 || c.SandboxDown != "" || len(c.Branches) > 0 {
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
	case s.Done != nil && (s.Waiting == nil || string(s.Done.Kind) != string(s.Waiting.Kind)):
		// Ended, a wait among what it ended (a run cancelled while it
		// waited).
		return string(s.Done.Kind), ""
	case s.Waiting != nil:
		return string(s.Waiting.Kind), s.Waiting.Request
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

// StateHeader is a run's state as its last checkpoint keeps it, without
// its transcript: what a listing or a viewer of the run needs (its
// contract, steps, tokens, outcome, todo list), read from the checkpoint
// alone with no part of the run's blob store, so that a run of any
// length costs the same to look at. The transcript's messages after the
// checkpoint's chunks are dropped too.
func StateHeader(ctx context.Context, store trace.Durable, runID string) (*State, error) {
	cp, err := lastCheckpoint(ctx, store, runID)
	if err != nil {
		return nil, err
	}
	if cp.Format > CheckpointFormat {
		return nil, &FormatError{Run: cp.RunID, Format: cp.Format}
	}
	var cs checkpointState
	if err := json.Unmarshal([]byte(cp.State), &cs); err != nil {
		return nil, fmt.Errorf("agent: run %s's checkpoint %d is not readable: %w", cp.RunID, cp.Seq, err)
	}
	s := cs.State
	s.Transcript = nil
	return &s, nil
}

// LoadState reads the state of run runID as its last checkpoint keeps
// it (what rein run resume needs before it drives it: the contract, the
// decision it waits for), refusing a newer format.
func LoadState(ctx context.Context, store trace.Durable, runID string) (*State, error) {
	cp, err := lastCheckpoint(ctx, store, runID)
	if err != nil {
		return nil, err
	}
	blobs, err := store.Blobs(ctx, runID)
	if err != nil {
		return nil, err
	}
	s, _, _, _, err := decode(cp, blobs)
	return s, err
}

// lastCheckpoint is the run's last checkpoint; a run with none is not
// resumable.
func lastCheckpoint(ctx context.Context, store trace.Durable, runID string) (*trace.Checkpoint, error) {
	cp, err := store.LastCheckpoint(ctx, runID)
	if err != nil {
		return nil, err
	}
	if cp == nil {
		return nil, fmt.Errorf("%w: run %s has no checkpoint in the store (it was not an agent run, or not a durable one)", ErrNotResumable, runID)
	}
	return cp, nil
}
