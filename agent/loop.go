package agent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// State is a run's durable state: everything the next step depends on.
// The step function (Next, then one of the Apply methods) is the loop;
// nothing in it touches the world.
type State struct {
	Contract   Contract  `json:"contract"`
	Transcript []Message `json:"transcript"`
	Steps      int       `json:"steps"`
	Tokens     Usage     `json:"tokens"`
	// Deadline is when the wall-clock budget ends: the budget counts the
	// run's active time, so a resumed run's deadline is set again from
	// Active.
	Deadline time.Time `json:"deadline"`
	// StartedAt is when the run began; Active the time it has been
	// driven, up to its last checkpoint.
	StartedAt time.Time     `json:"started_at"`
	Active    time.Duration `json:"active"`
	// Pending are the tool calls of the last response, not yet folded in;
	// Results the results of the first of them, in order, and Running the
	// ids of those started and not finished (the journal: a durable run
	// commits a call as running before it runs it).
	Pending []ToolCall   `json:"pending,omitempty"`
	Results []ToolResult `json:"results,omitempty"`
	Running []string     `json:"running,omitempty"`
	// Waiting is the operator's decision the run waits for.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Claimed: the model ended its turn; the gate runs next.
	Claimed bool `json:"claimed,omitempty"`
	// FailedClaims counts the gate attempts that did not pass.
	FailedClaims int          `json:"failed_claims"`
	LastGate     *GateAttempt `json:"last_gate,omitempty"`
	// GateBaseline is the gate's attempt before the model's first call:
	// the starting point shown to the model, and what every later
	// attempt's tests are compared with.
	GateBaseline *GateAttempt `json:"gate_baseline,omitempty"`
	// Attempt counts the provider attempts of the step in progress;
	// RetryAt is when the next may start.
	Attempt int       `json:"attempt"`
	RetryAt time.Time `json:"retry_at,omitempty"`
	// Recent are the signatures of the last calls and whether each
	// changed the workspace, for the stall check; Nudged says the model
	// was told once to re-plan.
	Recent []callMark `json:"recent,omitempty"`
	Nudged bool       `json:"nudged,omitempty"`
	// Reads are the transcript indices of the reads of each path not yet
	// superseded.
	Reads map[string][]int `json:"reads,omitempty"`
	// SetAside counts the observations set aside to fit the window.
	SetAside int `json:"set_aside,omitempty"`
	// Malformed says the model was told once that a tool call's
	// arguments were not JSON.
	Malformed bool `json:"malformed,omitempty"`
	// Squeezed says the provider refused this step's prompt as too long
	// for its window and every observation it could was set aside; a
	// second refusal ends the run.
	Squeezed bool `json:"squeezed,omitempty"`
	// Notes are told to the model after the pending calls' results.
	Notes []string `json:"notes,omitempty"`
	// Done is the outcome, once the run has one.
	Done *Outcome `json:"done,omitempty"`
}

type callMark struct {
	Sig     string `json:"sig"`
	Changed bool   `json:"changed"`
}

// Effect is what the loop asks its driver to do next. Each carries an
// idempotency key (run, step, index) so a durable driver can tell a
// repeat from a new effect.
type Effect interface{ key() string }

// CallModel asks for the model's next response.
type CallModel struct{ Key string }

// RunTools asks for the calls to be routed, in order.
type RunTools struct {
	Key   string
	Calls []ToolCall
}

// RunGate asks for one gate attempt; with Baseline, the one before the
// model's first call.
type RunGate struct {
	Key      string
	Baseline bool
}

// AwaitDecision asks for an operator's decision on a request: the run
// ends waiting for it, and goes on once it is recorded.
type AwaitDecision struct {
	Key     string
	Waiting Waiting
}

// Waiting is what a run waits on: the request an operator answers.
type Waiting struct {
	// Kind is AwaitingApproval (an ask deferred) or AwaitingRecovery (a
	// call interrupted by the driver's death, left to an operator).
	Kind    Kind   `json:"kind"`
	Request string `json:"request"`
	// CallID is the pending call the decision is about.
	CallID string `json:"call_id"`
	// Shown is what the operator is asked, exactly as shown.
	Shown string `json:"shown"`
}

// Wait asks the driver to sleep until Until (a retry's backoff).
type Wait struct {
	Key   string
	Until time.Time
}

// End says the run is over.
type End struct{ Outcome Outcome }

