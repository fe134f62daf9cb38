package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestGitWorktree: git_worktree makes a worktree on a new branch in
// rein's own directory outside the workspace, with no hook or driver of
// the repository run; a command in the sandbox can neither change,
// plant nor prune worktrees' administrative directories; the branch is
// one git_merge takes; remove refuses a worktree with uncommitted
// changes and one rein did not make, and removes a clean one (its branch
// stays); names that are paths are refused.
func TestGitWorktree(t *testing.T) {
	requireSandbox(t)
	for _, rung := range []sandbox.Rung{sandbox.RungBwrap, sandbox.RungLandlock} {
		t.Run(string(rung), func(t *testing.T) { testGitWorktree(t, rung) })
	}
}

func testGitWorktree(t *testing.T, rung sandbox.Rung) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	git := func(dir string, args ...string) string {
		t.Helper()
		return testenv.Git(t, dir, args...)
	}
	git(ws, "init", "-q", "-b", "main")
	git(ws, "config", "user.email", "agent@example.com")
	git(ws, "config", "user.name", "Agent")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("*.txt filter=evil\n"), 0o644)
	git(ws, "add", ".")
	git(ws, "commit", "-qm", "start")
	marks := filepath.Join(root, "marks")
	os.MkdirAll(marks, 0o777)
	script := func(name string) string {
		p := filepath.Join(root, "bin", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/%s\ncat\n", marks, name)), 0o755)
		return p
	}
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	for _, h := range []string{"post-checkout", "reference-transaction", "post-index-change"} {
		os.WriteFile(filepath.Join(ws, ".git", "hooks", h), []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/hook-%s\n", marks, h)), 0o755)
	}
	git(ws, "config", "filter.evil.smudge", script("smudge"))
	git(ws, "config", "filter.evil.clean", script("clean"))
	git(ws, "config", "core.fsmonitor", script("fsmonitor"))

	empty := filepath.Join(root, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: empty, UserFile: empty, ProjectFile: empty, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "git *"}}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(root, "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// Every line the policy asks about is approved, so that what a
	// command does reaches the sandbox.
	r, err := NewRouter(reg, Config{Policy: p, Approver: policy.AllowAll{}, Surface: SurfaceCoding, Store: store,
		Results: &Results{Dir: filepath.Join(root, "results")}, Source: "test",
		Profile: sandbox.Profile{Rung: rung, Env: []string{"PATH=" + os.Getenv("PATH")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close("ok")
	dir, err := sandbox.WorktreeDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("git", "-C", ws, "worktree", "prune").Run()
		os.RemoveAll(dir)
		sandbox.WithWorktrees(context.Background(), ws, func([]sandbox.Worktree) ([]sandbox.Worktree, error) { return nil, nil })
	})
	call := func(name string, args any) *Envelope {
		t.Helper()
		data, _ := json.Marshal(args)
		return r.Call(context.Background(), name, data)
	}

	e := call("git_worktree", map[string]any{"action": "add", "name": "wt1", "branch": "side"})
	wt := filepath.Join(dir, "wt1")
	if e.Status != OK || !strings.Contains(e.Text(), wt) || !strings.Contains(e.Text(), "branch side") {
		t.Fatalf("add: %s", e.Text())
	}
	if strings.HasPrefix(wt, ws+"/") {
		t.Fatalf("the worktree %s is inside the workspace", wt)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(data) != "one\n" {
		t.Fatalf("the worktree's a.txt: %q %v", data, err)
	}
	if got := strings.TrimSpace(git(wt, "branch", "--show-current")); got != "side" {
		t.Fatalf("the worktree is on %q", got)
	}
	if list, _ := sandbox.Worktrees(ws); len(list) != 1 || list[0].Name != "wt1" || list[0].Admin != "wt1" || list[0].Path != wt || list[0].Run != r.RunID() {
		t.Fatalf("the registry: %+v", list)
	}
	if got, _ := os.ReadDir(marks); len(got) != 0 {
		t.Fatalf("a hook or driver ran making the worktree: %v", got)
	}
	if e := call("git_worktree", map[string]any{"action": "list"}); e.Status != OK || !strings.Contains(e.Text(), "wt1\tbranch side\t"+wt) {
		t.Fatalf("list: %s", e.Text())
	}
	for _, bad := range []map[string]any{
		{"action": "add", "name": "wt1", "branch": "other"}, // taken
		{"action": "add", "name": "../x"}, {"action": "add", "name": "a/b"}, {"action": "add", "name": ".x"},
		{"action": "add", "name": "-x"}, {"action": "add", "name": ""}, {"action": "add", "name": "ok", "branch": "-b"},
		{"action": "add", "name": "ok2", "branch": "side"}, // the branch exists
		{"action": "remove", "name": "nope"}, {"action": "push", "name": "wt1"},
	} {
		if e := call("git_worktree", bad); e.Status == OK {
			t.Errorf("git_worktree %v: %s", bad, e.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ok2")); err == nil {
		t.Errorf("a failed add left its directory")
	}
	if list, _ := sandbox.Worktrees(ws); len(list) != 1 {
		t.Fatalf("failed adds changed the registry: %+v", list)
	}

	// A command in the sandbox (each line hides .git from the policy's
	// reading, so that the sandbox decides): the administrative
	// directories are read-only on the bwrap rung, their links put back
	// on the others (git worktree prune sees the worktree missing, since
	// rein's directory is not in the sandbox, and cannot prune it).
	admin := filepath.Join(ws, ".git", "worktrees", "wt1")
	links := map[string]string{}
	for _, n := range []string{"gitdir", "commondir"} {
		data, _ := os.ReadFile(filepath.Join(admin, n))
		links[n] = string(data)
	}
	for _, line := range []string{
		"git worktree prune",
		`sh -c 'd=.gi; g=${d}t; echo /tmp/x/.git > $g/worktrees/wt1/gitdir; mkdir -p evil; echo ../../../evil > $g/worktrees/wt1/commondir; printf "[core]\n\tfsmonitor = touch m\n" > $g/worktrees/wt1/config.worktree'`,
		`sh -c 'd=.gi; g=${d}t; mkdir $g/worktrees/evil && echo ../.. > $g/worktrees/evil/commondir'`,
	} {
		call("shell", map[string]any{"line": line})
	}
	for n, want := range links {
		if data, _ := os.ReadFile(filepath.Join(admin, n)); string(data) != want {
			t.Fatalf("the worktree's %s was changed by a command: %q", n, data)
		}
	}
	for _, p := range []string{filepath.Join(admin, "config.worktree"), filepath.Join(ws, ".git", "worktrees", "evil")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("a command planted %s", p)
		}
	}

	// Work on the branch (as a child run would), merged back.
	os.WriteFile(filepath.Join(wt, "b.txt"), []byte("from the worktree\n"), 0o644)
	git(wt, "-c", "core.hooksPath=/dev/null", "add", "b.txt")
	git(wt, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "b")
	// The test's own git (not rein's) runs what was planted: its marks
	// are cleared.
	os.RemoveAll(marks)
	os.MkdirAll(marks, 0o777)
	if e := call("git_merge", map[string]any{"branch": "side"}); e.Status != OK || git(ws, "show", "HEAD:b.txt") != "from the worktree\n" {
		t.Fatalf("merging the worktree's branch: %s", e.Text())
	}

	os.WriteFile(filepath.Join(wt, "c.txt"), []byte("not committed\n"), 0o644)
	if e := call("git_worktree", map[string]any{"action": "remove", "name": "wt1"}); e.Status != Denied || !strings.Contains(e.Text(), "?? c.txt") {
		t.Fatalf("remove with changes: %s", e.Text())
	}
	// Ignored (here by a command's exclude file) is not committed either.
	call("shell", map[string]any{"line": `sh -c 'd=.gi; echo "*" >> ${d}t/info/exclude'`})
	if e := call("git_worktree", map[string]any{"action": "remove", "name": "wt1"}); e.Status != Denied || !strings.Contains(e.Text(), "!! c.txt") {
		t.Fatalf("remove with an ignored file: %s", e.Text())
	}
	os.Remove(filepath.Join(wt, "c.txt"))
	// An administrative directory changed behind rein's back (here on
	// the host) is not run git through.
	os.WriteFile(filepath.Join(admin, "commondir"), []byte("../../../evil\n"), 0o644)
	if e := call("git_worktree", map[string]any{"action": "remove", "name": "wt1"}); e.Status != Failed || !strings.Contains(e.Text(), "its commondir holds") {
		t.Fatalf("remove through a changed administrative directory: %s", e.Text())
	}
	os.WriteFile(filepath.Join(admin, "commondir"), []byte(links["commondir"]), 0o644)
	if e := call("git_worktree", map[string]any{"action": "remove", "name": "wt1"}); e.Status != OK {
		t.Fatalf("remove: %s", e.Text())
	}
	for _, p := range []string{wt, admin} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after remove", p)
		}
	}
	if list, _ := sandbox.Worktrees(ws); len(list) != 0 {
		t.Errorf("the registry after remove: %+v", list)
	}
	if !strings.Contains(git(ws, "branch", "--list", "side"), "side") {
		t.Errorf("remove took the branch")
	}
	if got, _ := os.ReadDir(marks); len(got) != 0 {
		t.Errorf("a hook or driver ran: %v", got)
	}
}
