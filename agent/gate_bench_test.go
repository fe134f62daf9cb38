//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/tool"
)

// BenchmarkGateAttempt is a gate attempt of a go test ./... gate on a Go
// module of two packages whose tests pass, warm, two ways, interleaved in
// the same run:
//
//   - before: the gate as it was, its command through the router with the
//     workspace's own caches (warm from the attempts before it), judged
//     by its exit status;
//   - after: the gate as it is, its command with -json through the router
//     with caches of its own (empty, over the standard library's and the
//     baseline's Go build caches as seeds, through GOCACHEPROG), its
//     report read and compared with the baseline's.
//
// Both check the protected files before and after. before-ms and
// after-ms are medians; ratio is after over before. In edited, a source
// file of one package changes before each pair (as a model's edit does
// before it claims done): both build that package again, and run its
// tests; in unchanged, nothing does, and both find every test result in
// their caches.
//
// The gate line is go test ./... (whose results the gate as it was could
// read from the workspace's cache, and which rein now runs with
// -count=1: a result cached in the baseline is not read either), and go
// test -count=1 ./... (the line docs/agent.md asked for before).
func BenchmarkGateAttempt(b *testing.B) {
	for _, gate := range []string{"go test ./...", "go test -count=1 ./..."} {
		for _, edited := range []bool{true, false} {
			name := "unchanged"
			if edited {
				name = "edited"
			}
			if strings.Contains(gate, "count") {
				name = "count1-" + name
			}
			b.Run(name, func(b *testing.B) { benchGateAttempt(b, gate, edited) })
		}
	}
}

func benchGateAttempt(b *testing.B, gate string, edited bool) {
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(b, "the gate runs in the sandbox: %v", err)
	}
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("REIN_CACHE_DIR", filepath.Join(root, "state"))
	ws := filepath.Join(root, "ws")
	testenv.WriteFiles(b, ws, map[string]string{
		"go.mod":          "module example.com/calc\n\ngo 1.22\n",
		"calc.go":         calcFixed,
		"calc_test.go":    calcTest,
		"sub/sub.go":      "package sub\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n",
		"sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 2) != 1 {\n\t\tt.Fatal(\"Sub(3, 2) != 1\")\n\t}\n}\n",
	}, 0o644)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), NoFiles: true, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: gate}}})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := tool.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	r, err := tool.NewRouter(reg, tool.Config{Policy: p, Surface: tool.SurfaceCoding, Source: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close("ok")
	c, err := Contract{Goal: "x", Workspace: ws, Verify: &Gate{Line: gate}, Protect: []string{"**/*_test.go"}}.WithDefaults()
	if err != nil {
		b.Fatal(err)
	}
	protected, err := hashProtected(ws, c.Protect, true)
	if err != nil {
		b.Fatal(err)
	}
	d := &driver{c: c, o: Options{Now: time.Now, Tool: tool.Config{Policy: p}}, router: r, baseline: protected,
		gateCaches: tool.NewGateCaches(r.RunID(), ws), state: NewState(c, time.Now())}
	defer d.gateCaches.Remove()
	ctx := context.Background()
	base := d.gate(ctx, true)
	if base.Status != GatePassed || base.Report == nil {
		b.Fatalf("the baseline: %+v\n%s", base, base.Output)
	}
	d.state.GateBaseline = &base
	// before is the gate as it was.
	raw, _ := json.Marshal(map[string]string{"line": gate})
	before := func() GateAttempt {
		a := GateAttempt{}
		d.router.KillHandles()
		if d.tampered(&a) {
			return a
		}
		env := d.router.Call(tool.NetworkOff(ctx), "shell", raw)
		a.Status = GateFailedSt
		if env.ExitCode != nil && *env.ExitCode == 0 {
			a.Status = GatePassed
		}
		d.tampered(&a)
		return a
	}
	after := func() GateAttempt { return d.gate(ctx, false) }
	// Warm both.
	for _, f := range []func() GateAttempt{before, after} {
		if a := f(); a.Status != GatePassed {
			b.Fatalf("warming: %+v\n%s", a, a.Output)
		}
	}
	var was, is []time.Duration
	for b.Loop() {
		if edited {
			b.StopTimer()
			src := calcFixed + fmt.Sprintf("\n// Edit is the edit this is.\nconst Edit = %d\n", len(was))
			if err := os.WriteFile(filepath.Join(ws, "calc.go"), []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		t0 := time.Now()
		if a := before(); a.Status != GatePassed {
			b.Fatalf("before: %+v", a)
		}
		t1 := time.Now()
		a := after()
		t2 := time.Now()
		if a.Status != GatePassed || a.Tests == nil || a.Tests.Passed != 2 {
			b.Fatalf("after: %+v\n%s", a, a.Output)
		}
		was, is = append(was, t1.Sub(t0)), append(is, t2.Sub(t1))
	}
	w, n := testenv.MedianMS(was), testenv.MedianMS(is)
	b.ReportMetric(w, "before-ms")
	b.ReportMetric(n, "after-ms")
	b.ReportMetric(n/w, "ratio")
}
