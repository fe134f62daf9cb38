package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPShellWarm times a shell call of true through rein mcp over
// stdio, from the Go SDK's client, with the server's warm sandboxes (the
// time a model takes to answer gives the next one the moment it needs),
// interleaved with bare bubblewrap running /bin/true in the same
// namespaces; it reports the medians and their ratio.
func BenchmarkMCPShellWarm(b *testing.B) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bubblewrap")
	}
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws, home := filepath.Join(root, "w"), filepath.Join(root, "home")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(home, 0o755)
	cmd := exec.Command(os.Args[0], "mcp", "--approve", "all", "--rung", "bwrap", "--org-policy", os.DevNull, "--user-policy", os.DevNull, "--project-policy", os.DevNull)
	cmd.Env = []string{"REIN_TEST_MAIN=1", "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = ws
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	bare := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--unshare-net",
		"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"}
	call := func() time.Duration {
		t0 := time.Now()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"line": "true"}})
		d := time.Since(t0)
		if err != nil || r.IsError {
			b.Fatalf("%v %+v", err, r)
		}
		return d
	}
	call() // the first call starts the session's run and its first sandbox cold
	var calls, bares []time.Duration
	for b.Loop() {
		// A model's answer takes longer than the next sandbox's start.
		time.Sleep(30 * time.Millisecond)
		calls = append(calls, call())
		time.Sleep(30 * time.Millisecond)
		t0 := time.Now()
		if err := exec.Command(bw, bare...).Run(); err != nil {
			b.Fatal(err)
		}
		bares = append(bares, time.Since(t0))
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(calls), "call-ms")
	b.ReportMetric(med(bares), "bare-ms")
	b.ReportMetric(med(calls)/med(bares), "ratio")
}
