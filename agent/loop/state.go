package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// State is a run's durable state: everything the next step depends on.
// The step function (Next, then one of the Apply methods) is the loop;
// nothing in it touches the world.
type State struct {
	// Run is the run's id, the first part of every effect's key.
	Run        string    `json:"run,omitempty"`
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
	// Stale are the reads superseded and not yet set aside.
	Stale []StaleRead `json:"stale,omitempty"`
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
	// ReadOnly are the names of the run's read-only tools, sorted: their
	// calls run together and are made again after a driver's death.
	ReadOnly []string `json:"read_only,omitempty"`
	// GitStart is the repository as the run began, for its commit
	// (Contract.Commit).
	GitStart *GitStart `json:"git_start,omitempty"`
	// Todo is the model's todo list, as its last todo_write call gave it.
	Todo []TodoItem `json:"todo,omitempty"`
	// Plan is the plan approved in a plan-gated run (Contract.PlanGate),
	// its steps as the propose_plan call gave them; nil while none is.
	Plan []string `json:"plan,omitempty"`
	// Answer is the last final answer read against the contract's output
	// schema; AnswerSentBack says one that did not match was sent back.
	Answer         *AnswerCheck `json:"answer,omitempty"`
	AnswerSentBack bool         `json:"answer_sent_back,omitempty"`
	// Overhead is what every request carries besides the transcript (the
	// system block and the tools' definitions), in characters, as the
	// driver measured it: the transcript's share of the window is what
	// is left of it.
	Overhead int `json:"overhead,omitempty"`
	// Fold is the fold asked for next (a summarising call); FoldAsked an
	// operator's request to fold, not yet taken; Folded the steps folded
	// so far; Summaries the folds made (and the requests answered with
	// none); NoFoldUntil the step before which no fold is tried again
	// after one was given up; FoldFailures the folds given up.
	Fold         *FoldPlan `json:"fold,omitempty"`
	FoldAsked    string    `json:"fold_asked,omitempty"`
	Folded       int       `json:"folded,omitempty"`
	Summaries    []Summary `json:"summaries,omitempty"`
	NoFoldUntil  int       `json:"no_fold_until,omitempty"`
	FoldFailures int       `json:"fold_failures,omitempty"`
	// Children is what the run's children (and theirs) spent, as their
	// results said: the run's budget bounds it with the run's own.
	Children Spent `json:"children,omitempty"`
	// Done is the outcome, once the run has one.
	Done *Outcome `json:"done,omitempty"`
}

type callMark struct {
	Sig     string `json:"sig"`
	Changed bool   `json:"changed"`
}

// Stall settings.
const (
	// StallWindow calls with no workspace change, one of them repeated
	// StallRepeats times, are a stall.
	StallWindow  = 8
	StallRepeats = 3
	// MaxCallsPerStep bounds the tool calls one response may make.
	MaxCallsPerStep = 64
)

// Start is what a new run's state begins from.
type Start struct {
	Run      string
	Contract Contract
	// ReadOnly names the run's read-only tools.
	ReadOnly []string
	// StartedAt is when the run began, by the wall clock.
	StartedAt time.Time
	// Overhead is State.Overhead.
	Overhead int
	// GitStart is State.GitStart.
	GitStart *GitStart
	// History is the transcript the run goes on from (a conversation's
	// turns before it), before its goal.
	History []Message
}

// New starts a run's state at now (the clock its budget is read by),
// with the history, then the goal, as its first messages. The contract must have its
// defaults (Contract.WithDefaults).
func New(st Start, now time.Time) *State {
	ro := slices.Clone(st.ReadOnly)
	slices.Sort(ro)
	return &State{Run: st.Run, Contract: st.Contract, ReadOnly: slices.Compact(ro), Deadline: now.Add(st.Contract.Budget.WallClock), StartedAt: st.StartedAt, Overhead: st.Overhead, GitStart: st.GitStart,
		Transcript: append(slices.Clone(st.History), Message{Role: RoleUser, Text: st.Contract.Goal})}
}

func (s *State) key(kind EffectKind, step, index, attempt int) Key {
	return Key{Run: s.Run, Kind: kind, Step: step, Index: index, Attempt: attempt}
}

// IsReadOnly says whether a call of the tool name is read-only.
func (s *State) IsReadOnly(name string) bool {
	_, ok := slices.BinarySearch(s.ReadOnly, name)
	return ok
}

