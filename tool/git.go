package tool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
)

// The git built-ins: the model names paths, a message, a branch; rein
// builds the argv. No tool builds push, fetch, pull, reset, rebase,
// checkout -- or clean. Each runs as a line of the shell tool would (the
// grammar, the policy, the sandbox, the trace), the policy deciding the
// plain git line, and runs with git's own ways to run code switched off by
// the environment (GitEnv): hooks, core.fsmonitor, core.sshCommand, the
// pager and the editor, signing programs, external diffs, and the filter,
// diff and merge drivers .gitattributes names, whatever the repository's
// configuration says.

// GitMergeArgs are git_merge's.
type GitMergeArgs struct {
	Branch string `json:"branch" jsonschema:"a branch this run made with git_branch, merged into the current one"`
}

// GitStatusArgs are git_status's (none).
type GitStatusArgs struct{}

// GitDiffArgs are git_diff's.
type GitDiffArgs struct {
	Staged bool     `json:"staged,omitempty" jsonschema:"the staged changes (the index against HEAD), not the working tree's"`
	Paths  []string `json:"paths,omitempty" jsonschema:"the paths to show, relative to the workspace; none is all"`
}

// GitLogArgs are git_log's.
type GitLogArgs struct {
	Count int      `json:"count,omitempty" jsonschema:"how many commits, newest first (default 10, at most 200)"`
	Paths []string `json:"paths,omitempty" jsonschema:"only commits that touch these paths"`
}

// GitAddArgs are git_add's.
type GitAddArgs struct {
	Paths []string `json:"paths" jsonschema:"the paths to stage, relative to the workspace"`
}

// GitCommitArgs are git_commit's.
type GitCommitArgs struct {
	Message string `json:"message" jsonschema:"the commit message"`
}

// GitBranchArgs are git_branch's.
type GitBranchArgs struct {
	Name   string `json:"name" jsonschema:"the branch's name, such as fix/parser"`
	Create bool   `json:"create,omitempty" jsonschema:"create it (from HEAD)"`
	Switch bool   `json:"switch,omitempty" jsonschema:"switch to it (refused when the switch would change a protected file)"`
}

// gitKey is the context key of a git built-in's call: its command runs
// with the gitRun's environment, read-only when it says so.
type gitKey struct{}

type gitRun struct {
	env      []string
	readOnly bool
}

// gitSafety are the configuration variables every git built-in forces,
// over any file's: nothing git would run, ask or sign with.
var gitSafety = [][2]string{
	{"core.hooksPath", "/dev/null"}, {"core.fsmonitor", "false"}, {"core.sshCommand", "false"},
	{"core.pager", "cat"}, {"core.editor", "true"}, {"core.attributesFile", "/dev/null"}, {"core.askPass", "false"},
	{"commit.gpgSign", "false"}, {"tag.gpgSign", "false"}, {"gpg.program", "false"}, {"gpg.ssh.program", "false"},
	{"gpg.x509.program", "false"}, {"diff.external", ""}, {"sequence.editor", "true"}, {"credential.helper", ""},
	{"gc.auto", "0"}, {"maintenance.auto", "false"}, {"protocol.allow", "never"},
	// A protocol's own key beats protocol.allow: each is forced too, so
	// that no transport runs (a partial clone's lazy fetch, a remote's
	// uploadpack command).
	{"protocol.file.allow", "never"}, {"protocol.ext.allow", "never"}, {"protocol.ssh.allow", "never"},
	{"protocol.git.allow", "never"}, {"protocol.http.allow", "never"}, {"protocol.https.allow", "never"},
	{"protocol.fd.allow", "never"},
}

// GitEnv is the environment a git built-in's command runs with: no
// system or global configuration, no pager, editor or prompt, literal
// pathspecs, and gitSafety with the drivers .gitattributes files in ws
// name switched off.
func GitEnv(ws string) []string {
	env, _ := gitEnv(ws)
	return env
}

