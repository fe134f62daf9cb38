package loop

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTransitions is the loop's transition table: from a state, one input
// leads to the next effect, named by its kind, key and recovery class,
// and to the state's fields the test names. It needs no sandbox, no model
// and no store.
func TestTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gate := &Gate{Line: "go test ./..."}
	base, _ := Contract{Goal: "g", Workspace: "/w", Verify: gate}.WithDefaults()
	wait := base
	wait.Recovery = RecoverWait
	// pending is a state whose response asked for a read, a second read
	// and a write.
	pending := func(c Contract) *State {
		s := newState(c, t0)
		s.Apply(GateRan{Attempt: GateAttempt{Status: GateFailedSt}, Baseline: true}, t0)
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{
			{Name: "read_file", Args: `{"path":"a"}`}, {Name: "list_dir", Args: `{}`}, {Name: "write_file", Args: `{"path":"a","content":"x"}`},
		}}}, t0)
		return s
	}
	running := func(c Contract) *State {
		s := pending(c)
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "a"}, {Observation: "ls"}}}, t0)
		s.Apply(Started{CallID: "call_1_2"}, t0)
		return s
	}
	awaiting := func() *State {
		s := pending(base)
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "a"}, {Observation: "ls"}},
			Deferred: &Waiting{Kind: AwaitingApproval, Request: "r1", CallID: "call_1_2", Shown: "write_file a"}}, t0)
		return s
	}
	recovering := func() *State {
		s := running(wait)
		s.Apply(Resumed{Run: "run-1", ReadOnly: []string{"read_file", "list_dir"}, Change: "no change", Request: "r2", Shown: "shown"}, t0)
		return s
	}
	last := func(s *State) string { return s.Transcript[len(s.Transcript)-1].Text }
	for _, tc := range []struct {
		name  string
		state func() *State
		input Input
		// want is the next effect; check what else must hold.
		want     Effect
		check    func(*State) string
		recovery Recovery
	}{{
		name:  "a new run with a gate runs its baseline",
		state: func() *State { return newState(base, t0) },
		input: Accounted{},
		want:  RunGate{Key: Key{Run: "run-1", Kind: KindGate}, Baseline: true}, recovery: SafeToRepeat,
	}, {
		name:  "the baseline's result leads to the first model call",
		state: func() *State { return newState(base, t0) },
		input: GateRan{Attempt: GateAttempt{Status: GatePassed}, Baseline: true},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 1, Attempt: 1}}, recovery: SafeToRepeat,
	}, {
		name:  "read-only calls at the head run together",
		state: func() *State { return newState(base, t0) },
		input: GateRan{Attempt: GateAttempt{Status: GatePassed}, Baseline: true},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 1, Attempt: 1}},
		check: func(s *State) string {
			s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: "read_file", Args: `{}`}, {Name: "list_dir", Args: `{}`}, {Name: "write_file", Args: `{}`}}}}, t0)
			e := s.Next(t0).(RunTools)
			if len(e.Calls) != 2 || !e.ReadOnly || e.Recovery() != SafeToRepeat || e.Key != (Key{Run: "run-1", Kind: KindTools, Step: 1}) {
				return "the read-only head was not one group"
			}
			return ""
		},
	}, {
		name:  "a call that may change the workspace runs alone, indeterminate",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{Observation: "a"}, {Observation: "ls"}}},
		want: RunTools{Key: Key{Run: "run-1", Kind: KindTools, Step: 1, Index: 2},
			Calls: []ToolCall{{ID: "call_1_2", Name: "write_file", Args: `{"path":"a","content":"x"}`}}}, recovery: Indeterminate,
		check: func(s *State) string {
			if len(s.Results) != 2 || len(s.Transcript) != 2 {
				return "results were folded before every call had one"
			}
			return ""
		},
	}, {
		name:  "the last result folds every result into the transcript",
		state: func() *State { return running(base) },
		input: CallsRan{Results: []ToolResult{{Observation: "wrote", Changed: true}}},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			if len(s.Pending) != 0 || len(s.Running) != 0 || last(s) != "wrote" || len(s.Transcript) != 5 {
				return "not folded"
			}
			return ""
		},
	}, {
		name:  "the router's stop ends the run refused_repeatedly",
		state: func() *State { return running(base) },
		input: CallsRan{Results: []ToolResult{{Observation: "denied"}}, Stopped: "the same refusal 3 times"},
		want:  End{Key: Key{Run: "run-1", Kind: KindEnd, Step: 1}, Outcome: Outcome{Kind: RefusedRepeatedly, Reason: "the same refusal 3 times", Steps: 1, Tokens: Usage{Input: 45, Output: 16}}},
	}, {
		name:  "a deferred ask waits for its decision, the calls before it kept",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{Observation: "a"}, {Observation: "ls"}}, Deferred: &Waiting{Kind: AwaitingApproval, Request: "r1", CallID: "call_1_2", Shown: "write_file a"}},
		want: AwaitDecision{Key: Key{Run: "run-1", Kind: KindAwait, Step: 1, Index: 2, Request: "r1"},
			Waiting: Waiting{Kind: AwaitingApproval, Request: "r1", CallID: "call_1_2", Shown: "write_file a"}}, recovery: SafeToRepeat,
		check: func(s *State) string {
			if o := s.Parked(); o.Kind != AwaitingApproval || !strings.Contains(o.Reason, "rein approve run-1 r1 --yes|--no") {
				return "parked: " + o.Reason
			}
			return ""
		},
	}, {
		name:  "an answer to another request changes nothing",
		state: awaiting,
		input: Decided{Request: "r9", Yes: true},
		want: AwaitDecision{Key: Key{Run: "run-1", Kind: KindAwait, Step: 1, Index: 2, Request: "r1"},
			Waiting: Waiting{Kind: AwaitingApproval, Request: "r1", CallID: "call_1_2", Shown: "write_file a"}},
	}, {
		name:  "an approval's answer makes the call again (the policy asks again)",
		state: awaiting,
		input: Decided{Request: "r1", Yes: false},
		want: RunTools{Key: Key{Run: "run-1", Kind: KindTools, Step: 1, Index: 2},
			Calls: []ToolCall{{ID: "call_1_2", Name: "write_file", Args: `{"path":"a","content":"x"}`}}},
	}, {
		name:  "resumed: a running read-only call is made again",
		state: func() *State { s := pending(base); s.Apply(Started{CallID: "call_1_0"}, t0); return s },
		input: Resumed{Run: "run-1", ReadOnly: []string{"read_file", "list_dir"}},
		want: RunTools{Key: Key{Run: "run-1", Kind: KindTools, Step: 1},
			Calls: []ToolCall{{ID: "call_1_0", Name: "read_file", Args: `{"path":"a"}`}, {ID: "call_1_1", Name: "list_dir", Args: `{}`}}, ReadOnly: true},
	}, {
		name:  "resumed: a running write is told to the model as interrupted, with the change",
		state: func() *State { return running(base) },
		input: Resumed{Run: "run-1", ReadOnly: []string{"read_file", "list_dir"}, Change: "1 change(s) in the workspace", Request: "r2"},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			if !strings.HasPrefix(last(s), "write_file: interrupted\n") || !strings.Contains(last(s), "1 change(s) in the workspace") || s.Waiting != nil {
				return "not interrupted: " + last(s)
			}
			return ""
		},
	}, {
		name:  "resumed with recovery wait: an operator decides",
		state: func() *State { return running(wait) },
		input: Resumed{Run: "run-1", ReadOnly: []string{"read_file", "list_dir"}, Change: "no change", Request: "r2", Shown: "shown"},
		want: AwaitDecision{Key: Key{Run: "run-1", Kind: KindAwait, Step: 1, Index: 2, Request: "r2"},
			Waiting: Waiting{Kind: AwaitingRecovery, Request: "r2", CallID: "call_1_2", Shown: "shown"}},
	}, {
		name:  "a recovery's yes makes the call again",
		state: recovering,
		input: Decided{Request: "r2", Yes: true},
		want: RunTools{Key: Key{Run: "run-1", Kind: KindTools, Step: 1, Index: 2},
			Calls: []ToolCall{{ID: "call_1_2", Name: "write_file", Args: `{"path":"a","content":"x"}`}}},
	}, {
		name:  "a recovery's no tells the model, with the operator's note",
		state: recovering,
		input: Decided{Request: "r2", Note: "I undid it"},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			if !strings.Contains(last(s), "an operator chose not to make it again (I undid it)") {
				return last(s)
			}
			return ""
		},
	}, {
		name:  "a retried failure sleeps, with jitter from its key",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{}, {}, {}}},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			s.Apply(ModelFailed{Class: FailServer, Message: "500"}, t0)
			w, ok := s.Next(t0).(Wait)
			k := Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}
			if want := t0.Add(250*time.Millisecond + k.Jitter(250*time.Millisecond)); !ok || !w.Until.Equal(want) || w.Key != (Key{Run: "run-1", Kind: KindSleep, Step: 2, Attempt: 1}) {
				return "not the keyed wait"
			}
			if e, ok := s.Next(w.Until).(CallModel); !ok || e.Key.Attempt != 2 {
				return "the second attempt's key"
			}
			return ""
		},
	}, {
		name:  "a failure of a class never retried ends the run",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{}, {}, {}}},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			s.Apply(ModelFailed{Class: FailAuth, Message: "401"}, t0)
			if s.Done == nil || s.Done.Kind != ProviderFailed || s.Done.Reason != "401" {
				return "not provider_failed"
			}
			return ""
		},
	}, {
		name:  "the end of turn claims done: the gate runs",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{}, {}, {}}},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			s.Apply(ModelReplied{Response: Response{Text: "done", Finish: FinishStop}}, t0)
			if e, ok := s.Next(t0).(RunGate); !ok || e.Baseline || e.Key != (Key{Run: "run-1", Kind: KindGate, Step: 2}) {
				return "no gate"
			}
			s.Apply(GateRan{Attempt: GateAttempt{Status: GatePassed, Report: []byte(`{}`)}}, t0)
			if s.Done == nil || s.Done.Kind != Succeeded || s.LastGate.Report != nil {
				return "not succeeded, or a report kept with an attempt"
			}
			return ""
		},
	}, {
		name:  "cancelled from outside",
		state: func() *State { return pending(base) },
		input: Stopped{Reason: "the run was cancelled: interrupt"},
		want:  End{Key: Key{Run: "run-1", Kind: KindEnd, Step: 1}, Outcome: Outcome{Kind: Cancelled, Reason: "the run was cancelled: interrupt", Steps: 1, Tokens: Usage{Input: 45, Output: 16}}},
	}, {
		name:  "out of time from outside",
		state: func() *State { return pending(base) },
		input: Stopped{OutOfTime: true},
		want:  End{Key: Key{Run: "run-1", Kind: KindEnd, Step: 1}, Outcome: Outcome{Kind: BudgetExhausted, Reason: "the wall-clock budget of 30m0s is spent", Steps: 1, Tokens: Usage{Input: 45, Output: 16}}},
	}, {
		name:  "a budget Next finds spent becomes the outcome once the driver takes the end",
		state: func() *State { return pending(base) },
		input: CallsRan{Results: []ToolResult{{}, {}, {}}},
		want:  CallModel{Key: Key{Run: "run-1", Kind: KindModel, Step: 2, Attempt: 1}},
		check: func(s *State) string {
			late := t0.Add(time.Hour)
			e, ok := s.Next(late).(End)
			if !ok || s.Done != nil {
				return "Next wrote the state, or named no end"
			}
			s.Apply(Ended{}, late)
			if s.Done == nil || !reflect.DeepEqual(*s.Done, e.Outcome) {
				return "the end taken is not the end named"
			}
			return ""
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.state()
			s.Apply(tc.input, t0)
			before := clone(t, s)
			got := s.Next(t0)
			if after := clone(t, s); !reflect.DeepEqual(before, after) {
				t.Fatal("Next changed the state")
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("next effect:\n got %#v\nwant %#v", got, tc.want)
			}
			if tc.recovery != "" && got.Recovery() != tc.recovery {
				t.Errorf("recovery %s, want %s", got.Recovery(), tc.recovery)
			}
			if tc.check != nil {
				if why := tc.check(s); why != "" {
					t.Error(why)
				}
			}
		})
	}
}

func clone(t *testing.T, s *State) string {
	t.Helper()
	data, err := jsonMarshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestJitterReplays: the wait after a failure is the same for the same
// key, differs between keys, and stays within its bounds.
func TestJitterReplays(t *testing.T) {
	seen := map[time.Duration]bool{}
	for step := range 50 {
		k := Key{Run: "r", Kind: KindModel, Step: step, Attempt: 1}
		j := k.Jitter(time.Second)
		if j < 0 || j > time.Second || j != k.Jitter(time.Second) {
			t.Fatalf("jitter %s for %s", j, k)
		}
		seen[j] = true
	}
	if len(seen) < 45 {
		t.Fatalf("only %d distinct waits over 50 keys", len(seen))
	}
	if (Key{}).Jitter(0) != 0 {
		t.Fatal("jitter of nothing")
	}
	if a, b := (Key{Run: "r", Kind: KindModel, Step: 1}).String(), (Key{Run: "r", Parents: "3", Kind: KindModel, Step: 1}).String(); a == b {
		t.Fatal("a child's key is its parent's")
	}
}
