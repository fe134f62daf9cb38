package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Records are the trace's records of one effect, in batches, committed
// with the checkpoint of the state that folded the effect in.
type Records [][]trace.Record

// Executors carry out one run's effects: calling the model, running tool
// calls through the router, running a gate attempt, reading an operator's
// decision, sleeping, and committing each step's records with the run's
// checkpoint. A driver takes the next effect from the run's state
// (loop.State.Next), calls its executor, folds the result in
// (loop.State.Apply) and commits (Commit): the in-process driver of Run
// and Resume is one such driver, a workflow engine's, whose activities are
// these methods, another; none copies what they do. An Executors serves
// one run, from one goroutine.
type Executors struct{ d *driver }

// EndedError is what Reopen and Resume fail with for a run that has
// ended: its outcome, as its last checkpoint keeps it. It wraps
// ErrNotResumable.
type EndedError struct{ Outcome Outcome }

func (e *EndedError) Error() string {
	return fmt.Sprintf("%v: run %s has ended (%s: %s)", ErrNotResumable, e.Outcome.Run, e.Outcome.Kind, e.Outcome.Reason)
}

func (e *EndedError) Unwrap() error { return ErrNotResumable }

// Open prepares contract c's run for a driver. It refuses, before the
// first model call, what cannot run: a bad contract, a gate the policy
// does not allow outright, a protect glob that matches nothing. When the
// trace store is durable (trace.Durable: the SQLite store of
// trace/sqlite is), the run is too: Open takes its lease, the tool calls
// that may change the workspace are journalled as running before they
// run, and every commit writes a checkpoint with the step's records in
// one transaction.
func Open(ctx context.Context, c Contract, o Options) (*Executors, error) {
	return open(ctx, c, o, nil)
}

// Reopen prepares the durable run runID of the store in o.Tool.Store to
// go on from its last checkpoint (see Resume). A run that has ended is
// refused with an *EndedError.
func Reopen(ctx context.Context, runID string, o Options) (*Executors, error) {
	store, ok := o.Tool.Store.(trace.Durable)
	if !ok || store == nil {
		return nil, fmt.Errorf("agent: resuming run %s needs a durable store (the SQLite trace it was recorded in)", runID)
	}
	rp, err := resumePointOf(ctx, store, runID)
	if err != nil {
		return nil, err
	}
	x, err := open(ctx, rp.state.Contract, o, rp)
	if err != nil {
		// Whatever refuses the resumption leaves the run to the next.
		store.ReleaseLease(context.WithoutCancel(ctx), rp.lease)
		return nil, err
	}
	return x, nil
}

// resumePointOf reads, under the run's lease, what a resumption goes on
// from.
func resumePointOf(ctx context.Context, store trace.Durable, runID string) (*resumePoint, error) {
	cp, err := lastCheckpoint(ctx, store, runID)
	if err != nil {
		return nil, err
	}
	if cp.Format > CheckpointFormat {
		return nil, &FormatError{Run: runID, Format: cp.Format}
	}
	lease, err := store.AcquireLease(ctx, runID, leaseTTL)
	if err != nil {
		return nil, err
	}
	// The lease may have changed hands since the read: the checkpoint
	// read under it is the one to go on from.
	if cp, err = store.LastCheckpoint(ctx, runID); err != nil {
		store.ReleaseLease(ctx, lease)
		return nil, err
	}
	blobs, err := store.Blobs(ctx, runID)
	if err != nil {
		store.ReleaseLease(ctx, lease)
		return nil, err
	}
	s, base, baseBlobs, snap, err := decode(cp, blobs)
	if err != nil {
		store.ReleaseLease(ctx, lease)
		return nil, err
	}
	for p := range base {
		if !slices.ContainsFunc(s.Contract.Protect, func(g string) bool { ok, _ := doublestar.Match(g, p); return ok }) {
			store.ReleaseLease(ctx, lease)
			return nil, fmt.Errorf("agent: run %s's checkpoint %d keeps the protected file %q, which no protect glob of its contract matches: the checkpoint was not written by rein, refused", runID, cp.Seq, p)
		}
	}
	if s.Done != nil && !commitPending(s) {
		store.ReleaseLease(ctx, lease)
		out := *s.Done
		out.Run, out.Active, out.Elapsed = runID, s.Active, time.Since(s.StartedAt)
		return nil, &EndedError{Outcome: out}
	}
	var carried struct {
		Router *tool.Carried `json:"router"`
	}
	json.Unmarshal([]byte(cp.State), &carried) // decode read it whole
	return &resumePoint{state: s, baseline: base, baselineBlobs: baseBlobs, snapshot: snap, lease: lease, seq: cp.Seq, blobs: blobs, carried: carried.Router}, nil
}

