package loop

import (
	"strings"
	"testing"
	"time"
)

// The plan gate: a plan is the state's once its call's result says it
// was approved, and only in a plan-gated run; a plan cancelled ends the
// run; a plan sent back or refused leaves the gate held.
func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	propose := func(s *State, args, decision string) {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: PlanTool, Args: args}}}}, t0)
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "propose_plan: ...", Plan: decision}}}, t0)
	}
	c, _ := Contract{Goal: "g", Workspace: "/w", PlanGate: true}.WithDefaults()
	s := newState(c, t0)
	if !s.Gated() {
		t.Fatal("a new plan-gated run is not gated")
	}
	propose(s, `{"steps":["a"]}`, PlanRevise)
	propose(s, `{"steps":[""]}`, PlanApproved)
	if !s.Gated() || s.Done != nil {
		t.Fatalf("sent back or not a plan: %v %+v", s.Plan, s.Done)
	}
	propose(s, `{"steps":["a","b"]}`, PlanApproved)
	if s.Gated() || PlanText(s.Plan) != "1. a\n2. b\n" {
		t.Fatalf("approved: %q", s.Plan)
	}
	propose(s, `{"steps":["c"]}`, PlanApproved)
	if PlanText(s.Plan) != "1. a\n2. b\n" {
		t.Errorf("a second plan replaced the approved one: %q", s.Plan)
	}
	propose(s, `{"steps":["c"]}`, PlanCancelled)
	if s.Done == nil || s.Done.Kind != Cancelled || !strings.Contains(s.Done.Reason, "cancelled by its approver") {
		t.Errorf("cancelled: %+v", s.Done)
	}

	free, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s = newState(free, t0)
	propose(s, `{"steps":["a"]}`, PlanCancelled)
	if s.Gated() || s.Plan != nil || s.Done != nil {
		t.Errorf("a run without a plan gate: %v %+v", s.Plan, s.Done)
	}
	for _, bad := range [][]string{nil, {"two\nlines"}, {strings.Repeat("x", MaxPlanStep+1)}, make([]string, MaxPlanSteps+1)} {
		if CheckPlan(bad) == nil {
			t.Errorf("%.40q is a plan", bad)
		}
	}
	for _, bad := range []string{"", " ", "\x1b[2J?", strings.Repeat("x", MaxQuestionText+1)} {
		if CheckQuestion(bad) == nil {
			t.Errorf("%.40q is a question", bad)
		}
	}
	if CheckQuestion("which file?\nor both?") != nil {
		t.Error("a question of two lines refused")
	}
	w := &Waiting{Kind: AwaitingAnswer, Request: "r1"}
	s.Waiting, s.Done = w, nil
	if o := s.Parked(); o.Kind != AwaitingAnswer || o.Kind.ExitCode() != 6 || !strings.Contains(o.Reason, "rein answer") {
		t.Errorf("parked on a question: %+v", o)
	}
}
