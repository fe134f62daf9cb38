package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/workspace"
)

// TestCheckGitFindsGit: the foreign-repository check finds git wherever a
// stage may run it, whatever the policy decides of the stage.
func TestCheckGitFindsGit(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub", ".git"), []byte("gitdir: ../gd\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "a"), 0o755)
	for _, c := range []struct {
		line, why string
	}{
		{`git -C sub status`, "not the workspace's own repository"},
		{`git -C a -C ../sub status`, "not the workspace's own repository"},
		{`git --git-dir=x status`, "names a repository"},
		{`cd sub && /usr/lib/git-core/git-stash list`, "not the workspace's own repository"},
		{`cd sub && git-diff a b`, "not the workspace's own repository"},
		{`cd sub && xargs -0 git status`, "not the workspace's own repository"},
		{`sh -c 'cd sub && git status'`, "not the workspace's own repository"},
		{`bash -c 'timeout 5 sh -c "cd sub; git status"'`, "not the workspace's own repository"},
		{`sh -c 'git status $(x'`, "cannot read it"},
		{`env -C sub git status`, "behind -C"},
		{`find . -execdir git status ;`, "behind -execdir"},
		{`git -C a status`, ""},
		{`timeout 5 git status`, ""},
		{`git log --grep "a git (odd) word"`, ""},
	} {
		line, err := shell.Parser{}.Parse(c.line)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		why := checkGit(line, ws, ws)
		if c.why == "" && why != "" || c.why != "" && !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, want %q", c.line, why, c.why)
		}
	}
}

// TestCheckGitFollowsRedirects: git is vouched for only on the workspace's
// own .git as git would really use it: a nested repository whose commondir
// names one the agent wrote, the workspace's own .git sent elsewhere by a
// commondir or alternates, GIT_DIR and the like set on the line or in the
// session's environment.
func TestCheckGitFollowsRedirects(t *testing.T) {
	ws := t.TempDir()
	own := filepath.Join(ws, ".git")
	os.MkdirAll(filepath.Join(own, "objects", "info"), 0o755)
	os.MkdirAll(filepath.Join(ws, "evil3", ".git"), 0o755)
	os.MkdirAll(filepath.Join(ws, "planted"), 0o755)
	os.WriteFile(filepath.Join(ws, "evil3", ".git", "commondir"), []byte("../../planted\n"), 0o644)
	check := func(line string) string {
		t.Helper()
		l, err := shell.Parser{}.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		return checkGit(l, ws, ws)
	}
	if why := check("git status"); why != "" {
		t.Fatalf("the workspace's own: %s", why)
	}
	for line, want := range map[string]string{
		"cd evil3 && git status":               "not the workspace's own repository",
		"env GIT_DIR=evil3/.git git status":    "GIT_DIR set",
		"env GIT_COMMON_DIR=planted git log":   "GIT_COMMON_DIR set",
		"env GIT_CONFIG_GLOBAL=x git status":   "GIT_CONFIG_GLOBAL set",
		"timeout 5 env GIT_WORK_TREE=a git st": "GIT_WORK_TREE set",
	} {
		if why := check(line); !strings.Contains(why, want) {
			t.Errorf("%s: %q, want %q", line, why, want)
		}
	}
	os.WriteFile(filepath.Join(own, "commondir"), []byte("../planted\n"), 0o644)
	if why := check("git status"); !strings.Contains(why, "commondir naming "+filepath.Join(ws, "planted")) {
		t.Errorf("own commondir: %q", why)
	}
	os.Remove(filepath.Join(own, "commondir"))
	os.WriteFile(filepath.Join(own, "objects", "info", "alternates"), []byte(filepath.Join(ws, "planted", "objects")+"\n"), 0o644)
	if why := check("git status"); !strings.Contains(why, "alternates") {
		t.Errorf("alternates: %q", why)
	}
	os.Remove(filepath.Join(own, "objects", "info", "alternates"))
	defer func() { getenv = os.Getenv }()
	for name, v := range map[string]string{"GIT_DIR": "evil3/.git", "GIT_COMMON_DIR": "planted", "GIT_WORK_TREE": "evil3"} {
		getenv = func(k string) string {
			if k == name {
				return v
			}
			return ""
		}
		if why := check("git status"); !strings.Contains(why, name+"="+v) {
			t.Errorf("%s in the environment: %q", name, why)
		}
	}
	getenv = func(k string) string {
		if k == "GIT_DIR" {
			return own
		}
		return ""
	}
	if why := check("git status"); why != "" {
		t.Errorf("GIT_DIR naming the workspace's own: %q", why)
	}
}

// TestUnconfinedLoops: a hook whose Bash runs unconfined, in Claude
// Code's own shell, keeps for loops opaque (denied: opaque code runs only
// confined), since the shell assigns the loop's variable and hands it to
// every program when it is exported (for PATH in ...); confined, rein runs
// the unrolled plan itself.
func TestUnconfinedLoops(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, OnHost: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Policy: p, Workspace: w, Cwd: ws}
	for _, line := range []string{"for PATH in /tmp/evil; do ls; done", "for f in a b; do echo $f; done"} {
		if d := e.Decide(Action{Kind: Run, Tool: "Bash", Command: line}); d.Opaque == nil || d.Opaque.Construct != shell.CompoundCommand {
			t.Errorf("unconfined %q: %+v", line, d)
		}
		if d := e.Finish(e.Decide(Action{Kind: Run, Tool: "Bash", Command: line})); d.Answer != Deny {
			t.Errorf("unconfined %q, finished: %+v", line, d)
		}
	}
	e.Confined = true
	if d := e.Decide(Action{Kind: Run, Tool: "Bash", Command: "for f in a b; do echo $f; done"}); d.Opaque != nil || d.Answer != Allow {
		t.Errorf("confined loop: %+v", d)
	}
}