// commitPending says whether s is a run that ended succeeded with
// Contract.Commit and whose commit was not kept (its driver was killed
// between the gate that passed and the last checkpoint): resumed, it
// makes the commit, or takes the one it made already (madeCommit), and
// ends.
func commitPending(s *loop.State) bool {
	return s.Done != nil && commits(s.Contract, s.Done.Kind) && s.Done.Commit == nil
}

func open(ctx context.Context, c Contract, o Options, rp *resumePoint) (*Executors, error) {
	c, err := c.WithDefaults()
	if err != nil {
		return nil, err
	}
	if o.Provider == nil {
		return nil, errors.New("agent: no provider")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	p := o.Tool.Policy
	if p == nil {
		return nil, errors.New("agent: no policy")
	}
	if p.Workspace != c.Workspace {
		return nil, fmt.Errorf("agent: the policy is the workspace %s's, the contract's is %s", p.Workspace, c.Workspace)
	}
	if c.Verify != nil {
		line, err := shell.Parse(c.Verify.Line)
		if err != nil {
			return nil, fmt.Errorf("agent: contract: verify %q: %w", c.Verify.Line, err)
		}
		if v := p.Check(line); v.Decision != policy.Allow {
			return nil, fmt.Errorf("agent: contract: verify %q is not allowed outright by the policy (%s: %s); a gate must be, or the run could not check itself", c.Verify.Line, v.Decision, policy.Printable(v.Reason))
		}
	}
	var answerSchema *jsonschema.Resolved
	if len(c.OutputSchema) > 0 {
		if answerSchema, err = CompileSchema(c.OutputSchema); err != nil {
			return nil, fmt.Errorf("agent: contract: %w", err)
		}
	}
	var baseline map[string]protectedFile
	if rp != nil {
		baseline = rp.baseline
	} else if baseline, err = hashProtected(c.Workspace, c.Protect, true); err != nil {
		return nil, err
	}
	if c.PlanGate && o.Responder == nil {
		return nil, errors.New("agent: contract: a plan gate needs someone to approve the plan: the run has no responder (Options.Responder; rein run --approve terminal, defer or all)")
	}
	d := &driver{c: c, baseline: baseline, specs: map[string]*tool.Spec{}, calls: map[string]ToolCall{}, deferred: map[string]*deferral{},
		blobs: map[string]bool{}, newBlobs: map[string]string{}, answerSchema: answerSchema, planDecided: map[string]string{},
		base: o.Tool, tree: o.tree, kids: newKids(c.Limits())}
	if d.tree == nil {
		if c.Child != nil {
			return nil, fmt.Errorf("agent: the run is a child of run %s, which drives it: resume the tree's root, %s", c.Child.Parent, c.Child.Root)
		}
		d.tree = &tree{limits: c.Limits(), ids: map[string]bool{}}
	}
	reg := o.Registry
	if reg == nil {
		if reg, err = d.agentRegistry(o.Tool.WebSearchURL != ""); err != nil {
			return nil, err
		}
		if o.Tool.Surface == "" {
			o.Tool.Surface = SurfaceAgent
		}
	}
	if o.Tool.Surface == "" {
		o.Tool.Surface = tool.SurfaceCoding
	}
	if o.Tool.Source == "" {
		o.Tool.Source = "agent"
	}
	if c.PlanGate {
		o.Tool.Hold = d.hold
	}
	d.o = o
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
			return nil, errors.New("agent: a resumed run needs its durable store")
		}
		o.Tool.Resume, o.Tool.Carried = rp.lease.RunID, rp.carried
		d.lease, d.seq, d.snapshot, d.baselineBlobs, d.resumedBlobs = rp.lease, rp.seq, rp.snapshot, rp.baselineBlobs, rp.blobs
		for a := range rp.blobs {
			d.blobs[a] = true
		}
		if d.recorded, err = lastRequest(ctx, d.durable, rp.lease.RunID); err != nil {
			return nil, err
		}
	}
	if o.Tool.Approver != nil {
		// Every ask and its answer are events too.
		o.Tool.Approver = observedApprover{inner: o.Tool.Approver, d: d}
	}
	router, err := tool.NewRouter(reg, o.Tool)
	if err != nil {
		return nil, err
	}
	x := &Executors{d: d}
	d.router = router
	d.gateCaches = tool.NewGateCaches(router.RunID(), c.Workspace)
	if d.durable != nil && rp == nil {
		if d.lease, err = d.durable.AcquireLease(ctx, router.RunID(), leaseTTL); err != nil {
			router.Close("refused")
			return nil, err
		}
	}
	if c.PlanGate && !slices.ContainsFunc(router.Specs(), func(s *tool.Spec) bool { return s.Name == PlanTool }) {
		router.Close("refused")
		x.releaseLease(ctx)
		return nil, fmt.Errorf("agent: contract: a plan gate needs the %s tool on the run's surface %q (the agent's own surface has it)", PlanTool, o.Tool.Surface)
	}
	for _, s := range router.Specs() {
		d.specs[s.Name] = s
		schema, err := json.Marshal(s.Schema)
		if err != nil {
			router.Close("refused")
			x.releaseLease(ctx)
			return nil, fmt.Errorf("agent: tool %s's schema: %w", s.Name, err)
		}
		d.tools = append(d.tools, ToolDef{Name: s.Name, Description: s.Description, Schema: schema})
	}
	// The boundary section says what the sandbox's preflight found, not
	// what the configuration asks for.
	rung, network, err := router.Sandbox(ctx)
	d.rung, d.network, d.sandboxErr = string(rung), string(network), err
	d.system = d.systemBlock()
	if rp == nil {
		var gs *loop.GitStart
		if c.Commit {
			if gs, err = gitStart(ctx, c.Workspace); err != nil {
				router.Close("refused")
				x.releaseLease(ctx)
				return nil, err
			}
		}
		d.state = loop.New(loop.Start{Run: router.RunID(), Contract: c, ReadOnly: d.readOnlyTools(), StartedAt: time.Now(), Overhead: d.overhead(), GitStart: gs, History: o.history}, o.Now())
	} else {
		d.state = rp.state
		d.resumedFrom = rp.seq
	}
	if o.tree == nil {
		// The root: the children its state counts are started.
		d.tree.started = d.state.Children.Runs
	}
	return x, nil
}

