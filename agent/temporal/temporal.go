// Package temporal owns rein's Temporal driver: an agent run as a
// workflow on a Temporal server, its effects carried out by activities on
// workers that may die and be replaced, its trace in the store every
// worker writes (a PostgreSQL one, trace/postgres, for a fleet).
//
// The workflow asks the loop's effects of the run one at a time and
// carries out each on a worker: the loop's step function
// (loop.State.Next and Apply) runs there, beside the run's executors
// (agent.Executors, the same ones the in-process driver calls), so there
// is no second copy of the loop. Any worker of the run's queue opens the
// run and holds it (its lease and its executors) between its activities,
// which the workflow asks of that worker on a queue only it serves; a
// worker that dies is found by its heartbeat or by an activity it does
// not take, and the workflow opens the run again on any worker: that
// worker resumes it from its last checkpoint exactly as agent.Resume
// does after kill -9 (a read-only call made again, a call that may have
// changed the workspace reported to the model as interrupted or left to
// an operator). Temporal never retries an effect itself: every activity
// has one attempt, and what follows a failure is rein's journal's to
// decide.
//
// A sleep (a retry's backoff) is a timer. A run that waits for an
// operator's decision gives its worker up (its part ends, as the
// in-process driver's process does), and the workflow waits, costing no
// worker, for the decision's Update (UpdateDecided), whose validator
// takes only a decision signed with the trace key; it then opens the run
// again, and the run reads the decision recorded in the trace. A long
// run continues as new, held on by its worker.
//
// It imports agent, agent/loop, trace and the Temporal SDK (client,
// worker, workflow, activity, temporal, converter); the Temporal server,
// which the tests start, is in a module of its own
// (agent/temporal/servertest), so that rein's module never depends on
// it.
package temporal

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/trace"
)

// The names the workflow, its activities and its Update are registered
// under: a worker of any build that registers them serves any run.
const (
	WorkflowName  = "rein.run"
	OpenName      = "rein.open"
	StepName      = "rein.step"
	UpdateDecided = "rein.decided"
	// QueryNext answers the run's Next as the workflow last heard it.
	QueryNext = "rein.next"
	// QueryEvents answers the run's events (Events) from an index on.
	QueryEvents = "rein.events"
)

// keptEvents is how many of a run's latest events its workflow keeps for
// QueryEvents, and eventsPerAnswer how many one answer holds: an answer
// stays under OffloadOver (each event's text is bounded: eventText), so
// that following a run writes nothing to the trace's blob store.
const (
	keptEvents      = 4096
	eventsPerAnswer = 6
	eventText       = 256
)

// Start is a run as its workflow is started: a new run of Contract, or
// (Contract nil) the durable run Run of the trace, resumed.
type Start struct {
	// Run is the run's id, which the workflow's id is made from.
	Run      string          `json:"run"`
	Contract *agent.Contract `json:"contract,omitempty"`
	// Queue is the task queue of the workers that may run the run's
	// effects: the hosts that can run rein's sandbox over the run's
	// workspace.
	Queue string `json:"queue"`
	// Heartbeat is how long a worker may be silent before it, and the
	// run's part on it, is taken for dead (0: 10 s).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// MaxEvents is the history length past which the workflow continues
	// as new, between two effects (0: when the server suggests it).
	MaxEvents int `json:"max_events,omitempty"`

	// What a workflow that continued as new carries on: the run's latest
	// events (carriedEvents of them, for a follower that has not yet
	// heard them) and the count of those before, and the task queue of
	// the worker that still holds the run (which the new execution asks
	// first, so that the run goes on there without being opened again).
	Events  int           `json:"events,omitempty"`
	Carried []agent.Event `json:"carried,omitempty"`
	Worker  string        `json:"worker,omitempty"`
}

// carriedEvents is how many of its latest events a workflow that
// continues as new carries on.
const carriedEvents = 256

// Events are a run's events from From on, as its workflow heard them
// from its workers (the latest keptEvents of them).
type Events struct {
	From   int           `json:"from"`
	Events []agent.Event `json:"events"`
}

