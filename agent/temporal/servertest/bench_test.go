package servertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agenttest"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/agent/temporal"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/trace"
)

// BenchmarkDrivers is the scripted run of agenttest (22 model steps,
// about 60 effects: model calls, tool calls, gate attempts, summaries)
// on each driver, its trace in PostgreSQL, side by side in one process:
// the time per step of each (ms/step-inprocess, ms/step-temporal) and
// their ratio, the Temporal driver's added cost per step
// (ms/step-added).
func BenchmarkDrivers(b *testing.B) {
	server(b)
	ctx := context.Background()
	var inproc, temp time.Duration
	steps := 0
	for b.Loop() {
		c, o, _ := agenttest.Script(b, driver)
		start := time.Now()
		out, err := agent.Run(ctx, c, o)
		if err != nil || out.Kind != agent.Succeeded {
			b.Fatalf("in process: %+v %v", out, err)
		}
		inproc += time.Since(start)
		steps += out.Steps

		c, o, _ = agenttest.Script(b, driver)
		cl, w, queue, err := connect(o, c.Workspace)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		out, err = temporal.Execute(ctx, cl, temporal.Start{Run: temporal.NewRunID(), Contract: &c, Queue: queue, Heartbeat: time.Second}, nil)
		temp += time.Since(start)
		w.Stop()
		cl.Close()
		if err != nil || out.Kind != agent.Succeeded {
			b.Fatalf("on Temporal: %+v %v", out, err)
		}
	}
	report(b, inproc, temp, steps)
}

// report reports the time per step of each driver, their difference and
// their ratio.
func report(b *testing.B, inproc, temp time.Duration, steps int) {
	perIn := float64(inproc.Microseconds()) / 1000 / float64(steps)
	perT := float64(temp.Microseconds()) / 1000 / float64(steps)
	b.ReportMetric(perIn, "ms/step-inprocess")
	b.ReportMetric(perT, "ms/step-temporal")
	b.ReportMetric(perT-perIn, "ms/step-added")
	b.ReportMetric(perT/perIn, "ratio")
}

// loopModel writes a file of its own (write_file, no command: what is
// measured is the driver; a new file each time, so that the run is not
// stalled) at each of its turns until the steps'th, then says it is
// done; it answers a summarising call with a line. Its turn is
// agenttest.Turn's.
type loopModel struct{ steps int }

func (m loopModel) Name() string  { return "loop" }
func (m loopModel) Model() string { return "loop-1" }
func (m loopModel) Stream(_ context.Context, req agent.Request) (*agent.Response, error) {
	if req.System == loop.SummaryInstruction {
		return &agent.Response{Text: "a file was written under log/ at each step.", Finish: agent.FinishStop, Usage: agent.Usage{Input: 2000, Output: 10}}, nil
	}
	n := agenttest.Turn(req)
	usage := agent.Usage{Input: 1000, Output: 10}
	if n >= m.steps-1 {
		return &agent.Response{Text: "done", Finish: agent.FinishStop, Usage: usage}, nil
	}
	return &agent.Response{Text: fmt.Sprint(n), Finish: agent.FinishToolCalls, Usage: usage,
		ToolCalls: []loop.ToolCall{{ID: fmt.Sprintf("c%d", n), Name: "write_file", Args: fmt.Sprintf(`{"path":"log/%d.txt","content":"step %d\n"}`, n, n)}}}, nil
}

// loopRun is a run of steps of loopModel over a workspace of b's: its
// contract (no gate, no commit) and options.
func loopRun(b testing.TB, steps int) (agent.Contract, agent.Options) {
	c, o, _ := agenttest.Script(b, driver)
	o.Provider = loopModel{steps: steps}
	return agent.Contract{Goal: "log each step", Workspace: c.Workspace, Budget: agent.Budget{Steps: steps + 10, Tokens: 1 << 40},
		ContextTokens: 16_000}, o
}

// BenchmarkLongRun is a run of 1,000 steps (a model call and a
// write_file each) on each driver, its trace in PostgreSQL: the time per
// step of each (on Temporal, the workflow continues as new as its
// history nears the server's bound).
func BenchmarkLongRun(b *testing.B) {
	server(b)
	ctx := context.Background()
	const steps = 1000
	var inproc, temp time.Duration
	n := 0
	for b.Loop() {
		c, o := loopRun(b, steps)
		start := time.Now()
		out, err := agent.Run(ctx, c, o)
		inproc += time.Since(start)
		if err != nil || out.Kind != agent.Finished || out.Steps != steps {
			b.Fatalf("in process: %+v %v", out, err)
		}
		n += out.Steps

		c, o = loopRun(b, steps)
		cl, w, queue, err := connect(o, c.Workspace)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		out, err = temporal.Execute(ctx, cl, temporal.Start{Run: temporal.NewRunID(), Contract: &c, Queue: queue, Heartbeat: 5 * time.Second}, nil)
		temp += time.Since(start)
		w.Stop()
		cl.Close()
		if err != nil || out.Kind != agent.Finished || out.Steps != steps {
			b.Fatalf("on Temporal: %+v %v", out, err)
		}
	}
	report(b, inproc, temp, n)
}

