//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// TestAttack2InitLinkSwapped: an init named through a link in a directory
// others may write is the file it led to when UseInit trusted it, not
// whatever the link leads to at the run: the link is theirs to replace.
func TestAttack2InitLinkSwapped(t *testing.T) {
	requireRung(t, RungLandlock)
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	good := filepath.Join(dir, "init")
	if err := os.WriteFile(good, []byte("#!/bin/sh\necho good > "+mark+"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	link := filepath.Join(shared, "init")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if err := UseInit(link); err != nil {
		// Refusing the link outright also keeps the swapped program out.
		return
	}
	t.Cleanup(func() { UseInit("") })
	evil := filepath.Join(shared, "evil")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\necho evil > "+mark+"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(link)
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	Run(context.Background(), parse(t, "true"), Profile{Workspace: workspaceDir(t), Rung: RungLandlock}, nil, nil)
	got, err := os.ReadFile(mark)
	if err != nil || string(got) != "good\n" {
		t.Fatalf("the init started: %q %v, want the one UseInit trusted", got, err)
	}
}

// TestAttack2InitInSharedAncestor: a directory others may write, above
// the init's own, lets them rename the init's directory away and put
// another in its place.
func TestAttack2InitInSharedAncestor(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	sub := filepath.Join(shared, "bin")
	os.Mkdir(sub, 0o755)
	init := filepath.Join(sub, "init")
	if err := os.WriteFile(init, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := UseInit(init)
	UseInit("")
	if err == nil || !strings.Contains(err.Error(), "sandbox init "+shared+": writable by others") {
		t.Errorf("an init below a directory writable by others: %v", err)
	}
	// The sticky bit excuses a directory, never the file.
	stickyFile := filepath.Join(t.TempDir(), "init")
	os.WriteFile(stickyFile, []byte("#!/bin/sh\n"), 0o755)
	os.Chmod(stickyFile, 0o777|os.ModeSticky)
	err = UseInit(stickyFile)
	UseInit("")
	if err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a sticky init writable by others: %v", err)
	}
}

// TestAttack2WarmSlotOfAnotherProcess: a warm landlock sandbox reserves
// its HOME and TMPDIR without the workspace's lock; another rein process
// running on the workspace under that lock holds a slot of the same
// number in its own session. Making the warm sandbox must leave that
// run's HOME alone.
func TestAttack2WarmSlotOfAnotherProcess(t *testing.T) {
	requireRung(t, RungLandlock)
	ws := workspaceDir(t)
	p := warmProfile(ws)
	p.Rung, p.Network = RungLandlock, NetworkOff
	// A first call, whose preflight the warm sandbox then needs not wait
	// for under the other process's lock.
	first := NewPool()
	poolRun(t, first, "true", p)
	first.Close()
	// The other process's run: its lock and its own session's slot.
	unlock, err := lockWorkspace(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	other := &slotTable{ws: ws}
	n, home, _, err := other.takeSlot()
	if err != nil {
		unlock()
		t.Fatal(err)
	}
	work := filepath.Join(home, "work")
	os.WriteFile(work, []byte("mid-run\n"), 0o600)

	pool := NewPool()
	defer pool.Close()
	key, _ := warmKey(p)
	pool.fill(key, p)
	for deadline := time.Now().Add(10 * time.Second); pool.Warm() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	pool.mu.Lock()
	w := pool.warm[key]
	pool.mu.Unlock()
	if _, err := os.Stat(work); err != nil {
		t.Errorf("the other process's running HOME was emptied by a warm sandbox: %v", err)
	}
	if w == nil {
		t.Error("no warm sandbox was made beside the other process's run")
	} else if w.r.home == home {
		t.Errorf("the warm sandbox has the other process's HOME %s", home)
	}
	other.releaseSlot(n, false)
	unlock()
}

// descendants are pid's processes below it, nearest first.
func descendants(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(data)) {
			c, _ := strconv.Atoi(f)
			out = append(out, c)
			out = append(out, descendants(c)...)
		}
	}
	return out
}

