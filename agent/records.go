package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reinhq/rein/trace"
)

// recordedRequest is a request as the trace keeps it: what it adds to
// the previous call's (the transcript only grows), so that a run's calls
// cost the trace what they add, not the whole transcript each time. The
// whole request is the previous one's first Prefix messages, these
// messages after them, and the previous system block and tools where
// these are absent.
type recordedRequest struct {
	Prefix    int        `json:"prefix"`
	System    *string    `json:"system,omitempty"`
	Tail      *string    `json:"system_tail,omitempty"`
	Tools     *[]ToolDef `json:"tools,omitempty"`
	Messages  []Message  `json:"messages"`
	MaxTokens int        `json:"max_tokens"`
}

// delta is req as the trace keeps it, after the previous recorded call.
func (d *driver) delta(req Request) recordedRequest {
	r := recordedRequest{MaxTokens: req.MaxTokens}
	if d.recorded == nil || req.System != d.recorded.System {
		r.System = &req.System
	}
	if d.recorded == nil && req.SystemTail != "" || d.recorded != nil && req.SystemTail != d.recorded.SystemTail {
		r.Tail = &req.SystemTail
	}
	if d.recorded == nil || !sameTools(req.Tools, d.recorded.Tools) {
		r.Tools = &req.Tools
	}
	if d.recorded != nil {
		// The longest prefix in common: the transcript grows, and setting
		// an old observation aside changes it from there.
		for r.Prefix < len(req.Messages) && r.Prefix < len(d.recorded.Messages) && sameMessage(req.Messages[r.Prefix], d.recorded.Messages[r.Prefix]) {
			r.Prefix++
		}
	}
	r.Messages = req.Messages[r.Prefix:]
	d.recorded = &Request{System: req.System, SystemTail: req.SystemTail, Tools: req.Tools, Messages: slices.Clone(req.Messages)}
	return r
}

// expand is the whole request a recorded one stands for, after prev.
func (r recordedRequest) expand(prev *Request) (Request, error) {
	out := Request{MaxTokens: r.MaxTokens}
	switch {
	case r.System != nil:
		out.System = *r.System
	case prev != nil:
		out.System = prev.System
	}
	switch {
	case r.Tail != nil:
		out.SystemTail = *r.Tail
	case prev != nil:
		out.SystemTail = prev.SystemTail
	}
	switch {
	case r.Tools != nil:
		out.Tools = *r.Tools
	case prev != nil:
		out.Tools = prev.Tools
	}
	if r.Prefix > 0 {
		if prev == nil || r.Prefix > len(prev.Messages) {
			return out, fmt.Errorf("a recorded request carries %d messages over from a call the recording lacks", r.Prefix)
		}
		out.Messages = append(out.Messages, prev.Messages[:r.Prefix]...)
	}
	out.Messages = append(out.Messages, r.Messages...)
	return out, nil
}

func sameTools(a, b []ToolDef) bool {
	return slices.EqualFunc(a, b, func(x, y ToolDef) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.Schema) == string(y.Schema)
	})
}

func sameMessage(x, y Message) bool {
	return x.Role == y.Role && x.Text == y.Text && x.ToolCallID == y.ToolCallID && slices.Equal(x.ToolCalls, y.ToolCalls)
}

// callRecord is what the trace keeps of one attempt of a model call: the
// request as what it adds to the previous one, the response whole.
func (d *driver) callRecord(step, attempt int, req Request, resp *Response, err error, took time.Duration) []trace.Record {
	if d.o.Tool.Store == nil {
		return nil
	}
	reqJSON, _ := json.Marshal(d.delta(req))
	rec := trace.ProviderCall{RunID: d.router.RunID(), Step: step, Attempt: attempt, Provider: d.o.Provider.Name(), Model: d.o.Provider.Model(),
		LatencyMS: float64(took.Microseconds()) / 1000, Request: string(reqJSON), At: time.Now()}
	if err != nil {
		class, _ := classOf(err)
		rec.Failure, rec.Error = string(class), err.Error()
	} else {
		respJSON, _ := json.Marshal(resp)
		rec.Response, rec.Finish = string(respJSON), string(resp.Finish)
		rec.Input, rec.Output, rec.CacheRead, rec.CacheWrite = resp.Usage.Input, resp.Usage.Output, resp.Usage.CacheRead, resp.Usage.CacheWrite
		rec.FirstMS = float64(resp.FirstToken.Microseconds()) / 1000
	}
	return []trace.Record{rec}
}

