package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/files"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
	"github.com/reinhq/rein/workspace"
)

// benchWorkspace is a workspace with one 4 KiB source file and a policy
// over it.
func benchWorkspace(b *testing.B) (string, *policy.Policy) {
	b.Helper()
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte(strings.Repeat("// a line of Go source code\n", 150)), 0o644)
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, Mode: &mode})
	if err != nil {
		b.Fatal(err)
	}
	return ws, p
}

// BenchmarkReadFileDirect is the read itself: files.ReadFile with the
// workspace resolution, no router.
func BenchmarkReadFileDirect(b *testing.B) {
	ws, _ := benchWorkspace(b)
	w, err := workspace.Open(ws)
	if err != nil {
		b.Fatal(err)
	}
	t := &files.Tools{WS: w}
	ctx := context.Background()
	for b.Loop() {
		if _, err := t.ReadFile(ctx, files.ReadFileArgs{Path: "src/main.go"}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRouter(b *testing.B, store trace.Store) {
	ws, p := benchWorkspace(b)
	reg, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(reg, Config{Policy: p, Surface: SurfaceCoding, Store: store, Results: &Results{Dir: filepath.Join(ws, "..", "results")},
		Redactor: trace.NewRedactor("a-secret-value"), Profile: sandbox.Profile{}, Source: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close("ok")
	args := json.RawMessage(`{"path":"src/main.go"}`)
	ctx := context.Background()
	for b.Loop() {
		if env := r.Call(ctx, "read_file", args); env.Status != OK {
			b.Fatal(env.Reason)
		}
	}
}

// BenchmarkReadFileRouter is the same read through the whole router
// (schema, gates, policy path check and protection, envelope, redaction)
// without a trace store: its excess over BenchmarkReadFileDirect is the
// router's overhead.
func BenchmarkReadFileRouter(b *testing.B) { benchRouter(b, nil) }

// BenchmarkReadFileRouterTraced adds the SQLite trace: the step, its
// audit record and their links in the hash chain.
func BenchmarkReadFileRouterTraced(b *testing.B) {
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "trace.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	benchRouter(b, store)
}

// BenchmarkShellWarm times a shell call of true through a long-lived
// router on the bwrap rung, whose next sandbox is started behind each call
// (the time a model takes to answer gives it the moment), interleaved with
// bare bubblewrap running /bin/true in the same namespaces; it reports the
// medians and their ratio, and the share of calls that took a warm
// sandbox.
func BenchmarkShellWarm(b *testing.B) {
	ws, p := benchWorkspace(b)
	p.Sandbox.Rung = string(sandbox.RungBwrap)
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bubblewrap")
	}
	reg, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(reg, Config{Policy: p, Surface: SurfaceCoding, Results: &Results{Dir: filepath.Join(ws, "..", "results")}, Source: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close("ok")
	args := json.RawMessage(`{"line":"true"}`)
	ctx := context.Background()
	bare := testenv.BareBwrapArgs()
	var calls, bares []time.Duration
	warm := 0
	for b.Loop() {
		for deadline := time.Now().Add(5 * time.Second); r.pool.Warm() == 0 && len(calls) > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		t0 := time.Now()
		env := r.Call(ctx, "shell", args)
		calls = append(calls, time.Since(t0))
		if env.Status != OK {
			b.Fatalf("%s: %s", env.Status, env.Reason)
		}
		if res := env.Result(); res != nil && res.Warm {
			warm++
		}
		// Bare bubblewrap is timed once the next sandbox is ready, not
		// beside its start.
		for deadline := time.Now().Add(5 * time.Second); r.pool.Warm() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		t0 = time.Now()
		if err := exec.Command(bw, bare...).Run(); err != nil {
			b.Fatal(err)
		}
		bares = append(bares, time.Since(t0))
	}
	med := testenv.MedianMS
	b.ReportMetric(med(calls), "call-ms")
	b.ReportMetric(med(bares), "bare-ms")
	b.ReportMetric(med(calls)/med(bares), "ratio")
	b.ReportMetric(float64(warm)/float64(len(calls)), "warm-share")
}