// State is the run's state: the driver reads its next effect there and
// folds each result in.
func (x *Executors) State() *State { return x.d.state }

// RunID is the run's id.
func (x *Executors) RunID() string { return x.d.router.RunID() }

// Now is the run's clock (Options.Now).
func (x *Executors) Now() time.Time { return x.d.o.Now() }

// Bound is ctx bounded by what is left of the run's wall-clock budget, and
// ended when a commit fails (another driver took the run over, the store
// is down) or a cancel is asked (rein run cancel, recorded in the trace);
// while it lives, a durable run's lease is renewed. done ends it.
func (x *Executors) Bound(ctx context.Context) (context.Context, func()) {
	d := x.d
	d.segStart, d.activeBase = time.Now(), d.state.Active
	ctx, stop := context.WithCancelCause(ctx)
	d.stop = stop
	// The wall clock bounds every effect too: a model that streams
	// forever, a command that sleeps, a gate that hangs.
	ctx, cancel := context.WithTimeoutCause(ctx, max(d.c.Budget.WallClock-d.state.Active, 0), errWallClock)
	beat, watch := func() {}, func() {}
	if d.durable != nil {
		beat = d.heartbeat(ctx)
		// rein run cancel, from another process: taken within cancelPoll.
		watch = d.watchCancel(ctx, stop)
	}
	return ctx, func() { watch(); beat(); cancel(); stop(nil) }
}

