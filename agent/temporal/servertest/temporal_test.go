package servertest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agenttest"
	"github.com/reinhq/rein/agent/temporal"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/postgres"
	"github.com/reinhq/rein/trace/sqlstore"
)

// The server the drivers of the child processes reach, and its
// namespace.
const (
	addrEnv      = "REIN_TEST_TEMPORAL"
	namespaceEnv = "REIN_TEST_TEMPORAL_NAMESPACE"
)

// secret is the trace key's secret the workers check decisions with.
var secret = []byte("rein test trace key -- not a real one")

// sealed is the fleet's data converter: every payload sealed with the
// payload key the operator gives (here a test's).
var sealed = func() converter.DataConverter {
	dc, err := temporal.DataConverter([]byte("rein test payload key -- not a real one"))
	if err != nil {
		panic(err)
	}
	return dc
}()

// driver is the Temporal driver, as agenttest drives it: a run is a
// workflow on the test's server, and the process that runs or resumes
// it is a worker of the run's own task queue (its workspace's), which
// the kill matrix kills; a resumption is another worker that follows the
// workflow, which opens the run again on it.
var driver = agenttest.Driver{Name: "temporal", Every: 8, Store: postgresStore, Run: runTemporal, Resume: resumeTemporal}

// postgresStore is a run's trace: a PostgreSQL database of the tests'
// server, named for the path the suite made.
func postgresStore(path string) (*sqlstore.Store, error) {
	u, err := testenv.PostgresDatabase(path)
	if err != nil {
		return nil, err
	}
	return postgres.Open(u, trace.NewRedactor())
}

func TestMain(m *testing.M) {
	sandbox.Main()
	if code, ok := agenttest.Child(driver); ok {
		os.Exit(code)
	}
	testenv.PostgresRun()
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	testenv.DropPostgres()
	os.Exit(code)
}

// quiet logs the SDK's warnings to stderr: a child's stdout is its
// report.
var quiet = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

// connect starts a worker of workspace's task queue in this process, its
// runs driven with o.
func connect(o agent.Options, workspace string) (client.Client, *temporal.Worker, string, error) {
	store, ok := o.Tool.Store.(trace.Durable)
	if !ok {
		return nil, nil, "", errors.New("the run's store is not durable")
	}
	c, err := dial(store)
	if err != nil {
		return nil, nil, "", err
	}
	sum := sha256.Sum256([]byte(workspace))
	queue := "rein-" + hex.EncodeToString(sum[:6])
	a := &temporal.Activities{Store: store, Options: func(context.Context, agent.Contract) (agent.Options, error) { return o, nil }}
	w := temporal.NewWorker(c, queue, a, worker.Options{StickyScheduleToStartTimeout: time.Second})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, nil, "", err
	}
	return c, w, queue, nil
}

// dial is a client of the test's server, with the fleet's converter and
// store's blob store for large payloads.
func dial(store trace.Durable) (client.Client, error) {
	temporal.SetKey(secret)
	return client.Dial(client.Options{HostPort: os.Getenv(addrEnv), Namespace: os.Getenv(namespaceEnv), Logger: quiet, DataConverter: sealed,
		FailureConverter: temporal.FailureConverter(sealed), ExternalStorage: temporal.ExternalStorage(store)})
}

func runTemporal(ctx context.Context, ct agent.Contract, o agent.Options) (agent.Outcome, error) {
	c, w, queue, err := connect(o, ct.Workspace)
	if err != nil {
		return agent.Outcome{}, err
	}
	defer c.Close()
	defer w.Stop()
	return temporal.Execute(ctx, c, temporal.Start{Run: temporal.NewRunID(), Contract: &ct, Queue: queue, Heartbeat: time.Second}, nil)
}

// resumeTemporal follows the run's workflow with a worker of its own;
// a decision the trace holds for the request the run waits on is sent
// to the workflow first, signed, as rein approve does.
func resumeTemporal(ctx context.Context, run string, o agent.Options) (agent.Outcome, error) {
	store := o.Tool.Store.(trace.Durable)
	st, err := agent.LoadState(ctx, store, run)
	if err != nil {
		return agent.Outcome{}, err
	}
	c, w, _, err := connect(o, st.Contract.Workspace)
	if err != nil {
		return agent.Outcome{}, err
	}
	defer c.Close()
	defer w.Stop()
	if st.Waiting != nil {
		if d, err := store.Decision(ctx, run, st.Waiting.Request); err == nil && d != nil {
			if err := temporal.SendDecision(ctx, c, run, d.Request, d.Answer, secret); err != nil {
				return agent.Outcome{}, fmt.Errorf("sending the decision: %w", err)
			}
		}
	}
	return temporal.Follow(ctx, c, run, nil)
}

