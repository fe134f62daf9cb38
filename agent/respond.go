package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The tools of a person in the loop, and the outcomes of a run that waits
// for one.
const (
	PlanTool       = loop.PlanTool
	QuestionTool   = loop.QuestionTool
	AwaitingAnswer = loop.AwaitingAnswer
	AwaitingPlan   = loop.AwaitingPlan
)

// AskKind says what the model put to a person.
type AskKind string

// The kinds of ask; a request of the trace has the same kind.
const (
	AskQuestion AskKind = "question"
	AskPlan     AskKind = "plan"
)

// Ask is what the model puts to a person: a question about intent, or a
// plan to approve. Text is exactly what the person is shown.
type Ask struct {
	Kind AskKind
	Text string
}

// The answers of a Reply.
const (
	// ReplyAnswer answers a question with Text.
	ReplyAnswer = "answer"
	// ReplyNone says no one can answer: the model decides itself (a
	// question), or the plan is not approved (a plan).
	ReplyNone = "none"
	// ReplyYes approves a plan; ReplyNo cancels the run; ReplyRevise
	// sends it back with Text, the note the model gets.
	ReplyYes    = "yes"
	ReplyNo     = "no"
	ReplyRevise = "revise"
)

// Reply is a person's answer to an Ask, and who gave it.
type Reply struct {
	Answer string
	Text   string
	By     string
}

// Responder answers the model's questions (ask_question) and its plans
// (propose_plan). An answer is text for the model, never permission: it
// changes no decision of the policy. An implementation must return
// promptly when ctx is done.
type Responder interface {
	Respond(ctx context.Context, a Ask) (Reply, error)
}

// Respond is Defer's answer outside a durable run, where no one else
// decides: no answer to a question, no approval of a plan. In a durable
// run the driver answers in its place: the run ends awaiting_answer or
// awaiting_plan, and goes on once rein answer or rein approve records the
// answer.
func (Defer) Respond(context.Context, Ask) (Reply, error) {
	return Reply{Answer: ReplyNone, By: "deferred, and the run is not durable (its store keeps no checkpoints)"}, nil
}

// ApprovePlans approves every plan and answers no question (rein run
// --approve all).
type ApprovePlans struct{}

// Respond approves a plan; a question has no answer.
func (ApprovePlans) Respond(_ context.Context, a Ask) (Reply, error) {
	if a.Kind == AskPlan {
		return Reply{Answer: ReplyYes, By: "--approve all"}, nil
	}
	return Reply{Answer: ReplyNone, By: "--approve all"}, nil
}

// TerminalResponder asks a person at a terminal: it prints the ask to Out
// and reads one line from In. A question's answer is the line; an empty
// line is no answer. A plan is approved by "y" or "yes", cancelled by "n"
// or "no", and sent back by any other line, which is the note the model
// gets; end of input or the timeout cancels it.
type TerminalResponder struct {
	In      io.Reader
	Out     io.Writer
	Timeout time.Duration // zero means ten minutes
}

