package servertest

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agenttest"
	"github.com/reinhq/rein/agent/temporal"
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
		out, err = temporal.Execute(ctx, cl, temporal.Start{Run: temporal.NewRunID(), Contract: &c, Queue: queue, Heartbeat: time.Second})
		temp += time.Since(start)
		w.Stop()
		cl.Close()
		if err != nil || out.Kind != agent.Succeeded {
			b.Fatalf("on Temporal: %+v %v", out, err)
		}
	}
	perIn := float64(inproc.Milliseconds()) / float64(steps)
	perT := float64(temp.Milliseconds()) / float64(steps)
	b.ReportMetric(perIn, "ms/step-inprocess")
	b.ReportMetric(perT, "ms/step-temporal")
	b.ReportMetric(perT-perIn, "ms/step-added")
	b.ReportMetric(perT/perIn, "ratio")
}
