//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWorktreesProtected: on every rung a command can neither plant,
// change nor prune an administrative directory under .git/worktrees
// (bound read-only, or put back), and the guard of the rungs that put
// back admits exactly the directories of the worktrees rein made, as
// its registry names them, one made while the command ran among them.
func TestWorktreesProtected(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock, rungWarm} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, warmBase(rung))
			ws := t.TempDir()
			if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Cleanup(func() {
				WithWorktrees(context.Background(), ws, func([]Worktree) ([]Worktree, error) { return nil, nil })
			})
			mine := filepath.Join(ws, ".git", "worktrees", "mine")
			os.MkdirAll(mine, 0o755)
			os.WriteFile(filepath.Join(mine, "gitdir"), []byte("/elsewhere/mine/.git\n"), 0o644)
			os.WriteFile(filepath.Join(mine, "commondir"), []byte("../..\n"), 0o644)
			res := runLine(t, ws, `sh -c 'echo /tmp/x/.git > .git/worktrees/mine/gitdir; mkdir .git/worktrees/evil && echo ../.. > .git/worktrees/evil/commondir; rm -f .git/worktrees/mine/commondir; true'`, Profile{Rung: rung})
			if data, _ := os.ReadFile(filepath.Join(mine, "gitdir")); string(data) != "/elsewhere/mine/.git\n" {
				t.Errorf("gitdir is %q after the command (%s %v)", data, res.Status, res.PutBack)
			}
			if _, err := os.Stat(filepath.Join(mine, "commondir")); err != nil {
				t.Errorf("commondir was removed (%s %v)", res.Status, res.PutBack)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git", "worktrees", "evil")); err == nil {
				t.Errorf("the planted administrative directory stayed (%s %v)", res.Status, res.PutBack)
			}
		})
	}
}

// TestGuardAdmitsReinWorktrees: the guard that puts the protected set
// back keeps and puts back only the links of the administrative
// directories of worktrees rein made (their index and HEAD change as
// their worktree is worked in), admits one rein made while the command
// ran, and removes one the registry does not name.
func TestGuardAdmitsReinWorktrees(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git", "worktrees"), 0o755)
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	t.Cleanup(func() {
		WithWorktrees(context.Background(), ws, func([]Worktree) ([]Worktree, error) { return nil, nil })
	})
	note := func(name string) {
		t.Helper()
		admin := filepath.Join(ws, ".git", "worktrees", name)
		err := WithWorktrees(context.Background(), ws, func(l []Worktree) ([]Worktree, error) {
			os.MkdirAll(admin, 0o755)
			os.WriteFile(filepath.Join(admin, "gitdir"), []byte("/x/"+name+"/.git\n"), 0o644)
			os.WriteFile(filepath.Join(admin, "index"), []byte("before"), 0o644)
			return append(l, Worktree{Name: name, Admin: name, Path: "/x/" + name}), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	note("before")
	g, err := newGuard(ws, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Entries[".git/worktrees/before/index"]; ok || !g.Admitted[".git/worktrees/before"] {
		t.Fatalf("the guard kept a worktree rein made: %v", g.Admitted)
	}
	// While the command runs: the worktree's index changes, and so do
	// its links (a commondir naming another git directory, a
	// config.worktree); rein makes another, and the command plants one.
	os.WriteFile(filepath.Join(ws, ".git", "worktrees", "before", "index"), []byte("after"), 0o644)
	os.WriteFile(filepath.Join(ws, ".git", "worktrees", "before", "gitdir"), []byte("/elsewhere/.git\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".git", "worktrees", "before", "config.worktree"), []byte("[core]\n\tfsmonitor = x\n"), 0o644)
	note("during")
	os.MkdirAll(filepath.Join(ws, ".git", "worktrees", "planted"), 0o755)
	fixed := g.restore()
	if data, _ := os.ReadFile(filepath.Join(ws, ".git", "worktrees", "before", "index")); string(data) != "after" {
		t.Errorf("the index of rein's worktree was put back: %q", data)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "worktrees", "during", "gitdir")); err != nil {
		t.Errorf("the worktree rein made during the command was removed: %v", fixed)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "worktrees", "planted")); err == nil || !slices.Contains(fixed, ".git/worktrees/planted") {
		t.Errorf("the planted directory: %v", fixed)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, ".git", "worktrees", "before", "gitdir")); string(data) != "/x/before/.git\n" {
		t.Errorf("the link of rein's worktree was not put back: %q (%v)", data, fixed)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "worktrees", "before", "config.worktree")); err == nil {
		t.Errorf("a config.worktree planted in rein's worktree stayed: %v", fixed)
	}
	for _, f := range fixed {
		if strings.Contains(f, "index") || strings.Contains(f, "during") {
			t.Errorf("put back: %s", f)
		}
	}
}
