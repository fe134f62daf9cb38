package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
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
				store, err := sqlite.Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor())
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
			out, err := Run(context.Background(), Contract{Goal: "x", Workspace: p.Workspace, Budget: Budget{Steps: b.N + 1, Tokens: 1 << 50}},
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

// timedStore times the durable commits of a run.
type timedStore struct {
	*sqlite.Store
	mu   sync.Mutex
	sum  time.Duration
	each []time.Duration
}

func (s *timedStore) Commit(ctx context.Context, l trace.Lease, ttl time.Duration, cp trace.Checkpoint, batches ...[]trace.Record) error {
	start := time.Now()
	err := s.Store.Commit(ctx, l, ttl, cp, batches...)
	took := time.Since(start)
	s.mu.Lock()
	s.sum += took
	s.each = append(s.each, took)
	s.mu.Unlock()
	return err
}

// stepTimes runs b.N steps of the instant model with one read_file each
// on store and returns each step's wall time and, when timed is set, the
// time its durable commits took.
func stepTimes(b *testing.B, store trace.Store, timed *timedStore) (steps, commits []time.Duration) {
	ws := b.TempDir()
	os.WriteFile(filepath.Join(ws, "calc.go"), []byte(calcBroken), 0o644)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: b.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		b.Fatal(err)
	}
	var last time.Time
	obs := func(e Event) {
		switch e.Kind {
		case EventStarted:
			last = time.Now()
		case EventProviderCall:
			now := time.Now()
			steps = append(steps, now.Sub(last))
			last = now
			if timed != nil {
				timed.mu.Lock()
				commits = append(commits, timed.sum)
				timed.sum = 0
				timed.mu.Unlock()
			}
		}
	}
	out, err := Run(context.Background(), Contract{Goal: "x", Workspace: p.Workspace, Budget: Budget{Steps: b.N + 1, Tokens: 1 << 50}},
		Options{Provider: &instantModel{left: b.N}, Tool: tool.Config{Policy: p, Store: store}, Observer: obs})
	if err != nil || out.Kind != Finished {
		b.Fatalf("%+v %v", out, err)
	}
	// The first step's commits include the run's first checkpoint.
	if len(steps) > 1 {
		steps = steps[1:]
	}
	if len(commits) > 1 {
		commits = commits[1:]
	}
	return steps, commits
}

func pct(d []time.Duration, p int) float64 {
	slices.Sort(d)
	return float64(d[len(d)*p/100].Microseconds()) / 1000
}

// BenchmarkDurableStep is the cost of a durable run's commits per step:
// each step of a model that answers at once with one read_file call
// commits three times (the response, the call journalled as running, its
// end), each a checkpoint with the step's trace rows in one SQLite
// transaction. commit-p50-ms and commit-p99-ms are the three together
// per step; step-p50-ms is a durable step's wall time, plain-step-p50-ms
// that of a step of the same run on the same store with checkpoints off
// (the store seen only as a trace.Store), and ratio the one over the
// other. Run: go test ./agent -run '^$' -bench DurableStep -benchtime 1000x
func BenchmarkDurableStep(b *testing.B) {
	open := func() *sqlite.Store {
		s, err := sqlite.Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	b.ResetTimer()
	plain, _ := stepTimes(b, struct{ trace.Store }{open()}, nil)
	timed := &timedStore{Store: open()}
	steps, commits := stepTimes(b, timed, timed)
	b.StopTimer()
	if len(steps) < 2 || len(commits) < 2 {
		return
	}
	b.ReportMetric(pct(commits, 50), "commit-p50-ms")
	b.ReportMetric(pct(commits, 99), "commit-p99-ms")
	b.ReportMetric(pct(steps, 50), "step-p50-ms")
	b.ReportMetric(pct(plain, 50), "plain-step-p50-ms")
	b.ReportMetric(pct(steps, 50)/pct(plain, 50), "ratio")
}

// spawnModel times a tree of one child: when the root's first request
// came, when the response naming the child went back, and when the
// child's first request came.
type spawnModel struct {
	mu                    sync.Mutex
	first, spawned, child time.Time
	rootCalls, childCalls int
}

func (m *spawnModel) Name() string  { return "spawn" }
func (m *spawnModel) Model() string { return "spawn-1" }
func (m *spawnModel) Stream(_ context.Context, req Request) (*Response, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	usage := Usage{Input: 10, Output: 1}
	if req.Messages[0].Text != "spawn one" {
		if m.childCalls++; m.childCalls == 1 {
			m.child = now
		}
		return &Response{Text: "nothing to do", Finish: FinishStop, Usage: usage}, nil
	}
	if m.rootCalls++; m.rootCalls > 1 {
		return &Response{Text: "done", Finish: FinishStop, Usage: usage}, nil
	}
	m.first = now
	return &Response{ToolCalls: []ToolCall{{ID: "s", Name: SpawnTool, Args: `{"goal":"look","read_only":true}`}}, Finish: FinishToolCalls, Usage: usage}, nil
}

// BenchmarkSpawn is the tree's overhead: from the start of the effect
// that runs a spawn_agent call (the parent's step with the response that
// names the child committed) to the child's first model call
// (spawn-p50-ms: the call decided and recorded, the child's contract
// carved, its registry, router, lease and first checkpoint made), against the bare
// mechanism, a root run's start to its first model call in the same
// process and store (root-p50-ms), and ratio the one over the other. The
// model answers at once; the trace is SQLite, durable.
// Run: go test ./agent -run '^$' -bench Spawn -benchtime 200x
func BenchmarkSpawn(b *testing.B) {
	ws := b.TempDir()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: b.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		b.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var spawn, root []time.Duration
	for b.Loop() {
		m := &spawnModel{}
		start := time.Now()
		out, err := Run(context.Background(), Contract{Goal: "spawn one", Workspace: ws}, Options{Provider: m, Tool: tool.Config{Policy: p, Store: store},
			Boundary: func(name string) {
				if strings.HasPrefix(name, "tool-before ") {
					m.mu.Lock()
					m.spawned = time.Now()
					m.mu.Unlock()
				}
			}})
		if err != nil || out.Kind != Finished || out.Children == nil {
			b.Fatalf("%+v %v", out, err)
		}
		root = append(root, m.first.Sub(start))
		spawn = append(spawn, m.child.Sub(m.spawned))
	}
	b.StopTimer()
	b.ReportMetric(pct(spawn, 50), "spawn-p50-ms")
	b.ReportMetric(pct(spawn, 99), "spawn-p99-ms")
	b.ReportMetric(pct(root, 50), "root-p50-ms")
	b.ReportMetric(pct(spawn, 50)/pct(root, 50), "ratio")
}
