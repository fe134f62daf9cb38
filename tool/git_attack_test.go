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

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

type atk struct {
	t        *testing.T
	root, ws string
	marks    string
	r        *Router
}

func (a *atk) git(args ...string) string {
	a.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = a.ws
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	out, err := cmd.CombinedOutput()
	if err != nil {
		a.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (a *atk) script(name string) string {
	p := filepath.Join(a.ws, "bin", name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s/%s\ncat\n", a.marks, name)), 0o755)
	return p
}

func (a *atk) write(p, s string) {
	os.MkdirAll(filepath.Dir(filepath.Join(a.ws, p)), 0o755)
	os.WriteFile(filepath.Join(a.ws, p), []byte(s), 0o644)
}

func (a *atk) ran() []string {
	got, _ := os.ReadDir(a.marks)
	var out []string
	for _, m := range got {
		out = append(out, m.Name())
	}
	return out
}

func (a *atk) call(name string, args any) *Envelope {
	data, _ := json.Marshal(args)
	return a.r.Call(context.Background(), name, data)
}

// newAtk is a repository with a.txt and a_test.go (protected),
// committed on main.
func newAtk(t *testing.T) *atk {
	requireSandbox(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	a := &atk{t: t, root: root, ws: filepath.Join(root, "ws")}
	// marks inside the workspace so the sandbox can write them
	a.marks = filepath.Join(a.ws, "marks")
	os.MkdirAll(a.marks, 0o777)
	a.git("init", "-q", "-b", "main")
	a.write(".git/info/exclude", "marks/\nbin/\n")
	a.write("a.txt", "one\n")
	a.write("a_test.go", "package a\n")
	a.git("add", "a.txt", "a_test.go")
	a.git("commit", "-qm", "start")
	a.git("config", "user.name", "a")
	a.git("config", "user.email", "a@b")
	return a
}

func (a *atk) router() {
	t := a.t
	empty := filepath.Join(a.root, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: a.ws, Home: filepath.Join(a.root, "home"), OrgFile: empty, UserFile: empty, ProjectFile: empty, Mode: &mode,
		Verification: []string{"*_test.go"}, Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "git *"}}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(a.root, "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg, _ := Builtin()
	r, err := NewRouter(reg, Config{Policy: p, Approver: policy.DenyAll{}, Surface: SurfaceCoding, Store: store,
		Results: &Results{Dir: filepath.Join(a.root, "results")}, Source: "test",
		Profile: sandbox.Profile{Rung: sandbox.RungBwrap, Env: []string{"PATH=" + os.Getenv("PATH")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close("ok") })
	a.r = r
}

// A path "&&" stays a path: no second command runs.
func TestGitAttackAndAndPath(t *testing.T) {
	a := newAtk(t)
	a.router()
	e := a.call("git_add", map[string]any{"paths": []string{"a.txt", "&&", "touch", "marks/injected"}})
	t.Logf("%s: %s", e.Status, e.Text())
	if _, err := os.Stat(filepath.Join(a.marks, "injected")); err == nil {
		t.Errorf("git_add ran a second command from a path %q", "&&")
	}
}

// A line of an attribute file longer than 1 MiB does not end its scan,
// and the driver named after it does not run.
func TestGitAttackLongAttrLine(t *testing.T) {
	a := newAtk(t)
	a.git("config", "filter.evil.clean", a.script("clean"))
	a.write(".gitattributes", "#"+strings.Repeat("x", 1<<20+10)+"\n*.txt filter=evil\n")
	a.router()
	a.write("a.txt", "two\n")
	e := a.call("git_add", map[string]any{"paths": []string{"a.txt"}})
	if r := a.ran(); len(r) > 0 {
		t.Errorf("ran %v (%s)", r, e.Status)
	}
	t.Logf("%s", e.Text())
}

// More attribute files than the scan reads: the driver of the last
// still does not run (the configuration names it).
func TestGitAttackManyAttrFiles(t *testing.T) {
	a := newAtk(t)
	a.git("config", "filter.evil.clean", a.script("clean"))
	for i := 0; i <= maxAttributeFiles; i++ {
		a.write(fmt.Sprintf("a/%05d/.gitattributes", i), "")
	}
	a.write("z/.gitattributes", "*.txt filter=evil\n")
	a.write("z/b.txt", "b\n")
	a.router()
	e := a.call("git_add", map[string]any{"paths": []string{"z/b.txt"}})
	if r := a.ran(); len(r) > 0 {
		t.Errorf("ran %v (%s)", r, e.Status)
	}
	t.Logf("%s", e.Text())
}

// .git is a file (gitdir: ...): the driver its git directory's
// info/attributes names does not run.
func TestGitAttackGitfile(t *testing.T) {
	a := newAtk(t)
	a.git("config", "filter.evil.clean", a.script("clean"))
	os.Rename(filepath.Join(a.ws, ".git"), filepath.Join(a.ws, ".gd"))
	a.write(".git", "gitdir: .gd\n")
	a.write(".gd/info/attributes", "*.txt filter=evil\n")
	a.write(".gd/info/exclude", "marks/\nbin/\n.gd/\n")
	a.router()
	a.write("a.txt", "two\n")
	e := a.call("git_add", map[string]any{"paths": []string{"a.txt"}})
	if r := a.ran(); len(r) > 0 {
		t.Errorf("ran %v (%s)", r, e.Status)
	}
	t.Logf("%s", e.Text())
}

// A branch whose tree holds the .gitattributes: a switch to it runs no
// smudge filter.
func TestGitAttackSwitchSmudge(t *testing.T) {
	a := newAtk(t)
	a.git("switch", "-q", "-c", "feat")
	a.write(".gitattributes", "*.txt filter=evil\n")
	a.write("b.txt", "b\n")
	a.git("add", ".gitattributes", "b.txt")
	a.git("commit", "-qm", "feat")
	a.git("switch", "-q", "main")
	a.git("config", "filter.evil.smudge", a.script("smudge"))
	a.router()
	e := a.call("git_branch", map[string]any{"name": "feat", "switch": true})
	if r := a.ran(); len(r) > 0 {
		t.Errorf("ran %v (%s: %s)", r, e.Status, e.Text())
	}
}

// A branch that renames the protected file away: the switch is refused.
func TestGitAttackSwitchRename(t *testing.T) {
	a := newAtk(t)
	a.git("switch", "-q", "-c", "ren")
	a.git("mv", "a_test.go", "gone.go")
	a.git("commit", "-qm", "ren")
	a.git("switch", "-q", "main")
	a.router()
	e := a.call("git_branch", map[string]any{"name": "ren", "switch": true})
	if _, err := os.Stat(filepath.Join(a.ws, "a_test.go")); err != nil {
		t.Errorf("the switch removed the protected a_test.go: %s %s", e.Status, e.Text())
	}
}

// A tag of the branch's name: the check reads the branch the switch
// takes.
func TestGitAttackSwitchTagAmbiguity(t *testing.T) {
	a := newAtk(t)
	a.git("tag", "x")
	a.git("switch", "-q", "-c", "x")
	a.write("a_test.go", "package a // changed\n")
	a.git("commit", "-qam", "x")
	a.git("switch", "-q", "main")
	a.router()
	e := a.call("git_branch", map[string]any{"name": "x", "switch": true})
	if b, _ := os.ReadFile(filepath.Join(a.ws, "a_test.go")); string(b) != "package a\n" {
		t.Errorf("the switch changed the protected a_test.go: %s %s", e.Status, e.Text())
	}
}

// A changed file named "0[stderr]" does not end the list the check
// reads.
func TestGitAttackSwitchStderrName(t *testing.T) {
	a := newAtk(t)
	a.git("switch", "-q", "-c", "s")
	a.write("0[stderr]", "x\n")
	a.write("a_test.go", "package a // changed\n")
	a.git("add", "0[stderr]", "a_test.go")
	a.git("commit", "-qm", "s")
	a.git("switch", "-q", "main")
	a.router()
	e := a.call("git_branch", map[string]any{"name": "s", "switch": true})
	if b, _ := os.ReadFile(filepath.Join(a.ws, "a_test.go")); string(b) != "package a\n" {
		t.Errorf("the switch changed the protected a_test.go: %s %s", e.Status, e.Text())
	}
}

// git_merge of a run-made branch someone moved to rename the protected
// file away: refused.
func TestGitAttackMergeRename(t *testing.T) {
	a := newAtk(t)
	a.router()
	if e := a.call("git_branch", map[string]any{"name": "m", "create": true}); e.Status != OK {
		t.Fatal(e.Text())
	}
	a.git("switch", "-q", "m")
	a.git("mv", "a_test.go", "moved.go")
	a.git("commit", "-qm", "mv")
	a.git("switch", "-q", "main")
	e := a.call("git_merge", map[string]any{"branch": "m"})
	t.Logf("%s %s", e.Status, e.Text())
	if _, err := os.Stat(filepath.Join(a.ws, "a_test.go")); err != nil {
		t.Errorf("the merge removed the protected a_test.go: %s %s", e.Status, e.Text())
	}
}

// A partial clone's lazy fetch would run remote.<name>.uploadpack: each
// protocol's own key is forced off, so none runs.
func TestGitAttackLazyFetchInTool(t *testing.T) {
	a := newAtk(t)
	tree := strings.TrimSpace(a.git("rev-parse", "HEAD^{tree}"))
	os.Remove(filepath.Join(a.ws, ".git", "objects", tree[:2], tree[2:]))
	for _, kv := range [][2]string{{"core.repositoryformatversion", "1"}, {"extensions.partialClone", "origin"}, {"remote.origin.url", a.ws},
		{"remote.origin.promisor", "true"}, {"protocol.file.allow", "always"}, {"remote.origin.uploadpack", "touch " + a.marks + "/uploadpack; false"}} {
		a.git("config", kv[0], kv[1])
	}
	a.router()
	e := a.call("git_status", map[string]any{})
	if r := a.ran(); len(r) > 0 {
		t.Errorf("git_status ran %v (%s)", r, e.Status)
	}
}