// Begin records the run's start, or settles its resumption: a call that
// was running when the driver before died is made again when it is
// read-only, and otherwise told to the model as interrupted with the
// workspace's change since it started, or left to an operator
// (loop.Resumed).
func (x *Executors) Begin(ctx context.Context) {
	d := x.d
	if d.resumedFrom == 0 {
		d.emit(Event{Kind: EventStarted})
		d.commit(ctx)
		return
	}
	s := d.state
	d.emit(Event{Kind: EventResumed, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("from checkpoint %d", d.resumedFrom)})
	d.resumed(ctx)
}

// Halt says what stops the run from outside its loop: a commit that
// failed ends the driver's part with its outcome (stop); a context ended
// (the wall clock, a cancel) is an input that ends the run.
func (x *Executors) Halt(ctx context.Context) (in loop.Input, stop *Outcome) {
	d, s := x.d, x.d.state
	if err := d.failure(); err != nil {
		out := Outcome{Kind: Cancelled, Reason: "the run was stopped: " + err.Error(), Steps: s.Steps, Tokens: s.Tokens, Cost: d.c.Prices.Cost(s.Tokens), Gate: s.LastGate}
		return nil, &out
	}
	if ctx.Err() != nil && s.Done == nil {
		cause := context.Cause(ctx)
		if isCancelAsked(cause) {
			return loop.Stopped{Reason: "the run was " + cause.Error()}, nil
		}
		return loop.Stopped{OutOfTime: errors.Is(cause, errWallClock), Reason: "the run was cancelled: " + cause.Error()}, nil
	}
	// An operator's fold is taken before the next model step.
	return d.foldAsked(ctx), nil
}

// Model calls the model with the run's transcript: its response or its
// failure as the loop's input, and the call's record. A call cut short by
// ctx is no input (nil): the next Halt says why.
func (x *Executors) Model(ctx context.Context, e CallModel) (loop.Input, Records) {
	d, s := x.d, x.d.state
	if s.SetAside > d.setAside {
		d.emit(Event{Kind: EventCompacted, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("%d observations set aside to fit the window", s.SetAside-d.setAside)})
		d.setAside = s.SetAside
	}
	req := Request{System: d.system, SystemTail: systemTail(s), Messages: s.Transcript, Tools: d.tools, MaxTokens: d.c.ResponseMaxTokens}
	d.at(fmt.Sprintf("model-before %d.%d", e.Key.Step, e.Key.Attempt))
	start := time.Now()
	resp, err := d.o.Provider.Stream(ctx, req)
	if err != nil && ctx.Err() != nil {
		return nil, nil
	}
	d.modelErr = err
	took := time.Since(start)
	in := ModelInput(resp, err)
	if r, ok := in.(loop.ModelReplied); ok && d.answerSchema != nil && len(r.Response.ToolCalls) == 0 {
		r.Answer = CheckAnswer(d.answerSchema, r.Response.Text)
		in = r
	}
	d.clockModel(e.Key.Step, took, resp)
	recs := Records{d.callRecord(e.Key.Step, e.Key.Attempt, req, resp, err, took)}
	if err == nil && (len(resp.ToolCalls) == 0 || resp.Finish == FinishLength) {
		// A step with no call to run ends with its response.
		recs = append(recs, d.stepTime())
	}
	return in, recs
}

