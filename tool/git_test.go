package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestGitBuiltins: the git built-ins stage, commit, branch and show the
// repository through the sandbox, and none of the ways a repository can
// make git run a program runs: hooks, core.fsmonitor, the pager and the
// editor, signing, an external diff, textconv, and the filter, diff and
// merge drivers .gitattributes names (each planted to leave a mark);
// a commit is in the trace with its hash and diff; a switch that would
// change a protected file is refused; no tool builds push, fetch, pull,
// reset, rebase or clean.
func TestGitBuiltins(t *testing.T) {
	requireSandbox(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	git := func(args ...string) string {
		t.Helper()
		return testenv.Git(t, ws, args...)
	}
	git("init", "-q", "-b", "main")
	git("config", "user.email", "agent@example.com")
	git("config", "user.name", "Agent")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a_test.go"), []byte("package a\n"), 0o644)
	git("add", ".")
	git("commit", "-qm", "start")
	git("branch", "other")
	git("switch", "-q", "other")
	os.WriteFile(filepath.Join(ws, "a_test.go"), []byte("package a // changed\n"), 0o644)
	git("commit", "-qam", "changes a protected file")
	git("switch", "-q", "main")

	// Every way to run a program, each leaving a mark in marks/ (both in
	// the workspace, where the sandbox can run and write them).
	marks := filepath.Join(ws, "marks")
	os.MkdirAll(marks, 0o777)
	os.WriteFile(filepath.Join(ws, ".git", "info", "exclude"), []byte("bin/\nmarks/\n"), 0o644)
	script := func(name string) string {
		p := filepath.Join(ws, "bin", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/%s\ncat\n", marks, name)), 0o755)
		return p
	}
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction", "post-index-change"} {
		os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
		os.WriteFile(filepath.Join(ws, ".git", "hooks", h), []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/hook-%s\n", marks, h)), 0o755)
	}
	cfg := map[string]string{
		"core.fsmonitor": script("fsmonitor"), "core.pager": script("pager"), "core.editor": script("editor"),
		"commit.gpgSign": "true", "gpg.program": script("gpg"), "diff.external": script("extdiff"),
		"filter.evil.clean": script("clean"), "filter.evil.smudge": script("smudge"), "filter.evil.process": script("process"),
		"diff.evil.textconv": script("textconv"), "diff.evil.command": script("diffcmd"), "merge.evil.driver": script("merge"),
		"core.sshCommand": script("ssh"), "alias.status": "!" + script("alias"),
	}
	for k, v := range cfg {
		git("config", k, v)
	}
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("*.txt filter=evil diff=evil merge=evil\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub", ".gitattributes"), []byte("*.md filter=nested\n"), 0o644)
	git("config", "filter.nested.clean", script("nested"))

	empty := filepath.Join(root, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: empty, UserFile: empty, ProjectFile: empty, Mode: &mode,
		Verification: []string{"*_test.go"}, Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "git *"}}})
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
	r, err := NewRouter(reg, Config{Policy: p, Approver: policy.DenyAll{}, Surface: SurfaceCoding, Store: store,
		Results: &Results{Dir: filepath.Join(root, "results")}, Source: "test",
		Profile: sandbox.Profile{Rung: sandbox.RungBwrap, Env: []string{"PATH=" + os.Getenv("PATH")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close("ok")
	call := func(name string, args any) *Envelope {
		t.Helper()
		data, _ := json.Marshal(args)
		return r.Call(context.Background(), name, data)
	}

	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "sub", "n.md"), []byte("note\n"), 0o644)
	if e := call("git_status", map[string]any{}); e.Status != OK || !strings.Contains(e.Text(), "## main") || !strings.Contains(e.Text(), " M a.txt") {
		t.Fatalf("git_status: %s", e.Text())
	}
	if e := call("git_diff", map[string]any{"paths": []string{"a.txt"}}); e.Status != OK || !strings.Contains(e.Text(), "+two") {
		t.Fatalf("git_diff: %s", e.Text())
	}
	if e := call("git_add", map[string]any{"paths": []string{"a.txt", "sub/n.md"}}); e.Status != OK {
		t.Fatalf("git_add: %s", e.Text())
	}
	if e := call("git_diff", map[string]any{"staged": true}); e.Status != OK || !strings.Contains(e.Text(), "+two") {
		t.Fatalf("git_diff staged: %s", e.Text())
	}
	e := call("git_commit", map[string]any{"message": "add two\n\nand a note; it's 'quoted' $HOME"})
	if e.Status != OK {
		t.Fatalf("git_commit: %s", e.Text())
	}
	head := strings.TrimSpace(git("rev-parse", "HEAD"))
	if !strings.Contains(e.Text(), "commit "+head) || strings.TrimSpace(git("log", "-1", "--format=%B")) != "add two\n\nand a note; it's 'quoted' $HOME" {
		t.Fatalf("git_commit: %s\nlog: %s", e.Text(), git("log", "-1", "--format=%B"))
	}
	edits, _ := store.Edits(context.Background(), r.RunID())
	if len(edits) != 1 || edits[0].Path != "commit "+head || !strings.Contains(edits[0].Diff, "+two") {
		t.Errorf("the commit in the trace: %+v", edits)
	}
	if e := call("git_log", map[string]any{"count": 5}); e.Status != OK || !strings.Contains(e.Text(), head+" Agent ") {
		t.Fatalf("git_log: %s", e.Text())
	}
	if e := call("git_branch", map[string]any{"name": "fix", "create": true, "switch": true}); e.Status != OK || strings.TrimSpace(git("branch", "--show-current")) != "fix" {
		t.Fatalf("git_branch: %s", e.Text())
	}
	if e := call("git_branch", map[string]any{"name": "other", "switch": true}); e.Status != Denied || !strings.Contains(e.Text(), "switching to other would change a_test.go") {
		t.Fatalf("a switch over a protected file: %s", e.Text())
	}
	// A change on the run's branch, merged back into main.
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("on fix\n"), 0o644)
	call("git_add", map[string]any{"paths": []string{"b.txt"}})
	if e := call("git_commit", map[string]any{"message": "b on fix"}); e.Status != OK {
		t.Fatalf("git_commit on fix: %s", e.Text())
	}
	if e := call("git_branch", map[string]any{"name": "main", "switch": true}); e.Status != OK {
		t.Fatalf("back to main: %s", e.Text())
	}
	if e := call("git_merge", map[string]any{"branch": "other"}); e.Status != Denied || !strings.Contains(e.Text(), "not a branch this run made") {
		t.Fatalf("a merge of a branch the run did not make: %s", e.Text())
	}
	if e := call("git_merge", map[string]any{"branch": "fix"}); e.Status != OK || git("show", "HEAD:b.txt") != "on fix\n" || !strings.Contains(git("log", "-1", "--format=%P"), " ") {
		t.Fatalf("git_merge: %s\n%s", e.Text(), git("log", "--oneline", "--graph", "--all"))
	}
	// A branch the run made that someone else moved over a protected file.
	if e := call("git_branch", map[string]any{"name": "prot", "create": true}); e.Status != OK {
		t.Fatalf("git_branch prot: %s", e.Text())
	}
	noMarks := func() {
		t.Helper()
		got, _ := os.ReadDir(marks)
		for _, m := range got {
			t.Errorf("%s ran", m.Name())
		}
	}
	noMarks()
	// The test's own git (not rein's) runs what was planted: its marks
	// are cleared.
	git("switch", "-q", "prot")
	os.WriteFile(filepath.Join(ws, "a_test.go"), []byte("package a // prot\n"), 0o644)
	git("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c", "core.fsmonitor=false", "commit", "-qam", "prot")
	git("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "switch", "-q", "main")
	if c := r.Carried(); !slices.Equal(c.Branches, []string{"fix", "prot"}) {
		t.Errorf("the branches carried: %v", c.Branches)
	}
	os.RemoveAll(marks)
	os.MkdirAll(marks, 0o777)
	if e := call("git_merge", map[string]any{"branch": "prot"}); e.Status != Denied || !strings.Contains(e.Text(), "merging prot would change a_test.go") {
		t.Fatalf("a merge over a protected file: %s", e.Text())
	}
	for _, bad := range []map[string]any{{"name": "-f", "create": true}, {"name": "a..b", "create": true}, {"name": "x", "create": false}} {
		if e := call("git_branch", bad); e.Status != Denied {
			t.Errorf("git_branch %v: %s", bad, e.Text())
		}
	}
	if e := call("git_add", map[string]any{"paths": []string{"/etc/passwd"}}); e.Status != Denied {
		t.Errorf("an absolute path: %s", e.Text())
	}
	if e := call("git_add", map[string]any{"paths": []string{":(exclude)a.txt"}}); e.Status == OK {
		// Literal pathspecs: the magic is a file name, which is not there.
		t.Errorf("pathspec magic was read: %s", e.Text())
	}
	got, _ := os.ReadDir(marks)
	for _, m := range got {
		t.Errorf("%s ran", m.Name())
	}
	// The control: the same repository's plain git line, through the
	// shell tool, runs what was planted.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	call("shell", map[string]any{"line": "git diff -- a.txt"})
	call("shell", map[string]any{"line": "git add a.txt"})
	e = call("shell", map[string]any{"line": "git commit --allow-empty -m control"})
	ran := map[string]bool{}
	got, _ = os.ReadDir(marks)
	for _, m := range got {
		ran[m.Name()] = true
	}
	for _, want := range []string{"fsmonitor", "hook-pre-commit", "gpg", "process", "diffcmd"} {
		if !ran[want] {
			t.Errorf("the control did not run %s (it ran %v): the test would not see it run\n%s", want, ran, e.Text())
		}
	}
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	for _, n := range names {
		if regexp.MustCompile(`push|fetch|pull|reset|rebase|clean|checkout`).MatchString(n) {
			t.Errorf("a tool builds %s", n)
		}
	}
}

// A configuration rein cannot read is one whose drivers it cannot switch
// off: the git built-ins are refused, naming why, and nothing runs.
func TestGitUnreadableConfig(t *testing.T) {
	a := newAtk(t)
	a.write(".git/config", "[core\n\trepositoryformatversion = 0\n")
	a.router()
	if e := a.call("git_status", map[string]any{}); e.Status != Unavailable || !strings.Contains(e.Text(), "could not be read to switch its drivers off") {
		t.Fatalf("git_status over an unreadable configuration: %s", e.Text())
	}
}
