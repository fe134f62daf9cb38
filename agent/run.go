package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/agent/evidence"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Options are what a run is driven with.
type Options struct {
	Provider Provider
	// Registry holds the tools; nil is tool.Builtin().
	Registry *tool.Registry
	// Tool is the router's configuration: the policy (loaded with the
	// contract's protect globs as Verification), the approver, the trace
	// store and its redactor, the execution profile.
	Tool tool.Config
	// Observer sees every event as it happens.
	Observer func(Event)
	// Now and Sleep are the clock (tests replace them).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// boundary, a test hook, is called at each effect boundary of a
	// durable run (before and after each model call, tool call and gate
	// attempt, and between a call's journal entry and its end), with the
	// boundary's name: the tests kill the process there.
	boundary func(string)
}

// EventKind names an event.
type EventKind string

// The events.
const (
	EventStarted      EventKind = "started"
	EventProviderCall EventKind = "provider_call"
	EventRetry        EventKind = "retry"
	EventToolCall     EventKind = "tool_call"
	EventRefused      EventKind = "refused"
	EventApproval     EventKind = "approval_requested"
	EventDecided      EventKind = "approval_decided"
	EventCompacted    EventKind = "compacted"
	EventGateAttempt  EventKind = "gate_attempt"
	EventFinished     EventKind = "finished"
	// EventResumed: a durable run goes on from its last checkpoint.
	EventResumed EventKind = "resumed"
)

