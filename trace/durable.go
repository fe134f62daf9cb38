package trace

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Checkpoint is the durable state of an agent run after one of its
// steps, as the agent serialises it (State, JSON; its large parts are
// Blobs named by their address). Format is the serialisation's version:
// a reader refuses a format newer than its own.
type Checkpoint struct {
	ID         int64  `json:"id"`
	RunID      string `json:"run_id"`
	Seq        int64  `json:"seq"`
	Generation int64  `json:"generation"`
	Format     int    `json:"format"`
	// Status is the run's state in a word (running, awaiting_approval,
	// awaiting_recovery, or the outcome), and Waiting what it waits on
	// (a request id), for listing runs without reading State.
	Status  string    `json:"status"`
	Waiting string    `json:"waiting"`
	State   string    `json:"state"`
	At      time.Time `json:"at"`
}

// Blob is a large part of a run's state kept once, by the address its
// writer gave it (a hash of the content as it was before redaction).
type Blob struct {
	ID    int64     `json:"id"`
	RunID string    `json:"run_id"`
	Hash  string    `json:"hash"`
	Data  string    `json:"data"`
	At    time.Time `json:"at"`
}

// ApprovalRequest is a decision a run waits for: an asked action deferred
// to an operator (Kind "approval"), or a call interrupted by the driver's
// death that the configuration leaves to one (Kind "recovery"). Shown is
// the action exactly as the operator is shown it.
type ApprovalRequest struct {
	ID      int64     `json:"id"`
	RunID   string    `json:"run_id"`
	Request string    `json:"request"`
	Kind    string    `json:"kind"`
	CallID  string    `json:"call_id"`
	Tool    string    `json:"tool"`
	Args    string    `json:"args"`
	Shown   string    `json:"shown"`
	At      time.Time `json:"at"`
}

// ApprovalDecision is an operator's answer to a request: "yes" or "no".
type ApprovalDecision struct {
	ID      int64     `json:"id"`
	RunID   string    `json:"run_id"`
	Request string    `json:"request"`
	Answer  string    `json:"answer"`
	Note    string    `json:"note"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

func (Checkpoint) table() string       { return "checkpoints" }
func (Blob) table() string             { return "blobs" }
func (ApprovalRequest) table() string  { return "approval_requests" }
func (ApprovalDecision) table() string { return "approval_decisions" }

// Durable is a Store that keeps agent runs across the death of their
// process: leases, checkpoints committed with a step's records, and
// deferred decisions; the agent asserts it of the router's store and runs
// without checkpoints where it fails. The SQLite store (package
// trace/sqlite) is one.
type Durable interface {
	Store
	AcquireLease(ctx context.Context, runID string, ttl time.Duration) (Lease, error)
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) error
	ReleaseLease(ctx context.Context, l Lease) error
	Commit(ctx context.Context, l Lease, ttl time.Duration, cp Checkpoint, batches ...[]Record) error
	LastCheckpoint(ctx context.Context, runID string) (*Checkpoint, error)
	Blobs(ctx context.Context, runID string) (map[string]string, error)
	ApprovalRequests(ctx context.Context, runID string) ([]ApprovalRequest, error)
	Decision(ctx context.Context, runID, request string) (*ApprovalDecision, error)
}

// Conversations is a durable store that keeps conversations
// (ConversationTurn): the agent's conversations need one.
type Conversations interface {
	Durable
	// ConversationTurns lists a conversation's turns, turn 0 first.
	ConversationTurns(ctx context.Context, conv string) ([]ConversationTurn, error)
	// ConversationStarts lists every conversation's turn 0, oldest
	// first.
	ConversationStarts(ctx context.Context) ([]ConversationTurn, error)
}

// TurnTakenError is a turn appended to a conversation that has it
// already: another sender extended the head first.
type TurnTakenError struct {
	Conv string
	Turn int
}

func (e *TurnTakenError) Error() string {
	return fmt.Sprintf("trace: conversation %s has a turn %d already: another sender extended it first", e.Conv, e.Turn)
}

// Lease is one driver's claim on a run: its process (its pid, and the
// start of that process, which tells it from a later one given the same
// pid), its host, and the generation, bumped at each takeover, that
// every commit and every effect is checked against.
type Lease struct {
	RunID      string    `json:"run_id"`
	PID        int       `json:"pid"`
	PIDStart   string    `json:"pid_start,omitempty"`
	Host       string    `json:"host"`
	Generation int64     `json:"generation"`
	Expires    time.Time `json:"expires_at"`
}

// LeaseHeldError is a second driver refused: the run's lease is held by a
// live process, or one whose lease has not expired.
type LeaseHeldError struct{ Lease Lease }

func (e *LeaseHeldError) Error() string {
	l := e.Lease
	if host, _ := os.Hostname(); l.Host == host {
		return fmt.Sprintf("trace: run %s is being driven by pid %d on host %s (lease generation %d; that process is alive, and holds the run while it lives, whatever its lease's expiry); wait for it to end, or stop that process and resume again",
			l.RunID, l.PID, l.Host, l.Generation)
	}
	return fmt.Sprintf("trace: run %s is being driven by pid %d on host %s (lease generation %d, until %s); wait for it to end, or stop that process and resume again",
		l.RunID, l.PID, l.Host, l.Generation, l.Expires.Format(time.RFC3339))
}

// FencedError is a commit refused because the lease it was made under was
// taken over: another driver owns the run now.
type FencedError struct {
	RunID string
	// Held is the generation the refused driver holds; Current the
	// lease's now (0: the lease was released).
	Held, Current int64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("trace: run %s: this driver's lease (generation %d) was taken over (the lease is now generation %d): its commits are fenced out, and it must stop", e.RunID, e.Held, e.Current)
}

// UnlinkedError is a row a durable run would act on (a checkpoint, a
// blob, a request or its answer) that is not in the trace's chain as
// rein wrote it: a row added or changed by other means than rein's.
type UnlinkedError struct {
	// What names the row; Table and Row are where it is.
	What   string
	Table  string
	Row    int64
	Reason string
	// Keyed says the store's chain is keyed.
	Keyed bool
}

func (e *UnlinkedError) Error() string {
	chain := "chain"
	if e.Keyed {
		chain = "keyed chain"
	}
	return fmt.Sprintf("trace: the trace's %s (%s row %d) is not in its %s (%s): the trace was edited; rein trace verify says where", e.What, e.Table, e.Row, chain, e.Reason)
}