// Next is what the loop asks next of a run, as a worker saw it after
// its last effect: the effect's kind and key, the time a sleep ends, the
// request a decision is awaited for (Parked: none is recorded yet, and
// the worker gave the run up); and the outcome, once the run has ended
// or its part on the worker has.
type Next struct {
	Kind    loop.EffectKind `json:"kind"`
	Key     loop.Key        `json:"key"`
	Until   time.Time       `json:"until,omitzero"`
	Request string          `json:"request,omitempty"`
	Parked  bool            `json:"parked,omitempty"`
	Outcome *agent.Outcome  `json:"outcome,omitempty"`
	// Events are the run's events the worker saw since its last Next.
	Events []agent.Event `json:"events,omitempty"`
	// Worker is the task queue of the worker that holds the run, its
	// own: the run's effects are asked of it there.
	Worker string `json:"worker,omitempty"`
}

// WorkflowID is the id of run's workflow.
func WorkflowID(run string) string { return "rein-run-" + run }

// NewRunID makes a new run's id, in the form the router makes them.
func NewRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// workerFull is the type of the error of an open on a worker that holds
// Activities.Max runs.
const workerFull = "rein.worker_full"

// errContinue ends a drive whose run goes on in the workflow's next
// execution (continue-as-new).
var errContinue = errors.New("the workflow continues as new")

// Workflow drives a run: it opens the run on a worker of its queue, asks
// that worker to carry out each effect the loop names, and
// returns the run's outcome. Past its history's bound it continues as
// new, the run held on by the same worker. It is deterministic: it reads
// the clock and waits only through workflow.
func Workflow(ctx workflow.Context, st Start) (agent.Outcome, error) {
	hb := st.Heartbeat
	if hb <= 0 {
		hb = 10 * time.Second
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: st.Queue,
		// A model call or a gate may take long; a dead worker is found
		// by the heartbeat, not by this.
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    hb,
		// One attempt: a repeat is rein's journal's to decide, never
		// Temporal's.
		RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
	// A run is driven by its own workflow only: a start copied, sealed,
	// from another run's history into a workflow of another id is
	// refused (the server lets one workflow of an id run at a time).
	if id := workflow.GetInfo(ctx).WorkflowExecution.ID; id != WorkflowID(st.Run) {
		return agent.Outcome{}, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("workflow %s was started for run %s, whose workflow is %s: refused", id, st.Run, WorkflowID(st.Run)), "rein.not_its_run", nil)
	}
	w := &flow{st: st, decided: map[string]bool{}, base: st.Events, events: st.Carried}
	w.st.Carried = nil
	if err := workflow.SetQueryHandler(ctx, QueryNext, func() (Next, error) { return w.last, nil }); err != nil {
		return agent.Outcome{}, err
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(from int) (Events, error) {
		from = max(from, w.base)
		if from > w.base+len(w.events) {
			from = w.base + len(w.events)
		}
		es := w.events[from-w.base:]
		return Events{From: from, Events: es[:min(len(es), eventsPerAnswer)]}, nil
	}); err != nil {
		return agent.Outcome{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecided,
		func(ctx workflow.Context, d Decision) error {
			if w.decided[d.Request] {
				// A decision sent again wakes nothing.
				return nil
			}
			w.decided[d.Request] = true
			w.decisions++
			if w.last.Parked {
				// It wakes the run: whoever follows it waits on.
				w.last = Next{}
			}
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, d Decision) error {
			return d.verify(st.Run)
		}},
	); err != nil {
		return agent.Outcome{}, err
	}
	logger := workflow.GetLogger(ctx)
	failures := 0
	for {
		// A decision that comes while the run parks wakes it too.
		seen := w.decisions
		next, err := w.drive(ctx, hb)
		var refused *sdktemporal.ApplicationError
		switch {
		case errors.As(err, &refused) && refused.Type() == workerFull:
			// The worker that took the open holds all it may: the run
			// waits for a place, on any worker, and no failure is
			// counted.
			if err := workflow.Sleep(ctx, 2*time.Second); err != nil {
				return agent.Outcome{}, err
			}
			continue
		case errors.Is(err, errContinue):
			// The history nears its bound: the run goes on in a new
			// execution, on the worker that holds it.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return agent.Outcome{}, err
			}
			next := w.st
			tail := w.events[max(len(w.events)-carriedEvents, 0):]
			next.Contract, next.Events, next.Carried, next.Worker = nil, w.base+len(w.events)-len(tail), tail, w.worker
			return agent.Outcome{}, workflow.NewContinueAsNewError(ctx, WorkflowName, next)
		case errors.As(err, &refused) && refused.NonRetryable():
			// The run cannot be opened at all (its options, its
			// checkpoint): no other worker would do better.
			return agent.Outcome{}, err
		case err != nil:
			// The worker died, or its part of the run failed: the run is
			// opened again, on any worker, from its last checkpoint.
			failures++
			logger.Warn("the run's worker failed; opening it again", "run", st.Run, "error", err, "failures", failures)
			if failures > 20 {
				return agent.Outcome{}, fmt.Errorf("run %s: its workers failed %d times, the last: %w", st.Run, failures, err)
			}
			// At once the first time (a worker died: another takes the
			// run now), then backing off, up to 30 s.
			if failures > 1 {
				if err := workflow.Sleep(ctx, min(time.Duration(failures-1)*time.Second, 30*time.Second)); err != nil {
					return agent.Outcome{}, err
				}
			}
		case next.Parked:
			// No worker holds the run while it waits. Any signed
			// decision wakes it (a cancel's among them): the run is
			// opened again, and waits again if its request is still
			// unanswered.
			if err := workflow.Await(ctx, func() bool { return w.decided[next.Request] || w.decisions > seen }); err != nil {
				return agent.Outcome{}, err
			}
		default:
			return *next.Outcome, nil
		}
		// Once opened, the run is the trace's to resume; until then, it
		// is made from its contract.
		if w.opened {
			w.st.Contract = nil
		}
		w.st.Worker = ""
	}
}

