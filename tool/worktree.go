package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
)

// maxWorktrees bounds the worktrees rein keeps for one workspace.
const maxWorktrees = 32

// GitWorktreeTool is the built-in that makes and removes git worktrees.
const GitWorktreeTool = "git_worktree"

// GitWorktreeArgs are git_worktree's.
type GitWorktreeArgs struct {
	Action string `json:"action" jsonschema:"add, remove or list"`
	Name   string `json:"name,omitempty" jsonschema:"the worktree's name (letters, digits, . _ -): add makes it, remove removes it"`
	Branch string `json:"branch,omitempty" jsonschema:"add: the new branch the worktree is made on, from HEAD (default: the name)"`
}

// git_worktree: rein itself makes and removes the worktree, outside the
// sandbox, in its own directory for the workspace (sandbox.WorktreeDir:
// never inside the workspace, never rein's session state), with git's
// ways to run programs forced off as for every built-in (gitEnv), after
// the policy decides the line `git worktree add|remove ...` as it would
// the line typed. The registry it is noted in is what the workspace's
// put-back admits of .git/worktrees.

func worktreeSpec() (*Spec, error) {
	return Define(GitWorktreeTool, "Make a git worktree of the repository on a new branch from HEAD (add), remove one made here (remove: refused while it holds changes not committed on its branch), or list them. rein makes it in a directory of its own outside the workspace; merge its branch with git_merge.", false, writeModes,
		func(ctx context.Context, c *Call, a GitWorktreeArgs) *Result {
			ws := c.Router.cfg.Policy.Workspace
			if !policy.ForMode(c.Router.cfg.Policy.Mode).WorkspaceWrite && a.Action != "list" {
				return &Result{Status: Denied, Reason: fmt.Sprintf("%s mode does not write the workspace", c.Router.cfg.Policy.Mode)}
			}
			switch a.Action {
			case "list":
				return listWorktrees(ws)
			case "add":
				return c.addWorktree(ctx, ws, a)
			case "remove":
				return c.removeWorktree(ctx, ws, a)
			}
			return &Result{Status: Denied, Reason: fmt.Sprintf("action %q: say add, remove or list", a.Action)}
		})
}

func listWorktrees(ws string) *Result {
	list, err := sandbox.Worktrees(ws)
	if err != nil {
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	if len(list) == 0 {
		return &Result{Status: OK, Output: "no worktrees made by rein"}
	}
	var b strings.Builder
	for _, w := range list {
		fmt.Fprintf(&b, "%s\tbranch %s\t%s\n", w.Name, w.Branch, w.Path)
	}
	return &Result{Status: OK, Output: b.String(), Data: list}
}

// worktreeLine decides words as the git line they are, through the
// approver; nil when allowed.
func (c *Call) worktreeLine(res *Result, words ...string) *Result {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = gitQuote(w)
	}
	line, err := shell.Parse(strings.Join(quoted, " "))
	if err != nil {
		return &Result{Status: Failed, Reason: "rein built a line its grammar refuses: " + err.Error()}
	}
	check := checkFrom(c.Router.cfg.Policy, line, "")
	v := c.decide(res, check(), check)
	if v.Decision != policy.Allow {
		res.Status, res.Reason, res.Rule = Denied, v.Reason, v.Rule
		return res
	}
	return nil
}

