package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/shell"
)

// Limits on a Bash command the hook will parse: a longer one is denied
// rather than risk the hook's own memory or time.
const (
	maxCommandBytes = 64 << 10
	maxSeparators   = 1000
)

// shellBuiltins are the words whose meaning in bash or zsh differs from
// the program of the same name that rein's policy decides: Claude Code's
// Bash runs them in a real shell, outside rein's sandbox, where for
// example printf -v evaluates an array subscript as code and hash or
// pushd change what later words mean.
var shellBuiltins = map[string]string{
	"hash": "changes which program a name runs", "enable": "loads and switches shell builtins",
	"pushd": "changes the directory, invisibly to the policy", "popd": "changes the directory, invisibly to the policy",
	"dirs": "", "fc": "runs commands from the history", "ulimit": "changes the shell's limits", "umask": "changes the shell's file mode mask",
	"read": "evaluates an array subscript as code", "mapfile": "runs a callback and evaluates subscripts", "readarray": "runs a callback and evaluates subscripts",
	"wait": "evaluates its -p name as a subscript", "noglob": "zsh precommand modifier", "nocorrect": "zsh precommand modifier",
	"-": "zsh precommand modifier", "repeat": "zsh loop", "zmodload": "loads zsh modules", "setopt": "changes zsh options", "unsetopt": "changes zsh options",
	"sched": "schedules commands", "shopt": "changes bash options", "bind": "changes key bindings and can run commands", "complete": "registers completions that run commands",
	"compgen": "evaluates words", "caller": "", "disown": "", "suspend": "", "times": "", "let": "evaluates arithmetic, and subscripts, as code",
	"typeset": "declares variables", "local": "declares variables", "readonly": "declares variables", "unset": "removes variables and functions",
	"getopts": "evaluates its name as a subscript", "coproc": "starts a coprocess",
}

// bashRisk says why a stage means something else in bash than to rein,
// or "" when it does not.
func bashRisk(st *shell.Stage) string {
	if st.Kind != shell.Command || len(st.Argv) == 0 {
		return ""
	}
	name := st.Argv[0]
	if strings.HasPrefix(name, "=") {
		return fmt.Sprintf("%q is zsh's =command expansion", name)
	}
	if why, ok := shellBuiltins[name]; ok {
		if why == "" {
			why = "a shell builtin rein does not model"
		}
		return fmt.Sprintf("%s is a shell builtin in the agent's shell (%s)", name, why)
	}
	// printf and test are builtins too; only these flags make them more
	// than the programs.
	for _, a := range st.Argv[1:] {
		if a == "--" {
			break
		}
		switch {
		case name == "printf" && strings.HasPrefix(a, "-v"):
			return "printf -v in bash evaluates the name's array subscript as code"
		case (name == "test" || name == "[" || name == "[[") && a == "-v":
			return name + " -v in bash evaluates the name's array subscript as code"
		}
	}
	return ""
}

// checkBash refuses what the policy cannot decide for a real shell: a
// command too large to parse safely, builtins whose shell meaning differs,
// and a cd whose target is a different directory to bash (which resolves
// .. against the path as written) than to the policy (which resolves it
// on disk, through links).
func checkBash(cmd string, line *shell.Line, cwd, home string) string {
	for _, st := range stages(line) {
		if why := bashRisk(st); why != "" {
			return why
		}
	}
	dir := cwd
	for _, st := range stages(line) {
		if st.Kind != shell.Cd {
			continue
		}
		target := st.Dir
		if target == "" {
			target = home
		}
		if !filepath.IsAbs(target) {
			// Not filepath.Join, which would clean the .. away.
			target = dir + "/" + target
		}
		if os.Getenv("CDPATH") != "" && !filepath.IsAbs(st.Dir) {
			return "cd with CDPATH set may go somewhere other than the directory named"
		}
		logical := filepath.Clean(target)
		physical, err := filepath.EvalSymlinks(target)
		if err == nil {
			if l, err2 := filepath.EvalSymlinks(logical); err2 != nil || l != physical {
				return fmt.Sprintf("cd %s goes to %s in bash (.. taken as written) but to %s on disk (through a link)", st.Dir, logical, physical)
			}
		}
		dir = logical
	}
	return ""
}

func stages(line *shell.Line) []*shell.Stage {
	var out []*shell.Stage
	for _, p := range line.Pipelines {
		out = append(out, p.Stages...)
	}
	return out
}

// gitRepoOf is the repository git would use from dir: the nearest
// directory up from dir that has a .git (directory or file) or is itself
// a bare repository. ok is false when there is none.
func gitRepoOf(dir string) (repo string, bare, ok bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return filepath.Join(d, ".git"), false, true
		}
		if isBare(d) {
			return d, true, true
		}
		if d == filepath.Dir(d) {
			return "", false, false
		}
	}
}

