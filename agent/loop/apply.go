package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Input is an effect's result, or an event of the run's life, as plain
// data: what State.Apply folds in.
type Input interface{ input() }

// ModelReplied is a model call's response. Answer, for a response that
// calls no tool when the contract has an output schema, is its text read
// against the schema (by the driver: the loop reads nothing).
type ModelReplied struct {
	Response Response
	Answer   *AnswerCheck
}

// AnswerCheck is a final answer read against the contract's output
// schema: the answer as JSON when it matches, else what is wrong.
type AnswerCheck struct {
	JSON   json.RawMessage `json:"json,omitempty"`
	Errors []string        `json:"errors,omitempty"`
}

// OK says the answer matches.
func (a *AnswerCheck) OK() bool { return a != nil && len(a.Errors) == 0 && len(a.JSON) > 0 }

// ModelFailed is a model call that failed, classed by its provider.
type ModelFailed struct {
	Class   FailureClass
	Message string
	// RetryAfter is what the server asked the client to wait, or zero.
	RetryAfter time.Duration
}

// Started journals the call about to run (a call the loop does not
// repeat on its own: RunTools's Indeterminate): a durable driver commits
// it before it runs it, so that its successor knows it was under way.
type Started struct{ CallID string }

// CallsRan are the results of a RunTools effect's calls, in order. With
// Deferred, the call after the results asked a question an operator
// answers: the run waits for it, and the call is made again once it is
// answered. Stopped, when not empty, is why the router stopped the run
// (the same refusal repeated).
type CallsRan struct {
	Results  []ToolResult
	Deferred *Waiting
	Stopped  string
}

// GateRan is a gate attempt's result.
type GateRan struct {
	Attempt  GateAttempt
	Baseline bool
}

// Decided is an operator's recorded answer to the request the run waits
// for.
type Decided struct {
	Request string
	Yes     bool
	Note    string
	// Stopped is the router's stop, as in CallsRan.
	Stopped string
}

// Resumed says a driver goes on with the run after the one before it
// stopped (it died, or ended its process to wait): the budget's deadline
// is set again from the time active, and a call that was running is
// settled (made again when read-only; else told to the model as
// interrupted, or, with the contract's recovery "wait", left to an
// operator as request Request, shown Shown).
type Resumed struct {
	Run      string
	ReadOnly []string
	// Overhead is State.Overhead, measured again.
	Overhead int
	// Change is the workspace's change since the running call started,
	// as the model is told it.
	Change  string
	Request string
	Shown   string
	Stopped string
}

// Stopped is the run's end from outside the loop: its wall-clock budget
// spent while an effect ran (OutOfTime), or its caller cancelling it.
type Stopped struct {
	Reason    string
	OutOfTime bool
}

// Accounted is the time the run has been driven, counted by its driver.
type Accounted struct{ Active time.Duration }

// Ended says the driver takes the End effect Next named at the same now:
// a budget found spent becomes the run's outcome.
type Ended struct{}

func (ModelReplied) input() {}
func (ModelFailed) input()  {}
func (Started) input()      {}
func (CallsRan) input()     {}
func (GateRan) input()      {}
func (Decided) input()      {}
func (Resumed) input()      {}
func (Stopped) input()      {}
func (Accounted) input()    {}
func (Ended) input()        {}

// Apply folds in at now. It is the only writer of the state.
func (s *State) Apply(in Input, now time.Time) {
	switch in := in.(type) {
	case ModelReplied:
		s.replied(in.Response, in.Answer)
	case ModelFailed:
		s.failed(in, now)
	case Started:
		s.Running = []string{in.CallID}
	case CallsRan:
		s.ran(in)
	case GateRan:
		if in.Baseline {
			s.baseline(in.Attempt)
		} else {
			in.Attempt.Report, in.Attempt.Declared = nil, nil
			s.gate(in.Attempt)
		}
	case Decided:
		s.decided(in)
	case Resumed:
		s.resumed(in, now)
	case Stopped:
		if s.Done == nil {
			if in.OutOfTime {
				s.end(BudgetExhausted, fmt.Sprintf("the wall-clock budget of %s is spent", s.Contract.Budget.WallClock))
			} else {
				s.end(Cancelled, in.Reason)
			}
		}
	case Accounted:
		s.Active = in.Active
	case Ended:
		if s.Done == nil {
			if o, ok := s.spent(now); ok {
				s.Done = &o
			}
		}
	case Summarized:
		if s.Fold != nil {
			s.summarized(in)
		}
	case SummaryFailed:
		if s.Fold != nil {
			s.summaryFailed(in)
		}
	case FoldAsked:
		switch {
		case in.Request == "" || in.Request == s.FoldAsked || s.answered(in.Request):
		case s.Fold != nil && s.Fold.Request == "":
			// The fold the window asked for answers it.
			s.Fold.Request, s.FoldAsked = in.Request, in.Request
		default:
			s.FoldAsked = in.Request
		}
	}
	if s.Done == nil && s.Waiting == nil && len(s.Pending) == 0 && !s.Claimed {
		// The model is asked next: the transcript is fitted to its window,
		// folded or with observations set aside.
		s.prepare()
	}
}