// Next is the next effect, decided from the state alone at now. It never
// changes the state.
func (s *State) Next(now time.Time) Effect {
	switch {
	case s.Done != nil:
		return End{Key: s.key(KindEnd, s.Steps, 0, 0), Outcome: *s.Done}
	case s.Waiting != nil:
		k := s.key(KindAwait, s.Steps, len(s.Results), 0)
		k.Request = s.Waiting.Request
		return AwaitDecision{Key: k, Waiting: *s.Waiting}
	case len(s.Pending) > 0:
		return s.runTools()
	case s.Claimed:
		return RunGate{Key: s.key(KindGate, s.Steps, s.FailedClaims, 0)}
	case s.Contract.Verify != nil && s.GateBaseline == nil && s.Steps == 0:
		return RunGate{Key: s.key(KindGate, 0, 0, 0), Baseline: true}
	}
	if o, ok := s.spent(now); ok {
		return End{Key: s.key(KindEnd, s.Steps, 0, 0), Outcome: o}
	}
	if s.Fold != nil {
		attempt := 1
		if s.Fold.Half {
			attempt = 2
		}
		return Summarize{Key: s.key(KindSummary, s.Steps+1, len(s.Summaries), attempt), Plan: *s.Fold}
	}
	if now.Before(s.RetryAt) {
		return Wait{Key: s.key(KindSleep, s.Steps+1, 0, s.Attempt), Until: s.RetryAt}
	}
	return CallModel{Key: s.key(KindModel, s.Steps+1, 0, s.Attempt+1)}
}

// runTools is the effect of the pending calls not yet run: the read-only
// calls at their head, together, or the first call alone.
func (s *State) runTools() RunTools {
	rest := s.Pending[len(s.Results):]
	n := 1
	if n := spawnGroup(rest); n > 0 {
		// Child runs, each started at most once by its call's key: they
		// run at once (as their limits let them) and are safe to repeat.
		return RunTools{Key: s.key(KindChild, s.Steps, len(s.Results), 0), Calls: slices.Clone(rest[:n]), Children: true}
	}
	ro := s.IsReadOnly(rest[0].Name)
	if ro {
		for n < len(rest) && s.IsReadOnly(rest[n].Name) {
			n++
		}
	}
	return RunTools{Key: s.key(KindTools, s.Steps, len(s.Results), 0), Calls: slices.Clone(rest[:n]), ReadOnly: ro}
}

// spent is the outcome of a budget spent at now, if one is.
func (s *State) spent(now time.Time) (Outcome, bool) {
	why := ""
	// The budget bounds the run and its children together.
	t := s.TreeSpent()
	switch {
	case t.Steps >= s.Contract.Budget.Steps:
		why = fmt.Sprintf("the step budget of %d is spent", s.Contract.Budget.Steps)
	case Sat(t.Tokens.Input, t.Tokens.Output) >= s.Contract.Budget.Tokens:
		why = fmt.Sprintf("the token budget of %d is spent (%d in, %d out)", s.Contract.Budget.Tokens, t.Tokens.Input, t.Tokens.Output)
	case s.Contract.Child != nil && Sat(Sat(t.Tokens.Input, t.Tokens.Output), s.nextCall()) > s.Contract.Budget.Tokens:
		// A child's budget is carved from its parent's: its next call
		// must fit in what is left, or the tree would pass its root's.
		why = fmt.Sprintf("the token budget of %d would be passed by the next call (about %d tokens with its longest answer; %d in, %d out so far)", s.Contract.Budget.Tokens, s.nextCall(), t.Tokens.Input, t.Tokens.Output)
	case s.Contract.Budget.Cost > 0 && s.Contract.Prices.Cost(t.Tokens) >= s.Contract.Budget.Cost:
		why = fmt.Sprintf("the cost budget of %.2f is spent (%.4f)", s.Contract.Budget.Cost, s.Contract.Prices.Cost(t.Tokens))
	case !now.Before(s.Deadline):
		why = fmt.Sprintf("the wall-clock budget of %s is spent", s.Contract.Budget.WallClock)
	default:
		return Outcome{}, false
	}
	return s.outcome(BudgetExhausted, why), true
}

// outcome is the run's outcome of kind, with what it spent.
func (s *State) outcome(kind Kind, reason string) Outcome {
	o := Outcome{Kind: kind, Reason: reason, Steps: s.Steps, Tokens: s.Tokens, Cost: s.Contract.Prices.Cost(s.Tokens), Gate: s.LastGate}
	if len(s.Contract.OutputSchema) > 0 && s.Answer.OK() {
		o.Answer = s.Answer.JSON
	}
	return s.withChildren(o)
}

func (s *State) end(kind Kind, reason string) {
	o := s.outcome(kind, reason)
	s.Done = &o
}

// Parked is the outcome of a run that waits for a decision no one has
// recorded yet: the process ends, the run waits.
func (s *State) Parked() Outcome {
	w := *s.Waiting
	what, answer := "an asked action was deferred", fmt.Sprintf("rein approve %s %s --yes|--no", s.Run, w.Request)
	switch w.Kind {
	case AwaitingRecovery:
		what = "a call was interrupted by the death of rein's process"
	case AwaitingAnswer:
		what, answer = "the model asked a question", fmt.Sprintf("rein answer %s %s 'TEXT'", s.Run, w.Request)
	case AwaitingPlan:
		what, answer = "the model proposed a plan", fmt.Sprintf("rein approve %s %s --yes|--no|--revise 'NOTE'", s.Run, w.Request)
	}
	o := s.outcome(w.Kind, fmt.Sprintf("%s: request %s waits for an operator's answer (%s, then rein run resume %s)",
		what, w.Request, answer, s.Run))
	o.Waiting = &w
	return o
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
	s.fitTo(s.limit())
}

