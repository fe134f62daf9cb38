package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// instantModel answers at once: a read_file call each step (a limit of
// its own each, so that no call repeats), then the end.
type instantModel struct{ left int }

func (m *instantModel) Name() string  { return "instant" }
func (m *instantModel) Model() string { return "instant" }
func (m *instantModel) Stream(context.Context, Request) (*Response, error) {
	if m.left--; m.left < 0 {
		return &Response{Text: "done", Finish: FinishStop, Usage: Usage{Input: 1, Output: 1}}, nil
	}
	args := fmt.Sprintf(`{"path":"calc.go","limit":%d}`, m.left+1)
	return &Response{ToolCalls: []ToolCall{{ID: "c", Name: "read_file", Args: args}}, Finish: FinishToolCalls, Usage: Usage{Input: 1, Output: 1}}, nil
}

// BenchmarkLoopStep is one step of the loop with a model that answers at
// once and one read_file call, with and without the trace; p50-ms and
// p99-ms are a step's wall time, the read_file call included (an
// in-process read of a small file through the router); heap-sys-MiB is
// the heap the process holds at the run's end (-benchtime 1000x: a
// 1,000-step run).
func BenchmarkLoopStep(b *testing.B) {
	for _, traced := range []bool{false, true} {
		b.Run(fmt.Sprintf("trace=%v", traced), func(b *testing.B) {
			ws := b.TempDir()
			os.WriteFile(filepath.Join(ws, "calc.go"), []byte(calcBroken), 0o644)
			mode := policy.ModeAuto
			p, err := policy.Load(policy.Options{Workspace: ws, Home: b.TempDir(), NoFiles: true, Mode: &mode})
			if err != nil {
				b.Fatal(err)
			}
			cfg := tool.Config{Policy: p}
			if traced {
				store, err := trace.Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor())
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				cfg.Store = store
			}
			var steps []time.Duration
			var last time.Time
			obs := func(e Event) {
				switch e.Kind {
				case EventStarted:
					last = time.Now()
				case EventProviderCall:
					now := time.Now()
					steps = append(steps, now.Sub(last))
					last = now
				}
			}
			reg, err := tool.Builtin()
			if err != nil {
				b.Fatal(err)
			}
			cfg.Surface = tool.SurfaceCoding
			b.ResetTimer()
			out, err := Run(context.Background(), Contract{Goal: "x", Workspace: p.Workspace, Budget: Budget{Steps: b.N + 1}},
				Options{Provider: &instantModel{left: b.N}, Registry: reg, Tool: cfg, Observer: obs})
			b.StopTimer()
			if err != nil || out.Kind != Finished {
				b.Fatalf("%+v %v", out, err)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
			slices.Sort(steps)
			if len(steps) > 0 {
				b.ReportMetric(float64(steps[len(steps)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(steps[len(steps)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}
