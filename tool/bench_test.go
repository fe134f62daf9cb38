package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/files"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
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
	store, err := trace.Open(filepath.Join(b.TempDir(), "trace.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	benchRouter(b, store)
}
