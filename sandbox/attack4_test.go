//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/shell"
)

// scratchHelper is, in a helper process of TestAttack4ScratchRemoved run
// as another user, a line run on the bwrap rung, then what is left in
// rein's runs directory.
func scratchHelper() {
	ws := os.Getenv("REIN_TEST_A4_WS")
	if ws == "" {
		return
	}
	l, _ := shell.Parse(os.Getenv("REIN_TEST_A4_LINE"))
	res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	runs, _ := filepath.Glob(filepath.Join(CacheDir(), "runs", "rein-run-*"))
	json.NewEncoder(os.Stdout).Encode(map[string]any{"status": res.Status, "reason": res.Reason, "runs": runs})
	os.Exit(0)
}

// TestAttack4ScratchRemoved: a run's scratch directory, whose home the
// bwrap rung mounts as the command's HOME, is gone once the run ends,
// whatever the command did to the modes of the directories it made
// there. Left behind, each run's stays for good (the sweep could not
// remove it either), and every later session's sweep finds a dead rein's
// directory and lists the cgroup hierarchies again.
func TestAttack4ScratchRemoved(t *testing.T) {
	requireRung(t, RungBwrap)
	out := asNobody(t, "REIN_TEST_A4_WS=",
		"REIN_TEST_A4_LINE=sh -c 'mkdir -p $HOME/a/b $HOME/c && touch $HOME/a/b/f && chmod 000 $HOME/a/b $HOME/a && chmod 500 $HOME/c'")
	var got struct {
		Status, Reason string
		Runs           []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Status != string(OK) {
		t.Fatalf("the line: %s %s", got.Status, got.Reason)
	}
	if len(got.Runs) > 0 {
		t.Errorf("the run's scratch directory is left behind: %v", got.Runs)
	}
}

// warmOf is the run of the pool's one waiting sandbox.
func warmOf(t *testing.T, pool *Pool) *run {
	t.Helper()
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for _, w := range pool.warm {
		return w.r
	}
	t.Fatal("no warm sandbox")
	return nil
}

// TestAttack4KillWhileTaken: a warm sandbox whose init is killed at any
// moment around its taking gives the call a result of its own (warm or,
// the sandbox gone, cold), and leaves the workspace's session once.
func TestAttack4KillWhileTaken(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			pool := NewPool()
			p := warmProfile(ws)
			p.Rung = rung
			poolRun(t, pool, "true", p)
			for i := range 12 {
				waitWarm(t, pool)
				r := warmOf(t, pool)
				go func() {
					time.Sleep(time.Duration(i) * 150 * time.Microsecond)
					r.cmd.Process.Kill()
				}()
				res := poolRun(t, pool, "echo hi", p)
				t.Logf("%d: warm=%v %s %q", i, res.Warm, res.Status, res.Stdout.Text)
				if res.Stdout.Text != "hi\n" && res.Status != Cancelled && res.Status != Failed {
					t.Fatalf("%d: %+v", i, res)
				}
			}
			done := make(chan struct{})
			go func() { pool.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return")
			}
			if refs := sessionRuns(ws); refs != 0 {
				t.Fatalf("the session is held by %d runs after every run ended", refs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			l, _ := shell.Parse("echo cold")
			if res, err := Run(ctx, l, Profile{Workspace: ws, Rung: rung}, nil, nil); err != nil || res.Stdout.Text != "cold\n" {
				t.Fatalf("a run after: %+v %v", res, err)
			}
		})
	}
}

// TestAttack4CancelWhileTakingWaits: a taking that waits for another
// process's hold of the workspace ends with its context, the init killed
// meanwhile, and Close then returns.
func TestAttack4CancelWhileTakingWaits(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	p := warmProfile(ws)
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	r := warmOf(t, pool)
	unlock, err := lockWorkspace(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.cmd.Process.Kill()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	l, _ := shell.Parse("echo hi")
	began := time.Now()
	res, err := pool.Run(ctx, l, p, nil, nil)
	if err == nil || time.Since(began) > 3*time.Second {
		t.Fatalf("the call: %+v %v after %v", res, err, time.Since(began))
	}
	done := make(chan struct{})
	go func() { pool.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestAttack4InitNeverAnswers: a taking whose init never answers its
// plan (stopped, here) ends with the call's context, and Close returns.
func TestAttack4InitNeverAnswers(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			pool := NewPool()
			p := warmProfile(ws)
			p.Rung = rung
			poolRun(t, pool, "true", p)
			waitWarm(t, pool)
			r := warmOf(t, pool)
			// The init: bubblewrap's child on the bwrap rung.
			pid := r.cmd.Process.Pid
			if rung == RungBwrap {
				data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
				fmt.Sscan(string(data), &pid)
			}
			syscall.Kill(pid, syscall.SIGSTOP)
			defer syscall.Kill(pid, syscall.SIGCONT)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			l, _ := shell.Parse("echo hi")
			done := make(chan error, 1)
			go func() {
				res, err := pool.Run(ctx, l, p, nil, nil)
				if err == nil && res.Status == OK {
					err = fmt.Errorf("ran after its context ended: %+v", res)
				}
				done <- err
			}()
			select {
			case err := <-done:
				t.Logf("the call: %v", err)
			case <-time.After(3 * time.Second):
				t.Fatal("the call outlived its context by seconds: the taking waits for the init's answer")
			}
			closed := make(chan struct{})
			go func() { pool.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(3 * time.Second):
				t.Fatal("Close did not return")
			}
		})
	}
}