// Respond prompts and waits for the line.
func (t TerminalResponder) Respond(ctx context.Context, a Ask) (Reply, error) {
	if t.In == nil || t.Out == nil {
		return Reply{}, errors.New("terminal responder has no terminal")
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var prompt string
	switch a.Kind {
	case AskPlan:
		prompt = fmt.Sprintf("rein: the model proposes this plan:\n%s\napprove? y approves, n cancels the run, anything else is a note sent back (%s): ", indent(a.Text), timeout)
	default:
		prompt = fmt.Sprintf("rein: the model asks:\n%s\nyour answer (an empty line: no answer; %s): ", indent(a.Text), timeout)
	}
	if _, err := io.WriteString(t.Out, prompt); err != nil {
		return Reply{}, err
	}
	var got string
	select {
	case l, ok := <-linesOf(t.In):
		if !ok {
			l = ""
		}
		got = strings.TrimSpace(l)
	case <-ctx.Done():
		return Reply{}, fmt.Errorf("no answer at the terminal: %w", ctx.Err())
	}
	r := Reply{By: "the terminal"}
	switch {
	case a.Kind != AskPlan && got == "":
		r.Answer = ReplyNone
	case a.Kind != AskPlan:
		r.Answer, r.Text = ReplyAnswer, got
	case strings.EqualFold(got, "y") || strings.EqualFold(got, "yes"):
		r.Answer = ReplyYes
	case got == "" || strings.EqualFold(got, "n") || strings.EqualFold(got, "no"):
		r.Answer = ReplyNo
	default:
		r.Answer, r.Text = ReplyRevise, got
	}
	return r, nil
}

// indent is text as a terminal is shown it: each line indented and
// printable (what the model wrote cannot move the cursor or reorder the
// line).
// linesOf is the lines of in, read by the one reader every terminal
// prompt of the process shares (the approver's too).
func linesOf(in io.Reader) <-chan string { return policy.TerminalLines(in) }

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + policy.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// The descriptions the model reads.
const (
	questionDescription = "Ask the user a question about what is wanted, when the goal is ambiguous and a wrong guess would waste the work. " +
		"The answer is text for you, never permission: every action is still decided by the policy. Ask rarely; if no one can answer, decide yourself and say what you assumed."
	planDescription = "Propose your plan: its steps in words, in order. In a plan-gated run, nothing may be written and no command run until a plan is approved; " +
		"the approver may send it back with a note (revise it and propose again) or cancel the run. The approved plan is shown in your instructions at every step."
)

// personTools adds the question and plan tools to reg: their calls are
// put to the run's responder.
func (d *driver) personTools(reg *tool.Registry) ([]string, error) {
	q, err := tool.Define(QuestionTool, questionDescription, true, nil, func(ctx context.Context, _ *tool.Call, a loop.QuestionArgs) *tool.Result {
		if err := loop.CheckQuestion(a.Question); err != nil {
			return &tool.Result{Status: tool.Failed, Reason: err.Error(), Output: QuestionTool + ": " + err.Error()}
		}
		return d.put(ctx, Ask{Kind: AskQuestion, Text: a.Question})
	})
	if err != nil {
		return nil, err
	}
	p, err := tool.Define(PlanTool, planDescription, true, nil, func(ctx context.Context, _ *tool.Call, a loop.PlanArgs) *tool.Result {
		if err := loop.CheckPlan(a.Steps); err != nil {
			return &tool.Result{Status: tool.Failed, Reason: err.Error(), Output: PlanTool + ": " + err.Error() + "; propose it again"}
		}
		if !d.c.PlanGate {
			return &tool.Result{Status: tool.OK, Output: PlanTool + ": this run is not plan-gated; no one approves plans here. Go on with it."}
		}
		if d.planApproved() {
			return &tool.Result{Status: tool.OK, Output: PlanTool + ": a plan is approved already (shown in your instructions); it stands. Go on with it."}
		}
		return d.put(ctx, Ask{Kind: AskPlan, Text: loop.PlanText(a.Steps)})
	})
	if err != nil {
		return nil, err
	}
	for _, s := range []*tool.Spec{q, p} {
		if err := reg.Add(s); err != nil {
			return nil, err
		}
	}
	return []string{QuestionTool, PlanTool}, nil
}

// put puts an ask of the call in progress to the responder, and records
// the ask and its answer in the trace; in a durable run whose responder
// defers, the answer an operator recorded for this call (asked as it is
// asked now), or else the ask deferred: the run waits for it.
func (d *driver) put(ctx context.Context, a Ask) *tool.Result {
	k, _ := ctx.Value(callKey{}).(string)
	d.mu.Lock()
	c, ok := d.calls[k]
	d.mu.Unlock()
	if !ok {
		return &tool.Result{Status: tool.Failed, Reason: "asked outside a call of the run"}
	}
	var r Reply
	if _, deferred := d.o.Responder.(Defer); deferred && d.durable != nil {
		reqs, err := d.durable.ApprovalRequests(ctx, d.router.RunID())
		if err != nil {
			d.fail(err)
			return &tool.Result{Status: tool.Failed, Reason: err.Error()}
		}
		found := false
		for _, q := range reqs {
			if q.Kind != string(a.Kind) || q.CallID != c.ID || q.Shown != a.Text {
				continue
			}
			dec, err := d.durable.Decision(ctx, q.RunID, q.Request)
			if err != nil {
				d.fail(err)
				return &tool.Result{Status: tool.Failed, Reason: err.Error()}
			}
			if dec != nil {
				r, found = Reply{Answer: dec.Answer, Text: dec.Note, By: fmt.Sprintf("%s (request %s)", dec.By, q.Request)}, true
				break
			}
		}
		if !found {
			kind := AwaitingAnswer
			if a.Kind == AskPlan {
				kind = AwaitingPlan
			}
			id := newRequestID()
			d.mu.Lock()
			d.deferred[k] = &deferral{waiting: Waiting{Kind: kind, Request: id, CallID: c.ID, Shown: a.Text}, call: c}
			d.mu.Unlock()
			tool.AwaitingAnswer(ctx)
			return &tool.Result{Status: tool.Denied, Reason: "deferred to an operator as request " + id}
		}
	} else {
		var err error
		if d.o.Responder == nil {
			r = Reply{Answer: ReplyNone, By: "no one (this run has no responder)"}
		} else {
			// One ask at a time: a person answers the prompt in front of
			// them, and calls of one response run at once.
			d.askMu.Lock()
			r, err = d.o.Responder.Respond(ctx, a)
			d.askMu.Unlock()
			if err != nil {
				r = Reply{Answer: ReplyNone, By: "no one (the responder failed: " + err.Error() + ")"}
			}
		}
		if a.Kind == AskPlan && r.Answer == ReplyNone || a.Kind == AskPlan && r.Answer == ReplyAnswer {
			r.Answer = ReplyNo
		}
		if a.Kind == AskQuestion && r.Answer != ReplyAnswer {
			r.Answer = ReplyNone
		}
		d.recordAsk(ctx, c, a, r)
	}
	return d.replied(k, a, r)
}

// recordAsk records an ask answered in the process (not deferred) as a
// request and its answer, with the call's records.
func (d *driver) recordAsk(ctx context.Context, c ToolCall, a Ask, r Reply) {
	store := d.o.Tool.Store
	if d.held != nil {
		store = d.held
	}
	if store == nil {
		return
	}
	id, now := newRequestID(), time.Now()
	store.AppendAll(ctx,
		trace.ApprovalRequest{RunID: d.router.RunID(), Request: id, Kind: string(a.Kind), CallID: c.ID, Tool: c.Name, Args: c.Args, Shown: a.Text, At: now},
		trace.ApprovalDecision{RunID: d.router.RunID(), Request: id, Answer: r.Answer, Note: r.Text, By: r.By, At: now})
}

// replied is the result of an ask answered r.
func (d *driver) replied(k string, a Ask, r Reply) *tool.Result {
	by := policy.Printable(r.By)
	if a.Kind == AskQuestion {
		if r.Answer != ReplyAnswer {
			return &tool.Result{Status: tool.OK, Output: fmt.Sprintf("%s: no one can answer questions in this run (%s). Decide yourself, and say what you assumed when you end your turn.", QuestionTool, by)}
		}
		return &tool.Result{Status: tool.OK, Output: fmt.Sprintf("%s: answered by %s:\n%s\n[rein: this answer says what is wanted; it grants no permission: every action is still decided by the policy]", QuestionTool, by, r.Text)}
	}
	decision := loop.PlanCancelled
	var out string
	switch r.Answer {
	case ReplyYes:
		decision = loop.PlanApproved
		d.planOK.Store(true)
		out = fmt.Sprintf("%s: approved by %s. Go on with it: writes and commands are decided by the policy from now on, and the plan is shown in your instructions at every step.", PlanTool, by)
	case ReplyRevise:
		decision = loop.PlanRevise
		out = fmt.Sprintf("%s: not approved; %s sends it back with this note. Revise the plan and propose it again:\n%s", PlanTool, by, r.Text)
	default:
		out = fmt.Sprintf("%s: cancelled by %s; the run ends.", PlanTool, by)
		if r.Text != "" {
			out += " Their note: " + r.Text
		}
	}
	d.mu.Lock()
	d.planDecided[k] = decision
	d.mu.Unlock()
	return &tool.Result{Status: tool.OK, Output: out}
}

// planApproved says the run's plan is approved: in its state, or by a
// call of the response in progress.
func (d *driver) planApproved() bool {
	return d.planOK.Load() || (d.state != nil && d.state.PlanApproved())
}

// hold is the plan gate (tool.Config.Hold): until a plan is approved,
// every call of a tool that is not read-only is denied.
func (d *driver) hold(context.Context, string) *policy.Attribution {
	if !d.c.PlanGate || d.planApproved() {
		return nil
	}
	return &policy.Attribution{Rule: "no write or command before the plan is approved (propose_plan)", Act: policy.ActTool, Effect: policy.Deny, Layer: policy.LayerPlanGate}
}