// server starts the Temporal server the test's drivers reach.
func server(t testing.TB) {
	t.Helper()
	if _, err := testenv.PostgresDatabase(t.TempDir()); err != nil {
		testenv.Missing(t, "no PostgreSQL server for the runs' traces: %v", err)
	}
	var opts []temporaltest.TestServerOption
	if tt, ok := t.(*testing.T); ok {
		opts = append(opts, temporaltest.WithT(tt))
	}
	ts := temporaltest.NewServer(opts...)
	if _, ok := t.(*testing.T); !ok {
		t.Cleanup(ts.Stop)
	}
	t.Setenv(addrEnv, ts.GetFrontendHostPort())
	t.Setenv(namespaceEnv, ts.GetDefaultNamespace())
}

// scripted is the suite's scripted run over a new workspace of t's: its
// contract, its trace, and a client of the test's server with a worker
// of the run's queue in this process until t ends.
func scripted(t *testing.T) (agent.Contract, *sqlstore.Store, client.Client, string) {
	t.Helper()
	c, o, store := agenttest.Script(t, driver)
	cl, w, queue, err := connect(o, c.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		cl.Close()
	})
	return c, store, cl, queue
}

// TestKillMatrix: the scripted run of nineteen steps, its worker killed
// with SIGKILL at every eighth effect boundary and another worker
// following the workflow, ends as the run never killed did: the same
// outcome, workspace, canonical trace and commit, no command run twice
// and no model call made twice.
func TestKillMatrix(t *testing.T) {
	server(t)
	agenttest.KillMatrix(t, driver)
}

// TestInterruptedCall: a worker killed while a command that may have
// changed the workspace ran is never repeated by Temporal: the model is
// told, or (recovery "wait") the run waits, costing no worker, for an
// operator's signed decision, and goes on as it says.
func TestInterruptedCall(t *testing.T) {
	server(t)
	agenttest.InterruptedCall(t, driver)
}

// reordered is the workflow with its first command changed (a timer
// before the session it opens the run in): a history the workflow
// recorded does not replay on it.
func reordered(ctx workflow.Context, st temporal.Start) (agent.Outcome, error) {
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return agent.Outcome{}, err
	}
	return temporal.Workflow(ctx, st)
}

// TestReplay: the scripted run on the Temporal driver succeeds, its
// canonical trace the in-process driver's for the same script; its
// recorded history replays on the workflow (worker.WorkflowReplayer),
// and fails to on a workflow whose commands were reordered.
func TestReplay(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, store, cl, queue := scripted(t)
	run := temporal.NewRunID()
	out, err := temporal.Execute(ctx, cl, temporal.Start{Run: run, Contract: &c, Queue: queue, Heartbeat: time.Second}, nil)
	if err != nil || out.Kind != agent.Succeeded || out.Run != run {
		t.Fatalf("the run on Temporal: %+v %v", out, err)
	}
	got, err := agent.CanonicalTrace(ctx, store, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Verify(ctx); err != nil {
		t.Errorf("the trace does not verify: %v", err)
	}

	ic, iopts, istore := agenttest.Script(t, driver)
	iout, err := agent.Run(ctx, ic, iopts)
	if err != nil || iout.Kind != agent.Succeeded {
		t.Fatalf("the run in process: %+v %v", iout, err)
	}
	want, err := agent.CanonicalTrace(ctx, istore, iout.Run)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.ReplaceAll(got, c.Workspace, "WS"), strings.ReplaceAll(want, ic.Workspace, "WS"); got != want {
		t.Errorf("the canonical traces differ between the drivers:\nTemporal:   %.300s\nin process: %.300s", got, want)
	}

	hist := &historypb.History{}
	it := cl.GetWorkflowHistory(ctx, temporal.WorkflowID(run), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	// Every payload of the history is sealed: the goal, the contract,
	// each effect's key and result are nowhere in the clear.
	raw, _ := protojson.Marshal(hist)
	for _, plain := range []string{c.Goal, c.Workspace, `"kind":"model"`} {
		if strings.Contains(string(raw), plain) {
			t.Errorf("the history holds %q in the clear", plain)
		}
	}
	if !strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte("binary/rein-aes-256-gcm"))) {
		t.Error("the history holds no sealed payload")
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: sealed, ExternalStorage: temporal.ExternalStorage(store)})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(temporal.Workflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	// The history of run's workflow: the workflow refuses to drive a run
	// under another id.
	as := worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: temporal.WorkflowID(run)}}
	if err := r.ReplayWorkflowHistoryWithOptions(nil, hist, as); err != nil {
		t.Fatalf("the recorded history (%d events) does not replay: %v", len(hist.Events), err)
	}
	bad, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: sealed, ExternalStorage: temporal.ExternalStorage(store)})
	if err != nil {
		t.Fatal(err)
	}
	bad.RegisterWorkflowWithOptions(reordered, workflow.RegisterOptions{Name: temporal.WorkflowName})
	discard := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := bad.ReplayWorkflowHistoryWithOptions(discard, hist, as); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("a reordered workflow replayed the history: %v", err)
	}
	t.Logf("%d history events for %d steps", len(hist.Events), out.Steps)
}