// flow is a run's workflow's state.
type flow struct {
	st     Start
	opened bool
	// worker is the task queue of the worker that holds the run.
	worker    string
	last      Next
	decided   map[string]bool
	decisions int
	// events are the run's latest events, the first of them its
	// base'th.
	events []agent.Event
	base   int
}

// heard keeps n's events and clears them from n.
func (w *flow) heard(n *Next) {
	w.events = append(w.events, n.Events...)
	if drop := len(w.events) - keptEvents; drop > 0 {
		w.events = append([]agent.Event(nil), w.events[drop:]...)
		w.base += drop
	}
	n.Events = nil
}

// drive opens the run on a worker and carries out its effects there
// until the run ends, parks, the worker fails, or the history nears its
// bound (errContinue, the run still held by the worker).
//
// The run is opened on the run's queue, where any worker takes it (or
// first on the queue of the worker that held it in the execution before
// this one); the worker answers with its own queue, which only it
// serves, and each effect is asked of it there. A worker that dies is
// found by its heartbeat while it carries an effect out, and by the
// effect not taken from its queue within three heartbeats between two:
// either fails the activity, and the run is opened again.
func (w *flow) drive(ctx workflow.Context, hb time.Duration) (next Next, err error) {
	st := w.st
	defer func() {
		if err == nil {
			w.last = next
		}
	}()
	opened := false
	if st.Worker != "" {
		hctx := workflow.WithTaskQueue(ctx, st.Worker)
		hctx = workflow.WithScheduleToStartTimeout(hctx, 3*hb)
		opened = workflow.ExecuteActivity(hctx, OpenName, st).Get(hctx, &next) == nil
		if !opened {
			// That worker is gone: the run is opened on another.
			st.Worker = ""
			w.st.Worker = ""
		}
	}
	if !opened {
		if err := workflow.ExecuteActivity(ctx, OpenName, st).Get(ctx, &next); err != nil {
			return next, err
		}
	}
	w.opened = true
	w.heard(&next)
	w.worker = next.Worker
	if next.Outcome == nil && !next.Parked && next.Worker == "" {
		return next, errors.New("the worker that opened the run named no queue of its own")
	}
	ctx = workflow.WithTaskQueue(ctx, next.Worker)
	ctx = workflow.WithScheduleToStartTimeout(ctx, 3*hb)
	for next.Outcome == nil && !next.Parked {
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || st.MaxEvents > 0 && info.GetCurrentHistoryLength() >= st.MaxEvents {
			return next, errContinue
		}
		if next.Kind == loop.KindSleep {
			if d := next.Until.Sub(workflow.Now(ctx)); d > 0 {
				if err := workflow.Sleep(ctx, d); err != nil {
					return next, err
				}
			}
		}
		key := next.Key
		w.last = next
		// Each result is read into a Next of its own: a field the
		// result leaves out is not the last one's.
		var n Next
		if err := workflow.ExecuteActivity(ctx, StepName, st.Run, key).Get(ctx, &n); err != nil {
			return next, err
		}
		w.heard(&n)
		next = n
		if next.Worker == "" {
			next.Worker = w.worker
		}
	}
	if next.Outcome != nil && next.Outcome.Kind == "" {
		return next, errors.New("a worker's outcome has no kind")
	}
	return next, nil
}