// TestAttack2WarmInitDied: a warm sandbox whose init died while it waited
// (past the warm-up plan, before the plan) is not a run: the call runs
// cold, whole, and nothing of the dead sandbox is left.
func TestAttack2WarmInitDied(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			p := warmProfile(ws)
			p.Rung = rung
			pool := NewPool()
			defer pool.Close()
			poolRun(t, pool, "true", p)
			waitWarm(t, pool)
			var w *warmRun
			pool.mu.Lock()
			for _, w = range pool.warm {
			}
			pool.mu.Unlock()
			root := w.r.cmd.Process.Pid
			var inits []int
			for _, pid := range append([]int{root}, descendants(root)...) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				// bubblewrap's own command line names the init too.
				if argv := strings.Split(string(cmdline), "\x00"); len(argv) > 1 && argv[1] == initFlag {
					inits = append(inits, pid)
				}
			}
			if len(inits) != 1 {
				t.Fatalf("the warm sandbox's inits: %v", inits)
			}
			syscall.Kill(inits[0], syscall.SIGKILL)
			for deadline := time.Now().Add(5 * time.Second); syscall.Kill(inits[0], 0) == nil && time.Now().Before(deadline); {
				time.Sleep(2 * time.Millisecond)
			}
			res := poolRun(t, pool, "sh -c 'echo ran > f; cat f'", p)
			if res.Warm || res.Status != OK || res.Stdout.Text != "ran\n" {
				t.Fatalf("after the warm init died: warm=%v %s %q %q", res.Warm, res.Status, res.Stdout.Text, res.Stderr.Text)
			}
			pool.Close()
			if left := testenv.ProcessesWith(ws); len(left) > 0 {
				t.Errorf("left after Close: %v", left)
			}
			// The dead sandbox's teardown ran beside the taking, which
			// wrote into its scratch directory: nothing of it is left.
			if left, _ := filepath.Glob(filepath.Join(CacheDir(), "runs", fmt.Sprintf("rein-run-%d-*", os.Getpid()))); len(left) > 0 {
				t.Errorf("scratch directories left after Close: %v", left)
			}
		})
	}
}

// TestAttack2CloseWhileFilling: Close while the next warm sandbox is being
// made behind a call leaves none, neither running nor counted against the
// process's bound.
func TestAttack2CloseWhileFilling(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	p := warmProfile(ws)
	before := warmCount.Load()
	pool := NewPool()
	h, err := pool.Start(context.Background(), parse(t, "true"), p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Wait()
	// The fill starts once the result is ready: give it the moment to
	// begin, not to end.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		pool.mu.Lock()
		n := len(pool.filling)
		pool.mu.Unlock()
		if n > 0 {
			break
		}
	}
	pool.Close()
	if n := pool.Warm(); n != 0 {
		t.Errorf("%d warm after Close", n)
	}
	if n := warmCount.Load(); n != before {
		t.Errorf("the process's warm count is %d after Close, was %d", n, before)
	}
	if left := testenv.ProcessesWith(ws); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
}

// TestAttack2WarmHostReadLinkTarget: a host read path that is a link
// leads the landlock rung's grant to the directory it pointed to when
// the warm sandbox confined itself. That directory moved aside on the
// host (another made in its place, the link untouched) must not stay in
// the command's reach, as it is not in a cold run's.
func TestAttack2WarmHostReadLinkTarget(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			x := t.TempDir()
			os.Mkdir(filepath.Join(x, "a"), 0o755)
			os.WriteFile(filepath.Join(x, "a", "f"), []byte("old\n"), 0o644)
			link := filepath.Join(x, "link")
			if err := os.Symlink(filepath.Join(x, "a"), link); err != nil {
				t.Fatal(err)
			}
			p := warmProfile(ws)
			p.Rung, p.HostReadPaths = rung, []string{link}
			pool := NewPool()
			defer pool.Close()
			if res := poolRun(t, pool, "cat "+link+"/f", p); res.Stdout.Text != "old\n" {
				t.Fatalf("the host read path through its link: %q %q", res.Stdout.Text, res.Stderr.Text)
			}
			waitWarm(t, pool)
			os.Rename(filepath.Join(x, "a"), filepath.Join(x, "moved"))
			os.Mkdir(filepath.Join(x, "a"), 0o755)
			os.WriteFile(filepath.Join(x, "a", "f"), []byte("new\n"), 0o644)
			res := poolRun(t, pool, "sh -c 'cat "+link+"/f; cat "+x+"/moved/f'", p)
			if res.Warm || res.Stdout.Text != "new\n" {
				t.Fatalf("after the link's directory moved: warm=%v %q %q", res.Warm, res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
}
