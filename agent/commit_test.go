package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestRunCommit: a run that succeeds with Commit commits what it changed
// (a file edited, a file added, a file deleted) on rein/<run id>, whose
// parent is the commit it began from; the user's uncommitted change from
// before the run, an ignored build output and a file the policy keeps
// from reading stay out; HEAD, the branch, the index and the working
// tree are as the run left them; a run that is not a success commits
// nothing; a workspace that is not a repository refuses the run.
func TestRunCommit(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(testenv.Git(t, ws, args...))
	}
	write := func(p, s string) { os.WriteFile(filepath.Join(ws, p), []byte(s), 0o644) }
	git("init", "-q", "-b", "main")
	git("config", "user.email", "dev@example.com")
	git("config", "user.name", "Dev")
	write("fix.txt", "broken\n")
	write("gone.txt", "old\n")
	write("mine.txt", "committed\n")
	write(".gitignore", "*.o\n")
	git("add", ".")
	git("commit", "-qm", "start")
	start := git("rev-parse", "HEAD")
	write("mine.txt", "the user's own change, not committed\n")
	// A filter the repository names: the commit runs no filter.
	git("config", "filter.evil.clean", "touch filter-ran; cat")
	write(".git/info/attributes", "*.txt filter=evil\n")

	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActRead, Effect: policy.Deny, Pattern: "masked.txt"}, {Act: policy.ActExec, Effect: policy.Allow, Pattern: "cat fix.txt"},
			{Act: policy.ActExec, Effect: policy.Allow, Pattern: "touch masked.txt"}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(c Contract, turns ...[]ToolCall) Outcome {
		t.Helper()
		c.Workspace = ws
		out, err := Run(context.Background(), c, Options{Provider: &scriptModel{turns: turns},
			Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := run(Contract{Goal: "fix fix.txt\nand tidy", Verify: &Gate{Line: "cat fix.txt"}, Commit: true},
		[]ToolCall{call("", "edit_file", `{"path":"fix.txt","old":"broken","new":"fixed"}`)},
		[]ToolCall{call("", "write_file", `{"path":"new.txt","content":"new\n"}`)},
		[]ToolCall{call("", "write_file", `{"path":"build.o","content":"object"}`)},
		[]ToolCall{call("", "delete_file", `{"path":"gone.txt"}`)})
	if out.Kind != Succeeded || out.Commit == nil || out.Commit.Error != "" {
		t.Fatalf("%+v %+v", out, out.Commit)
	}
	cm := out.Commit
	if cm.Branch != "rein/"+out.Run || !slices.Equal(cm.Paths, []string{"fix.txt", "gone.txt", "new.txt"}) {
		t.Fatalf("the commit: %+v", cm)
	}
	if git("rev-parse", cm.Branch) != cm.Hash || git("rev-parse", cm.Hash+"^") != start || git("rev-parse", "HEAD") != start || git("branch", "--show-current") != "main" {
		t.Fatalf("the branches: %s", git("log", "--all", "--oneline", "--graph"))
	}
	if got := git("ls-tree", "-r", "--name-only", cm.Hash); got != ".gitignore\nfix.txt\nmine.txt\nnew.txt" {
		t.Errorf("the commit's tree: %q", got)
	}
	if git("show", cm.Hash+":fix.txt") != "fixed" || git("show", cm.Hash+":mine.txt") != "committed" {
		t.Errorf("the commit's files: %s / %s", git("show", cm.Hash+":fix.txt"), git("show", cm.Hash+":mine.txt"))
	}
	if msg := git("log", "-1", "--format=%B", cm.Hash); !strings.HasPrefix(msg, "rein: fix fix.txt\n\nThe changes of rein run "+out.Run) || git("log", "-1", "--format=%an <%ae>", cm.Hash) != "Dev <dev@example.com>" {
		t.Errorf("the message: %q", msg)
	}
	// The working tree and the index are the run's, untouched.
	if st := git("status", "--porcelain"); !strings.Contains(st, "M fix.txt") || !strings.Contains(st, " M mine.txt") || !strings.Contains(st, " D gone.txt") {
		t.Errorf("git status after the commit:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(ws, "filter-ran")); err == nil {
		t.Error("the repository's filter ran")
	}
	edits, _ := store.Edits(context.Background(), out.Run)
	if !slices.ContainsFunc(edits, func(e trace.Edit) bool { return e.Path == "commit "+cm.Hash+" on "+cm.Branch }) {
		t.Errorf("the commit is not in the trace: %+v", edits)
	}

	// A file the policy keeps from reading, made by the run, is left out;
	// a run that changed nothing commits nothing.
	out = run(Contract{Goal: "look", Verify: &Gate{Line: "cat fix.txt"}, Commit: true},
		[]ToolCall{call("", "shell", `{"line":"touch masked.txt"}`)})
	if _, err := os.Stat(filepath.Join(ws, "masked.txt")); err != nil {
		t.Fatalf("the run did not make masked.txt: %v", err)
	}
	if out.Kind != Succeeded || out.Commit == nil || out.Commit.Hash != "" || !strings.Contains(out.Commit.Error, "changed nothing") {
		t.Errorf("a run that changed nothing: %+v", out.Commit)
	}
	// Not a success: no commit.
	out = run(Contract{Goal: "look", Verify: &Gate{Line: "cat nothing.txt", ExpectExit: 0}, Commit: true, GateRetries: 1},
		[]ToolCall{call("", "write_file", `{"path":"more.txt","content":"x"}`)})
	if out.Kind == Succeeded || out.Commit != nil {
		t.Errorf("a run that failed: %s %+v", out.Kind, out.Commit)
	}
	plain := t.TempDir()
	pp, _ := policy.Load(policy.Options{Workspace: plain, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if _, err := Run(context.Background(), Contract{Goal: "x", Workspace: plain, Commit: true}, Options{Provider: &scriptModel{}, Tool: tool.Config{Policy: pp}}); err == nil || !strings.Contains(err.Error(), "needs a git repository with a commit") {
		t.Errorf("a run that commits outside a repository: %v", err)
	}
}