// Decision is an operator's answer to a request of a run, as rein
// approve (or answer) records it in the trace, signed with the trace key:
// the workflow's Update takes no other.
type Decision struct {
	Request string `json:"request"`
	Answer  string `json:"answer"`
	Sig     string `json:"sig"`
}

// key is the trace key the workers of this process verify decisions
// with (SetKey).
var key struct {
	sync.RWMutex
	secret []byte
}

// SetKey gives the process's workers the trace key's secret, which a
// decision's signature is checked against.
func SetKey(secret []byte) {
	key.Lock()
	key.secret = append([]byte(nil), secret...)
	key.Unlock()
}

// Sign signs d for run's workflow with secret.
func (d *Decision) Sign(run string, secret []byte) {
	d.Sig = hex.EncodeToString(d.mac(run, secret))
}

// mac is the decision's HMAC: a domain no other MAC of the key begins
// with (trace.Key's begin "rein "), then the run, the request and the
// answer, each after its length, so that no field can be shifted into
// the next.
func (d Decision) mac(run string, secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("\x01rein temporal decision v1"))
	for _, f := range []string{run, d.Request, d.Answer} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// verify says why d is not a decision signed for run with the trace key.
func (d Decision) verify(run string) error {
	key.RLock()
	secret := key.secret
	key.RUnlock()
	if len(secret) == 0 {
		return errors.New("this worker has no trace key to check a decision with")
	}
	if d.Request == "" || d.Answer == "" {
		return errors.New("a decision names its request and its answer")
	}
	sig, err := hex.DecodeString(d.Sig)
	if err != nil || !hmac.Equal(sig, d.mac(run, secret)) {
		return fmt.Errorf("the decision on request %s of run %s is not signed with the trace key: refused", d.Request, run)
	}
	return nil
}

// OptionsFunc makes the options a worker drives contract c's run with:
// its provider, its policy and router configuration (the trace store
// among them, a durable one), its observer.
type OptionsFunc func(ctx context.Context, c agent.Contract) (agent.Options, error)

// Activities are a worker's activities: they hold the runs this worker
// opened.
type Activities struct {
	// Store is the trace every worker writes: the runs are resumed from
	// it.
	Store trace.Durable
	// Options makes a run's options.
	Options OptionsFunc
	// Max is the most runs the worker holds at once (0: no bound); a run
	// past it is opened on another worker.
	Max int

	// own is the task queue only this worker serves (NewWorker).
	own  string
	mu   sync.Mutex
	runs map[string]*held
	// opening counts the runs being opened.
	opening int
}

// held is a run a worker holds between its activities.
type held struct {
	x    *agent.Executors
	ctx  context.Context
	done func()
	// busy is held while an activity acts on the run: one at a time.
	busy sync.Mutex

	mu     sync.Mutex
	events []agent.Event
	// expires is when the run is given up if no activity came for it.
	expires time.Time
}

// heard is what h's run's observer is told, kept for its next Next, its
// texts cut to eventText bytes.
func (h *held) heard(e agent.Event) {
	e.Target, e.Reason, e.Status = cut(e.Target), cut(e.Reason), cut(e.Status)
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// cut is s cut to eventText bytes, on a rune's boundary.
func cut(s string) string {
	if len(s) <= eventText {
		return s
	}
	i := eventText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// drain is the events h's run's observer was told since the last drain.
func (h *held) drain() []agent.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	es := h.events
	h.events = nil
	return es
}

// Register registers the workflow and a's activities with w.
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a.Open, activity.RegisterOptions{Name: OpenName})
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: StepName})
}

// Worker is a worker of the driver: the workflow and the opening of
// runs on its queue, which every worker of the queue serves, and the
// effects of the runs it holds on a queue of its own.
type Worker struct {
	shared, own worker.Worker
}