func (e CallModel) key() string { return e.Key }
func (e RunTools) key() string  { return e.Key }
func (e RunGate) key() string   { return e.Key }
func (e AwaitDecision) key() string {
	return e.Key
}
func (e Wait) key() string { return e.Key }
func (e End) key() string  { return "end" }

// Retry and stall settings.
const (
	maxAttempts = 5
	baseBackoff = 500 * time.Millisecond
	maxBackoff  = 30 * time.Second
	// stallWindow calls with no workspace change, one of them repeated
	// stallRepeats times, are a stall.
	stallWindow  = 8
	stallRepeats = 3
	// maxCallsPerStep bounds the tool calls one response may make.
	maxCallsPerStep = 64
)

// NewState starts a run's state for contract c (already defaulted) at
// now, with the goal as the first message.
func NewState(c Contract, now time.Time) *State {
	return &State{Contract: c, Deadline: now.Add(c.Budget.WallClock), StartedAt: now, Transcript: []Message{{Role: RoleUser, Text: c.Goal}}}
}

// Next is the next effect, decided from the state alone at now.
func (s *State) Next(now time.Time) Effect {
	k := func(what string) string { return fmt.Sprintf("step %d %s %d", s.Steps, what, s.Attempt) }
	switch {
	case s.Done != nil:
		return End{Outcome: *s.Done}
	case s.Waiting != nil:
		return AwaitDecision{Key: "await " + s.Waiting.Request, Waiting: *s.Waiting}
	case len(s.Pending) > 0:
		return RunTools{Key: k("tools"), Calls: s.Pending[len(s.Results):]}
	case s.Claimed:
		return RunGate{Key: fmt.Sprintf("gate %d", s.FailedClaims)}
	case s.Contract.Verify != nil && s.GateBaseline == nil && s.Steps == 0:
		return RunGate{Key: "gate baseline", Baseline: true}
	case s.Steps >= s.Contract.Budget.Steps:
		return s.end(BudgetExhausted, fmt.Sprintf("the step budget of %d is spent", s.Contract.Budget.Steps))
	case sat(s.Tokens.Input, s.Tokens.Output) >= s.Contract.Budget.Tokens:
		return s.end(BudgetExhausted, fmt.Sprintf("the token budget of %d is spent (%d in, %d out)", s.Contract.Budget.Tokens, s.Tokens.Input, s.Tokens.Output))
	case s.Contract.Budget.Cost > 0 && s.Contract.Prices.Cost(s.Tokens) >= s.Contract.Budget.Cost:
		return s.end(BudgetExhausted, fmt.Sprintf("the cost budget of %.2f is spent (%.4f)", s.Contract.Budget.Cost, s.Contract.Prices.Cost(s.Tokens)))
	case !now.Before(s.Deadline):
		return s.end(BudgetExhausted, fmt.Sprintf("the wall-clock budget of %s is spent", s.Contract.Budget.WallClock))
	case now.Before(s.RetryAt):
		return Wait{Key: k("wait"), Until: s.RetryAt}
	}
	s.fit()
	return CallModel{Key: k("model")}
}

// The share of the window the transcript may fill, the characters a token
// is taken for where no count is known, and the messages at the end that
// are never set aside.
const (
	contextShare   = 0.7
	charsPerToken  = 4
	keepLastTurns  = 6
	stubbedMessage = "[rein: this observation (%d characters) was set aside to keep the prompt within its budget; make the call again to see it]"
)

// fit sets aside the oldest observations (tool results) while the
// transcript passes its share of the model's window: each becomes a
// one-line stub that names what to do to see it again. The goal and the
// last turns stay as they are; the trace keeps the whole text.
func (s *State) fit() {
	s.fitTo(int(float64(s.Contract.ContextTokens) * contextShare * charsPerToken))
}

// fitTo sets aside the oldest observations until the transcript is at
// most limit characters, or only the goal and the last turns are left.
func (s *State) fitTo(limit int) {
	size := 0
	for _, m := range s.Transcript {
		size += len(m.Text)
		for _, c := range m.ToolCalls {
			size += len(c.Args)
		}
	}
	for i := 1; size > limit && i < len(s.Transcript)-keepLastTurns; i++ {
		m := &s.Transcript[i]
		if m.Role != RoleTool || strings.HasPrefix(m.Text, "[rein: this observation") {
			continue
		}
		stub := fmt.Sprintf(stubbedMessage, len(m.Text))
		size -= len(m.Text) - len(stub)
		m.Text = stub
		s.SetAside++
	}
}

