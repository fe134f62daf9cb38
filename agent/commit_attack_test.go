package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

func atkRepo(t *testing.T) (string, func(...string) string) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(ws, "d"), 0o755)
	os.WriteFile(filepath.Join(ws, "d", "f.txt"), []byte("tracked\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "fix.txt"), []byte("broken\n"), 0o644)
	git("add", ".")
	git("commit", "-qm", "start")
	return ws, git
}

func atkRun(t *testing.T, ws string, c Contract, turns ...[]ToolCall) (Outcome, error) {
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "cat fix.txt"}, {Act: policy.ActExec, Effect: policy.Allow, Pattern: "ln *"}, {Act: policy.ActExec, Effect: policy.Allow, Pattern: "sh mk.sh"}}})
	if err != nil {
		t.Fatal(err)
	}
	c.Workspace = ws
	return Run(context.Background(), c, Options{Provider: &scriptModel{turns: turns},
		Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
}

// A repository configured as a partial clone with a missing tree:
// rein's host git (outside the sandbox) fetches nothing, and runs no
// upload-pack command of the repository's.
func TestCommitAttackHostLazyFetch(t *testing.T) {
	requireSandbox(t)
	ws, git := atkRepo(t)
	mark := filepath.Join(t.TempDir(), "host-ran")
	tree := git("rev-parse", "HEAD:d")
	os.Remove(filepath.Join(ws, ".git", "objects", tree[:2], tree[2:]))
	git("config", "core.repositoryformatversion", "1")
	git("config", "extensions.partialClone", "origin")
	git("config", "remote.origin.url", ws)
	git("config", "remote.origin.promisor", "true")
	git("config", "protocol.file.allow", "always")
	git("config", "remote.origin.uploadpack", "touch "+mark+"; false")
	atkRun(t, ws, Contract{Goal: "fix", Verify: &Gate{Line: "cat fix.txt"}, Commit: true})
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("rein's host-side git ran the repository's upload-pack command, outside the sandbox")
	}
}

// A tracked directory replaced by a link to a directory outside the
// workspace: the host-side commit holds the link, never a file read
// through it.
func TestCommitAttackCommitThroughDirLink(t *testing.T) {
	requireSandbox(t)
	ws, git := atkRepo(t)
	outside := filepath.Join(t.TempDir(), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "f.txt"), []byte("SECRET FROM OUTSIDE\n"), 0o644)
	out, err := atkRun(t, ws, Contract{Goal: "fix", Verify: &Gate{Line: "cat fix.txt"}, Commit: true},
		[]ToolCall{call("", "delete_file", `{"path":"d","recursive":true}`)},
		[]ToolCall{call("", "write_file", `{"path":"mk.sh","content":"ln -s `+outside+` d\n"}`)},
		[]ToolCall{call("", "shell", `{"line":"sh mk.sh"}`)})
	if err != nil {
		t.Fatal(err)
	}
	fi, lerr := os.Lstat(filepath.Join(ws, "d"))
	if lerr == nil {
		t.Logf("d is %v", fi.Mode())
	}
	t.Logf("outcome %s %s %+v", out.Kind, out.Reason, out.Commit)
	if out.Commit != nil && out.Commit.Hash != "" {
		if s := git("ls-tree", "-r", out.Commit.Hash); strings.Contains(s, "d/f.txt") || !strings.Contains(s, "120000 blob") {
			t.Errorf("the run's commit holds a file through the link, or not the link itself:\n%s", s)
		}
	}
}
