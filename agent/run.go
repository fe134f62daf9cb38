package agent

import (
	"context"
	"errors"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
)

// Options are what a run is driven with.
type Options struct {
	Provider Provider
	// Registry holds the tools; nil is tool.Builtin().
	Registry *tool.Registry
	// Responder answers the model's questions and plans (ask_question,
	// propose_plan); nil answers none, and a plan gate needs one. Defer
	// in a durable run leaves them to an operator (rein answer, rein
	// approve).
	Responder Responder
	// Tool is the router's configuration: the policy (loaded with the
	// contract's protect globs as Verification), the approver, the trace
	// store and its redactor, the execution profile.
	Tool tool.Config
	// Observer sees every event as it happens.
	Observer func(Event)
	// Now and Sleep are the clock (tests replace them).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Boundary, a hook for tests, is called at each effect boundary of a
	// durable run (before and after each model call, tool call and gate
	// attempt, and between a call's journal entry and its end), with the
	// boundary's name: a driver conformance suite (agent/agenttest) kills the
	// process there.
	Boundary func(string)
	// PolicyFor loads the policy of another workspace as the run's was
	// loaded (the same files, flags and mode): a child run in a git
	// worktree (spawn_agent with worktree) is decided by it. nil: no
	// child of the run works in a worktree.
	PolicyFor func(workspace string) (*policy.Policy, error)
	// history is the transcript a conversation's turn goes on from
	// (Send).
	history []Message
	// tree is what the runs of a tree share in this process; nil for a
	// root, which starts one.
	tree *tree
}

// EventKind names an event.
type EventKind string

// The events.
const (
	EventStarted      EventKind = "started"
	EventProviderCall EventKind = "provider_call"
	EventRetry        EventKind = "retry"
	EventToolCall     EventKind = "tool_call"
	EventRefused      EventKind = "refused"
	EventApproval     EventKind = "approval_requested"
	EventDecided      EventKind = "approval_decided"
	EventCompacted    EventKind = "compacted"
	EventGateAttempt  EventKind = "gate_attempt"
	EventFinished     EventKind = "finished"
	// EventResumed: a durable run goes on from its last checkpoint.
	EventResumed EventKind = "resumed"
)

// Event is one thing that happened in a run; each restates what the trace
// records.
type Event struct {
	Kind   EventKind `json:"kind"`
	Run    string    `json:"run"`
	Step   int       `json:"step"`
	Tokens Usage     `json:"tokens"`
	// Tool, Target and Status describe a tool call; Status a gate attempt
	// too.
	Tool    string   `json:"tool,omitempty"`
	Target  string   `json:"target,omitempty"`
	Status  string   `json:"status,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// errWallClock is the cause of a run's context ending at its budget.
var errWallClock = errors.New("the wall-clock budget")

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run drives contract c to an outcome. It refuses before the first model
// call what cannot run: a bad contract, a gate the policy does not allow
// outright, a protect glob that matches nothing.
//
// When the trace store is durable (trace.Durable: the SQLite store of trace/sqlite is),
// the run is too: it holds the run's lease, journals each tool call as
// running before it runs it, and commits a checkpoint with every step's
// records in one transaction, so that Resume can continue it after its
// process dies. A durable run whose lease is taken over stops at its next
// commit with a trace.FencedError.
func Run(ctx context.Context, c Contract, o Options) (Outcome, error) {
	x, err := Open(ctx, c, o)
	if err != nil {
		return Outcome{}, err
	}
	return drive(ctx, x)
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
	x, err := Reopen(ctx, runID, o)
	if ended, ok := err.(*EndedError); ok {
		return ended.Outcome, err
	}
	if err != nil {
		return Outcome{}, err
	}
	return drive(ctx, x)
}

// drive is the in-process driver: it takes each effect the loop names,
// carries it out with its executor, folds the result in (the loop's
// Apply, the state's only writer) and commits. A driver of another kind
// (a workflow engine's) does the same with the same executors.
func drive(ctx context.Context, x *Executors) (Outcome, error) {
	bounded, done := x.Bound(ctx)
	out := func() Outcome {
		defer done()
		s := x.State()
		x.Begin(bounded)
		for {
			in, stop := x.Halt(bounded)
			if stop != nil {
				return *stop
			}
			if in != nil {
				s.Apply(in, x.Now())
			}
			now := x.Now()
			var recs Records
			switch e := s.Next(now).(type) {
			case End:
				s.Apply(loop.Ended{}, now)
				return *s.Done
			case AwaitDecision:
				var parked *Outcome
				if in, parked = x.Await(bounded, e); parked != nil {
					return *parked
				}
				s.Apply(in, x.Now())
				x.Commit(bounded, e, nil)
			case Wait:
				if in := x.Sleep(bounded, e); in != nil {
					s.Apply(in, x.Now())
				}
			case CallModel:
				if in, recs = x.Model(bounded, e); in != nil {
					s.Apply(in, x.Now())
					x.Commit(bounded, e, recs)
				}
			case RunTools:
				if in, recs = x.Tools(bounded, e); in != nil {
					s.Apply(in, x.Now())
					x.Commit(bounded, e, recs)
				}
			case Summarize:
				if in, recs = x.Summarize(bounded, e); in != nil {
					s.Apply(in, x.Now())
					x.Commit(bounded, e, recs)
				}
			case RunGate:
				if in, recs = x.Gate(bounded, e); in != nil {
					s.Apply(in, x.Now())
					x.Commit(bounded, e, recs)
				}
			}
		}
	}()
	return x.Finish(ctx, out)
}