// NewWorker is a worker of queue, its workflow and a's activities
// registered, with a queue of its own (queue, the host, the process and
// a random part) for the runs it holds.
func NewWorker(c client.Client, queue string, a *Activities, o worker.Options) *Worker {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	a.own = fmt.Sprintf("%s/%s/%d/%s", queue, host, os.Getpid(), hex.EncodeToString(b[:]))
	w := &Worker{shared: worker.New(c, queue, o), own: worker.New(c, a.own, worker.Options{
		// The runs it holds: their effects are never left waiting for
		// a place, which would be taken for its death.
		MaxConcurrentActivityExecutionSize: 1 << 16,
		DisableWorkflowWorker:              true,
	})}
	Register(w.shared, a)
	w.own.RegisterActivityWithOptions(a.Open, activity.RegisterOptions{Name: OpenName})
	w.own.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: StepName})
	return w
}

// Start starts the worker.
func (w *Worker) Start() error {
	if err := w.own.Start(); err != nil {
		return err
	}
	if err := w.shared.Start(); err != nil {
		w.own.Stop()
		return err
	}
	return nil
}

// Stop stops the worker.
func (w *Worker) Stop() {
	w.shared.Stop()
	w.own.Stop()
}

// Run runs the worker until interrupt says.
func (w *Worker) Run(interrupt <-chan any) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-interrupt
	w.Stop()
	return nil
}

// beat heartbeats the activity of ctx until it returns.
func beat(ctx context.Context) func() {
	info := activity.GetInfo(ctx)
	every := info.HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(stop) }
}

// Open opens the run on this worker: a new run of the contract (by the
// run's id, so that an Open made twice makes it once), or the run of the
// trace resumed from its last checkpoint; and says what the loop asks
// first.
func (a *Activities) Open(ctx context.Context, st Start) (Next, error) {
	defer beat(ctx)()
	if err := ofItsWorkflow(ctx, st.Run); err != nil {
		return Next{}, err
	}
	var c agent.Contract
	resume := st.Contract == nil
	if !resume {
		c = *st.Contract
		if s, err := agent.LoadState(ctx, a.Store, st.Run); err == nil {
			// Opened before, by a worker that died: resumed.
			c, resume = s.Contract, true
		}
	} else {
		s, err := agent.LoadState(ctx, a.Store, st.Run)
		if err != nil {
			return Next{}, sdktemporal.NewNonRetryableApplicationError(err.Error(), "rein.not_resumable", err)
		}
		c = s.Contract
	}
	a.mu.Lock()
	old := a.runs[st.Run]
	if old != nil && st.Worker != "" && st.Worker == a.own {
		// The workflow continued as new, and asked this worker first:
		// the run goes on as it is held.
		a.mu.Unlock()
		old.busy.Lock()
		defer old.busy.Unlock()
		n, err := a.next(old, st.Run)
		old.touch(ctx, n)
		return n, err
	}
	// A run this worker still holds from a part that failed (the
	// worker lived on) is given up first: its lease would refuse the
	// resumption.
	delete(a.runs, st.Run)
	// A place is taken before the run is opened: opens side by side
	// count each other.
	full := a.Max > 0 && len(a.runs)+a.opening >= a.Max
	if !full {
		a.opening++
	}
	a.mu.Unlock()
	if full {
		return Next{}, sdktemporal.NewApplicationError(fmt.Sprintf("this worker holds %d runs, its most", a.Max), workerFull)
	}
	defer func() {
		a.mu.Lock()
		a.opening--
		a.mu.Unlock()
	}()
	if old != nil {
		// Its effect in flight, if any, is cancelled first, and ends
		// before the run is given up.
		old.done()
		old.busy.Lock()
		old.x.Abandon(ctx)
		old.busy.Unlock()
	}
	o, err := a.Options(ctx, c)
	if err != nil {
		return Next{}, sdktemporal.NewNonRetryableApplicationError(err.Error(), "rein.options", err)
	}
	// The run's events go to its workflow too, with each Next, and from
	// there to whoever follows it.
	h := &held{}
	observe := o.Observer
	o.Observer = func(e agent.Event) {
		h.heard(e)
		if observe != nil {
			observe(e)
		}
	}
	var x *agent.Executors
	if resume {
		x, err = agent.Reopen(ctx, st.Run, o)
		var ended *agent.EndedError
		if errors.As(err, &ended) {
			out := ended.Outcome
			return Next{Kind: loop.KindEnd, Outcome: &out, Events: h.drain()}, nil
		}
	} else {
		o.Tool.ID = st.Run
		x, err = agent.Open(ctx, c, o)
	}
	if err != nil {
		return Next{}, err
	}
	h.x = x
	h.ctx, h.done = x.Bound(context.Background())
	x.Begin(h.ctx)
	h.busy.Lock()
	defer h.busy.Unlock()
	a.mu.Lock()
	if a.runs == nil {
		a.runs = map[string]*held{}
	}
	a.runs[st.Run] = h
	a.mu.Unlock()
	go a.reap(st.Run, h)
	n, err := a.next(h, st.Run)
	h.touch(ctx, n)
	return n, err
}