// Tools routes the effect's calls, in order (a group of read-only calls
// at once): their results as the loop's input, with a deferred ask in
// its place, and what the router recorded of them. In a durable run a
// call that may change the workspace is journalled first (loop.Started,
// committed with a snapshot of the workspace). A journal that cannot be
// committed is no input (nil): the next Halt says why.
func (x *Executors) Tools(ctx context.Context, e RunTools) (loop.Input, Records) {
	d, s := x.d, x.d.state
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
			return nil, nil
		}
		d.at("tool-started " + first)
	}
	if d.clock.step != s.Steps {
		// A step resumed in this process: its part here.
		d.clock = stepClock{step: s.Steps, start: time.Now()}
	}
	ran := time.Now()
	results := d.route(ctx, group)
	d.clock.tools += time.Since(ran)
	d.at("tool-ran " + first)
	var batches Records
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
			batches = append(batches, []trace.Record{trace.ApprovalRequest{RunID: d.router.RunID(), Request: df.waiting.Request, Kind: requestKind(df.waiting.Kind),
				CallID: c.ID, Tool: c.Name, Args: c.Args, Shown: df.waiting.Shown, At: time.Now()}})
			break
		}
		in.Results = append(in.Results, results[i])
		batches = append(batches, d.held.take(c.ID)...)
	}
	d.snapshot = ""
	if in.Deferred == nil {
		in.Stopped = d.router.Stopped()
		if len(s.Results)+len(in.Results) >= len(s.Pending) {
			// The step's last call: the step ends.
			batches = append(batches, d.stepTime())
		}
	}
	return in, batches
}

// Gate runs one gate attempt (the baseline, or a claim's) through the
// router: its result as the loop's input, and its records. An attempt
// that cannot start under the run's lease is no input (nil).
func (x *Executors) Gate(ctx context.Context, e RunGate) (loop.Input, Records) {
	d := x.d
	d.at("gate-before " + gateName(e))
	if d.holdLease(ctx) != nil {
		return nil, nil
	}
	k := e.Key.String()
	a := d.gate(withCall(ctx, k), e.Baseline)
	batches := Records(d.held.take(k))
	batches = append(batches, d.gateRecord(d.state.Steps, a))
	return loop.GateRan{Attempt: a, Baseline: e.Baseline}, batches
}

// requestKind is the trace's kind of the request a run waits on.
func requestKind(k Kind) string {
	switch k {
	case AwaitingAnswer:
		return string(AskQuestion)
	case AwaitingPlan:
		return string(AskPlan)
	case AwaitingRecovery:
		return "recovery"
	}
	return "approval"
}

func gateName(e RunGate) string {
	if e.Baseline {
		return "gate baseline"
	}
	return "gate " + strconv.Itoa(e.Key.Index)
}

// Sleep waits until the effect's time; a wait cut short is the input that
// ends the run cancelled.
func (x *Executors) Sleep(ctx context.Context, e Wait) loop.Input {
	if err := x.d.o.Sleep(ctx, e.Until.Sub(x.d.o.Now())); err != nil {
		return loop.Stopped{Reason: "the run was cancelled while waiting to retry"}
	}
	return nil
}

// Commit records an effect's records; in a durable run with the
// checkpoint of the state, the budget spent and the time active, in one
// transaction, under the run's lease. A commit that fails stops the run
// (the next Halt): nothing more happens unrecorded.
func (x *Executors) Commit(ctx context.Context, e Effect, recs Records) error {
	d, s := x.d, x.d.state
	err := d.commit(ctx, recs...)
	switch e := e.(type) {
	case CallModel:
		d.at(fmt.Sprintf("model-after %d.%d", e.Key.Step, e.Key.Attempt))
		ev := Event{Kind: EventProviderCall, Step: s.Steps, Tokens: s.Tokens, Status: "ok"}
		if d.modelErr != nil {
			ev.Status, ev.Reason = "failed", d.modelErr.Error()
		}
		d.emit(ev)
		if d.modelErr != nil && s.Done == nil {
			d.emit(Event{Kind: EventRetry, Step: s.Steps, Tokens: s.Tokens, Reason: fmt.Sprintf("attempt %d failed (%v); the next at %s", s.Attempt, d.modelErr, s.RetryAt.Format(time.RFC3339))})
		}
		d.modelErr = nil
	case RunTools:
		if s.Waiting == nil {
			d.at("tool-after " + e.Calls[0].ID)
		}
	case RunGate:
		d.at("gate-after " + gateName(e))
	case Summarize:
		d.at(fmt.Sprintf("summary-after %d.%d.%d", e.Key.Step, e.Key.Index, e.Key.Attempt))
	}
	return err
}