// repoGitDir says why ws's repository cannot have worktrees rein makes:
// its .git must be a directory of its own (not a worktree's or a
// submodule's .git file, whose administrative directories lie elsewhere).
func repoGitDir(ws string) string {
	fi, err := os.Lstat(filepath.Join(ws, ".git"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the workspace is not a git repository (no .git)"
	case err != nil:
		return ".git: " + err.Error()
	case !fi.IsDir():
		return "the workspace's .git is not a directory (a worktree or a submodule): rein makes worktrees of a repository's own .git only"
	}
	return ""
}

// hostGit runs git with args in dir on the host, with env added to a
// bare environment, and returns its stdout.
func hostGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LC_ALL=C"}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

func (c *Call) addWorktree(ctx context.Context, ws string, a GitWorktreeArgs) *Result {
	if why := repoGitDir(ws); why != "" {
		return &Result{Status: Unavailable, Reason: why}
	}
	branch := a.Branch
	if branch == "" {
		branch = a.Name
	}
	if err := checkBranch(branch); err != nil {
		return &Result{Status: Denied, Reason: err.Error()}
	}
	path, err := sandbox.WorktreePath(ws, a.Name)
	if err != nil {
		return &Result{Status: Denied, Reason: err.Error()}
	}
	res := &Result{}
	if r := c.worktreeLine(res, "git", "worktree", "add", "-b", branch, path, "HEAD"); r != nil {
		return r
	}
	env, err := gitEnv(ws)
	if err != nil {
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	admin := filepath.Join(ws, ".git", "worktrees", a.Name)
	// Made under the lock every put-back takes, and noted there, so that
	// a run beside this one admits the directory git makes, and two adds
	// at once (a run's child runs) do not read each other's half-made
	// administrative directories.
	err = sandbox.WithWorktrees(ctx, ws, func(list []sandbox.Worktree) ([]sandbox.Worktree, error) {
		if len(list) >= maxWorktrees {
			return nil, fmt.Errorf("the workspace has %d worktrees made by rein, the most it keeps: remove one first (git_worktree list)", len(list))
		}
		if slices.ContainsFunc(list, func(w sandbox.Worktree) bool { return w.Name == a.Name }) {
			return nil, fmt.Errorf("a worktree named %s is there already (git_worktree list)", a.Name)
		}
		// What an add killed midway left (its worktree, in rein's own
		// directory, and the administrative directory that leads there,
		// neither noted) is removed first.
		if _, err := os.Lstat(path); err == nil {
			os.RemoveAll(path)
		}
		if data, err := os.ReadFile(filepath.Join(admin, "gitdir")); err == nil && string(data) == filepath.Join(path, ".git")+"\n" {
			os.RemoveAll(admin)
		}
		for _, p := range []string{path, admin} {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s is there already: choose another name", p)
			}
		}
		if _, err := hostGit(ctx, ws, env, "worktree", "add", "--quiet", "-b", branch, path, "HEAD"); err != nil {
			return nil, &addFailed{err}
		}
		return append(list, sandbox.Worktree{Name: a.Name, Admin: a.Name, Path: path, Branch: branch, Run: c.Router.runID, Made: time.Now().UTC()}), nil
	})
	var failed *addFailed
	if errors.As(err, &failed) {
		return &Result{Status: Failed, Reason: failed.err.Error()}
	}
	if err != nil {
		return &Result{Status: Denied, Reason: err.Error()}
	}
	forget := func() {
		sandbox.WithWorktrees(context.WithoutCancel(ctx), ws, func(list []sandbox.Worktree) ([]sandbox.Worktree, error) {
			return slices.DeleteFunc(list, func(w sandbox.Worktree) bool { return w.Name == a.Name }), nil
		})
	}
	// git names the administrative directory after the worktree's; one
	// that is not the name noted (taken meanwhile) is undone.
	link, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil || strings.TrimRight(string(link), "\n") != "gitdir: "+admin {
		hostGit(context.WithoutCancel(ctx), ws, env, "worktree", "remove", "--force", path)
		forget()
		return &Result{Status: Failed, Reason: fmt.Sprintf("git made the worktree's administrative directory elsewhere than %s (%q): undone", admin, link)}
	}
	c.Router.noteBranch(branch)
	head, _ := hostGit(ctx, ws, env, "rev-parse", "--short", "HEAD")
	res.Status = OK
	res.Output = fmt.Sprintf("made the worktree %s at %s, on the new branch %s from HEAD %s; merge it with git_merge, remove it with git_worktree remove", a.Name, path, branch, strings.TrimSpace(head))
	res.Data = map[string]string{"name": a.Name, "path": path, "branch": branch}
	return res
}

// addFailed is git worktree add's failure, apart from a refusal.
type addFailed struct{ err error }

func (e *addFailed) Error() string { return e.err.Error() }

// adminChanged says how the administrative directory of the worktree w
// differs from what git made for rein, or "": a directory (not a link)
// whose commondir names the workspace's .git and whose gitdir names the
// worktree, with no config.worktree.
func adminChanged(admin string, w sandbox.Worktree) string {
	fi, err := os.Lstat(admin)
	if err != nil || !fi.IsDir() {
		return "it is not a directory"
	}
	if data, err := os.ReadFile(filepath.Join(admin, "commondir")); err != nil || string(data) != "../..\n" {
		return fmt.Sprintf("its commondir holds %q", data)
	}
	if data, err := os.ReadFile(filepath.Join(admin, "gitdir")); err != nil || string(data) != filepath.Join(w.Path, ".git")+"\n" {
		return fmt.Sprintf("its gitdir holds %q", data)
	}
	if _, err := os.Lstat(filepath.Join(admin, "config.worktree")); err == nil {
		return "it holds a config.worktree"
	}
	return ""
}

func (c *Call) removeWorktree(ctx context.Context, ws string, a GitWorktreeArgs) *Result {
	list, err := sandbox.Worktrees(ws)
	if err != nil {
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	i := slices.IndexFunc(list, func(w sandbox.Worktree) bool { return w.Name == a.Name })
	if i < 0 {
		return &Result{Status: Denied, Reason: fmt.Sprintf("%q is not a worktree rein made here: git_worktree removes only those (git_worktree list)", a.Name)}
	}
	w := list[i]
	res := &Result{}
	if r := c.worktreeLine(res, "git", "worktree", "remove", w.Path); r != nil {
		return r
	}
	admin := filepath.Join(ws, ".git", "worktrees", w.Admin)
	if why := adminChanged(admin, w); why != "" {
		// Its common directory (whose config and hooks git obeys) is no
		// longer the workspace's: rein runs no git there.
		return &Result{Status: Failed, Reason: fmt.Sprintf("the worktree %s's administrative directory %s was changed (%s): rein runs no git through it; look at it, and remove the worktree by hand", w.Name, admin, why)}
	}
	// Its common directory is the workspace's .git, so the workspace's
	// configuration is the one git reads there: its drivers switched off
	// are all there are.
	env, err := gitEnv(ws)
	if err != nil {
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	if _, err := os.Stat(w.Path); err == nil {
		// Read through the administrative directory rein made (not the
		// worktree's .git file); ignored files count (git worktree
		// remove deletes them).
		out, err := hostGit(ctx, w.Path, append(env, "GIT_DIR="+admin, "GIT_WORK_TREE="+w.Path),
			"status", "--porcelain=v1", "--untracked-files=all", "--ignored=traditional", "--ignore-submodules=none")
		if err != nil {
			return &Result{Status: Failed, Reason: "reading what the worktree holds: " + err.Error()}
		}
		if out != "" {
			return &Result{Status: Denied, Reason: fmt.Sprintf("the worktree %s holds changes not committed on %s (ignored files among them), which removing it would lose:\n%s", w.Name, w.Branch, out)}
		}
	}
	err = sandbox.WithWorktrees(ctx, ws, func(list []sandbox.Worktree) ([]sandbox.Worktree, error) {
		if _, err := os.Stat(w.Path); err == nil {
			if _, err := hostGit(ctx, ws, env, "worktree", "remove", w.Path); err != nil {
				return nil, err
			}
		} else if _, err := hostGit(ctx, ws, env, "worktree", "prune"); err != nil {
			return nil, err
		}
		return slices.DeleteFunc(list, func(x sandbox.Worktree) bool { return x.Name == w.Name }), nil
	})
	if err != nil {
		return &Result{Status: Failed, Reason: err.Error()}
	}
	res.Status = OK
	res.Output = fmt.Sprintf("removed the worktree %s; its branch %s stays", w.Name, w.Branch)
	return res
}

// WorktreeInfo is a worktree rein made for a workspace.
type WorktreeInfo struct {
	Name, Path, Branch string
	// Run is the run that made it.
	Run string
}

// Worktree is the worktree name rein made for the router's workspace,
// or nil when there is none.
func (r *Router) Worktree(name string) (*WorktreeInfo, error) {
	list, err := sandbox.Worktrees(r.cfg.Policy.Workspace)
	if err != nil {
		return nil, err
	}
	for _, w := range list {
		if w.Name == name {
			return &WorktreeInfo{Name: w.Name, Path: w.Path, Branch: w.Branch, Run: w.Run}, nil
		}
	}
	return nil, nil
}
