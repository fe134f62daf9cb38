package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
)

// pollUntilDone polls h until it ends and returns everything it printed
// and the bytes skipped.
func pollUntilDone(t *testing.T, f *fixture, h string) (string, int64, *Envelope) {
	t.Helper()
	var out strings.Builder
	var skipped int64
	deadline := time.Now().Add(60 * time.Second)
	for {
		env := f.call(t, "shell_poll", obj{"handle": h})
		if env.Status != OK {
			t.Fatalf("%+v", env)
		}
		d := env.Result().Data.(map[string]any)
		text := env.Result().Output
		if sk := num(d["skipped"]); sk > 0 {
			skipped += sk
			text = text[strings.Index(text, "\n")+1:]
		}
		out.WriteString(text[:num(d["bytes"])])
		if !d["running"].(bool) {
			return out.String(), skipped, env
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ended", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHandles(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	env := f.call(t, "shell_start", obj{"line": "sh -c 'echo one; sleep 0.3; echo two; exit 4'"})
	if env.Status != OK {
		t.Fatalf("%+v", env)
	}
	h := env.Result().Data.(map[string]any)["handle"].(string)
	out, skipped, last := pollUntilDone(t, f, h)
	if out != "one\ntwo\n" || skipped != 0 || last.ExitCode == nil || *last.ExitCode != 4 || !strings.Contains(last.Preview, "failed, exit 4") {
		t.Fatalf("%q %d %+v", out, skipped, last)
	}
	// The same checks as shell: a denied line never starts.
	g := newFixture(t, policy.ModeAsk, []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "sleep *"}}, nil)
	if env := g.call(t, "shell_start", obj{"line": "sleep 5"}); env.Status != Denied || env.Rule != "sleep *" {
		t.Fatalf("%+v", env)
	}
	// Every byte read is in the trace.
	rows, _ := f.store.HandleOutput(context.Background(), f.r.RunID(), h)
	var traced strings.Builder
	for _, r := range rows {
		traced.WriteString(r.Data)
	}
	if traced.String() != "one\ntwo\n" {
		t.Fatalf("traced %q", traced.String())
	}
	if hs, _ := f.store.Handles(context.Background(), f.r.RunID()); len(hs) != 1 || hs[0].Handle != h {
		t.Fatalf("%+v", hs)
	}
}

// TestHandleCap: the ninth live handle is refused naming the cap; a
// killed one frees its place; the run's end kills the rest.
func TestHandleCap(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	marker := fmt.Sprintf("rein-handle-cap-%d", time.Now().UnixNano())
	var ids []string
	for range MaxHandles {
		env := f.call(t, "shell_start", obj{"line": "sh -c 'sleep 1000; :' " + marker})
		if env.Status != OK {
			t.Fatalf("%+v", env)
		}
		ids = append(ids, env.Result().Data.(map[string]any)["handle"].(string))
	}
	env := f.call(t, "shell_start", obj{"line": "true"})
	if env.Status != Denied || !strings.Contains(env.Reason, "8 handles are live, the most a run may have") {
		t.Fatalf("%+v", env)
	}
	if env := f.call(t, "shell_kill", obj{"handle": ids[0]}); env.Status != OK || !strings.Contains(env.Preview, "cancelled") {
		t.Fatalf("%+v", env)
	}
	if env := f.call(t, "shell_start", obj{"line": "true"}); env.Status != OK {
		t.Fatalf("after a kill: %+v", env)
	}
	f.r.Close("ok")
	if left := testenv.ProcessesWith(marker); len(left) > 0 {
		t.Fatalf("the run's end left %v running", left)
	}
}

// TestHandlesUnderLoad: eight handles printing 100 MB each while polled
// keep the router's memory flat; every byte is shown or counted skipped.
func TestHandlesUnderLoad(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	const size = 100_000_000
	var ids []string
	for range MaxHandles {
		env := f.call(t, "shell_start", obj{"line": fmt.Sprintf("head -c %d /dev/zero", size)})
		if env.Status != OK {
			t.Fatalf("%+v", env)
		}
		ids = append(ids, env.Result().Data.(map[string]any)["handle"].(string))
	}
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}()
	for _, id := range ids {
		out, skipped, last := pollUntilDone(t, f, id)
		if int64(len(out))+skipped != size || last.ExitCode == nil || *last.ExitCode != 0 {
			t.Fatalf("%s: %d shown + %d skipped, want %d: %+v", id, len(out), skipped, size, last)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("peak heap in use %.1f MiB while 8 handles printed %d MB", float64(peak)/(1<<20), 8*size/1_000_000)
	if peak > 64<<20 {
		t.Fatalf("the heap grew to %d MiB", peak>>20)
	}
}

// TestOrphanedHandle: a handle of an earlier run, whose process is gone,
// is reported orphaned to the next run and never re-attached; the kill of
// the process that held it left nothing running.
func TestOrphanedHandle(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	marker := fmt.Sprintf("rein-orphan-%d", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REIN_TEST_HANDLE_WS="+f.ws, "REIN_TEST_HANDLE_LINE=sh -c 'sleep 1000; :' "+marker)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := stdout.Read(buf)
	h := strings.TrimSpace(string(buf[:n]))
	deadline := time.Now().Add(10 * time.Second)
	for len(testenv.ProcessesWith(marker)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the handle never started (%q)", h)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline = time.Now().Add(10 * time.Second); len(testenv.ProcessesWith(marker)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the handle outlived its killed process: %v", testenv.ProcessesWith(marker))
		}
	}
	env := f.call(t, "shell_poll", obj{"handle": h})
	if env.Status != NotFound || !strings.Contains(env.Reason, "is orphaned") {
		t.Fatalf("%q: %+v", h, env)
	}
}

// handleHelper runs in a helper process: it starts a handle through a
// router over the workspace's store, prints its id, and waits to be
// killed.
func handleHelper(ws, line string) {
	f := &fixture{}
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: os.TempDir(), OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, Mode: &mode})
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	f.r, err = helperRouter(ws, p)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	args, _ := json.Marshal(obj{"line": line})
	env := f.r.Call(context.Background(), "shell_start", args)
	if env.Status != OK {
		fmt.Println(env.Text())
		os.Exit(3)
	}
	fmt.Println(env.Result().Data.(map[string]any)["handle"])
	select {}
}