// Finish closes the driver's part of the run with the outcome the loop
// ended on (or the one a Halt stopped it with): the last checkpoint, the
// router closed, the lease released, the protected files put back if a
// program the policy could not see into changed them, the finished event.
// The error is the commit that failed, if one did.
func (x *Executors) Finish(ctx context.Context, out Outcome) (Outcome, error) {
	d, c, router, baseline := x.d, x.d.c, x.d.router, x.d.baseline
	out.Run = router.RunID()
	out.Rung = d.rung
	out.Active, out.Elapsed = d.state.Active, time.Since(d.state.StartedAt)
	if d.state.Done != nil {
		out.Config = d.configChanged(ctx)
	}
	if commits(c, out.Kind) && d.state.Done != nil && d.failure() == nil {
		// Nothing of the run goes on beside the commit rein makes on the
		// host: a background line could swap a file under it.
		router.KillHandles()
		// The run's changes on a branch of its own, kept in its outcome
		// and in the trace.
		out.Commit = d.commitRun(ctx)
		d.at("commit-after")
		d.state.Done.Commit = out.Commit
		if cm := out.Commit; cm.Hash != "" && d.o.Tool.Store != nil {
			d.o.Tool.Store.AppendAll(context.WithoutCancel(ctx), trace.Edit{RunID: router.RunID(), Path: "commit " + cm.Hash + " on " + cm.Branch,
				Diff: strings.Join(cm.Paths, "\n"), At: time.Now()})
		}
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

// Abandon gives the run up without ending it, as a driver that died
// would have: its background handles killed and its lease released, so
// that another driver (or this process again, with Reopen) takes the run
// from its last checkpoint; anything this driver commits after is fenced
// out. A workflow engine's driver whose session with the engine failed,
// its process alive, calls it.
func (x *Executors) Abandon(ctx context.Context) {
	x.d.router.KillHandles()
	x.releaseLease(ctx)
}

// releaseLease gives the run's lease up, if this driver holds one.
func (x *Executors) releaseLease(ctx context.Context) {
	if x.d.durable != nil && x.d.lease.RunID != "" {
		x.d.durable.ReleaseLease(context.WithoutCancel(ctx), x.d.lease)
	}
}

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
	// resumedFrom is the checkpoint a resumed run goes on from; modelErr
	// the failure of the model call being committed.
	resumedFrom int64
	modelErr    error
	// answerSchema is the contract's output schema, compiled.
	answerSchema *jsonschema.Resolved
	// clock is where the step in progress spent its time.
	clock stepClock
	// planOK says a plan was approved by a call of the response in
	// progress; planDecided is what was decided of each propose_plan call
	// by its key.
	planOK      atomic.Bool
	planDecided map[string]string
	// askMu puts one ask to a person at a time.
	askMu sync.Mutex
	// base is the router's configuration as the run was given it, which
	// a child's starts from; tree what the run's tree shares, kids what
	// it keeps of its own children in flight.
	base tool.Config
	tree *tree
	kids *kids
}

func (d *driver) at(name string) {
	if d.o.Boundary != nil && d.durable != nil {
		d.o.Boundary(name)
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

// ModelInput is a provider's answer as the loop takes it: the response,
// or the failure's class, the server's Retry-After and its message.
func ModelInput(resp *Response, err error) loop.Input {
	if err != nil {
		class, after := classOf(err)
		return loop.ModelFailed{Class: class, Message: err.Error(), RetryAfter: after}
	}
	return loop.ModelReplied{Response: *resp}
}

// overhead is what every request carries besides the transcript and
// the plan and the todo list (which the loop counts), in characters: the
// system block and the tools' definitions.
func (d *driver) overhead() int {
	n := len(d.system)
	for _, t := range d.tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return n
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

// route runs the calls through the router in order; calls of read-only
// tools next to each other run at once, their results kept in order.
func (d *driver) route(ctx context.Context, calls []ToolCall) []ToolResult {
	out := make([]ToolResult, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		together := d.readOnly
		if calls[i].Name == loop.SpawnTool {
			// Child runs go at once, as their limits let them.
			together = func(name string) bool { return name == loop.SpawnTool }
		}
		if together(calls[i].Name) {
			for j < len(calls) && together(calls[j].Name) {
				j++
			}
		}
		if calls[i].Name == loop.SpawnTool {
			d.kids.begin(d.state.Left(), j-i)
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k] = d.call(ctx, calls[k], k)
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

func (d *driver) call(ctx context.Context, c ToolCall, index int) ToolResult {
	var slot *spawnSlot
	if c.Name == loop.SpawnTool {
		slot = &spawnSlot{index: index}
		ctx = context.WithValue(ctx, spawnKey{}, slot)
	}
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
	d.mu.Lock()
	plan := d.planDecided[c.ID]
	delete(d.planDecided, c.ID)
	d.mu.Unlock()
	r := ToolResult{Observation: env.Text(), Changed: changed, Plan: plan}
	if slot != nil {
		r.Spent, r.Changed = slot.spent, changed && slot.wrote
	}
	return r
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

// resumePoint is what a resumed run starts from.
type resumePoint struct {
	state         *State
	baseline      map[string]protectedFile
	baselineBlobs map[string]storedProtection
	snapshot      string
	lease         trace.Lease
	seq           int64
	blobs         map[string]string
	carried       *tool.Carried
}

// resumed settles, on resumption, the call that was running when the
// driver died (loop.Resumed): the driver gives the loop the workspace's
// change since the call started, and a request id and its text in case
// the contract leaves the call to an operator.
func (d *driver) resumed(ctx context.Context) {
	s := d.state
	in := loop.Resumed{Run: d.router.RunID(), ReadOnly: d.readOnlyTools(), Stopped: d.router.Stopped(), Overhead: d.overhead()}
	settling := len(s.Running) > 0 && s.Waiting == nil && len(s.Results) < len(s.Pending)
	var next ToolCall
	if settling {
		next = s.Pending[len(s.Results)]
		settling = !d.readOnly(next.Name)
	}
	if settling {
		in.Change = "the workspace's state when it started was not kept"
		if d.snapshot != "" {
			var before snapshot
			if data, ok := d.resumedBlobs[d.snapshot]; ok && json.Unmarshal([]byte(data), &before) == nil {
				in.Change = changeSince(d.c.Workspace, before)
			}
		}
		in.Request = newRequestID()
		in.Shown = fmt.Sprintf("%s %s\n  was running when rein's process died; its result is unknown.\n  %s\n  --yes makes the call again; --no tells the model it was interrupted.\n",
			next.Name, policy.Printable(next.Args), strings.ReplaceAll(in.Change, "\n", "\n  "))
	}
	s.Apply(in, d.o.Now())
	if !settling {
		return
	}
	d.snapshot = ""
	var recs []trace.Record
	if w := s.Waiting; w != nil && w.Kind == AwaitingRecovery {
		recs = append(recs, trace.ApprovalRequest{RunID: d.router.RunID(), Request: w.Request, Kind: "recovery", CallID: next.ID,
			Tool: next.Name, Args: next.Args, Shown: w.Shown, At: time.Now()})
	}
	d.commit(ctx, recs)
}