// TestForgedDecision: whoever reaches the Temporal namespace but holds
// no trace key cannot tell a run's workflow a request was answered: an
// Update signed with another key, or for another request, is refused by
// its validator (and never enters the history); one signed with the key
// is taken.
func TestForgedDecision(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, _, cl, _ := scripted(t)
	// A workflow on a queue no worker serves activities of: it waits to
	// open its run, its Updates answered all the same.
	run := temporal.NewRunID()
	if _, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: temporal.WorkflowID(run), TaskQueue: "rein-none"}, temporal.WorkflowName,
		temporal.Start{Run: run, Contract: &c, Queue: "rein-none"}); err != nil {
		t.Fatal(err)
	}
	// The workflow's tasks are this test's worker's: it serves the queue.
	wq := temporal.NewWorker(cl, "rein-none", &temporal.Activities{}, worker.Options{})
	if err := wq.Start(); err != nil {
		t.Fatal(err)
	}
	defer wq.Stop()
	defer cl.TerminateWorkflow(ctx, temporal.WorkflowID(run), "", "the test is over")
	if err := temporal.SendDecision(ctx, cl, run, "r1", "yes", []byte("not the trace key")); err == nil || !strings.Contains(err.Error(), "not signed with the trace key") {
		t.Fatalf("a decision signed with another key: %v", err)
	}
	if err := temporal.SendDecision(ctx, cl, run, "r1", "yes", secret); err != nil {
		t.Fatalf("a decision signed with the trace key: %v", err)
	}
}

// TestUnsealedStartRefused: whoever reaches the namespace but holds no
// payload key cannot start a run on the fleet's workers: a workflow
// started with the plain converter is never opened (its input does not
// open), and the trace has no run of it.
func TestUnsealedStartRefused(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, store, _, queue := scripted(t)
	plain, err := client.Dial(client.Options{HostPort: os.Getenv(addrEnv), Namespace: os.Getenv(namespaceEnv), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	run := temporal.NewRunID()
	if _, err := plain.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: temporal.WorkflowID(run), TaskQueue: queue}, temporal.WorkflowName,
		temporal.Start{Run: run, Contract: &c, Queue: queue}); err != nil {
		t.Fatal(err)
	}
	defer plain.TerminateWorkflow(ctx, temporal.WorkflowID(run), "", "the test is over")
	failed := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !failed; time.Sleep(200 * time.Millisecond) {
		it := plain.GetWorkflowHistory(ctx, temporal.WorkflowID(run), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
				failed = true
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				t.Fatal("the unsealed workflow scheduled an activity")
			}
		}
	}
	if !failed {
		var kinds []string
		it := plain.GetWorkflowHistory(ctx, temporal.WorkflowID(run), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			if e, err := it.Next(); err == nil {
				kinds = append(kinds, e.GetEventType().String())
			}
		}
		t.Fatalf("the unsealed workflow did not fail: %v", kinds)
	}
	if ok, err := store.HasRun(ctx, run); ok || err != nil {
		t.Fatalf("the trace has the unsealed run: %v %v", ok, err)
	}
}