// gitEnv is GitEnv, and why the repository's drivers could not be listed
// (the env then switches off those the attribute files name only).
func gitEnv(ws string) ([]string, error) {
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_LAZY_FETCH=1", "GIT_PROTOCOL_FROM_USER=0", "GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0",
		"GIT_EXTERNAL_DIFF=", "GIT_SSH_COMMAND=false", "GIT_ASKPASS=false", "SSH_ASKPASS=false"}
	cfg := slices.Clone(gitSafety)
	configured, cerr := configDrivers(ws)
	drivers := append(attributeDrivers(ws), configured...)
	slices.SortFunc(drivers, func(a, b [2]string) int { return strings.Compare(a[0]+"."+a[1], b[0]+"."+b[1]) })
	for _, d := range slices.Compact(drivers) {
		switch d[0] {
		case "filter":
			cfg = append(cfg, [2]string{"filter." + d[1] + ".clean", ""}, [2]string{"filter." + d[1] + ".smudge", ""},
				[2]string{"filter." + d[1] + ".process", ""}, [2]string{"filter." + d[1] + ".required", "false"})
		case "diff":
			cfg = append(cfg, [2]string{"diff." + d[1] + ".textconv", ""}, [2]string{"diff." + d[1] + ".command", ""})
		case "merge":
			cfg = append(cfg, [2]string{"merge." + d[1] + ".driver", ""})
		}
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env, cerr
}

// configDrivers are the filter, diff and merge drivers the repository's
// configuration defines (its own files and what they include; git reads
// a driver from nowhere else), each as its kind and name: whatever names
// them (an attribute file of another branch, of a linked git directory),
// they are forced off. git runs nothing to list them.
func configDrivers(ws string) ([][2]string, error) {
	cmd := exec.Command("git", "config", "--name-only", "-z", "--get-regexp", `^(filter|diff|merge)\.`)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		// Exit 1 is "no such variable"; anything else is a configuration
		// rein could not read, whose drivers it cannot switch off.
		return nil, fmt.Errorf("the repository's configuration could not be read to switch its drivers off: %v", err)
	}
	var drivers [][2]string
	for _, key := range strings.Split(string(out), "\x00") {
		kind, rest, ok := strings.Cut(strings.TrimSpace(key), ".")
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(rest, '.'); i > 0 {
			drivers = append(drivers, [2]string{kind, rest[:i]})
		}
	}
	return drivers, nil
}

// driverAttr matches an attribute that names a driver: filter=NAME,
// diff=NAME, merge=NAME.
var driverAttr = regexp.MustCompile(`(?:^|\s)(filter|diff|merge)=(\S+)`)

// maxAttributeFiles bounds the .gitattributes files read.
const maxAttributeFiles = 10000

// attributeDrivers are the drivers the workspace's attribute files name
// (every .gitattributes of the tree and .git/info/attributes), each as
// its kind and name.
// maxAttributeBytes bounds what is read of one attributes file.
const maxAttributeBytes = 1 << 20

// openPlain opens p for reading only when it is a regular file, not
// through a link, without waiting on a FIFO a command put there.
func openPlain(p string) (*os.File, error) {
	before, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() || !os.SameFile(before, now) {
		f.Close()
		return nil, fmt.Errorf("%s changed as it was opened", p)
	}
	return f, nil
}

func attributeDrivers(ws string) [][2]string {
	var files []string
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == ".git" && p != ws:
			files = append(files, filepath.Join(p, "info", "attributes"))
			return fs.SkipDir
		case d.Name() == ".gitattributes" && d.Type().IsRegular():
			files = append(files, p)
		}
		if len(files) > maxAttributeFiles {
			return fs.SkipAll
		}
		return nil
	})
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, f := range files {
		fh, err := openPlain(f)
		if err != nil {
			continue
		}
		br := bufio.NewReader(io.LimitReader(fh, maxAttributeBytes))
		for {
			line, err := br.ReadString('\n')
			for _, m := range driverAttr.FindAllStringSubmatch(line, -1) {
				k := [2]string{m[1], m[2]}
				// Quoted names and names git would not read as one are
				// switched off as written too: a forced-off key that
				// names nothing costs nothing.
				if !seen[k] && !strings.ContainsAny(m[2], "\x00\n=") {
					seen[k] = true
					out = append(out, k)
				}
			}
			if err != nil {
				break
			}
		}
		fh.Close()
	}
	return out
}

// gitQuote is a word of a line quoted for rein's grammar.
func gitQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// gitAnd joins two git lines of a built-in: a word no argument the model
// gives can be (the built-ins refuse a NUL in each), so that a path "&&"
// stays a path.
const gitAnd = "\x00&&"

// commitLine is the line of git show's output that names the commit.
var commitLine = regexp.MustCompile(`(?m)^commit ([0-9a-f]{40,64})$`)

// plainWord is a word rein's grammar reads as itself unquoted.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./=%:@+,-]+$`)

// gitPath checks a path the model gave a git built-in.
func gitPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("a path is empty")
	case strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("the path %q holds a control character", p)
	case filepath.IsAbs(p):
		return fmt.Errorf("the path %q is not relative to the workspace", p)
	}
	return nil
}