// gateRecord is what the trace keeps of one gate attempt.
func (d *driver) gateRecord(step int, a GateAttempt) []trace.Record {
	if d.o.Tool.Store == nil {
		return nil
	}
	tampered, _ := json.Marshal(a.Tampered)
	code := -1
	if a.ExitCode != nil {
		code = *a.ExitCode
	}
	rec := trace.GateAttempt{RunID: d.router.RunID(), Step: step, Line: d.c.Verify.Line, Status: string(a.Status),
		ExitCode: code, Tampered: string(tampered), ResultID: a.ResultID, DurationMS: a.DurationMS, Evidence: a.Evidence, At: time.Now()}
	if a.Tests != nil {
		tests, _ := json.Marshal(a.Tests)
		rec.Tests = string(tests)
	}
	return []trace.Record{rec}
}

// heldRecords is the store the router of a durable run writes to: what a
// call records is held, by the call's key, until the driver commits it
// with the call's end and the checkpoint; everything else goes through.
type heldRecords struct {
	trace.Durable
	mu     sync.Mutex
	held   map[string][][]trace.Record
	fenced error
}

type callKey struct{}

// withCall is ctx for the call of key k: what the router records of it
// is held under k, and the approver knows which call asks.
func withCall(ctx context.Context, k string) context.Context {
	return context.WithValue(ctx, callKey{}, k)
}

// callFrom is the key of the call ctx is for, or "".
func callFrom(ctx context.Context) string {
	k, _ := ctx.Value(callKey{}).(string)
	return k
}

func (h *heldRecords) AppendAll(ctx context.Context, recs ...trace.Record) ([]int64, error) {
	k, ok := ctx.Value(callKey{}).(string)
	if !ok {
		h.mu.Lock()
		fenced := h.fenced
		h.mu.Unlock()
		if fenced != nil {
			// The run is another driver's now: this one records nothing
			// more of it, its end included.
			return nil, fenced
		}
		return h.Durable.AppendAll(ctx, recs...)
	}
	h.mu.Lock()
	h.held[k] = append(h.held[k], recs)
	h.mu.Unlock()
	return make([]int64, len(recs)), nil
}

func (h *heldRecords) Append(ctx context.Context, r trace.Record) (int64, error) {
	ids, err := h.AppendAll(ctx, r)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// take hands over what was held for key k, and forgets it.
func (h *heldRecords) take(k string) [][]trace.Record {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.held[k]
	delete(h.held, k)
	return out
}

// lastRequest is the whole of the last request the trace keeps of the
// run, so that the resumed run records its next as what it adds.
func lastRequest(ctx context.Context, store trace.Store, runID string) (*Request, error) {
	calls, err := store.ProviderCalls(ctx, runID)
	if err != nil {
		return nil, err
	}
	var prev *Request
	for _, c := range calls {
		var rec recordedRequest
		if err := json.Unmarshal([]byte(c.Request), &rec); err != nil {
			return nil, fmt.Errorf("agent: run %s's recorded call %d: %w", runID, c.ID, err)
		}
		whole, err := rec.expand(prev)
		if err != nil {
			return nil, fmt.Errorf("agent: run %s's recorded call %d: %w", runID, c.ID, err)
		}
		prev = &whole
	}
	return prev, nil
}

// stepClock is where the step in progress spent its time so far: its
// start, its model calls (every attempt), its first token, its tool
// calls, and the tokens its answered call sent.
type stepClock struct {
	step         int
	start        time.Time
	model, tools time.Duration
	first        time.Duration
	usage        Usage
}

// clockModel counts a model call of step, which took took.
func (d *driver) clockModel(step int, took time.Duration, resp *Response) {
	if d.clock.step != step {
		d.clock = stepClock{step: step, start: time.Now().Add(-took)}
	}
	d.clock.model += took
	if resp != nil {
		d.clock.first, d.clock.usage = resp.FirstToken, resp.Usage
	}
}

// stepTime is the record of the step in progress, which ends now, and
// the clock reset.
func (d *driver) stepTime() []trace.Record {
	c := d.clock
	d.clock = stepClock{}
	if d.o.Tool.Store == nil || c.step == 0 {
		return nil
	}
	ms := func(t time.Duration) float64 { return float64(t.Microseconds()) / 1000 }
	rein := max(time.Since(c.start)-c.model-c.tools, 0)
	return []trace.Record{trace.StepTime{RunID: d.router.RunID(), Step: c.step, ModelMS: ms(c.model), FirstMS: ms(c.first), ToolsMS: ms(c.tools), ReinMS: ms(rein),
		Input: c.usage.Input, CacheRead: c.usage.CacheRead, CacheWrite: c.usage.CacheWrite, At: time.Now()}}
}