func isBare(d string) bool {
	for _, f := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(d, f)); err != nil {
			return false
		}
	}
	return true
}

// checkGit asks before git runs on a repository other than the
// workspace's own .git directory: a repository the agent wrote (a .git
// file pointing elsewhere, a bare repository) carries a config git obeys,
// core.fsmonitor and hooks included. git is found wherever a stage may run
// it, not only as its program: behind any wrapper (timeout 5 git, nice
// git, xargs git), under its multi-call names (git-diff,
// /usr/lib/git-core/git-stash) and in the text a shell runs (sh -c '...').
func checkGit(line *shell.Line, cwd, workspace string) string {
	return checkGitDepth(line, cwd, workspace, 0)
}

// maxGitDepth bounds the shell texts inside shell texts checkGit reads.
const maxGitDepth = 4

func checkGitDepth(line *shell.Line, cwd, workspace string, depth int) string {
	return eachCommand(line, cwd, func(argv []string, dir string) string {
		return checkGitStage(argv, dir, workspace, depth)
	})
}

// eachCommand calls check with each command stage of line and the
// directory it runs in (the cds before it followed, as the policy resolves
// them), and returns the first reason check gives.
func eachCommand(line *shell.Line, cwd string, check func(argv []string, dir string) string) string {
	dir := cwd
	for _, st := range stages(line) {
		if st.Kind == shell.Cd {
			t := st.Dir
			if !filepath.IsAbs(t) {
				t = filepath.Join(dir, t)
			}
			dir = filepath.Clean(t)
			continue
		}
		if why := check(st.Argv, dir); why != "" {
			return why
		}
	}
	return ""
}

// isGitName reports whether a program's name runs git: git itself or
// one of its multi-call names (git-upload-pack, git-stash).
func isGitName(word string) bool {
	b := filepath.Base(word)
	return b == "git" || strings.HasPrefix(b, "git-")
}

// dirChangers are the options of wrappers and finders that run their
// command in another directory than the stage's.
var dirChangers = []string{"-C", "--chdir", "-execdir", "-okexecdir", "--wdir", "--directory", "--cwd"}