// branchName is a branch name git takes as one (git check-ref-format
// --branch's rules, a little stricter).
var branchName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]*$`)

func checkBranch(name string) error {
	if !branchName.MatchString(name) || strings.Contains(name, "..") || strings.Contains(name, "//") || strings.HasSuffix(name, "/") ||
		strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") || strings.Contains(name, "/.") || len(name) > 200 {
		return fmt.Errorf("%q is not a branch name rein takes (letters, digits, . _ / -, not starting with - or ., no .., not ending in / or .lock)", name)
	}
	return nil
}

// git runs the git line of words (quoted here) as the shell tool would,
// with GitEnv, in a read-only sandbox for a read-only built-in.
func (c *Call) git(ctx context.Context, readOnly bool, words ...string) *Result {
	quoted := make([]string, len(words))
	for i, w := range words {
		switch {
		case w == gitAnd:
			quoted[i] = "&&"
		case plainWord.MatchString(w):
			quoted[i] = w
		default:
			quoted[i] = gitQuote(w)
		}
	}
	line, err := shell.Parse(strings.Join(quoted, " "))
	if err != nil {
		return &Result{Status: Failed, Reason: "rein built a line its grammar refuses: " + err.Error()}
	}
	env, err := gitEnv(c.Router.cfg.Policy.Workspace)
	if err != nil {
		// A driver rein cannot switch off is one git may run: refused.
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	return c.command(context.WithValue(ctx, gitKey{}, gitRun{env: env, readOnly: readOnly}), line, "")
}

func gitSpecs() []*Spec {
	var specs []*Spec
	add := func(s *Spec, err error) {
		if err != nil {
			panic(err)
		}
		specs = append(specs, s)
	}
	add(Define("git_status", "Show the repository's branch and what changed: staged, not staged, untracked (git status --porcelain).", true, nil,
		func(ctx context.Context, c *Call, _ GitStatusArgs) *Result {
			return c.git(ctx, true, "git", "status", "--porcelain=v1", "--branch", "--untracked-files=all")
		}))
	add(Define("git_diff", "Show the working tree's changes against the index, or with staged the index's against HEAD, as a unified diff.", true, nil,
		func(ctx context.Context, c *Call, a GitDiffArgs) *Result {
			words := []string{"git", "diff", "--no-ext-diff", "--no-textconv", "--no-color"}
			if a.Staged {
				words = append(words, "--cached")
			}
			return c.gitPaths(ctx, true, words, a.Paths, false)
		}))
	add(Define("git_log", "Show the newest commits: hash, author, date and subject.", true, nil,
		func(ctx context.Context, c *Call, a GitLogArgs) *Result {
			n := a.Count
			if n <= 0 {
				n = 10
			}
			n = min(n, 200)
			words := []string{"git", "log", "--no-ext-diff", "--no-textconv", "--no-color", "-n", strconv.Itoa(n), "--format=%H %an %ad %s", "--date=short"}
			return c.gitPaths(ctx, true, words, a.Paths, false)
		}))
	add(Define("git_add", "Stage paths of the workspace for the next commit.", false, writeModes,
		func(ctx context.Context, c *Call, a GitAddArgs) *Result {
			return c.gitPaths(ctx, false, []string{"git", "add"}, a.Paths, true)
		}))
	add(Define("git_commit", "Commit what is staged, with the message. Hooks and signing do not run. The result names the commit's hash and shows its diff.", false, writeModes,
		func(ctx context.Context, c *Call, a GitCommitArgs) *Result {
			if strings.TrimSpace(a.Message) == "" || strings.ContainsRune(a.Message, 0) {
				return &Result{Status: Denied, Reason: "the commit message is empty or holds a NUL"}
			}
			res := c.git(ctx, false, "git", "commit", "--no-verify", "--no-gpg-sign", "--no-edit", "-m", a.Message, gitAnd,
				"git", "show", "--no-ext-diff", "--no-textconv", "--no-color", "--format=commit %H%n%n%B", "--stat", "-p", "HEAD")
			if res.Status == OK {
				if m := commitLine.FindStringSubmatch(res.Output); m != nil {
					res.Changed, res.Diff = []string{"commit " + m[1]}, res.Output
				}
			}
			return res
		}))
	add(Define("git_branch", "Create a branch from HEAD, switch to one, or both. A switch that would change a protected file is refused.", false, writeModes,
		func(ctx context.Context, c *Call, a GitBranchArgs) *Result {
			if err := checkBranch(a.Name); err != nil {
				return &Result{Status: Denied, Reason: err.Error()}
			}
			switch {
			case a.Create && a.Switch:
				return c.Router.madeBranch(a.Name, c.git(ctx, false, "git", "switch", "--no-guess", "-c", a.Name))
			case a.Create:
				return c.Router.madeBranch(a.Name, c.git(ctx, false, "git", "branch", "--", a.Name))
			case a.Switch:
				if why := c.switchChanges(ctx, a.Name); why != "" {
					return &Result{Status: Denied, Reason: why}
				}
				return c.git(ctx, false, "git", "switch", "--no-guess", a.Name)
			}
			return &Result{Status: Denied, Reason: "say create, switch or both"}
		}))
	add(Define("git_merge", "Merge a branch this run made (git_branch) into the current one. A merge that would change a protected file is refused; a conflict is left for you to resolve and commit.", false, writeModes,
		func(ctx context.Context, c *Call, a GitMergeArgs) *Result {
			if err := checkBranch(a.Branch); err != nil {
				return &Result{Status: Denied, Reason: err.Error()}
			}
			if !c.Router.hasBranch(a.Branch) {
				return &Result{Status: Denied, Reason: fmt.Sprintf("%s is not a branch this run made with git_branch: git_merge merges only those", a.Branch)}
			}
			if why := c.mergeChanges(ctx, a.Branch); why != "" {
				return &Result{Status: Denied, Reason: why}
			}
			return c.git(ctx, false, "git", "merge", "--no-ff", "--no-edit", "--no-verify", "--no-gpg-sign", "-m", "Merge branch '"+a.Branch+"'", "refs/heads/"+a.Branch)
		}))
	add(worktreeSpec())
	return specs
}

// madeBranch notes a branch the run made, when res says it was.
func (r *Router) madeBranch(name string, res *Result) *Result {
	if res.Status == OK {
		r.noteBranch(name)
	}
	return res
}

// NoteBranch lets git_merge take branch, one rein made for the run
// itself (a child run's worktree branch, found again after the run's
// driver died).
func (r *Router) NoteBranch(branch string) { r.noteBranch(branch) }

func (r *Router) noteBranch(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.branches == nil {
		r.branches = map[string]bool{}
	}
	r.branches[name] = true
}

func (r *Router) hasBranch(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.branches[name]
}

// mergeChanges says why a merge of branch is refused: the changes it
// brings (the branch's since the merge base) touch a file the policy
// protects, or cannot be read.
func (c *Call) mergeChanges(ctx context.Context, branch string) string {
	return c.protectedIn(ctx, fmt.Sprintf("merging %s", branch), "HEAD...refs/heads/"+branch)
}

// gitPaths runs words with the paths after --; need says at least one.
func (c *Call) gitPaths(ctx context.Context, readOnly bool, words, paths []string, need bool) *Result {
	if need && len(paths) == 0 {
		return &Result{Status: Denied, Reason: "name the paths"}
	}
	for _, p := range paths {
		if err := gitPath(p); err != nil {
			return &Result{Status: Denied, Reason: err.Error()}
		}
	}
	if len(paths) > 0 {
		words = append(append(words, "--"), paths...)
	}
	return c.git(ctx, readOnly, words...)
}

// switchChanges says why a switch to branch is refused: it would change a
// file the policy protects (the run's protect globs among them), or the
// difference cannot be read.
func (c *Call) switchChanges(ctx context.Context, branch string) string {
	return c.protectedIn(ctx, "switching to "+branch, "HEAD", "refs/heads/"+branch)
}

// protectedIn says why what, whose changes git diff of revs names, is
// refused: it would change a file the policy protects, or its changes
// cannot be read.
func (c *Call) protectedIn(ctx context.Context, what string, revs ...string) string {
	// No rename detection: a protected file renamed away is a change of
	// it.
	words := append([]string{"git", "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-only", "-z"}, revs...)
	res := c.git(ctx, true, append(words, "--")...)
	if res.Status != OK {
		return what + ": its changes could not be read: " + res.Reason
	}
	// Every name ends with a NUL: what follows the last (what git said
	// on stderr) is no name, whatever a name holds.
	names := strings.Split(res.Output, "\x00")
	names = names[:len(names)-1]
	p := c.Router.cfg.Policy
	for _, f := range names {
		if f == "" {
			continue
		}
		if v := p.CheckPath(policy.ActWrite, filepath.Join(p.Workspace, f)); v.Decision == policy.Deny {
			return fmt.Sprintf("%s would change %s, which the policy protects (%s)", what, f, v.Reason)
		}
	}
	return ""
}
