package loop

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func newState(c Contract, now time.Time) *State {
	return New(Start{Run: "run-1", Contract: c, ReadOnly: []string{"read_file", "list_dir", "search_text"}, StartedAt: now}, now)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestStepFunction: the loop's decisions from state alone, without a
// driver: a malformed call told once, then a failure; calls past the cap
// dropped with a note; a truncated response's calls never pending.
func TestStepFunction(t *testing.T) {
	now := time.Now()
	c, _ := Contract{Goal: "g", Workspace: "/w", Verify: &Gate{Line: "true"}}.WithDefaults()
	s := newState(c, now)
	// A run with a gate runs it once first, the baseline, whose result is
	// shown with the goal; then the model is called.
	if e, ok := s.Next(now).(RunGate); !ok || !e.Baseline {
		t.Fatalf("a new run with a gate does not run its baseline first: %#v", s.Next(now))
	}
	exit := 1
	s.Apply(GateRan{Attempt: GateAttempt{Status: GateFailedSt, ExitCode: &exit, Output: "FAIL\n", Tests: &GateTests{Run: 1, Failed: 1}}, Baseline: true}, now)
	if _, ok := s.Next(now).(CallModel); !ok {
		t.Fatal("after its baseline, a new run does not call the model")
	}
	if want := "g\n\n[rein: before your first step, rein ran the gate \"true\" on the workspace as it is: failed, exit 1; tests: 1 run, 0 passed, 1 failed, 0 skipped. " +
		"This is the starting point. The run succeeds when the gate passes and every protected test that ran here runs and passes. Its output:]\nFAIL\n"; s.Transcript[0].Text != want {
		t.Fatalf("the goal with the baseline:\n%q\nwant\n%q", s.Transcript[0].Text, want)
	}
	if s.FailedClaims != 0 || s.LastGate != nil {
		t.Fatalf("the baseline counted as a claim: %+v", s)
	}
	noGate, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	if _, ok := newState(noGate, now).Next(now).(CallModel); !ok {
		t.Fatal("a new run without a gate does not call the model first")
	}
	s = newState(c, now)
	s.Apply(GateRan{Attempt: GateAttempt{Status: GatePassed}, Baseline: true}, now)
	s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{ID: "1", Name: "read_file", Args: `{"path":`}}, Finish: FinishToolCalls}}, now)
	if s.Done != nil || !s.Malformed || len(s.Pending) != 1 {
		t.Fatalf("first malformed call: %+v", s)
	}
	s.Apply(CallsRan{Results: []ToolResult{{Observation: "read_file: denied: the arguments are not JSON"}}}, time.Time{})
	s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{ID: "2", Name: "read_file", Args: `nope`}}, Finish: FinishToolCalls}}, now)
	if s.Done == nil || s.Done.Kind != ProviderFailed {
		t.Fatalf("second malformed call: %+v", s.Done)
	}

	s = newState(c, now)
	var many []ToolCall
	for i := range MaxCallsPerStep + 5 {
		many = append(many, ToolCall{ID: fmt.Sprint(i), Name: "list_dir", Args: fmt.Sprintf(`{"path":"d%d"}`, i)})
	}
	s.Apply(ModelReplied{Response: Response{ToolCalls: many, Finish: FinishToolCalls}}, now)
	if len(s.Pending) != MaxCallsPerStep {
		t.Fatalf("%d pending", len(s.Pending))
	}
	s.Apply(CallsRan{Results: make([]ToolResult, MaxCallsPerStep)}, time.Time{})
	if last := s.Transcript[len(s.Transcript)-1]; last.Role != RoleUser || !contains(last.Text, "only the first 64 were run") {
		t.Fatalf("%+v", last)
	}

	s = newState(c, now)
	s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{ID: "1", Name: "write_file", Args: `{"path":"a","content":"cut`}}, Finish: FinishLength}}, now)
	if len(s.Pending) != 0 || s.Claimed || !contains(s.Transcript[len(s.Transcript)-1].Text, "were not run") {
		t.Fatalf("truncated: %+v", s)
	}
	if _, ok := s.Next(now).(CallModel); !ok {
		t.Fatal("after a truncated response the model is not asked again")
	}
	// A retried failure waits, never past the wall clock.
	s.Apply(ModelFailed{Class: FailRateLimited, Message: "slow down", RetryAfter: time.Hour}, now)
	if s.Done == nil || s.Done.Kind != ProviderFailed || !contains(s.Done.Reason, "wall-clock") {
		t.Fatalf("a wait past the budget: %+v", s.Done)
	}
}