// limit is the transcript's share of the window, in characters: the
// window's share less what every request carries besides (at least an
// eighth of the window).
func (s *State) limit() int {
	window := s.Contract.ContextTokens * charsPerToken
	shown := 0
	if s.Plan != nil {
		shown += len(PlanText(s.Plan)) + 30
	}
	if len(s.Todo) > 0 {
		shown += len(TodoText(s.Todo)) + 50
	}
	return max(int(float64(window)*contextShare)-s.Overhead-shown, window/8)
}

// fitTo sets aside observations until the transcript is at most limit
// characters, or only the goal and the last turns are left: first the
// superseded reads (each becomes a stub naming what superseded it), then
// the oldest observations.
func (s *State) fitTo(limit int) {
	size := s.transcriptChars(0)
	var stale []StaleRead
	for _, r := range s.Stale {
		if r.Index <= 0 || r.Index >= len(s.Transcript) {
			continue
		}
		if size <= limit || r.Index >= len(s.Transcript)-keepLastTurns && limit > 0 {
			stale = append(stale, r)
			continue
		}
		m := &s.Transcript[r.Index]
		if strings.HasPrefix(m.Text, "[rein:") {
			continue
		}
		stub := fmt.Sprintf("[rein: this read of %s is superseded by a later %s of it]", r.Path, r.By)
		size -= len(m.Text) - len(stub)
		m.Text = stub
		s.SetAside++
	}
	s.Stale = stale
	for i := 1; size > limit && i < len(s.Transcript)-keepLastTurns; i++ {
		m := &s.Transcript[i]
		if m.Role != RoleTool || strings.HasPrefix(m.Text, "[rein:") {
			continue
		}
		stub := fmt.Sprintf(stubbedMessage, len(m.Text))
		size -= len(m.Text) - len(stub)
		m.Text = stub
		s.SetAside++
	}
	if len(s.Stale) == 0 {
		s.Stale = nil
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

// supersede marks the reads of path kept so far as superseded: the model
// has a newer view of that file (by call, a read again or a change).
// They stay as they are, so that the prompt's prefix (and a provider's
// cache of it) holds, until the transcript needs room: then they are the
// first observations set aside (fitTo).
func (s *State) supersede(path, by string) {
	for _, i := range s.Reads[path] {
		if i < len(s.Transcript) && !strings.HasPrefix(s.Transcript[i].Text, "[rein:") {
			s.Stale = append(s.Stale, StaleRead{Index: i, Path: path, By: by})
		}
	}
	delete(s.Reads, path)
	if len(s.Stale) > maxStale {
		// The list is bounded (it is in every checkpoint): past it, every
		// superseded read is set aside at once, so the cache's prefix
		// breaks once for all of them.
		for _, r := range s.Stale {
			if r.Index > 0 && r.Index < len(s.Transcript) && !strings.HasPrefix(s.Transcript[r.Index].Text, "[rein:") {
				s.Transcript[r.Index].Text = fmt.Sprintf("[rein: this read of %s is superseded by a later %s of it]", r.Path, r.By)
				s.SetAside++
			}
		}
		s.Stale = nil
	}
}

// maxStale bounds the superseded reads kept whole.
const maxStale = 32

// StaleRead is a read of a file superseded by a later read or change of
// it: its observation, at Index of the transcript, is the first set aside
// when the transcript needs room.
type StaleRead struct {
	Index int    `json:"index"`
	Path  string `json:"path"`
	By    string `json:"by"`
}

// ToolResult is what one routed call gave: the observation for the model,
// and whether it changed the workspace.
type ToolResult struct {
	Observation string `json:"observation"`
	Changed     bool   `json:"changed,omitempty"`
	// Plan is, for a propose_plan call, what was decided of the plan:
	// PlanApproved, PlanRevise or PlanCancelled ("" for a plan refused
	// before anyone saw it).
	Plan string `json:"plan,omitempty"`
	// Spent is, for a spawn_agent call, what the child run and its own
	// children spent: the parent's ledger counts it.
	Spent *Spent `json:"spent,omitempty"`
}

// stall returns a call repeated StallRepeats times in a full window that
// changed nothing, or "".
func (s *State) stall() string {
	if len(s.Recent) < StallWindow {
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
		if counts[m.Sig] >= StallRepeats {
			return m.Sig
		}
	}
	return ""
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

// nextCall is what the next model call may cost at most, by rein's
// estimate: its input (what every request carries and the transcript,
// charsPerToken ASCII characters a token and each byte of any other a
// token: a byte-level tokenizer makes no more) and its longest answer.
func (s *State) nextCall() int64 {
	ascii, other := s.Overhead, 0
	count := func(text string) {
		for i := 0; i < len(text); i++ {
			if text[i] < utf8.RuneSelf {
				ascii++
			} else {
				other++
			}
		}
	}
	for _, m := range s.Transcript {
		count(m.Text)
		for _, c := range m.ToolCalls {
			count(c.Name)
			count(c.Args)
		}
	}
	return int64(ascii/charsPerToken+other) + int64(s.Contract.ResponseMaxTokens)
}