// Event is one thing that happened in a run; each restates what the trace
// records.
type Event struct {
	Kind   EventKind `json:"kind"`
	Run    string    `json:"run"`
	Step   int       `json:"step"`
	Tokens Usage     `json:"tokens"`
	// Tool, Target and Status describe a tool call; Status a gate attempt
	// too.
	Tool    string   `json:"tool,omitempty"`
	Target  string   `json:"target,omitempty"`
	Status  string   `json:"status,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Run drives contract c to an outcome. It refuses before the first model
// call what cannot run: a bad contract, a gate the policy does not allow
// outright, a protect glob that matches nothing.
//
// When the trace store is durable (trace.Durable: the SQLite store of trace/sqlite is),
// the run is too: it holds the run's lease, journals each tool call as
// running before it runs it, and commits a checkpoint with every step's
// records in one transaction, so that Resume can continue it after its
// process dies. A durable run whose lease is taken over stops at its next
// commit with a trace.FencedError.
func Run(ctx context.Context, c Contract, o Options) (Outcome, error) {
	return start(ctx, c, o, nil)
}

// start drives c from its start, or from rp when resumed.
func start(ctx context.Context, c Contract, o Options, rp *resumePoint) (Outcome, error) {
	release := func() {}
	if rp != nil {
		// Whatever refuses the resumption leaves the run to the next.
		release = func() { o.Tool.Store.(trace.Durable).ReleaseLease(context.WithoutCancel(ctx), rp.lease) }
	}
	out, err := drive(ctx, c, o, rp)
	if err != nil && out.Run == "" {
		release()
	}
	return out, err
}

func drive(ctx context.Context, c Contract, o Options, rp *resumePoint) (Outcome, error) {
	c, err := c.WithDefaults()
	if err != nil {
		return Outcome{}, err
	}
	if o.Provider == nil {
		return Outcome{}, errors.New("agent: no provider")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	p := o.Tool.Policy
	if p == nil {
		return Outcome{}, errors.New("agent: no policy")
	}
	if p.Workspace != c.Workspace {
		return Outcome{}, fmt.Errorf("agent: the policy is the workspace %s's, the contract's is %s", p.Workspace, c.Workspace)
	}
	if c.Verify != nil {
		line, err := shell.Parse(c.Verify.Line)
		if err != nil {
			return Outcome{}, fmt.Errorf("agent: contract: verify %q: %w", c.Verify.Line, err)
		}
		if v := p.Check(line); v.Decision != policy.Allow {
			return Outcome{}, fmt.Errorf("agent: contract: verify %q is not allowed outright by the policy (%s: %s); a gate must be, or the run could not check itself", c.Verify.Line, v.Decision, policy.Printable(v.Reason))
		}
	}
	var baseline map[string]protectedFile
	if rp != nil {
		baseline = rp.baseline
	} else if baseline, err = hashProtected(c.Workspace, c.Protect, true); err != nil {
		return Outcome{}, err
	}
	reg := o.Registry
	if reg == nil {
		if reg, err = tool.Builtin(); err != nil {
			return Outcome{}, err
		}
	}
	if o.Tool.Surface == "" {
		o.Tool.Surface = tool.SurfaceCoding
	}
	if o.Tool.Source == "" {
		o.Tool.Source = "agent"
	}
	d := &driver{c: c, o: o, baseline: baseline, specs: map[string]*tool.Spec{}, calls: map[string]ToolCall{}, deferred: map[string]*deferral{},
		blobs: map[string]bool{}, newBlobs: map[string]string{}}
	if ds, ok := o.Tool.Store.(trace.Durable); ok && ds != nil {
		d.durable = ds
		// A result the model was shown the id of is read again after a
		// resumption: the results go when the run has its final outcome.
		o.Tool.KeepResults = true
		d.held = &heldRecords{Durable: ds, held: map[string][][]trace.Record{}}
		o.Tool.Store = d.held
		if _, ok := o.Tool.Approver.(Defer); ok {
			o.Tool.Approver = deferrer{d: d}
		}
	}
	if rp != nil {
		if d.durable == nil {
			return Outcome{}, errors.New("agent: a resumed run needs its durable store")
		}
		o.Tool.Resume, o.Tool.Carried = rp.lease.RunID, rp.carried
		d.lease, d.seq, d.snapshot, d.baselineBlobs, d.resumedBlobs = rp.lease, rp.seq, rp.snapshot, rp.baselineBlobs, rp.blobs
		for a := range rp.blobs {
			d.blobs[a] = true
		}
		if d.recorded, err = lastRequest(ctx, d.durable, rp.lease.RunID); err != nil {
			return Outcome{}, err
		}
	}
	if o.Tool.Approver != nil {
		// Every ask and its answer are events too.
		o.Tool.Approver = observedApprover{inner: o.Tool.Approver, d: d}
	}
	router, err := tool.NewRouter(reg, o.Tool)
	if err != nil {
		return Outcome{}, err
	}
	d.router = router
	d.gateCaches = tool.NewGateCaches(router.RunID(), c.Workspace)
	if d.durable != nil && rp == nil {
		if d.lease, err = d.durable.AcquireLease(ctx, router.RunID(), leaseTTL); err != nil {
			router.Close("refused")
			return Outcome{}, err
		}
	}
	for _, s := range router.Specs() {
		d.specs[s.Name] = s
		schema, err := json.Marshal(s.Schema)
		if err != nil {
			return Outcome{}, fmt.Errorf("agent: tool %s's schema: %w", s.Name, err)
		}
		d.tools = append(d.tools, ToolDef{Name: s.Name, Description: s.Description, Schema: schema})
	}
	// The boundary section says what the sandbox's preflight found, not
	// what the configuration asks for.
	rung, network, err := router.Sandbox(ctx)
	d.rung, d.network, d.sandboxErr = string(rung), string(network), err
	d.system = d.systemBlock()
	out := d.run(ctx, rp)
	out.Run = router.RunID()
	out.Rung = d.rung
	out.Active, out.Elapsed = d.state.Active, time.Since(d.state.StartedAt)
	if d.state.Done != nil {
		out.Config = d.configChanged(ctx)
	}
	if d.failure() == nil {
		d.closed()
	}
	router.Close(string(out.Kind))
	if d.durable != nil && d.failure() == nil && d.state.Done != nil {
		router.RemoveResults()
	}
	if d.state != nil && d.state.Done != nil {
		// An awaiting run keeps its baseline's caches for its resumption.
		d.gateCaches.Remove()
	}
	if d.durable != nil && !errors.As(d.failure(), new(*trace.FencedError)) {
		// A lease taken over is the new driver's; any other stop leaves
		// the run to the next.
		d.durable.ReleaseLease(context.WithoutCancel(ctx), d.lease)
	}
	// Whatever the run did behind the policy's back to the files it may
	// not change is undone: the workspace keeps the tests it began with.
	now, err := hashProtected(c.Workspace, c.Protect, false)
	if err != nil {
		// Whatever stops the comparison, every protected file is put back.
		now = map[string]protectedFile{}
	}
	{
		if changed := diffHashes(baseline, now); len(changed) > 0 {
			if err := restoreProtected(c.Workspace, c.Protect, baseline, now); err != nil {
				out.Reason += fmt.Sprintf("; protected files were changed and could not all be put back (%v): %s", err, strings.Join(changed, ", "))
			} else {
				out.Reason += "; rein put back the protected files changed behind the policy's back: " + strings.Join(changed, ", ")
			}
		}
	}
	d.emit(Event{Kind: EventFinished, Step: out.Steps, Tokens: out.Tokens, Reason: out.Reason, Outcome: &out})
	return out, d.failure()
}

// configChanged is the net under the protected set's table of the host's
// configuration (tool.Router.ConfigChanged): every dotted file the run
// made or changed, reported in the outcome and recorded in the trace.
func (d *driver) configChanged(ctx context.Context) *ConfigReport {
	r := d.router.ConfigChanged(context.WithoutCancel(ctx), d.state.StartedAt)
	if r == nil {
		return nil
	}
	return &ConfigReport{Count: r.Count, Paths: r.Paths, Truncated: r.Truncated}
}

// observedApprover puts every ask to the run's approver and tells the
// observer of the question and the answer.
type observedApprover struct {
	inner policy.Approver
	d     *driver
}

func (a observedApprover) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	step := 0
	if a.d.state != nil {
		step = a.d.state.Steps
	}
	a.d.emit(Event{Kind: EventApproval, Step: step, Reason: v.Reason})
	ap, err := a.inner.Approve(ctx, v)
	if err == nil && ap.Answer == policy.Approve {
		// An answer can take an operator minutes: the lease is checked
		// again before the effect it allows.
		if lerr := a.d.holdLease(ctx); lerr != nil {
			ap, err = policy.Approval{Answer: policy.Reject, Reason: lerr.Error()}, lerr
		}
	}
	status := map[policy.Answer]string{policy.Approve: "approved", policy.Reject: "rejected", policy.Defer: "deferred"}[ap.Answer]
	if err != nil {
		status = "error"
	}
	a.d.emit(Event{Kind: EventDecided, Step: step, Status: status, Reason: ap.Reason})
	return ap, err
}

// errWallClock is the cause of a run's context ending at its budget.
var errWallClock = errors.New("the wall-clock budget")

type driver struct {
	c        Contract
	o        Options
	router   *tool.Router
	specs    map[string]*tool.Spec
	tools    []ToolDef
	system   string
	baseline map[string]protectedFile
	// gateCaches are the gate's own toolchain caches.
	gateCaches *tool.GateCaches
	rung       string
	// recorded is the last request the trace kept.
	recorded *Request
	// setAside is how many observations the events have told of.
	setAside int
	// network and sandboxErr are what the sandbox's preflight said.
	network    string
	sandboxErr error
	state      *State

	// A durable run's store, the router's view of it, the lease, the
	// checkpoints committed, the blobs the store has and those the next
	// commit adds, and the commit that failed (the run stops at it).
	durable       trace.Durable
	held          *heldRecords
	lease         trace.Lease
	seq           int64
	blobs         map[string]bool
	newBlobs      map[string]string
	resumedBlobs  map[string]string
	baselineBlobs map[string]storedProtection
	failed        error
	stop          context.CancelCauseFunc
	// snapshot is the address of the workspace's listing taken when the
	// running call started; segStart and activeBase when this process
	// began to drive the run and the time active before.
	snapshot   string
	segStart   time.Time
	activeBase time.Duration
	// calls are the calls in progress by key, and deferred the asks of
	// them put to an operator.
	mu       sync.Mutex
	calls    map[string]ToolCall
	deferred map[string]*deferral
	// chunks are the transcript's chunks as the last checkpoint kept them.
	chunks []chunk
}

func (d *driver) at(name string) {
	if d.o.boundary != nil && d.durable != nil {
		d.o.boundary(name)
	}
}

// closed keeps the run's last checkpoint: its outcome, or what it waits
// for.
func (d *driver) closed() {
	if d.durable != nil {
		d.commit(context.Background())
	}
}

func (d *driver) emit(e Event) {
	if d.o.Observer != nil && d.router != nil {
		e.Run = d.router.RunID()
		d.o.Observer(e)
	}
}

// run is the in-process driver: it carries out each effect the step
// function names and folds its result back in (loop.State.Apply, the
// state's only writer); a durable run commits its state after each.
func (d *driver) run(ctx context.Context, rp *resumePoint) Outcome {
	var s *State
	if rp == nil {
		s = loop.New(loop.Start{Run: d.router.RunID(), Contract: d.c, ReadOnly: d.readOnlyTools(), StartedAt: time.Now()}, d.o.Now())
	} else {
		s = rp.state
	}
	d.state = s
	d.segStart, d.activeBase = time.Now(), s.Active
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	d.stop = stop
	// The wall clock bounds every effect too: a model that streams
	// forever, a command that sleeps, a gate that hangs.
	ctx, cancel := context.WithTimeoutCause(ctx, max(d.c.Budget.WallClock-s.Active, 0), errWallClock)
	defer cancel()
	if d.durable != nil {
		defer d.heartbeat(ctx)()
	}
	if rp == nil {
		d.emit(Event{Kind: EventStarted})
		d.commit(ctx)
	} else {
		d.emit(Event{Kind: EventResumed, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("from checkpoint %d", rp.seq)})
		d.resumed(ctx)
	}
	for {
		if err := d.failure(); err != nil {
			return Outcome{Kind: Cancelled, Reason: "the run was stopped: " + err.Error(), Steps: s.Steps, Tokens: s.Tokens, Cost: d.c.Prices.Cost(s.Tokens), Gate: s.LastGate}
		}
		if ctx.Err() != nil && s.Done == nil {
			cause := context.Cause(ctx)
			s.Apply(loop.Stopped{OutOfTime: errors.Is(cause, errWallClock), Reason: "the run was cancelled: " + cause.Error()}, d.o.Now())
		}
		now := d.o.Now()
		switch e := s.Next(now).(type) {
		case End:
			s.Apply(loop.Ended{}, now)
			return *s.Done
		case AwaitDecision:
			if d.durable == nil {
				s.Apply(loop.Stopped{Reason: "the run waits for a decision, and its store is not durable"}, now)
				continue
			}
			if out := d.await(ctx, e.Waiting); out != nil {
				return *out
			}
		case Wait:
			if err := d.o.Sleep(ctx, e.Until.Sub(now)); err != nil {
				s.Apply(loop.Stopped{Reason: "the run was cancelled while waiting to retry"}, d.o.Now())
			}
		case CallModel:
			if s.SetAside > d.setAside {
				d.emit(Event{Kind: EventCompacted, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("%d observations set aside to fit the window", s.SetAside-d.setAside)})
				d.setAside = s.SetAside
			}
			req := Request{System: d.system, Messages: s.Transcript, Tools: d.tools, MaxTokens: d.c.ResponseMaxTokens}
			step, attempt := e.Key.Step, e.Key.Attempt
			d.at(fmt.Sprintf("model-before %d.%d", step, attempt))
			start := time.Now()
			resp, err := d.o.Provider.Stream(ctx, req)
			if err != nil && ctx.Err() != nil {
				continue // the loop's head says why
			}
			rec := d.callRecord(step, attempt, req, resp, err, time.Since(start))
			s.Apply(ModelInput(resp, err), d.o.Now())
			d.commit(ctx, rec)
			d.at(fmt.Sprintf("model-after %d.%d", step, attempt))
			ev := Event{Kind: EventProviderCall, Step: s.Steps, Tokens: s.Tokens, Status: "ok"}
			if err != nil {
				ev.Status, ev.Reason = "failed", err.Error()
			}
			d.emit(ev)
			if err != nil && s.Done == nil {
				d.emit(Event{Kind: EventRetry, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("attempt %d failed (%v); the next at %s", s.Attempt, err, s.RetryAt.Format(time.RFC3339))})
			}
		case RunTools:
			d.runTools(ctx, e)
		case RunGate:
			name := "gate " + strconv.Itoa(e.Key.Index)
			if e.Baseline {
				name = "gate baseline"
			}
			d.at("gate-before " + name)
			if d.holdLease(ctx) != nil {
				continue // the loop's head says why
			}
			k := e.Key.String()
			a := d.gate(withCall(ctx, k), e.Baseline)
			batches := d.held.take(k)
			batches = append(batches, d.gateRecord(s.Steps, a))
			s.Apply(loop.GateRan{Attempt: a, Baseline: e.Baseline}, d.o.Now())
			d.commit(ctx, batches...)
			d.at("gate-after " + name)
		}
	}
}

// ModelInput is a provider's answer as the loop takes it: the response,
// or the failure's class, the server's Retry-After and its message.
func ModelInput(resp *Response, err error) loop.Input {
	if err != nil {
		class, after := classOf(err)
		return loop.ModelFailed{Class: class, Message: err.Error(), RetryAfter: after}
	}
	return loop.ModelReplied{Response: *resp}
}

// readOnlyTools names the router's read-only tools.
func (d *driver) readOnlyTools() []string {
	var out []string
	for name, s := range d.specs {
		if s.ReadOnly {
			out = append(out, name)
		}
	}
	return out
}

// runTools carries out the calls the loop groups (the read-only calls at
// the pending calls' head, at once, or one call that may change the
// workspace): a durable run journals an indeterminate call as running
// first (with a snapshot of the workspace), and commits the results, with
// what the router recorded of them, after.
func (d *driver) runTools(ctx context.Context, e RunTools) {
	s := d.state
	group := e.Calls
	first := group[0].ID
	d.at("tool-before " + first)
	// Read-only calls are made again after a death, journalled or not:
	// only a call that may change the workspace is journalled.
	if d.durable != nil && e.Recovery() == loop.Indeterminate {
		s.Apply(loop.Started{CallID: first}, d.o.Now())
		data, _ := json.Marshal(takeSnapshot(d.c.Workspace))
		d.snapshot = d.blob(string(data))
		if d.commit(ctx) != nil {
			return
		}
		d.at("tool-started " + first)
	}
	results := d.route(ctx, group)
	d.at("tool-ran " + first)
	var batches [][]trace.Record
	in := loop.CallsRan{}
	for i, c := range group {
		d.mu.Lock()
		df := d.deferred[c.ID]
		delete(d.deferred, c.ID)
		delete(d.calls, c.ID)
		d.mu.Unlock()
		if df != nil {
			// The ask waits for an operator: the call is made again once
			// the answer is in, and what it recorded now is dropped.
			for _, later := range group[i:] {
				d.held.take(later.ID)
			}
			in.Deferred = &df.waiting
			batches = append(batches, []trace.Record{trace.ApprovalRequest{RunID: d.router.RunID(), Request: df.waiting.Request, Kind: "approval",
				CallID: c.ID, Tool: c.Name, Args: c.Args, Shown: df.waiting.Shown, At: time.Now()}})
			break
		}
		in.Results = append(in.Results, results[i])
		batches = append(batches, d.held.take(c.ID)...)
	}
	d.snapshot = ""
	if in.Deferred == nil {
		in.Stopped = d.router.Stopped()
	}
	s.Apply(in, d.o.Now())
	d.commit(ctx, batches...)
	if in.Deferred == nil {
		d.at("tool-after " + first)
	}
}

// recordedRequest is a request as the trace keeps it: what it adds to
// the previous call's (the transcript only grows), so that a run's calls
// cost the trace what they add, not the whole transcript each time. The
// whole request is the previous one's first Prefix messages, these
// messages after them, and the previous system block and tools where
// these are absent.
type recordedRequest struct {
	Prefix    int        `json:"prefix"`
	System    *string    `json:"system,omitempty"`
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
	d.recorded = &Request{System: req.System, Tools: req.Tools, Messages: slices.Clone(req.Messages)}
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

// route runs the calls through the router in order; calls of read-only
// tools next to each other run at once, their results kept in order.
func (d *driver) route(ctx context.Context, calls []ToolCall) []ToolResult {
	out := make([]ToolResult, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if d.readOnly(calls[i].Name) {
			for j < len(calls) && d.readOnly(calls[j].Name) {
				j++
			}
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k] = d.call(ctx, calls[k])
			}()
		}
		wg.Wait()
		i = j
	}
	return out
}

func (d *driver) readOnly(name string) bool {
	s, ok := d.specs[name]
	return ok && s.ReadOnly
}

func (d *driver) call(ctx context.Context, c ToolCall) ToolResult {
	if !d.readOnly(c.Name) {
		if err := d.holdLease(ctx); err != nil {
			return ToolResult{Observation: fmt.Sprintf("%s: cancelled: not made: %v", c.Name, err)}
		}
	}
	d.mu.Lock()
	d.calls[c.ID] = c
	d.mu.Unlock()
	env := d.router.Call(withCall(ctx, c.ID), c.Name, json.RawMessage(c.Args))
	if env.Rung != "" {
		d.rung = string(env.Rung)
	}
	d.emit(Event{Kind: EventToolCall, Step: d.state.Steps, Tokens: d.state.Tokens, Tool: c.Name, Target: target(c.Args), Status: string(env.Status), Reason: env.Reason})
	if env.Status == tool.Denied {
		d.emit(Event{Kind: EventRefused, Step: d.state.Steps, Tokens: d.state.Tokens, Tool: c.Name, Target: target(c.Args), Status: string(env.Status), Reason: env.Reason})
	}
	changed := env.Status == tool.OK && !d.readOnly(c.Name)
	return ToolResult{Observation: env.Text(), Changed: changed}
}

// target is what a call is about, for a line of rein run's output.
func target(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, k := range []string{"path", "line", "pattern", "id"} {
		if v, ok := m[k].(string); ok {
			return v
		}
	}
	if v, ok := m["argv"].([]any); ok {
		parts := make([]string, 0, len(v))
		for _, a := range v {
			parts = append(parts, fmt.Sprint(a))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// gate runs one attempt: the protected files compared with the run's
// start first, then the gate's line through the router, like any command,
// with caches of the attempt's own (tool.GateCaches); a go test gate rein
// recognises reports each test (-json, added), and a protected test that
// ran in the baseline must run and pass.
func (d *driver) gate(ctx context.Context, baseline bool) (a GateAttempt) {
	start := d.o.Now()
	defer func() {
		a.DurationMS = float64(d.o.Now().Sub(start).Microseconds()) / 1000
		d.emit(Event{Kind: EventGateAttempt, Step: d.state.Steps, Tokens: d.state.Tokens, Status: string(a.Status), Target: d.c.Verify.Line})
	}()
	// Nothing of the run runs beside its gate: a background line could
	// change what the gate reads while it reads it.
	d.router.KillHandles()
	if d.tampered(&a) {
		return a
	}
	// A line with ~ is not rewritten: the router reads ~ as the sandbox's
	// HOME.
	line, report := evidence.GoTestLine(shell.Parser{}, d.c.Verify.Line)
	if !report {
		line = d.c.Verify.Line
	}
	var err error
	if baseline {
		if err = d.gateCaches.EmptyBaseline(); err == nil {
			if report {
				d.buildStd(d.gateCaches.Baseline(ctx))
			}
			ctx = d.gateCaches.Baseline(ctx)
		}
	} else {
		var done func()
		ctx, done, err = d.gateCaches.Attempt(ctx)
		if err == nil {
			defer done()
		}
	}
	if err != nil {
		a.Status, a.Output = GateErrored, err.Error()
		return a
	}
	ctx = tool.NetworkOff(ctx)
	stdout, stderr := &capped{max: maxReportBytes}, &capped{max: maxReportBytes}
	if report {
		ctx = tool.WithLive(ctx, tool.Live{Stdout: stdout, Stderr: stderr})
	}
	args := map[string]string{"line": line}
	if d.c.Verify.Timeout > 0 {
		args["timeout"] = d.c.Verify.Timeout.String()
	}
	raw, _ := json.Marshal(args)
	env := d.router.Call(tool.GateGrant(ctx, line), "shell", raw)
	if env.Rung != "" {
		d.rung = string(env.Rung)
	}
	a.ExitCode, a.ResultID, a.Output = env.ExitCode, env.ResultID, env.Text()
	ran := env.ExitCode != nil && (env.Status == tool.OK || env.Status == tool.Failed)
	switch {
	case ran && *env.ExitCode == d.c.Verify.ExpectExit:
		a.Status = GatePassed
	case ran:
		a.Status = GateFailedSt
	default:
		a.Status = GateErrored
	}
	a.Evidence = EvidenceExitStatus
	if report && (ran || baseline) {
		d.judgeTests(&a, baseline, stdout, stderr)
	}
	// And nothing changed them while the gate ran.
	d.tampered(&a)
	return a
}

// stdPackage is an import path of Go's standard library as go list
// prints it, never a flag, a file or a vendored path.
var stdPackage = regexp.MustCompile(`^[a-z0-9_]+(/[a-z0-9_]+)*$`)

// buildStd builds the standard packages the workspace's Go tests import
// into the standard library's shared caches (tool.GateCaches), so that a
// baseline compiles only the workspace: go list with the baseline's
// caches (ctx), then go build of those packages alone, which runs nothing
// of the workspace. The gate's grant covers both lines where the policy
// would ask; either line denied, or failing, leaves the baseline to build
// the packages itself.
func (d *driver) buildStd(ctx context.Context) {
	if _, err := os.Stat(filepath.Join(d.c.Workspace, "go.mod")); err != nil {
		return
	}
	run := func(ctx context.Context, line string) (string, bool) {
		out := &capped{max: 1 << 20}
		raw, _ := json.Marshal(map[string]string{"line": line})
		env := d.router.Call(tool.WithLive(tool.GateGrant(tool.NetworkOff(ctx), line), tool.Live{Stdout: out}), "shell", raw)
		return out.buf.String(), env.Status == tool.OK && !out.over
	}
	listed, ok := run(ctx, `go list -deps -test -f '{{if .Standard}}{{.ImportPath}}{{end}}' ./...`)
	if !ok {
		return
	}
	var pkgs []string
	for _, p := range strings.Fields(listed) {
		if stdPackage.MatchString(p) && !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return
	}
	slices.Sort(pkgs)
	std, err := d.gateCaches.StdBuild(ctx)
	if err != nil {
		return
	}
	run(std, "go build "+strings.Join(pkgs, " "))
}

// maxReportBytes bounds what is kept of a gate's report (each stream):
// a report cut there is none, and the protected tests count as not run.
const maxReportBytes = 64 << 20

// judgeTests reads the runner's report of a go test gate: the attempt's
// counts, the output as go test prints it for the model, and the
// protected tests of the baseline that did not run and pass.
func (d *driver) judgeTests(a *GateAttempt, baseline bool, stdout, stderr *capped) {
	var rep evidence.Report
	text, ok := "", false
	if !stdout.over {
		rep, text, ok = evidence.ReadGo(stdout.buf.Bytes())
	}
	out := untimed(text)
	if stderr.buf.Len() > 0 {
		out += stderr.buf.String()
	}
	if stdout.over {
		out = fmt.Sprintf("[rein: the gate's report passed %d MiB and was not read]\n", maxReportBytes>>20) + a.Output
	}
	a.Output = boundedText(out)
	if ok {
		c := rep.Counts()
		a.Evidence, a.Tests = EvidenceGoTestJSON, &GateTests{Run: c.Run, Passed: c.Passed, Failed: c.Failed, Skipped: c.Skipped, NotRun: []string{}}
	}
	if baseline {
		// The protected tests are read as the run began: which module a
		// test file is in is what the workspace's go.mod files say, and
		// those are the run's to change.
		declared, err := evidence.DeclaredGo(d.c.Workspace, d.protectedTests())
		if err != nil {
			a.Output = fmt.Sprintf("[rein: reading the protected tests: %v]\n", err) + a.Output
		}
		if len(declared) > 0 {
			a.Declared, _ = json.Marshal(declared)
		}
		if !ok {
			// A baseline whose report cannot be read (its go.mod does
			// not parse, it ran out of time, it printed too much) tells
			// nothing of which tests run: every protected test must run
			// and pass, as in a package that did not build.
			rep = evidence.Report{Runner: evidence.RunnerGo}
			for _, t := range declared {
				if i := strings.LastIndexByte(t.Key, '.'); i > 0 && !slices.Contains(rep.BuildFailed, t.Key[:i]) {
					rep.BuildFailed = append(rep.BuildFailed, t.Key[:i])
				}
			}
		}
		a.Report, _ = json.Marshal(rep)
		return
	}
	b := d.state.GateBaseline
	if b == nil || len(b.Report) == 0 {
		return
	}
	var baseRep evidence.Report
	var baseDeclared []evidence.Test
	err := json.Unmarshal(b.Report, &baseRep)
	if err == nil && len(b.Declared) > 0 {
		err = json.Unmarshal(b.Declared, &baseDeclared)
	}
	if err != nil {
		// The checkpoint is under the trace's keyed chain; a baseline it
		// cannot read passes nothing.
		a.Status, a.Output = GateErrored, fmt.Sprintf("[rein: the baseline's report cannot be read: %v]\n", err)+a.Output
		return
	}
	// A protected test whose file is not where it was (its package's
	// import path changed: a go.mod renamed, made, or removed) is not the
	// test a report of its old name speaks of.
	now, err := evidence.DeclaredGo(d.c.Workspace, d.protectedTests())
	where := map[string]string{}
	for _, t := range now {
		where[t.File+"\x00"+t.Key[strings.LastIndexByte(t.Key, '.')+1:]] = t.Key
	}
	for _, t := range baseDeclared {
		if err != nil || where[t.File+"\x00"+t.Key[strings.LastIndexByte(t.Key, '.')+1:]] != t.Key {
			delete(rep.Tests, t.Key)
		}
	}
	notRun := evidence.NotRun(baseDeclared, baseRep, rep)
	if a.Tests == nil {
		// A report rein asked for and could not read: the attempt's
		// tests are none.
		a.Evidence, a.Tests = EvidenceGoTestJSON, &GateTests{}
	}
	a.Tests.NotRun = append([]string{}, notRun...)
	if a.Status == GatePassed && len(notRun) > 0 {
		a.Status = GateTestsNotRun
		a.Output = fmt.Sprintf("[rein: the gate exited %d, but these protected tests ran in the baseline and did not run and pass now: %s]\n",
			exitOf(a.ExitCode), strings.Join(notRun, ", ")) + a.Output
	}
}

// exitOf is an exit code, or -1 for none.
func exitOf(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// protectedTests are the protected files (as the run began) that are
// Go test files, in order.
func (d *driver) protectedTests() []string {
	var files []string
	for p := range d.baseline {
		if strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files
}

// The times go test prints of each test and package, which differ from
// run to run.
var (
	testTime    = regexp.MustCompile(`(?m)^(\s*--- (?:PASS|FAIL|SKIP): \S+) \(\d+\.\d+s\)$`)
	packageTime = regexp.MustCompile(`(?m)^((?:ok  |FAIL)\t\S+)\t\d+\.\d+s`)
)

// untimed is go test's output, rebuilt from its report, without the
// times of its tests and packages: the model is shown the same text for
// the same results, and a run replayed from its recording (whose first
// request holds the baseline's output) asks what it asked.
func untimed(text string) string {
	return packageTime.ReplaceAllString(testTime.ReplaceAllString(text, "$1"), "$1")
}

// capped keeps what is written to it up to max bytes, and says whether
// more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// maxGateShown bounds the gate output the model is shown: its head and
// its tail.
const maxGateShown = 50_000

func boundedText(s string) string {
	if len(s) <= maxGateShown {
		return s
	}
	head, tail := s[:maxGateShown/5], s[len(s)-maxGateShown*4/5:]
	return fmt.Sprintf("%s\n[rein: %d bytes left out]\n%s", strings.ToValidUTF8(head, ""), len(s)-len(head)-len(tail), strings.ToValidUTF8(tail, ""))
}

// tampered fails the attempt as tampered when the protected files differ
// from the run's start, and puts them back.
func (d *driver) tampered(a *GateAttempt) bool {
	now, err := hashProtected(d.c.Workspace, d.c.Protect, false)
	if err != nil {
		a.Status, a.Output = GateErrored, err.Error()
		return true
	}
	changed := diffHashes(d.baseline, now)
	if len(changed) == 0 {
		return false
	}
	a.Status, a.Tampered = GateTampered, changed
	a.Output = "these protected files differ from the run's start, changed by a program the policy could not see into: " + strings.Join(changed, ", ") + "; rein put them back as they were"
	if err := restoreProtected(d.c.Workspace, d.c.Protect, d.baseline, now); err != nil {
		a.Output += fmt.Sprintf(" (not all: %v)", err)
	}
	return true
}

// protectedFile is a protected file as the run began: its hash and its
// bytes, to put back.
type protectedFile struct {
	hash string
	data []byte
}

// maxProtectedBytes bounds the protected files a run keeps a copy of,
// and maxProtectedFile each of them.
const (
	maxProtectedBytes = 64 << 20
	maxProtectedFile  = 16 << 20
)

// readBounded reads the file at p of root, at most limit bytes (more is an
// error: the file grew since it was looked at).
func readBounded(root *os.Root, p string, limit int64) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("more than %d bytes", limit)
	}
	return data, err
}

// hashProtected hashes (and, with keep, copies) every entry of ws a
// protect glob matches; with keep (at the run's start) a glob that
// matches nothing is refused, since it would protect nothing.
func hashProtected(ws string, globs []string, keep bool) (map[string]protectedFile, error) {
	out := map[string]protectedFile{}
	if len(globs) == 0 {
		return out, nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("agent: opening the workspace: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	total := 0
	for _, g := range globs {
		if !doublestar.ValidatePattern(g) || strings.HasPrefix(g, "/") {
			return nil, fmt.Errorf("agent: contract: protect %q is not a pattern relative to the workspace", g)
		}
		n := 0
		err := doublestar.GlobWalk(fsys, g, func(p string, e fs.DirEntry) error {
			n++
			if !e.Type().IsRegular() {
				// A link or a directory where a protected file was is a
				// change too.
				out[p] = protectedFile{hash: "not a file: " + e.Type().String()}
				return nil
			}
			info, err := e.Info()
			switch {
			case err != nil:
				out[p] = protectedFile{hash: "unreadable: " + err.Error()}
				return nil
			case info.Size() > maxProtectedFile:
				// Never read whole: a file this size is no test of the
				// run's, and reading it could exhaust memory.
				if keep {
					return fmt.Errorf("%s is %d bytes, more than a protected file may be (%d MiB)", p, info.Size(), maxProtectedFile>>20)
				}
				out[p] = protectedFile{hash: fmt.Sprintf("too large: %d bytes", info.Size())}
				return nil
			}
			data, err := readBounded(root, p, maxProtectedFile)
			if err != nil {
				// Unreadable now is changed: it is put back.
				out[p] = protectedFile{hash: "unreadable: " + err.Error()}
				return nil
			}
			sum := sha256.Sum256(data)
			f := protectedFile{hash: hex.EncodeToString(sum[:])}
			if keep {
				if total += len(data); total > maxProtectedBytes {
					return fmt.Errorf("the protected files pass %d MiB, more than a run keeps a copy of", maxProtectedBytes>>20)
				}
				f.data = data
			}
			out[p] = f
			return nil
		}, doublestar.WithNoFollow())
		if err != nil {
			return nil, fmt.Errorf("agent: hashing what protect %q matches: %w", g, err)
		}
		if n == 0 && keep {
			return nil, fmt.Errorf("agent: contract: protect %q matches no file in %s", g, ws)
		}
	}
	return out, nil
}

// restoreProtected puts the protected files back as the run began, never
// through a link: what replaced one (a link, a directory) is removed
// first, and protected files that appeared since are removed. It writes
// and removes only paths of the workspace that a protect glob matches,
// under directories that are not links.
func restoreProtected(ws string, globs []string, base, now map[string]protectedFile) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, p := range diffHashes(base, now) {
		if err := protectable(root, globs, p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := root.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if f, ok := base[p]; ok {
			if f.data == nil && strings.HasPrefix(f.hash, "not a file") {
				errs = append(errs, fmt.Errorf("%s was not a file when the run began, and is not put back", p))
				continue
			}
			if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := root.WriteFile(p, f.data, 0o644); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// protectable refuses a path restoreProtected may not touch: one outside
// the workspace, one no protect glob matches, or one under a link.
func protectable(root *os.Root, globs []string, p string) error {
	if !filepath.IsLocal(p) || filepath.ToSlash(filepath.Clean(p)) != p {
		return fmt.Errorf("%s is not a path inside the workspace: refused", p)
	}
	if !slices.ContainsFunc(globs, func(g string) bool { ok, _ := doublestar.Match(g, p); return ok }) {
		return fmt.Errorf("%s is matched by no protect glob of the contract: refused", p)
	}
	for dir := filepath.Dir(p); dir != "."; dir = filepath.Dir(dir) {
		fi, err := root.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is under %s, which is not a directory (a link, or a file): refused", p, dir)
		}
	}
	return nil
}

// diffHashes lists the paths whose hash changed, appeared or went.
func diffHashes(a, b map[string]protectedFile) []string {
	var out []string
	for p, h := range a {
		if g, ok := b[p]; !ok || g.hash != h.hash {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
