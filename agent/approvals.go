package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
)

// observedApprover puts every ask to the run's approver and tells the
// observer of the question and the answer.
type observedApprover struct {
	inner policy.Approver
	d     *driver
}

func (a observedApprover) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	step := 0
	if a.d.state != nil {
		step = a.d.state.Steps
	}
	a.d.emit(Event{Kind: EventApproval, Step: step, Reason: v.Reason})
	// One ask at a time, the model's questions and plans among them.
	a.d.askMu.Lock()
	ap, err := a.inner.Approve(ctx, v)
	a.d.askMu.Unlock()
	if err == nil && ap.Answer == policy.Approve {
		// An answer can take an operator minutes: the lease is checked
		// again before the effect it allows.
		if lerr := a.d.holdLease(ctx); lerr != nil {
			ap, err = policy.Approval{Answer: policy.Reject, Reason: lerr.Error()}, lerr
		}
	}
	status := map[policy.Answer]string{policy.Approve: "approved", policy.Reject: "rejected", policy.Defer: "deferred"}[ap.Answer]
	if err != nil {
		status = "error"
	}
	a.d.emit(Event{Kind: EventDecided, Step: step, Status: status, Reason: ap.Reason})
	return ap, err
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

// Await reads the operator's decision the run waits for: the answer as
// the loop's input, or, with none recorded yet, the outcome the driver's
// part ends on, the run still waiting (parked).
func (x *Executors) Await(ctx context.Context, e AwaitDecision) (in loop.Input, parked *Outcome) {
	d, s, w := x.d, x.d.state, e.Waiting
	if d.durable == nil {
		return loop.Stopped{Reason: "the run waits for a decision, and its store is not durable"}, nil
	}
	dec, err := d.durable.Decision(ctx, d.router.RunID(), w.Request)
	if err != nil {
		// Nothing is done on an answer that cannot be read, or that rein
		// did not record: the run stops with why.
		d.fail(err)
		out := s.Parked()
		out.Reason = fmt.Sprintf("waiting for request %s, whose answer could not be read: %v", w.Request, err)
		return nil, &out
	}
	if dec == nil {
		out := s.Parked()
		return nil, &out
	}
	d.snapshot = ""
	return loop.Decided{Request: w.Request, Yes: dec.Answer == "yes", Note: dec.Note, Stopped: d.router.Stopped()}, nil
}
