package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A contract's output schema: a final answer that matches ends the run
// with it; one that does not is sent back once, and a second ends the run
// invalid_answer (exit 8); where a gate also decides, its outcome comes
// first.
func TestTypedAnswer(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	schema := json.RawMessage(`{"type":"object"}`)
	good := &AnswerCheck{JSON: json.RawMessage(`{"ok":true}`)}
	bad := &AnswerCheck{Errors: []string{"it is not JSON"}}
	reply := func(s *State, a *AnswerCheck) {
		s.Apply(ModelReplied{Response: Response{Text: "answer", Finish: FinishStop}, Answer: a}, t0)
	}
	noGate, _ := Contract{Goal: "g", Workspace: "/w", OutputSchema: schema}.WithDefaults()

	s := newState(noGate, t0)
	reply(s, good)
	if s.Done == nil || s.Done.Kind != Finished || string(s.Done.Answer) != `{"ok":true}` {
		t.Fatalf("a matching answer: %+v", s.Done)
	}

	s = newState(noGate, t0)
	reply(s, bad)
	if s.Done != nil || !s.AnswerSentBack || !strings.Contains(s.Transcript[len(s.Transcript)-1].Text, "it is not JSON") {
		t.Fatalf("the first answer that does not match: %+v %q", s.Done, s.Transcript)
	}
	if _, ok := s.Next(t0).(CallModel); !ok {
		t.Fatalf("after the answer is sent back: %T", s.Next(t0))
	}
	reply(s, nil)
	if s.Done == nil || s.Done.Kind != InvalidAnswer || s.Done.Kind.ExitCode() != 8 || len(s.Done.Answer) != 0 {
		t.Fatalf("the second: %+v", s.Done)
	}

	// With a gate: a failed gate is the model's news first, whatever the
	// answer; a passed gate with an answer that does not match sends it
	// back; the next claim's passed gate and matching answer succeed.
	gated, _ := Contract{Goal: "g", Workspace: "/w", OutputSchema: schema, Verify: &Gate{Line: "true"}}.WithDefaults()
	s = newState(gated, t0)
	s.Apply(GateRan{Attempt: GateAttempt{Status: GateFailedSt}, Baseline: true}, t0)
	reply(s, good)
	s.Apply(GateRan{Attempt: GateAttempt{Status: GateFailedSt, Output: "FAIL"}}, t0)
	if s.Done != nil || !strings.Contains(s.Transcript[len(s.Transcript)-1].Text, "the gate ran, and it did not pass") || s.AnswerSentBack {
		t.Fatalf("a failed gate: %+v", s.Transcript[len(s.Transcript)-1])
	}
	reply(s, bad)
	s.Apply(GateRan{Attempt: GateAttempt{Status: GatePassed}}, t0)
	if s.Done != nil || !s.AnswerSentBack {
		t.Fatalf("a passed gate, an answer that does not match: %+v", s.Done)
	}
	reply(s, good)
	s.Apply(GateRan{Attempt: GateAttempt{Status: GatePassed}}, t0)
	if s.Done == nil || s.Done.Kind != Succeeded || string(s.Done.Answer) != `{"ok":true}` {
		t.Fatalf("a passed gate, a matching answer: %+v", s.Done)
	}

	// Without a schema nothing changes: no answer in the outcome.
	plain, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s = newState(plain, t0)
	reply(s, good)
	if s.Done == nil || s.Done.Kind != Finished || s.Done.Answer != nil {
		t.Fatalf("without a schema: %+v", s.Done)
	}
}
