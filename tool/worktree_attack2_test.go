//go:build linux

package tool

// A second attack pass on git_worktree's debris cleanup and on the git
// environment rein builds for its host-side git (gitEnv). Each test
// asserts the safe behaviour, so a test that fails names a hole.

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
)

// TestWorktreeAttack2DebrisLink: add removes what it finds at its path
// in rein's worktree directory when the registry does not name it. That
// path is a link to a directory outside (however it came there): the
// link goes, what it leads to stays; an administrative directory that
// leads elsewhere (a user's worktree of the same name) is never removed.
func TestWorktreeAttack2DebrisLink(t *testing.T) {
	a := newAtk(t)
	t.Setenv("REIN_CACHE_DIR", filepath.Join(a.root, "cache"))
	a.router()
	outside := filepath.Join(t.TempDir(), "precious")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("keep\n"), 0o644)
	path, err := sandbox.WorktreePath(a.ws, "wt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	// A user's own worktree named like the next add's.
	user := filepath.Join(a.root, "user-wt")
	a.git("worktree", "add", "-q", "-b", "user", user)
	os.Rename(filepath.Join(a.ws, ".git", "worktrees", "user-wt"), filepath.Join(a.ws, ".git", "worktrees", "mine"))
	os.WriteFile(filepath.Join(user, ".git"), []byte("gitdir: "+filepath.Join(a.ws, ".git", "worktrees", "mine")+"\n"), 0o644)
	e := a.call(GitWorktreeTool, GitWorktreeArgs{Action: "add", Name: "wt", Branch: "b1"})
	t.Logf("add wt: %s %s", e.Status, e.Text())
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("add removed what a link at its path led to: %v", err)
	}
	e = a.call(GitWorktreeTool, GitWorktreeArgs{Action: "add", Name: "mine", Branch: "b2"})
	t.Logf("add mine: %s %s", e.Status, e.Text())
	if _, err := os.Stat(filepath.Join(a.ws, ".git", "worktrees", "mine", "gitdir")); err != nil {
		t.Errorf("add removed a user's worktree's administrative directory: %v", err)
	}
}

// TestWorktreeAttack2AttributesFIFO: gitEnv, which every git built-in
// and rein's host-side git for a run's commit builds, opens each nested
// .git/info/attributes of the workspace with os.Open: a FIFO there (or a
// link to one, to /dev/zero, to a file outside) is opened as it is. A
// command in the sandbox leaves a FIFO: the next git built-in blocks for
// ever. Safe: gitEnv returns.
func TestWorktreeAttack2AttributesFIFO(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "sub", ".git", "info"), 0o755)
	fifo := filepath.Join(ws, "sub", ".git", "info", "attributes")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { attributeDrivers(ws); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Errorf("attributeDrivers blocked opening the FIFO %s", fifo)
	}
}