// floor is the response's usage with rein's own estimate (charsPerToken
// characters a token) as a floor under the server's counts: the input
// at least the transcript the request sent, the output at least the text
// and the calls it returned. A server that reports fewer (a proxy that
// says 0, say) cannot stretch the token budget.
func (s *State) floor(resp *Response) Usage {
	u := resp.Usage
	in := 0
	for _, m := range s.Transcript {
		in += utf8.RuneCountInString(m.Text)
		for _, c := range m.ToolCalls {
			in += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Args)
		}
	}
	out := utf8.RuneCountInString(resp.Text)
	for _, c := range resp.ToolCalls {
		out += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Args)
	}
	// Input is the whole input, the cached part included.
	if est := int64(in / charsPerToken); u.Input < est {
		u.Input = est
	}
	if est := int64(out / charsPerToken); u.Output < est {
		u.Output = est
	}
	return u
}

// fileTools are the tools whose path argument names a file they read or
// change: a read of a path is superseded by a later read or change of it.
var fileTools = map[string]bool{"read_file": true, "write_file": true, "edit_file": true, "delete_file": true}

// pathOf is the path a file tool's call names, or "".
func pathOf(c ToolCall) string {
	if !fileTools[c.Name] {
		return ""
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(c.Args), &a) != nil {
		return ""
	}
	return a.Path
}

// supersede turns the reads of path kept so far into stubs: the model has
// a newer view of that file (by call, a read again or a change).
func (s *State) supersede(path, by string) {
	for _, i := range s.Reads[path] {
		if i < len(s.Transcript) && !strings.HasPrefix(s.Transcript[i].Text, "[rein:") {
			s.Transcript[i].Text = fmt.Sprintf("[rein: this read of %s is superseded by a later %s of it]", path, by)
		}
	}
	delete(s.Reads, path)
}

func (s *State) end(kind Kind, reason string) End {
	s.Done = &Outcome{Kind: kind, Reason: reason, Steps: s.Steps, Tokens: s.Tokens, Cost: s.Contract.Prices.Cost(s.Tokens), Gate: s.LastGate}
	return End{Outcome: *s.Done}
}