// ofItsWorkflow refuses an activity for run that its own workflow did
// not schedule.
func ofItsWorkflow(ctx context.Context, run string) error {
	if id := activity.GetInfo(ctx).WorkflowExecution.ID; id != WorkflowID(run) {
		return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("an activity of workflow %s for run %s, whose workflow is %s: refused", id, run, WorkflowID(run)), "rein.not_its_run", nil)
	}
	return nil
}

// touch says h's run was acted on, and for how long it is held without
// another activity: three heartbeats (a minute at least), and a sleep's
// length more when the run sleeps next.
func (h *held) touch(ctx context.Context, n Next) {
	idle := max(3*activity.GetInfo(ctx).HeartbeatTimeout, time.Minute)
	now := time.Now()
	until := now.Add(idle)
	if n.Kind == loop.KindSleep && n.Until.After(now) {
		until = n.Until.Add(idle)
	}
	h.mu.Lock()
	h.expires = until
	h.mu.Unlock()
}

// reap gives h's run up once no activity came for it within its time
// (its workflow went on elsewhere: the worker was taken for dead while
// it lived, its heartbeat late): its lease would refuse every other
// worker's open for ever.
func (a *Activities) reap(run string, h *held) {
	for {
		time.Sleep(time.Second)
		h.mu.Lock()
		expires := h.expires
		h.mu.Unlock()
		if expires.IsZero() || time.Now().Before(expires) {
			a.mu.Lock()
			gone := a.runs[run] != h
			a.mu.Unlock()
			if gone {
				return
			}
			continue
		}
		if !h.busy.TryLock() {
			continue
		}
		a.mu.Lock()
		mine := a.runs[run] == h
		if mine {
			delete(a.runs, run)
		}
		a.mu.Unlock()
		if mine {
			h.done()
			h.x.Abandon(context.Background())
		}
		h.busy.Unlock()
		return
	}
}

// next says what the loop asks next of h's run, ending the worker's part
// of it where the run is stopped from outside (a cancel, the wall clock,
// a commit that failed).
func (a *Activities) next(h *held, run string) (Next, error) {
	x := h.x
	s := x.State()
	in, stop := x.Halt(h.ctx)
	if stop != nil {
		return a.end(h, run, *stop)
	}
	if in != nil {
		s.Apply(in, x.Now())
	}
	n := describe(s.Next(x.Now()))
	n.Events, n.Worker = h.drain(), a.own
	return n, nil
}

func describe(e loop.Effect) Next {
	n := Next{Kind: e.EffectKey().Kind, Key: e.EffectKey()}
	switch e := e.(type) {
	case loop.Wait:
		n.Until = e.Until
	case loop.AwaitDecision:
		n.Request = e.Waiting.Request
	}
	return n
}

// end closes the worker's part of the run with out. A part that ends on
// a commit that failed (the store is down, another driver took the run
// over) is the activity's failure: the run is opened again.
func (a *Activities) end(h *held, run string, out agent.Outcome) (Next, error) {
	h.done()
	out, err := h.x.Finish(context.Background(), out)
	a.mu.Lock()
	if a.runs[run] == h {
		delete(a.runs, run)
	}
	a.mu.Unlock()
	if err != nil {
		return Next{}, err
	}
	return Next{Kind: loop.KindEnd, Outcome: &out, Events: h.drain()}, nil
}