// history is the events of run's workflow, every execution of it
// (continue-as-new), oldest first, and the count of executions.
func history(t *testing.T, cl client.Client, run string) ([]*historypb.HistoryEvent, int) {
	t.Helper()
	ctx := context.Background()
	var all []*historypb.HistoryEvent
	runID, executions := "", 0
	for {
		executions++
		it := cl.GetWorkflowHistory(ctx, temporal.WorkflowID(run), runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		next := ""
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, e)
			if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		if runID == "" {
			// The first execution's id: the chain is walked from it.
			d, err := cl.DescribeWorkflowExecution(ctx, temporal.WorkflowID(run), "")
			if err != nil {
				t.Fatal(err)
			}
			if first := d.GetWorkflowExecutionInfo().GetFirstRunId(); first != "" && first != d.GetWorkflowExecutionInfo().GetExecution().GetRunId() && executions == 1 {
				all, executions, runID = nil, 0, first
				continue
			}
		}
		if next == "" {
			return all, executions
		}
		runID = next
	}
}

// TestContinueAsNew: a run whose history passes its bound continues as
// new between two effects, again and again, held on by the worker that
// holds it (no step made again, no run opened again), and ends as the
// run in process does: the same outcome and canonical trace; the events
// its follower is told come in order, each once.
func TestContinueAsNew(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, store, cl, queue := scripted(t)
	run := temporal.NewRunID()
	var seen []agent.Event
	// A heartbeat a loaded machine does not miss: a lapse would open the
	// run again, which is not what is tested here.
	out, err := temporal.Execute(ctx, cl, temporal.Start{Run: run, Contract: &c, Queue: queue, Heartbeat: 5 * time.Second, MaxEvents: 40},
		func(e agent.Event) { seen = append(seen, e) })
	if err != nil || out.Kind != agent.Succeeded {
		t.Fatalf("the run: %+v %v", out, err)
	}
	events, executions := history(t, cl, run)
	if executions < 4 {
		t.Fatalf("%d executions for %d history events: the workflow did not continue as new", executions, len(events))
	}
	opens := 0
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == temporal.OpenName {
			opens++
		}
	}
	if opens != executions {
		t.Errorf("%d opens in %d executions", opens, executions)
	}
	got, err := agent.CanonicalTrace(ctx, store, run)
	if err != nil {
		t.Fatal(err)
	}
	ic, iopts, istore := agenttest.Script(t, driver)
	var want []agent.Event
	iopts.Observer = func(e agent.Event) { want = append(want, e) }
	iout, err := agent.Run(ctx, ic, iopts)
	if err != nil || iout.Kind != agent.Succeeded {
		t.Fatalf("the run in process: %+v %v", iout, err)
	}
	wantTrace, err := agent.CanonicalTrace(ctx, istore, iout.Run)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.ReplaceAll(got, c.Workspace, "WS"), strings.ReplaceAll(wantTrace, ic.Workspace, "WS"); got != want {
		t.Errorf("the canonical traces differ:\ncontinued: %.300s\nin process: %.300s", got, want)
	}
	// In order of steps, each once; the calls of one step run side by
	// side, their events in either order.
	kinds := func(es []agent.Event) string {
		var ks []string
		for i, e := range es {
			if i > 0 && e.Step < es[i-1].Step {
				t.Errorf("event %d (%s) is of step %d, after one of step %d", i, e.Kind, e.Step, es[i-1].Step)
			}
			ks = append(ks, fmt.Sprintf("%03d %s %s", e.Step, e.Kind, e.Tool))
		}
		slices.Sort(ks)
		return strings.Join(ks, "|")
	}
	if g, w := kinds(seen), kinds(want); g != w {
		t.Errorf("the follower was told other events than the run in process:\nfollower:   %s\nin process: %s", g, w)
	}
	t.Logf("%d executions, %d history events, %d steps", executions, len(events), out.Steps)
}

