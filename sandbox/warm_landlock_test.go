//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// TestWarmLandlock: on the landlock rung a warm sandbox serves a
// workspace that hides nothing, with an emptied HOME and TMPDIR at the
// paths a cold run has, entries made since its start in reach, and the
// protected files put back after; a hidden file, a replaced workspace or
// a planted HOME sends the call to a cold run.
func TestWarmLandlock(t *testing.T) {
	requireRung(t, RungLandlock)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	p.Rung = RungLandlock
	first := poolRun(t, pool, "sh -c 'echo $HOME $TMPDIR; touch ~/left $TMPDIR/left'", p)
	if first.Warm || first.Status != OK {
		t.Fatalf("first run: warm=%v %s %q", first.Warm, first.Status, first.Stderr.Text)
	}
	waitWarm(t, pool)
	// Made on the host after the warm sandbox was confined.
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("new\n"), 0o644)
	os.Mkdir(filepath.Join(ws, "newdir"), 0o755)
	res := poolRun(t, pool, "sh -c 'echo $HOME $TMPDIR; ls -A ~ $TMPDIR; cat new.txt; echo w > newdir/f && cat newdir/f; echo planted > .git/hooks/pre-commit'", p)
	// Failed, as a cold run would be: the planted hook was put back.
	if !res.Warm || res.Status != Failed || !slices.Contains(res.PutBack, ".git/hooks/pre-commit") {
		t.Fatalf("second run: warm=%v %s put back %v %q", res.Warm, res.Status, res.PutBack, res.Stderr.Text)
	}
	lines := strings.Split(res.Stdout.Text, "\n")
	if lines[0] != strings.TrimSpace(first.Stdout.Text) {
		t.Errorf("HOME and TMPDIR: warm %q, cold %q", lines[0], first.Stdout.Text)
	}
	if got := strings.Join(lines[1:], "\n"); !strings.Contains(got, "new\nw\n") || strings.Contains(got, "left") {
		t.Errorf("warm run's view: %q", res.Stdout.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the hook planted by a warm run was not put back")
	}

	// A file the protected set hides: no warm sandbox, and the file stays
	// out of reach.
	waitWarm(t, pool)
	os.WriteFile(filepath.Join(ws, "key.pem"), []byte("secret\n"), 0o600)
	res = poolRun(t, pool, "cat key.pem", p)
	if res.Warm || res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "secret") {
		t.Fatalf("a hidden file: warm=%v exit %d %q", res.Warm, res.ExitCode, res.Stdout.Text)
	}
	os.Remove(filepath.Join(ws, "key.pem"))
	res = poolRun(t, pool, "true", p)
	if res.Warm || res.Status != OK {
		t.Fatalf("after the hidden file went: warm=%v %s", res.Warm, res.Status)
	}
	waitWarm(t, pool)

	// A file planted in the slot's HOME while the sandbox waits.
	homes, _ := filepath.Glob(filepath.Join(CacheDir(), "slots", workspaceKey(ws)+"-*", "home"))
	if len(homes) == 0 {
		t.Fatal("the warm sandbox has no HOME in a slot")
	}
	for _, h := range homes {
		if err := os.WriteFile(filepath.Join(h, ".gitconfig"), []byte("[core]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res = poolRun(t, pool, "ls -A ~", p)
	if res.Warm || res.Status != OK || strings.Contains(res.Stdout.Text, ".gitconfig") {
		t.Fatalf("a planted HOME: warm=%v %q %q", res.Warm, res.Stdout.Text, res.Stderr.Text)
	}
	waitWarm(t, pool)

	// The workspace replaced on the host.
	os.Rename(ws, ws+".old")
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(ws, "v"), []byte("v2\n"), 0o644)
	res = poolRun(t, pool, "cat v", p)
	if res.Warm || res.Stdout.Text != "v2\n" {
		t.Fatalf("a replaced workspace: warm=%v %q %q", res.Warm, res.Stdout.Text, res.Stderr.Text)
	}
}

// TestWarmLandlockEarlyResult: on the landlock rung a run through a pool
// returns once its init, the subreaper of the tree, has reported every
// process dead, before the init's own end and the teardown; a process
// the command left in the background is dead by then, whether the run
// was warm or cold, and the next run gets the same HOME and TMPDIR.
func TestWarmLandlockEarlyResult(t *testing.T) {
	requireRung(t, RungLandlock)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	p.Rung = RungLandlock
	marker := "4242.5" + strconv.Itoa(os.Getpid())
	var paths []string
	for i, want := range []bool{false, true, true} {
		if want {
			waitWarm(t, pool)
		}
		res := poolRun(t, pool, "sh -c 'sleep "+marker+" & echo $HOME $TMPDIR'", p)
		// The init reports its swept tree and then ends: which of the two
		// the run sees first is the machine's timing. The report first is
		// the subreaper's confirmation; the end first is the cgroup's
		// (the run then waits, and confirms the group empty). Either way
		// the tree is confirmed dead before the result, which the check of
		// the background sleep below holds.
		if res.Warm != want || res.Status != OK || (res.Containment != "subreaper" && res.Containment != "cgroup") || res.Poisoned != "" {
			t.Fatalf("run %d: warm=%v %s containment %q poisoned %q %q", i, res.Warm, res.Status, res.Containment, res.Poisoned, res.Stderr.Text)
		}
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Fatalf("run %d: the background sleep outlived the result: %v", i, left)
		}
		paths = append(paths, strings.TrimSpace(res.Stdout.Text))
	}
	if paths[0] != paths[1] || paths[1] != paths[2] {
		t.Errorf("HOME and TMPDIR changed between runs: %q", paths)
	}
}