// checkGitStage checks one stage's words for a git that would use a
// repository other than the workspace's.
func checkGitStage(argv []string, dir, workspace string, depth int) string {
	for i, w := range argv {
		if i > 0 && depth < maxGitDepth && strings.Contains(w, "git") && strings.ContainsAny(w, " ;&|\n") {
			// Text a shell may run: read it as a line of its own. Text
			// given to a -c that does not parse cannot be vouched for;
			// other text (a commit message) is only checked when it does.
			inner, err := shell.Parser{}.Parse(w)
			if err != nil {
				if prev := argv[i-1]; strings.HasPrefix(prev, "-") && strings.HasSuffix(prev, "c") {
					return fmt.Sprintf("the text %q may run git, and rein cannot read it as a command line", truncate(w))
				}
				continue
			}
			if why := checkGitDepth(inner, dir, workspace, depth+1); why != "" {
				return why
			}
			continue
		}
		if !isGitName(w) {
			continue
		}
		for _, before := range argv[:i] {
			if name, _, ok := strings.Cut(before, "="); ok && strings.HasPrefix(name, "GIT_") && !strings.ContainsAny(name, "/ ") {
				// env GIT_DIR=… git, and any other variable of git's
				// own: it names another repository, config or program.
				return fmt.Sprintf("git runs with %s set, which may name a repository, config or program the hook cannot vouch for", name)
			}
			for _, o := range dirChangers {
				if before == o || strings.HasPrefix(before, o+"=") {
					return fmt.Sprintf("git runs behind %s, which moves it to a directory the hook cannot vouch for", before)
				}
			}
		}
		gitDir := dir
		for k := i + 1; k < len(argv); k++ {
			a := argv[k]
			switch {
			case a == "-C" && k+1 < len(argv):
				k++
				if t := argv[k]; filepath.IsAbs(t) {
					gitDir = filepath.Clean(t)
				} else {
					gitDir = filepath.Join(gitDir, t)
				}
				continue
			case a == "--git-dir" || a == "--work-tree" || strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
				return fmt.Sprintf("git %s names a repository the hook cannot vouch for", a)
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
		}
		if why := foreignRepo(gitDir, workspace); why != "" {
			return why
		}
	}
	return ""
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// foreignRepo says why git in dir would use a repository other than the
// workspace's own, or "".
func foreignRepo(dir, workspace string) string {
	own := filepath.Join(workspace, ".git")
	if fi, err := os.Lstat(own); err != nil || !fi.IsDir() {
		own = ""
	}
	// Claude Code's own environment is the command's: a repository named
	// there is the one git uses, wherever it runs.
	for _, name := range []string{"GIT_DIR", "GIT_COMMON_DIR"} {
		if v := getenv(name); v != "" && (own == "" || absIn(v, dir) != own) {
			return fmt.Sprintf("git would use %s=%s from the session's environment, not the workspace's own repository", name, truncate(v))
		}
	}
	if v := getenv("GIT_WORK_TREE"); v != "" && absIn(v, dir) != filepath.Clean(workspace) {
		return fmt.Sprintf("git would work on GIT_WORK_TREE=%s from the session's environment, not the workspace", truncate(v))
	}
	repo, bare, ok := gitRepoOf(dir)
	if v := getenv("GIT_DIR"); v != "" {
		repo, bare, ok = own, false, true
	}
	switch {
	case !ok:
	case bare:
		return fmt.Sprintf("git in %s would use the bare repository there, whose config git obeys", repo)
	case repo != own:
		return fmt.Sprintf("git in %s would use %s, not the workspace's own repository, and obey its config", dir, repo)
	default:
		return redirected(own)
	}
	return ""
}

// absIn is p made absolute against dir, cleaned.
func absIn(p, dir string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// getenv reads the hook's environment (a test replaces it).
var getenv = os.Getenv

// redirected says why the workspace's own git directory sends git to
// another one, or "": a commondir (git reads its config and hooks from the
// directory it names), or alternates (objects from elsewhere) that lead
// out of it.
func redirected(own string) string {
	if data, err := os.ReadFile(filepath.Join(own, "commondir")); err == nil {
		common := strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(own, common)
		}
		if filepath.Clean(common) != own {
			return fmt.Sprintf("the workspace's .git has a commondir naming %s, whose config and hooks git would obey", truncate(common))
		}
	}
	if data, err := os.ReadFile(filepath.Join(own, "objects", "info", "alternates")); err == nil {
		for line := range strings.Lines(string(data)) {
			alt := strings.TrimSpace(line)
			if alt == "" || strings.HasPrefix(alt, "#") {
				continue
			}
			if !filepath.IsAbs(alt) {
				alt = filepath.Join(own, "objects", alt)
			}
			if alt = filepath.Clean(alt); alt != own && !strings.HasPrefix(alt, own+string(filepath.Separator)) {
				return fmt.Sprintf("the workspace's .git borrows objects from %s (objects/info/alternates), which the hook cannot vouch for", truncate(alt))
			}
		}
	}
	return ""
}

// checkRecursive asks before a search reads a directory whole in Claude
// Code's shell: grep -r and rg read every file beneath it, the protected
// secrets among them (.env, keys) and, following links (-R, rg -L), files
// outside the workspace, none of which rein decides one by one. It is the
// Bash form of the Grep tool's rule.
func checkRecursive(line *shell.Line, cwd string) string {
	return eachCommand(line, cwd, func(argv []string, dir string) string {
		for i, w := range argv {
			name := filepath.Base(w)
			if name != "grep" && name != "egrep" && name != "fgrep" && name != "rg" {
				continue
			}
			args := argv[i+1:]
			if name != "rg" && !grepRecurses(args) {
				continue
			}
			operands := 0
			for _, a := range args {
				if strings.HasPrefix(a, "-") {
					continue
				}
				operands++
				p := a
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					return fmt.Sprintf("%s over the directory %s reads every file beneath it, the protected ones (.env, keys) too, which rein cannot decide one by one", name, a)
				}
			}
			// With no directory named, both search the working directory
			// (grep -r PATTERN, rg PATTERN).
			if operands <= 1 {
				return fmt.Sprintf("%s with no file named searches the working directory, the protected files (.env, keys) too, which rein cannot decide one by one", name)
			}
		}
		return ""
	})
}

// grepRecurses reports whether grep's words make it read directories:
// -r, -R, --recursive, --dereference-recursive, -d recurse.
func grepRecurses(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--recursive" || a == "--dereference-recursive" || a == "--directories=recurse":
			return true
		case a == "--directories" || a == "-d":
			if i+1 < len(args) && args[i+1] == "recurse" {
				return true
			}
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
			// A cluster: -rn holds -r; a value option ends it (-e, -f
			// and the like take the rest of the word).
			for _, ch := range a[1:] {
				if ch == 'r' || ch == 'R' {
					return true
				}
				if strings.ContainsRune("ABCDdefm", ch) {
					break
				}
			}
		}
	}
	return false
}