// Retry settings.
const (
	maxAttempts = 5
	baseBackoff = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
)

// failed folds in a failed model call: retried when its class is, with
// backoff (jitter from the call's key) and the server's Retry-After,
// never past the wall clock.
func (s *State) failed(f ModelFailed, now time.Time) {
	k := s.key(KindModel, s.Steps+1, 0, s.Attempt+1)
	s.Attempt++
	if f.Class == FailContextOverflow && !s.Squeezed {
		// The server counts tokens its own way: fold as much as a view
		// holds (what is left set aside too), or, with nothing to fold,
		// set aside all it can, then try once more at once.
		s.Squeezed = true
		if p, ok := s.planFold(0); ok && s.Fold == nil {
			s.Fold = &p
			return
		}
		s.fitTo(0)
		return
	}
	if !f.Class.Retried() || s.Attempt >= maxAttempts {
		why := f.Message
		if f.Class.Retried() {
			why = fmt.Sprintf("%s (%d attempts)", f.Message, s.Attempt)
		}
		s.end(ProviderFailed, why)
		return
	}
	wait := min(baseBackoff<<(s.Attempt-1), maxBackoff)
	wait = wait/2 + k.Jitter(wait/2)
	wait = max(wait, f.RetryAfter)
	if now.Add(wait).After(s.Deadline) {
		s.end(ProviderFailed, fmt.Sprintf("%s, and the wait of %s before the next attempt would pass the wall-clock budget: %s", f.Class, wait.Round(time.Millisecond), f.Message))
		return
	}
	s.RetryAt = now.Add(wait)
}

// replied folds in a model's response.
func (s *State) replied(resp Response, answer *AnswerCheck) {
	s.Attempt, s.RetryAt, s.Squeezed = 0, time.Time{}, false
	s.Steps++
	s.Tokens = s.Tokens.Add(s.floor(&resp))
	msg := Message{Role: RoleAssistant, Text: resp.Text}
	if resp.Finish == FinishLength {
		// Cut at the cap: what it asked for may be cut too, and is never
		// run.
		s.Transcript = append(s.Transcript, msg, Message{Role: RoleUser, Text: fmt.Sprintf(
			"[rein: your response was cut at the cap of %d tokens; its %d unfinished tool call(s) were not run. Say less at once, or split the work.]",
			s.Contract.ResponseMaxTokens, len(resp.ToolCalls))})
		return
	}
	// Each call gets an id of rein's own, unique in the run: servers that
	// number calls per response (call_0) would make a result answer the
	// wrong call.
	calls := slices.Clone(resp.ToolCalls)
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", s.Steps, i)
	}
	var note string
	if len(calls) > MaxCallsPerStep {
		note = fmt.Sprintf("[rein: your response asked for %d tool calls; only the first %d were run. Ask for fewer at once.]", len(calls), MaxCallsPerStep)
		calls = calls[:MaxCallsPerStep]
	}
	for _, c := range calls {
		if !json.Valid([]byte(c.Args)) {
			// Told once (the router refuses the call, saying why); a
			// second time is the provider's failure.
			if s.Malformed {
				s.end(ProviderFailed, fmt.Sprintf("%s: the model sent arguments that are not JSON again (for %s), after being told once", FailMalformed, c.Name))
				return
			}
			s.Malformed = true
		}
	}
	msg.ToolCalls = calls
	s.Transcript = append(s.Transcript, msg)
	if note != "" {
		s.Notes = append(s.Notes, note)
	}
	if len(calls) > 0 {
		s.Pending = calls
		return
	}
	if len(s.Contract.OutputSchema) > 0 {
		s.Answer = answer
		if s.Contract.Verify == nil && !answer.OK() {
			s.answerRejected()
			return
		}
	}
	if s.Contract.Verify == nil {
		what := "the model ended its turn"
		if s.Answer.OK() {
			what += " with an answer that matches the output schema"
		}
		s.end(Finished, what+"; the run has no gate, so nothing says the goal is met")
		return
	}
	s.Claimed = true
}