// TestFit: past its share of the window, the oldest steps are asked to
// be folded; when the summary fails (its own window passed twice), the
// oldest observations become stubs; the goal, the last turns and every
// tool call's id stay.
func TestFit(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w", ContextTokens: 1024}.WithDefaults()
	s := newState(c, time.Now())
	big := strings.Repeat("x", 1000)
	for i := range 10 {
		id := fmt.Sprint(i)
		s.Transcript = append(s.Transcript, Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read_file", Args: `{}`}}}, Message{Role: RoleTool, ToolCallID: id, Text: big})
	}
	s.Steps = 10
	s.Apply(Accounted{}, time.Now())
	e, ok := s.Next(time.Now()).(Summarize)
	if !ok || e.Plan.From != 1 || e.Plan.FirstStep != 1 || e.Plan.LastStep != (e.Plan.To-1)/2 || s.Transcript[e.Plan.To].Role != RoleAssistant || e.Key.Attempt != 1 {
		t.Fatalf("the fold asked for: %+v", s.Next(time.Now()))
	}
	s.Apply(SummaryFailed{Class: FailContextOverflow}, time.Now())
	if e, ok := s.Next(time.Now()).(Summarize); !ok || !e.Plan.Half || e.Key.Attempt != 2 {
		t.Fatalf("after its overflow: %+v", s.Next(time.Now()))
	}
	s.Apply(SummaryFailed{Class: FailContextOverflow}, time.Now())
	if _, ok := s.Next(time.Now()).(CallModel); !ok || s.Fold != nil || s.NoFoldUntil != 11 {
		t.Fatalf("after the second overflow: %+v", s.Next(time.Now()))
	}
	size, stubs := 0, 0
	for i, m := range s.Transcript {
		size += len(m.Text)
		if m.Role == RoleTool && strings.HasPrefix(m.Text, "[rein: this observation (1000 characters)") {
			stubs++
			if i >= len(s.Transcript)-keepLastTurns {
				t.Fatalf("a recent observation was set aside: %d", i)
			}
		}
		if m.Role == RoleTool && m.ToolCallID == "" {
			t.Fatal("a stub lost its call id")
		}
	}
	if s.Transcript[0].Text != "g" || stubs == 0 || size > 1024*7/10*charsPerToken+len(big)*keepLastTurns {
		t.Fatalf("%d stubs, %d characters", stubs, size)
	}
}

// TestFold: a summary replaces the steps it folds with one message that
// names them; the goal and the last turns stay; the reads kept are
// renumbered; the summary's tokens are spent; an operator's fold is taken
// before the next model step, once.
func TestFold(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w", ContextTokens: 1024}.WithDefaults()
	s := newState(c, time.Now())
	big := strings.Repeat("y", 1000)
	for i := range 10 {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"f%d"}`, i)}}}}, time.Now())
		if _, ok := s.Next(time.Now()).(RunTools); !ok {
			t.Fatalf("step %d: %+v", i, s.Next(time.Now()))
		}
		s.Apply(CallsRan{Results: []ToolResult{{Observation: big}}}, time.Now())
		if _, ok := s.Next(time.Now()).(Summarize); ok {
			break
		}
	}
	e, ok := s.Next(time.Now()).(Summarize)
	if !ok {
		t.Fatalf("no fold: %+v", s.Next(time.Now()))
	}
	last := s.Transcript[len(s.Transcript)-keepLastTurns:]
	lastCopy := append([]Message(nil), last...)
	view := s.SummaryView(e.Plan)
	if !strings.Contains(view, "## the agent\n") || !strings.Contains(view, `read_file {"path":"f0"}`) || !strings.Contains(view, "## the result of call_1_0\n") {
		t.Errorf("the view: %.300q", view)
	}
	if c := clip(strings.Repeat("é", 1000), 101); !utf8.ValidString(c) || !strings.Contains(c, "characters not shown") || len(c) > 200 {
		t.Errorf("clipped: %q", c)
	}
	before := s.Tokens
	s.Apply(Summarized{Text: "f0 says y", Usage: Usage{Input: 300, Output: 20}}, time.Now())
	if s.Transcript[0].Text != "g" || !strings.HasPrefix(s.Transcript[1].Text, fmt.Sprintf("[rein: steps 1 to %d were folded into this summary", e.Plan.LastStep)) ||
		!strings.HasSuffix(s.Transcript[1].Text, "f0 says y") {
		t.Fatalf("after the fold: %q / %.200q", s.Transcript[0].Text, s.Transcript[1].Text)
	}
	for i, m := range s.Transcript[len(s.Transcript)-keepLastTurns:] {
		if m.Text != lastCopy[i].Text || m.Role != lastCopy[i].Role {
			t.Fatalf("the last turns changed at %d", i)
		}
	}
	if s.Tokens.Input != before.Input+300 || len(s.Summaries) != 1 || s.Summaries[0].LastStep != e.Plan.LastStep || s.Folded != e.Plan.LastStep {
		t.Errorf("tokens %+v, summaries %+v", s.Tokens, s.Summaries)
	}
	for path, idx := range s.Reads {
		for _, i := range idx {
			if i >= len(s.Transcript) || s.Transcript[i].Role != RoleTool {
				t.Errorf("the read of %s at %d is not an observation", path, i)
			}
		}
	}
	if _, ok := s.Next(time.Now()).(CallModel); !ok {
		t.Fatalf("after the fold: %+v", s.Next(time.Now()))
	}
	// An operator's fold: as much as the view holds, then answered.
	s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: `{"path":"z"}`}}}}, time.Now())
	s.Apply(CallsRan{Results: []ToolResult{{Observation: "z"}}}, time.Now())
	s.Apply(FoldAsked{Request: "f1"}, time.Now())
	e, ok = s.Next(time.Now()).(Summarize)
	if !ok || e.Plan.Request != "f1" || e.Plan.FirstStep != s.Folded+1 {
		t.Fatalf("the asked fold: %+v", s.Next(time.Now()))
	}
	s.Apply(Summarized{Text: "more"}, time.Now())
	s.Apply(FoldAsked{Request: "f1"}, time.Now())
	if _, ok := s.Next(time.Now()).(CallModel); !ok || s.FoldAsked != "" || len(s.Summaries) != 2 || s.Summaries[1].Request != "f1" {
		t.Fatalf("asked again: %+v %+v", s.Next(time.Now()), s.Summaries)
	}
	if _, err := (Contract{Goal: "g", Workspace: "/w", ContextTokens: 1000}).WithDefaults(); err == nil {
		t.Error("a window of 1000 tokens taken")
	}
}

// TestSupersede: a read of a file is marked superseded once the file is read
// again or changed, not when a change of it is refused.
func TestSupersede(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s := newState(c, time.Now())
	step := func(call ToolCall, res ToolResult) {
		s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{call}, Finish: FinishToolCalls}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{res}}, time.Time{})
	}
	step(ToolCall{ID: "1", Name: "read_file", Args: `{"path":"a.go"}`}, ToolResult{Observation: "read_file: ok\nold a"})
	step(ToolCall{ID: "2", Name: "read_file", Args: `{"path":"b.go"}`}, ToolResult{Observation: "read_file: ok\nb"})
	step(ToolCall{ID: "3", Name: "write_file", Args: `{"path":"a.go","content":"x"}`}, ToolResult{Observation: "write_file: denied"})
	if s.Transcript[2].Text != "read_file: ok\nold a" {
		t.Fatalf("a refused write superseded the read: %q", s.Transcript[2].Text)
	}
	step(ToolCall{ID: "4", Name: "edit_file", Args: `{"path":"a.go","old":"a","new":"b"}`}, ToolResult{Observation: "edit_file: ok", Changed: true})
	// Kept as it is while the window has room: the prompt's prefix (a
	// provider's cache of it) holds.
	if s.Transcript[2].Text != "read_file: ok\nold a" || len(s.Stale) != 1 || s.Stale[0].Index != 2 {
		t.Fatalf("superseded: %q, %+v", s.Transcript[2].Text, s.Stale)
	}
	// Then the first set aside, before any older observation.
	s.fitTo(s.transcriptChars(0) - 1)
	if !strings.Contains(s.Transcript[2].Text, "superseded by a later edit_file") || s.Transcript[4].Text != "read_file: ok\nb" || s.Stale != nil {
		t.Fatalf("%q / %q", s.Transcript[2].Text, s.Transcript[4].Text)
	}
}

// TestCostBudget: the cost is derived from the tokens and the user's
// prices; the budget ends the run when it is reached.
func TestCostBudget(t *testing.T) {
	p := Prices{Input: 3, Output: 15, CacheRead: 0.3}
	if got := p.Cost(Usage{Input: 1_000_000, Output: 100_000, CacheRead: 500_000}); got < 1.5+0.15+1.5-1e-9 || got > 1.5+0.15+1.5+1e-9 {
		t.Fatalf("cost %v", got)
	}
	if _, err := (Contract{Goal: "g", Workspace: "/w", Budget: Budget{Cost: 1}}).WithDefaults(); err == nil {
		t.Fatal("a cost budget without prices was accepted")
	}
	c, _ := Contract{Goal: "g", Workspace: "/w", Budget: Budget{Cost: 0.01}, Prices: p}.WithDefaults()
	s := newState(c, time.Now())
	s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{ID: "1", Name: "list_dir", Args: `{}`}}, Finish: FinishToolCalls, Usage: Usage{Input: 3000, Output: 100}}}, time.Now())
	s.Apply(CallsRan{Results: []ToolResult{{}}}, time.Time{})
	if e, ok := s.Next(time.Now()).(End); !ok || e.Outcome.Kind != BudgetExhausted || !strings.Contains(e.Outcome.Reason, "cost budget") || e.Outcome.Cost < 0.0105 {
		t.Fatalf("%+v", s.Done)
	}
}

// TestTokenFloor: a server that reports fewer tokens than rein's own
// estimate (4 characters a token) of what was sent and returned is
// counted at the estimate, so it cannot stretch the token budget (a large
// cached count included: it is part of the input); a server that reports
// more is taken at its word.
func TestTokenFloor(t *testing.T) {
	now := time.Now()
	c, _ := Contract{Goal: strings.Repeat("g", 4000), Workspace: "/w", Budget: Budget{Tokens: 5000}}.WithDefaults()
	s := newState(c, now)
	s.Apply(ModelReplied{Response: Response{Text: strings.Repeat("a", 400), ToolCalls: []ToolCall{{Name: "list_dir", Args: `{"path":"` + strings.Repeat("p", 392) + `"}`}},
		Finish: FinishToolCalls}}, now)
	if s.Tokens.Input != 1000 || s.Tokens.Output != (400+8+403)/4 {
		t.Fatalf("a server that says 0: %+v", s.Tokens)
	}
	s.Apply(CallsRan{Results: []ToolResult{{Observation: strings.Repeat("o", 12000)}}}, time.Time{})
	before := s.Tokens
	s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{Name: "list_dir", Args: `{}`}}, Finish: FinishToolCalls, Usage: Usage{Input: 10, CacheRead: 20, Output: 1}}}, now)
	s.Apply(CallsRan{Results: []ToolResult{{}}}, time.Time{})
	if got := s.Tokens.Input - before.Input; s.Tokens.CacheRead != 20 || got < (4000+400+8+403+12000)/4 {
		t.Errorf("the second call counted %d input and %d cached", got, s.Tokens.CacheRead)
	}
	if e, ok := s.Next(now).(End); !ok || e.Outcome.Kind != BudgetExhausted {
		t.Errorf("the budget did not end the run: %+v %+v", s.Tokens, s.Done)
	}
	honest := newState(c, now)
	honest.Apply(ModelReplied{Response: Response{Text: "ok", Finish: FinishStop, Usage: Usage{Input: 3000, Output: 50}}}, now)
	if honest.Tokens.Input != 3000 || honest.Tokens.Output != 50 {
		t.Errorf("an honest count was changed: %+v", honest.Tokens)
	}
}

// TestHostileCounts: counts past the bound are added without wrapping, so
// a budget still ends the run; calls get ids of rein's own; a NaN price is
// refused.
func TestHostileCounts(t *testing.T) {
	if Sat(math.MaxInt64-1, 10) != math.MaxInt64 {
		t.Fatal("Sat wraps")
	}
	c, _ := Contract{Goal: "g", Workspace: "/w", Budget: Budget{Tokens: 1000}}.WithDefaults()
	s := newState(c, time.Now())
	for range 2 {
		s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{ID: "call_0", Name: "list_dir", Args: `{}`}}, Finish: FinishToolCalls, Usage: Usage{Input: math.MaxInt64 / 2, Output: math.MaxInt64 / 2}}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{{}}}, time.Now())
	}
	if e, ok := s.Next(time.Now()).(End); !ok || e.Outcome.Kind != BudgetExhausted || s.Tokens.Input < 0 {
		t.Fatalf("%+v", s.Tokens)
	}
	if a, b := s.Transcript[1].ToolCalls[0].ID, s.Transcript[3].ToolCalls[0].ID; a == b || s.Transcript[2].ToolCallID != a {
		t.Fatalf("ids %q %q, result for %q", a, b, s.Transcript[2].ToolCallID)
	}
	if _, err := (Contract{Goal: "g", Workspace: "/w", Prices: Prices{Input: math.NaN()}}).WithDefaults(); err == nil {
		t.Fatal("a NaN price was accepted")
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// A provider's context overflow after superseded reads: the fold sets
// aside what is left by the transcript's indices after it.
func TestStaleAfterSqueezedFold(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s := newState(c, time.Now())
	for k := range 12 {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"a","n":%d}`, k)}}}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "read_file: ok\n" + strings.Repeat("z", 100)}}}, time.Now())
	}
	t.Logf("len %d stale %+v", len(s.Transcript), s.Stale)
	s.Apply(ModelFailed{Class: FailContextOverflow, Message: "prompt is too long"}, time.Now())
	e, ok := s.Next(time.Now()).(Summarize)
	if !ok {
		t.Fatalf("no fold: %#v", s.Next(time.Now()))
	}
	t.Logf("plan %+v", e.Plan)
	s.Apply(Summarized{Text: "summary"}, time.Now())
	for _, r := range s.Stale {
		if r.Index >= len(s.Transcript) {
			t.Fatalf("stale index %d out of %d", r.Index, len(s.Transcript))
		}
	}
}