// TestLargePayload: a payload over temporal.OffloadOver (a long goal) is
// kept in the trace's blob store, sealed, by its address: no history
// event holds a payload past the bound, the run succeeds, and the
// history replays, its payloads read back from the trace.
func TestLargePayload(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, o, store := agenttest.Script(t, driver)
	c.Goal += "\n\n" + strings.Repeat("Some context the operator pasted in. ", 2000)
	cl, w, queue, err := connect(o, c.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	defer w.Stop()
	run := temporal.NewRunID()
	out, err := temporal.Execute(ctx, cl, temporal.Start{Run: run, Contract: &c, Queue: queue, Heartbeat: time.Second}, nil)
	if err != nil || out.Kind != agent.Succeeded {
		t.Fatalf("the run: %+v %v", out, err)
	}
	events, _ := history(t, cl, run)
	biggest := 0
	for _, e := range events {
		raw, _ := protojson.Marshal(e)
		biggest = max(biggest, len(raw))
	}
	// An event's JSON is its payloads' base64 and their envelope.
	if biggest > 2*temporal.OffloadOver {
		t.Errorf("a history event of %d bytes: its payload was not kept in the trace", biggest)
	}
	blobs, err := store.Blobs(ctx, "temporal:"+run)
	if err != nil || len(blobs) == 0 {
		t.Fatalf("the trace has no payload of the run: %v", err)
	}
	for addr, data := range blobs {
		if strings.Contains(data, "operator pasted") {
			t.Errorf("the payload %s is in the trace in the clear", addr)
		}
	}
	hist := &historypb.History{Events: events}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: sealed, ExternalStorage: temporal.ExternalStorage(store)})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(temporal.Workflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: temporal.WorkflowID(run)}}); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	t.Logf("the largest of %d history events: %d bytes; %d payloads in the trace", len(events), biggest, len(blobs))
}

// TestStartOfAnotherRun: a sealed start copied into a workflow of
// another id (whoever reads one run's history can copy its payloads) is
// refused by the workflow before any activity: it drives no run but its
// own.
func TestStartOfAnotherRun(t *testing.T) {
	server(t)
	ctx := context.Background()
	c, store, cl, queue := scripted(t)
	run, other := temporal.NewRunID(), temporal.NewRunID()
	wr, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: temporal.WorkflowID(other), TaskQueue: queue}, temporal.WorkflowName,
		temporal.Start{Run: run, Contract: &c, Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, nil); err == nil || !strings.Contains(err.Error(), "was started for run "+run) {
		t.Fatalf("the workflow of another run: %v", err)
	}
	if ok, err := store.HasRun(ctx, run); ok || err != nil {
		t.Fatalf("the trace has the run: %v %v", ok, err)
	}
}

// TestWorkerFull: a worker that holds its most runs (Activities.Max)
// refuses to open another, and the run waits for a place, counting no
// failure: two runs at once on a worker of one run both end.
func TestWorkerFull(t *testing.T) {
	server(t)
	ctx := context.Background()
	c1, o1 := loopRun(t, 6)
	c2, o2 := loopRun(t, 6)
	o2.Tool.Store = o1.Tool.Store
	store := o1.Tool.Store.(trace.Durable)
	byWS := map[string]agent.Options{c1.Workspace: o1, c2.Workspace: o2}
	cl, err := dial(store)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	queue := "rein-full-" + temporal.NewRunID()
	a := &temporal.Activities{Store: store, Max: 1, Options: func(_ context.Context, c agent.Contract) (agent.Options, error) { return byWS[c.Workspace], nil }}
	w := temporal.NewWorker(cl, queue, a, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	errs := make(chan error, 2)
	runs := []string{temporal.NewRunID(), temporal.NewRunID()}
	for i, c := range []agent.Contract{c1, c2} {
		go func() {
			out, err := temporal.Execute(ctx, cl, temporal.Start{Run: runs[i], Contract: &c, Queue: queue, Heartbeat: 5 * time.Second}, nil)
			if err == nil && out.Kind != agent.Finished {
				err = fmt.Errorf("%+v", out)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// One of them was refused a place, and waited.
	full := 0
	for _, run := range runs {
		events, _ := history(t, cl, run)
		for _, e := range events {
			if f := e.GetActivityTaskFailedEventAttributes().GetFailure(); f != nil && f.GetCause().GetApplicationFailureInfo().GetType() == "rein.worker_full" ||
				f.GetApplicationFailureInfo().GetType() == "rein.worker_full" {
				full++
			}
		}
	}
	if full == 0 {
		t.Error("no open was refused for want of a place")
	}
}
