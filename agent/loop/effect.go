package loop

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// EffectKind names what an effect asks for.
type EffectKind string

// The effects of the loop.
const (
	KindModel EffectKind = "model"
	KindTools EffectKind = "tools"
	KindGate  EffectKind = "gate"
	KindAwait EffectKind = "await"
	KindSleep EffectKind = "sleep"
	KindChild EffectKind = "child"
	KindEnd   EffectKind = "end"
)

// Key is an effect's idempotency key: the same key is the same effect,
// so a durable driver tells a repeat (after its death) from a new effect.
type Key struct {
	Run string `json:"run"`
	// Parents is the path of parent steps, from the root run, of a child
	// run's effect (the steps' numbers joined by "/"); empty for a root
	// run. A key is comparable: it may key a map.
	Parents string     `json:"parents,omitempty"`
	Kind    EffectKind `json:"kind"`
	// Step is the step the effect belongs to (the model's responses so
	// far); Index the first pending call a tools effect runs, the failed
	// claims before a gate attempt; Attempt the provider attempt of a
	// model call or a sleep.
	Step    int `json:"step"`
	Index   int `json:"index"`
	Attempt int `json:"attempt"`
	// Request is the decision an await effect waits for.
	Request string `json:"request,omitempty"`
}

// String is the key as one line, unique per effect of a run.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(k.Run)
	if k.Parents != "" {
		b.WriteString("/" + k.Parents)
	}
	fmt.Fprintf(&b, " %s step %d index %d attempt %d", k.Kind, k.Step, k.Index, k.Attempt)
	if k.Request != "" {
		b.WriteString(" request " + k.Request)
	}
	return b.String()
}

// Jitter is a duration in [0, n] drawn from the key alone: the same
// effect waits the same, so a replay asks what the run asked.
func (k Key) Jitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(k.String()))
	return time.Duration(h.Sum64() % uint64(n+1))
}

// Recovery is what a driver may do with an effect that was under way when
// it died: SafeToRepeat effects are carried out again; an Indeterminate
// one (a call that may have changed the workspace or the world, in part
// or in full) is never repeated silently, and the loop decides what
// follows (Resumed).
type Recovery string

// The recovery classes of the spec.
const (
	SafeToRepeat  Recovery = "safe_to_repeat"
	Indeterminate Recovery = "indeterminate"
)

// Effect is what the loop asks its driver to do next.
type Effect interface {
	EffectKey() Key
	Recovery() Recovery
}

// CallModel asks for the model's next response to the transcript.
type CallModel struct{ Key Key }

// RunTools asks for the calls to be routed, in order. Calls of read-only
// tools come as a group that may run at once and is safe to repeat; a
// call that may change the workspace comes alone, Indeterminate, and a
// durable driver journals it (Started) before it runs it.
type RunTools struct {
	Key   Key
	Calls []ToolCall
	// ReadOnly says every call is of a read-only tool; Children that
	// every call is a spawn_agent call, whose child run its key names
	// (ChildID): made again after a death, a call finds its child and
	// goes on with it, so the group is safe to repeat.
	ReadOnly bool
	Children bool
}

// RunGate asks for one gate attempt; with Baseline, the one before the
// model's first call.
type RunGate struct {
	Key      Key
	Baseline bool
}

// AwaitDecision asks for an operator's decision on a request: the run
// waits for it (a driver without one ends its process, the run still
// waiting), and goes on once it is recorded (Decided).
type AwaitDecision struct {
	Key     Key
	Waiting Waiting
}

// Wait asks the driver to sleep until Until (a retry's backoff).
type Wait struct {
	Key   Key
	Until time.Time
}

// End says the run is over.
type End struct {
	Key     Key
	Outcome Outcome
}

// EffectKey returns the effect's key.
func (e CallModel) EffectKey() Key { return e.Key }

// EffectKey returns the effect's key.
func (e RunTools) EffectKey() Key { return e.Key }

// EffectKey returns the effect's key.
func (e RunGate) EffectKey() Key { return e.Key }

// EffectKey returns the effect's key.
func (e AwaitDecision) EffectKey() Key { return e.Key }

// EffectKey returns the effect's key.
func (e Wait) EffectKey() Key { return e.Key }

// EffectKey returns the effect's key.
func (e End) EffectKey() Key { return e.Key }

// Recovery: a model call is asked again (nothing of the world changed;
// the checkpoint holds no response of it).
func (CallModel) Recovery() Recovery { return SafeToRepeat }

// Recovery: read-only calls run again; any other is indeterminate.
func (e RunTools) Recovery() Recovery {
	if e.ReadOnly || e.Children {
		return SafeToRepeat
	}
	return Indeterminate
}

// Recovery: a gate attempt runs again, in a fresh sandbox, with caches of
// its own.
func (RunGate) Recovery() Recovery { return SafeToRepeat }

// Recovery: the decision is read again.
func (AwaitDecision) Recovery() Recovery { return SafeToRepeat }

// Recovery: a sleep is slept again.
func (Wait) Recovery() Recovery { return SafeToRepeat }

// Recovery: the end is the end.
func (End) Recovery() Recovery { return SafeToRepeat }

// Waiting is what a run waits on: the request an operator answers.
type Waiting struct {
	// Kind is AwaitingApproval (an ask deferred), AwaitingRecovery (a
	// call interrupted by the driver's death, left to an operator),
	// AwaitingAnswer (the model's question) or AwaitingPlan (its plan).
	Kind    Kind   `json:"kind"`
	Request string `json:"request"`
	// CallID is the pending call the decision is about.
	CallID string `json:"call_id"`
	// Shown is what the operator is asked, exactly as shown.
	Shown string `json:"shown"`
}