// answerRejected sends a final answer that does not match the output
// schema back once, with what is wrong; the second ends the run.
func (s *State) answerRejected() {
	why := "it is not JSON"
	if s.Answer != nil && len(s.Answer.Errors) > 0 {
		why = strings.Join(s.Answer.Errors, "; ")
	}
	if s.AnswerSentBack {
		s.end(InvalidAnswer, "the final answer does not match the output schema, after it was sent back once: "+why)
		return
	}
	s.AnswerSentBack = true
	s.Transcript = append(s.Transcript, Message{Role: RoleUser, Text: "[rein: your final answer must be one JSON value matching the output schema in your instructions, and nothing else. It does not: " +
		why + ". Answer again with the JSON alone; this is the last chance.]"})
}

// ran folds in the results of calls run, then a deferral, and once every
// pending call has a result, all of them.
func (s *State) ran(in CallsRan) {
	for _, r := range in.Results {
		s.result(r)
	}
	if in.Deferred != nil {
		w := *in.Deferred
		s.Running, s.Waiting = nil, &w
		return
	}
	s.fold(in.Stopped)
}

// result folds in the result of the next pending call.
func (s *State) result(r ToolResult) {
	if len(s.Results) < len(s.Pending) {
		s.Results = append(s.Results, r)
		if r.Spent != nil {
			s.Children = s.Children.Add(*r.Spent)
		}
	}
	if len(s.Running) > 0 {
		s.Running = s.Running[1:]
	}
}

// fold folds the pending calls' results into the transcript, in the
// calls' order, once every one has its result.
func (s *State) fold(stopped string) {
	if len(s.Pending) == 0 || len(s.Results) < len(s.Pending) {
		return
	}
	cancelled := ""
	for i, c := range s.Pending {
		r := s.Results[i]
		s.Recent = append(s.Recent, callMark{Sig: c.Name + " " + c.Args, Changed: r.Changed})
		// Earlier reads of a file are superseded by a read of it and by a
		// change made to it.
		path := pathOf(c)
		if path != "" && (c.Name == "read_file" || r.Changed) {
			s.supersede(path, c.Name)
		}
		s.Transcript = append(s.Transcript, Message{Role: RoleTool, ToolCallID: c.ID, Text: r.Observation})
		if c.Name == TodoTool {
			// The list the call gave, when it is one the loop keeps (the
			// tool told the model otherwise).
			if items, err := ParseTodo(c.Args); err == nil {
				s.Todo = items
			}
		}
		if c.Name == PlanTool && s.Contract.PlanGate {
			switch r.Plan {
			case PlanApproved:
				if steps, err := ParsePlan(c.Args); err == nil && s.Plan == nil {
					s.Plan = steps
				}
			case PlanCancelled:
				cancelled = fmt.Sprintf("the plan the model proposed at step %d was cancelled by its approver", s.Steps)
			}
		}
		if path != "" && c.Name == "read_file" {
			if s.Reads == nil {
				s.Reads = map[string][]int{}
			}
			s.Reads[path] = append(s.Reads[path], len(s.Transcript)-1)
		}
	}
	s.Pending, s.Results, s.Running = nil, nil, nil
	for _, n := range s.Notes {
		s.Transcript = append(s.Transcript, Message{Role: RoleUser, Text: n})
	}
	s.Notes = nil
	if len(s.Recent) > StallWindow {
		s.Recent = s.Recent[len(s.Recent)-StallWindow:]
	}
	if stopped != "" {
		s.end(RefusedRepeatedly, stopped)
		return
	}
	if cancelled != "" {
		s.end(Cancelled, cancelled)
		return
	}
	if sig := s.stall(); sig != "" {
		if s.Nudged {
			s.end(Stalled, fmt.Sprintf("%d calls changed nothing and %q was made %d times, after a nudge to re-plan", len(s.Recent), sig, StallRepeats))
			return
		}
		s.Nudged, s.Recent = true, nil
		s.Transcript = append(s.Transcript, Message{Role: RoleUser, Text: fmt.Sprintf(
			"[rein: the last calls changed nothing, and %q was made %d times. Stop and re-plan: what do you know, and what would tell you something new?]", sig, StallRepeats)})
	}
}