// Step carries out the effect of key, when it is still what the loop
// asks (after a sleep, or a decision, the loop may ask another), folds
// its result in and commits it, and says what the loop asks next.
func (a *Activities) Step(ctx context.Context, run string, key loop.Key) (Next, error) {
	defer beat(ctx)()
	if err := ofItsWorkflow(ctx, run); err != nil {
		return Next{}, err
	}
	a.mu.Lock()
	h := a.runs[run]
	a.mu.Unlock()
	if h == nil {
		// The queue's worker is another process than the one that
		// opened the run (it died and came back), or it gave the run
		// up: the run is opened again.
		return Next{}, fmt.Errorf("this worker does not hold run %s", run)
	}
	h.busy.Lock()
	defer h.busy.Unlock()
	a.mu.Lock()
	still := a.runs[run] == h
	a.mu.Unlock()
	if !still {
		return Next{}, fmt.Errorf("this worker gave run %s up", run)
	}
	n, err := a.step(h, run, key)
	h.touch(ctx, n)
	return n, err
}

// step is Step of a run h holds.
func (a *Activities) step(h *held, run string, key loop.Key) (Next, error) {
	x := h.x
	s := x.State()
	now := x.Now()
	e := s.Next(now)
	if e.EffectKey() != key {
		n := describe(e)
		n.Events = h.drain()
		return n, nil
	}
	bounded := h.ctx
	var in loop.Input
	var recs agent.Records
	switch e := e.(type) {
	case loop.End:
		s.Apply(loop.Ended{}, now)
		return a.end(h, run, *s.Done)
	case loop.Wait:
		// The workflow slept; the loop has moved on, or asks again.
		return a.next(h, run)
	case loop.AwaitDecision:
		var parked *agent.Outcome
		if in, parked = x.Await(bounded, e); parked != nil {
			n, err := a.end(h, run, *parked)
			if err == nil && parked.Waiting != nil {
				n.Parked, n.Request = true, e.Waiting.Request
			}
			return n, err
		}
		s.Apply(in, x.Now())
		x.Commit(bounded, e, nil)
		return a.next(h, run)
	case loop.CallModel:
		in, recs = x.Model(bounded, e)
	case loop.RunTools:
		in, recs = x.Tools(bounded, e)
	case loop.RunGate:
		in, recs = x.Gate(bounded, e)
	case loop.Summarize:
		in, recs = x.Summarize(bounded, e)
	}
	if in != nil {
		s.Apply(in, x.Now())
		x.Commit(bounded, e, recs)
	}
	return a.next(h, run)
}

// Execute starts st's run as a workflow on the server of c and follows
// it (Follow).
func Execute(ctx context.Context, c client.Client, st Start, observe func(agent.Event)) (agent.Outcome, error) {
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID(st.Run), TaskQueue: st.Queue, WorkflowTaskTimeout: taskTimeout}, WorkflowName, st); err != nil {
		return agent.Outcome{}, err
	}
	return Follow(ctx, c, st.Run, observe)
}

// taskTimeout bounds a workflow task: a worker that dies holding one is
// replaced in that time.
const taskTimeout = 5 * time.Second

// Follow waits for run's workflow to end, or to wait for an operator's
// decision (its worker given up, as the in-process driver's process
// ends then): the run's outcome either way. observe, when not nil, is
// told the run's events as its workers saw them, in order, from the
// oldest its workflow keeps.
func Follow(ctx context.Context, c client.Client, run string, observe func(agent.Event)) (agent.Outcome, error) {
	wr := c.GetWorkflow(ctx, WorkflowID(run), "")
	done := make(chan error, 1)
	var out agent.Outcome
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { done <- wr.Get(ctx, &out) }()
	from := 0
	tell := func() {
		if observe == nil {
			return
		}
		for {
			v, err := c.QueryWorkflow(ctx, WorkflowID(run), "", QueryEvents, from)
			var es Events
			if err != nil || v.Get(&es) != nil {
				return
			}
			for _, e := range es.Events {
				observe(e)
			}
			from = es.From + len(es.Events)
			if len(es.Events) < eventsPerAnswer {
				return
			}
		}
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				tell()
			}
			return out, err
		case <-tick.C:
			tell()
			v, err := c.QueryWorkflow(ctx, WorkflowID(run), "", QueryNext)
			var n Next
			if err == nil && v.Get(&n) == nil && n.Parked && n.Outcome != nil {
				tell()
				return *n.Outcome, nil
			}
		}
	}
}

// SendDecision tells run's workflow that request was answered (the
// answer recorded in the trace before), signed with the trace key's
// secret.
func SendDecision(ctx context.Context, c client.Client, run, request, answer string, secret []byte) error {
	d := Decision{Request: request, Answer: answer}
	d.Sign(run, secret)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: WorkflowID(run), UpdateName: UpdateDecided, Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}