// A context overflow whose fold's summary fails, transiently (a 429):
// the fold is given up, and everything that can be set aside is, before
// the model is asked once more.
func TestOverflowSummaryFails(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s := newState(c, time.Now())
	for k := range 12 {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"f%d"}`, k)}}}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "read_file: ok\n" + strings.Repeat("z", 1000)}}}, time.Now())
	}
	s.Apply(ModelFailed{Class: FailContextOverflow, Message: "prompt is too long"}, time.Now())
	if _, ok := s.Next(time.Now()).(Summarize); !ok {
		t.Fatalf("no fold: %#v", s.Next(time.Now()))
	}
	s.Apply(SummaryFailed{Class: FailRateLimited, Message: "429"}, time.Now())
	if _, ok := s.Next(time.Now()).(CallModel); !ok || s.SetAside < 12-keepLastTurns/2 || s.Done != nil {
		t.Fatalf("after the failed summary: set aside %d of 12, next %T", s.SetAside, s.Next(time.Now()))
	}
}

// A system block and tools that take most of the window leave the
// transcript window/8, and a model writes the longest summary it may: a
// fold that does not bring the transcript within its share is not tried
// again every step.
func TestFoldNotEveryStep(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w", ContextTokens: 1024}.WithDefaults()
	s := newState(c, time.Now())
	s.Overhead = 2500
	summaries := 0
	for k := range 20 {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"f%d"}`, k)}}}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{{Observation: strings.Repeat("o", 120)}}}, time.Now())
		for {
			if _, ok := s.Next(time.Now()).(Summarize); !ok {
				break
			}
			summaries++
			s.Apply(Summarized{Text: strings.Repeat("s", 5000)}, time.Now())
		}
	}
	t.Logf("%d summarising calls in 20 steps, limit %d, transcript %d", summaries, s.limit(), s.transcriptChars(0))
	if summaries > 5 {
		t.Fatalf("%d summarising calls in 20 steps", summaries)
	}
}

// TestStaleBounded: the superseded reads kept whole (in every checkpoint)
// are bounded: past the bound, all are set aside at once.
func TestStaleBounded(t *testing.T) {
	c, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s := newState(c, time.Now())
	for i := range maxStale + 2 {
		s.Apply(ModelReplied{Response: Response{ToolCalls: []ToolCall{{Name: "read_file", Args: `{"path":"c.go"}`}}, Finish: FinishToolCalls}}, time.Now())
		s.Apply(CallsRan{Results: []ToolResult{{Observation: fmt.Sprint("read_file: ok\nc ", i)}}}, time.Now())
	}
	if len(s.Stale) > maxStale || !strings.Contains(s.Transcript[2].Text, "superseded by a later read_file") || s.Transcript[len(s.Transcript)-1].Text != fmt.Sprint("read_file: ok\nc ", maxStale+1) {
		t.Fatalf("%d superseded reads kept; the first %q", len(s.Stale), s.Transcript[2].Text)
	}
}