// interrupt folds in the observation of the next pending call, which was
// running when a driver died and is not made again.
func (s *State) interrupt(change, stopped string) {
	c := s.Pending[len(s.Results)]
	s.Running = nil
	s.result(ToolResult{Observation: Interrupted(c, change), Changed: true})
	s.fold(stopped)
}

// Interrupted is the observation of a call that was running when the
// driver died and is not safe to repeat.
func Interrupted(c ToolCall, change string) string {
	return fmt.Sprintf("%s: interrupted\n[rein: this call was running when rein's process died, and it is not one rein repeats on its own (it may have changed the workspace, or the world, in part or in full). Its result is unknown. Look before you go on; %s]", c.Name, change)
}

// resumed settles what the driver before left under way.
func (s *State) resumed(in Resumed, now time.Time) {
	if s.Run == "" {
		// A checkpoint written before the state kept its run.
		s.Run = in.Run
	}
	ro := slices.Clone(in.ReadOnly)
	slices.Sort(ro)
	s.ReadOnly = slices.Compact(ro)
	s.Overhead = in.Overhead
	// The budget counts the time the run was driven, not the time it lay
	// dead.
	s.Deadline = now.Add(s.Contract.Budget.WallClock - s.Active)
	if len(s.Running) == 0 || s.Waiting != nil || len(s.Results) >= len(s.Pending) {
		s.Running = nil
		return
	}
	next := s.Pending[len(s.Results)]
	switch {
	case s.IsReadOnly(next.Name):
		s.Running = nil
	case s.Contract.Recovery == RecoverWait:
		s.Waiting = &Waiting{Kind: AwaitingRecovery, Request: in.Request, CallID: next.ID, Shown: in.Shown}
	default:
		s.interrupt(in.Change, in.Stopped)
	}
}

// decided folds in the answer to the request the run waits for. An
// approval's call is made again, asked again, and answered by what was
// recorded if it still asks the same; a recovery's yes makes the call
// again, its no tells the model it was interrupted.
func (s *State) decided(in Decided) {
	w := s.Waiting
	if w == nil || w.Request != in.Request {
		return
	}
	s.Waiting = nil
	if w.Kind != AwaitingRecovery || len(s.Results) >= len(s.Pending) {
		return
	}
	if in.Yes {
		s.Running = nil
		return
	}
	note := ""
	if in.Note != "" {
		note = " (" + in.Note + ")"
	}
	s.interrupt("an operator chose not to make it again"+note, in.Stopped)
}

// gate folds a gate attempt in: passed ends the run succeeded; a failed,
// errored or tampered attempt puts its output in front of the model,
// until GateRetries failed claims end the run gate_failed.
func (s *State) gate(a GateAttempt) {
	s.Claimed = false
	s.LastGate = &a
	if a.Status == GatePassed {
		if len(s.Contract.OutputSchema) > 0 && !s.Answer.OK() {
			s.answerRejected()
			return
		}
		s.end(Succeeded, fmt.Sprintf("the gate %q passed", s.Contract.Verify.Line))
		return
	}
	s.FailedClaims++
	if s.FailedClaims >= s.Contract.GateRetries {
		s.end(GateFailed, fmt.Sprintf("the gate %q did not pass after %d claims of done (last: %s)", s.Contract.Verify.Line, s.FailedClaims, gateWhy(a)))
		return
	}
	s.Transcript = append(s.Transcript, Message{Role: RoleUser, Text: fmt.Sprintf(
		"[rein: you ended your turn, so the gate ran, and it did not pass: %s. It has %d more chance(s). Its output:]\n%s",
		gateWhy(a), s.Contract.GateRetries-s.FailedClaims, a.Output)})
}

// baseline folds the baseline in: the model is shown, with its goal, what
// the gate says of the workspace as the run began.
func (s *State) baseline(a GateAttempt) {
	s.GateBaseline = &a
	s.Transcript[0].Text += "\n\n" + baselineNote(s.Contract.Verify.Line, a)
}