// BenchmarkWorkers is eight runs of 20 steps each started at once on one
// task queue served by 1, 2 and 4 workers in this process (one machine's
// two cores): the runs finished per minute.
func BenchmarkWorkers(b *testing.B) {
	server(b)
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			const runs, steps = 8, 20
			var took time.Duration
			for b.Loop() {
				cs := make([]agent.Contract, runs)
				opts := make([]agent.Options, runs)
				for i := range cs {
					cs[i], opts[i] = loopRun(b, steps)
					// One trace for the fleet, as a fleet has.
					opts[i].Tool.Store = opts[0].Tool.Store
				}
				queue := "rein-workers-" + temporal.NewRunID()
				// Every run's options are its own: a worker finds them by
				// the run's workspace.
				byWS := map[string]agent.Options{}
				for i := range cs {
					byWS[cs[i].Workspace] = opts[i]
				}
				store := opts[0].Tool.Store.(trace.Durable)
				var ws []*temporal.Worker
				cl0, err := dial(store)
				if err != nil {
					b.Fatal(err)
				}
				for range workers {
					a := &temporal.Activities{Store: store, Options: func(_ context.Context, c agent.Contract) (agent.Options, error) { return byWS[c.Workspace], nil }}
					w := temporal.NewWorker(cl0, queue, a, worker.Options{})
					if err := w.Start(); err != nil {
						b.Fatal(err)
					}
					ws = append(ws, w)
				}
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, runs)
				for i := range cs {
					wg.Go(func() {
						out, err := temporal.Execute(ctx, cl0, temporal.Start{Run: temporal.NewRunID(), Contract: &cs[i], Queue: queue, Heartbeat: 5 * time.Second}, nil)
						if err == nil && (out.Kind != agent.Finished || out.Steps != steps) {
							err = fmt.Errorf("%+v", out)
						}
						errs <- err
					})
				}
				wg.Wait()
				took += time.Since(start)
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				for _, w := range ws {
					w.Stop()
				}
				cl0.Close()
			}
			b.ReportMetric(float64(runs*b.N)/took.Minutes(), "runs/min")
		})
	}
}

// BenchmarkTakeover is the time from a worker's death to its run going
// on: two rein worker processes serve the run (started with rein run
// --temporal, --temporal-heartbeat 2s); the one that holds it is killed
// with SIGKILL while the run waits for a model call, and the time is
// until the other worker makes that call again.
func BenchmarkTakeover(b *testing.B) {
	f := newFleet(b)
	var took time.Duration
	for b.Loop() {
		held, again, release := make(chan struct{}), make(chan time.Time, 1), make(chan struct{})
		var mu sync.Mutex
		calls := 0
		srv, _ := testenv.Chat{ByTurn: true, Answers: []string{`read_file {"path":"calc.go"}`, "Done."}, Before: func(i int) {
			if i != 1 {
				return
			}
			mu.Lock()
			calls++
			k := calls
			mu.Unlock()
			if k == 1 {
				close(held)
				<-release
			} else {
				again <- time.Now()
			}
		}}.Start(b)
		f.provider(srv.URL)
		queue := "takeover-" + temporal.NewRunID()
		w1, out1 := f.worker(queue)
		w2, _ := f.worker(queue)
		done := make(chan int)
		go func() {
			code, _, _ := f.rein("run", "--task-queue", queue, "--temporal-heartbeat", "2s", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--approve", "all", "read it")
			done <- code
		}()
		select {
		case <-held:
		case <-time.After(2 * time.Minute):
			b.Fatal("the run never made its second model call")
		}
		holder, other := w1, w2
		if !strings.Contains(out1.String(), "read_file") {
			holder, other = w2, w1
		}
		holder.Process.Signal(syscall.SIGKILL)
		died := time.Now()
		holder.Wait()
		select {
		case at := <-again:
			took += at.Sub(died)
		case <-time.After(2 * time.Minute):
			b.Fatal("no worker took the run over")
		}
		close(release)
		if code := <-done; code != 0 {
			b.Fatalf("rein run --temporal: exit %d", code)
		}
		other.Process.Kill()
		other.Wait()
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms-to-go-on")
}