// ApplyModel folds a model call's result in: a response, or an error of
// the provider (classed; retried when its class is, with backoff and the
// server's Retry-After, never past the wall clock).
func (s *State) ApplyModel(resp *Response, err error, now time.Time) {
	if err != nil {
		class, after := classOf(err)
		s.Attempt++
		if class == FailContextOverflow && !s.Squeezed {
			// The server counts tokens its own way: compact as far as
			// the transcript allows, then try once more at once.
			s.Squeezed = true
			s.fitTo(0)
			return
		}
		if !class.Retried() || s.Attempt >= maxAttempts {
			why := err.Error()
			if class.Retried() {
				why = fmt.Sprintf("%v (%d attempts)", err, s.Attempt)
			}
			s.end(ProviderFailed, why)
			return
		}
		wait := min(baseBackoff<<(s.Attempt-1), maxBackoff)
		wait = wait/2 + rand.N(wait/2+1)
		wait = max(wait, after)
		if now.Add(wait).After(s.Deadline) {
			s.end(ProviderFailed, fmt.Sprintf("%s, and the wait of %s before the next attempt would pass the wall-clock budget: %v", class, wait.Round(time.Millisecond), err))
			return
		}
		s.RetryAt = now.Add(wait)
		return
	}
	s.Attempt, s.RetryAt, s.Squeezed = 0, time.Time{}, false
	s.Steps++
	s.Tokens = s.Tokens.add(s.floor(resp))
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
	if len(calls) > maxCallsPerStep {
		note = fmt.Sprintf("[rein: your response asked for %d tool calls; only the first %d were run. Ask for fewer at once.]", len(calls), maxCallsPerStep)
		calls = calls[:maxCallsPerStep]
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
	if s.Contract.Verify == nil {
		s.end(Finished, "the model ended its turn; the run has no gate, so nothing says the goal is met")
		return
	}
	s.Claimed = true
}

// ToolResult is what one routed call gave: the observation for the model,
// and whether it changed the workspace.
type ToolResult struct {
	Observation string `json:"observation"`
	Changed     bool   `json:"changed,omitempty"`
}

// ApplyCall folds in the result of the next pending call; once every
// pending call has one, ApplyTools folds them into the transcript.
func (s *State) ApplyCall(r ToolResult) {
	if len(s.Results) < len(s.Pending) {
		s.Results = append(s.Results, r)
	}
	if len(s.Running) > 0 {
		s.Running = s.Running[1:]
	}
}

// ApplyTools folds the routed calls' results in, in the calls' order.
// stopped, when not empty, is why the router stopped the run (the same
// refusal repeated).
func (s *State) ApplyTools(results []ToolResult, stopped string) {
	for i, c := range s.Pending {
		obs := ""
		if i < len(results) {
			obs = results[i].Observation
			s.Recent = append(s.Recent, callMark{Sig: c.Name + " " + c.Args, Changed: results[i].Changed})
		}
		// Earlier reads of a file are superseded by a read of it and by a
		// change made to it.
		path := pathOf(c)
		if path != "" && i < len(results) && (c.Name == "read_file" || results[i].Changed) {
			s.supersede(path, c.Name)
		}
		s.Transcript = append(s.Transcript, Message{Role: RoleTool, ToolCallID: c.ID, Text: obs})
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
	if len(s.Recent) > stallWindow {
		s.Recent = s.Recent[len(s.Recent)-stallWindow:]
	}
	if stopped != "" {
		s.end(RefusedRepeatedly, stopped)
		return
	}
	if sig := s.stall(); sig != "" {
		if s.Nudged {
			s.end(Stalled, fmt.Sprintf("%d calls changed nothing and %q was made %d times, after a nudge to re-plan", len(s.Recent), sig, stallRepeats))
			return
		}
		s.Nudged, s.Recent = true, nil
		s.Transcript = append(s.Transcript, Message{Role: RoleUser, Text: fmt.Sprintf(
			"[rein: the last calls changed nothing, and %q was made %d times. Stop and re-plan: what do you know, and what would tell you something new?]", sig, stallRepeats)})
	}
}

// stall returns a call repeated stallRepeats times in a full window that
// changed nothing, or "".
func (s *State) stall() string {
	if len(s.Recent) < stallWindow {
		return ""
	}
	counts := map[string]int{}
	for _, m := range s.Recent {
		if m.Changed {
			return ""
		}
		counts[m.Sig]++
	}
	for _, m := range s.Recent {
		if counts[m.Sig] >= stallRepeats {
			return m.Sig
		}
	}
	return ""
}

// ApplyGate folds a gate attempt in: passed ends the run succeeded; a
// failed, errored or tampered attempt puts its output in front of the
// model, until GateRetries failed claims end the run gate_failed.
func (s *State) ApplyGate(a GateAttempt) {
	s.Claimed = false
	s.LastGate = &a
	if a.Status == GatePassed {
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

// ApplyBaseline folds the baseline in: the model is shown, with its
// goal, what the gate says of the workspace as the run began.
func (s *State) ApplyBaseline(a GateAttempt) {
	s.GateBaseline = &a
	s.Transcript[0].Text += "\n\n" + baselineNote(s.Contract.Verify.Line, a)
}

// maxBaselineShown bounds the baseline's output shown with the goal,
// which stays in the prompt for the whole run: its tail, where a test
// runner says what failed.
const maxBaselineShown = 4 << 10

func baselineNote(line string, a GateAttempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[rein: before your first step, rein ran the gate %q on the workspace as it is: %s", line, gateWhy(a))
	if t := a.Tests; t != nil {
		fmt.Fprintf(&b, "; tests: %d run, %d passed, %d failed, %d skipped", t.Run, t.Passed, t.Failed, t.Skipped)
	}
	b.WriteString(". This is the starting point. The run succeeds when the gate passes")
	if a.Tests != nil {
		b.WriteString(" and every protected test that ran here runs and passes")
	}
	out := a.Output
	if len(out) > maxBaselineShown {
		cut := len(out) - maxBaselineShown
		for cut < len(out) && out[cut]&0xc0 == 0x80 {
			cut++
		}
		out = fmt.Sprintf("[%d bytes before]\n", cut) + out[cut:]
	}
	b.WriteString(". Its output:]\n")
	b.WriteString(out)
	return b.String()
}

func gateWhy(a GateAttempt) string {
	switch {
	case a.Status == GateTampered:
		return "protected files were changed behind the policy's back: " + strings.Join(a.Tampered, ", ")
	case a.Status == GateTestsNotRun:
		return fmt.Sprintf("tests_not_run, exit %d, but these protected tests did not run and pass: %s", deref(a.ExitCode), strings.Join(a.Tests.NotRun, ", "))
	case a.ExitCode != nil:
		return fmt.Sprintf("%s, exit %d", a.Status, *a.ExitCode)
	}
	return string(a.Status)
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// Cancel ends the run cancelled.
func (s *State) Cancel(why string) { s.end(Cancelled, why) }
