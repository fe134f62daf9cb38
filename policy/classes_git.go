package policy

import (
	"path"
	"slices"
	"strings"
)

// The class table's refinements for git: its commands, their options and what each reads or writes.

// Git.

// gitCommands is every command git ships, as listed by `git help -a` and
// `git --list-cmds=main,others,nohelpers,builtins` on git 2.39, with the
// commands added since. A subcommand outside this list is an alias or a
// git-NAME program on PATH, which the matcher cannot see.
var gitCommands = setOf(strings.Fields(`
	add am annotate apply archimport archive bisect blame branch bugreport bundle cat-file check-attr
	check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone
	column commit commit-graph commit-tree config count-objects credential credential-cache credential-store
	cvsexportcommit cvsimport cvsserver daemon describe diagnose diff diff-files diff-index diff-tree difftool
	fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo
	format-patch fsck fsck-objects gc get-tar-commit-id grep gui hash-object help hook http-backend http-fetch
	http-push imap-send index-pack init init-db instaweb interpret-trailers log ls-files ls-remote ls-tree
	mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-octopus merge-one-file
	merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-resolve merge-subtree
	merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes p4 pack-objects pack-redundant
	pack-refs patch-id pickaxe prune prune-packed pull push quiltimport range-diff read-tree rebase
	receive-pack reflog remote remote-ext remote-fd remote-ftp remote-ftps remote-http remote-https repack
	replace request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack shell
	shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace submodule
	subtree svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
	update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag version
	whatchanged worktree write-tree
	add--interactive bisect--helper checkout--worker credential-cache--daemon difftool--helper env--helper
	fsmonitor--daemon sh-i18n--envsubst submodule--helper upload-archive--writer web--browse
	backfill last-modified refs replay repo`)...)

// gitClasses classifies the git commands that are not Unknown.
var gitClasses = func() map[string]Class {
	m := make(map[string]Class)
	for class, names := range map[Class]string{
		ReadOnly: "status diff log show ls-files grep rev-parse blame version",
		WorkspaceMutating: `add stage commit checkout switch stash restore fetch push pull merge rebase
			cherry-pick revert reset rm mv init init-db clone am apply notes worktree gc prune repack pack-refs
			maintenance format-patch archive sparse-checkout submodule clean bisect`,
		ShellComplex: `filter-branch difftool difftool--helper mergetool instaweb send-email credential
			credential-cache credential-store credential-cache--daemon hook for-each-repo web--browse shell daemon`,
		Dangerous: "remote-ext remote-fd",
	} {
		for _, n := range strings.Fields(names) {
			m[n] = class
		}
	}
	return m
}()

var gitClassReasons = map[Class]string{
	ReadOnly:          "only reads the repository",
	WorkspaceMutating: "changes the repository or the working tree",
	ShellComplex:      "runs programs or hooks the matcher cannot see",
	Dangerous:         "runs a command through a transport",
	Unknown:           "is a git command the class table does not classify",
}

// gitGlobals is what git's global options, the words before the command,
// say.
type gitGlobals struct {
	// rest is the command and its arguments; -v and -h are turned into the
	// version and help commands they run.
	rest []string
	// n counts the words of global options, their values included.
	n int
	// complex says why the options make the command shell-complex; empty
	// when they do not.
	complex string
}

// gitGlobalValues are the global options that take a value, attached with
// = or as the next word; -c and -C only take the next word.
var gitGlobalValues = setOf("--git-dir", "--work-tree", "--config-env", "--namespace", "--super-prefix",
	"--attr-source")

// parseGitGlobals reads git's global options as git does: by exact name,
// never abbreviated.
func parseGitGlobals(args []string) gitGlobals {
	var g gitGlobals
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, _, hasValue := strings.Cut(a, "=")
		switch name {
		case "-c", "-C":
			g.complex = "git " + a + " changes the configuration or repository git runs with"
		case "--git-dir", "--work-tree", "--config-env":
			g.complex = "git " + name + " changes the configuration or repository git runs with"
		case "--exec-path", "--bare":
			g.complex = "git " + name + " changes where git finds its programs or repository"
		case "-p", "--paginate":
			g.complex = "git " + name + " runs the configured pager"
		case "--namespace", "--super-prefix", "--attr-source", "-P", "--no-pager", "--no-replace-objects",
			"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
			"--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--list-cmds", "--html-path",
			"--man-path", "--info-path":
		case "-v", "--version":
			g.rest, g.n = append([]string{"version"}, args[i+1:]...), i+1
			return g
		case "-h", "--help":
			g.rest, g.n = append([]string{"help"}, args[i+1:]...), i+1
			return g
		default:
			g.complex = "git " + name + " is not a global option git documents"
		}
		if name == "-c" || name == "-C" || gitGlobalValues[name] && !hasValue {
			i++
		}
	}
	if i < len(args) {
		g.rest = args[i:]
	}
	g.n = min(i, len(args))
	return g
}

// gitCanonical returns a git argv with its global options and their values
// removed (git --no-pager push becomes git push), so that a rule naming a
// git command also matches it when global options precede it. It returns
// nil when argv is not git or has no global options.
func gitCanonical(argv []string) []string {
	if sub, ok := gitMultiCall(argv); ok {
		// git-push origin is git push origin to a rule.
		return append([]string{"git", sub}, argv[1:]...)
	}
	if len(argv) < 2 || path.Base(argv[0]) != "git" {
		return nil
	}
	g := parseGitGlobals(argv[1:])
	if g.n == 0 {
		return nil
	}
	return append([]string{argv[0]}, g.rest...)
}

// gitTransports are the commands that reach another repository and take
// the name of the program to run at its end (--upload-pack,
// --receive-pack, --exec).
var gitTransports = setOf("push", "fetch", "pull", "clone", "ls-remote", "archive", "send-pack", "fetch-pack")

// refineGit reads git's global options, then its subcommand. Global options
// that load configuration or another repository can make any git command
// run arbitrary programs (core.pager, core.fsmonitor, hooks).
// gitMultiCall reports the command a git multi-call name runs: git-stash,
// /usr/lib/git-core/git-upload-pack.
func gitMultiCall(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	sub, ok := strings.CutPrefix(path.Base(argv[0]), "git-")
	return sub, ok && sub != ""
}

// gitReadFiles are options of git's commands whose value is a file git
// reads: a list of revisions to ignore, patterns, an order file, the
// contents to blame.
var gitReadFiles = map[string][]string{
	"blame":        {"S", "ignore-revs-file", "contents"},
	"annotate":     {"S", "ignore-revs-file", "contents"},
	"grep":         {"f"},
	"ls-files":     {"X", "exclude-from"},
	"log":          {"O"},
	"show":         {"O"},
	"diff":         {"O"},
	"whatchanged":  {"O"},
	"format-patch": {"O"},
	"diff-tree":    {"O"},
	"diff-index":   {"O"},
	"diff-files":   {"O"},
}

// gitFileValues returns the values of a command's file options: -S FILE,
// -SFILE, --opt FILE, --opt=FILE.
func gitFileValues(sub string, args []string) []string {
	var out []string
	opts := gitReadFiles[sub]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, o := range opts {
			switch {
			case len(o) == 1 && a == "-"+o:
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
			case len(o) == 1 && strings.HasPrefix(a, "-"+o) && !strings.HasPrefix(a, "--"):
				out = append(out, a[2:])
			case len(o) > 1 && a == "--"+o:
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
			case len(o) > 1 && strings.HasPrefix(a, "--"+o+"="):
				out = append(out, a[len(o)+3:])
			}
		}
	}
	return out
}

func refineGit(c *classCall) {
	if sub, ok := gitMultiCall([]string{c.name}); ok {
		// git's multi-call names run the command they name.
		c.args = append([]string{sub}, c.args...)
	}
	g := parseGitGlobals(c.args)
	sub, rest := "", []string(nil)
	if len(g.rest) > 0 {
		sub, rest = g.rest[0], g.rest[1:]
	}
	switch class, known := gitClasses[sub]; {
	case sub == "":
		c.set(ReadOnly, "git without a command prints its usage")
	case !gitCommands[sub]:
		c.set(ShellComplex, "git "+sub+" is not a git command; it may be an alias")
	case known:
		c.set(class, "git "+sub+" "+gitClassReasons[class])
	default:
		c.set(Unknown, "git "+sub+" "+gitClassReasons[Unknown])
	}
	if refine := gitRefinements[sub]; refine != nil && gitCommands[sub] {
		refine(c, rest)
	}
	if out := gitOutputs(rest); len(out) > 0 {
		c.writes(out...)
		c.raise(WorkspaceMutating, "git "+sub+" --output writes a file")
	}
	c.reads(gitPathspecFiles(rest)...)
	c.reads(gitFileValues(sub, rest)...)
	checkGitOptions(c, sub, rest)
	if g.complex != "" {
		c.raise(ShellComplex, g.complex)
	}
	for _, a := range c.args {
		lower := strings.ToLower(a)
		switch {
		case strings.Contains(lower, "ext::") || strings.Contains(lower, "fd::"):
			c.raise(Dangerous, "git with an ext:: or fd:: transport runs a command")
		case strings.HasPrefix(a, "--upload-pack") || strings.HasPrefix(a, "--receive-pack"):
			c.raise(Dangerous, "git "+strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")+" runs a command")
		}
	}
	if gitTransports[sub] {
		for _, a := range rest {
			if a == "--" {
				break
			}
			if gitLongAbbrev(a, "upload-pack", "receive-pack", "exec") {
				c.raise(Dangerous, "git "+sub+" "+a+" names a program to run")
			}
		}
	}
}

// gitLongAbbrev reports whether a word is a long option that git could read
// as one of the named ones: git's option parser takes any unambiguous
// prefix (--upl for --upload-pack, even --u where nothing else begins with
// u). A prefix that is ambiguous is counted too, since what else git knows
// varies between versions.
func gitLongAbbrev(word string, names ...string) bool {
	opt, ok := strings.CutPrefix(word, "--")
	if !ok {
		return false
	}
	opt, _, _ = strings.Cut(opt, "=")
	if opt == "" {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, opt) {
			return true
		}
	}
	return false
}

// gitPathspecFiles returns the files of --pathspec-from-file, which add,
// commit, checkout, reset, restore, rm and stash read.
func gitPathspecFiles(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name == "--pathspec-from-file" || len(name) > len("--pathspec-f") && strings.HasPrefix("--pathspec-from-file", name) {
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			out = append(out, value)
		}
	}
	return out
}

// gitOutputs returns the files named by --output, before any "--".
func gitOutputs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return out
		case a == "--output":
			if i+1 < len(args) {
				out = append(out, args[i+1])
			}
			i++
		case strings.HasPrefix(a, "--output="):
			out = append(out, a[len("--output="):])
		}
	}
	return out
}

var gitRefinements = map[string]func(*classCall, []string){
	"push":      refineGitPush,
	"reset":     refineGitReset,
	"clean":     refineGitClean,
	"clone":     refineGitClone,
	"init":      refineGitInit,
	"init-db":   refineGitInit,
	"rebase":    refineGitRebase,
	"bisect":    refineGitSubcommand("run", "git bisect run runs a command at every step"),
	"submodule": refineGitSubcommand("foreach", "git submodule foreach runs a command in every submodule"),
	"config":    refineGitConfig,
	"grep":      refineGitGrep,
	"diff":      refineGitDiff,
	"log":       refineGitPathsAfterDashes,
	"show":      refineGitPathsAfterDashes,
	"blame":     refineGitBlame,
	"commit":    refineGitMessageFile(&gitCommitArgs),
	"tag":       refineGitMessageFile(&gitTagArgs),
	"notes":     refineGitNotes,
	"hash-object": func(c *classCall, args []string) {
		c.reads(gitHashObjectArgs.scan(args).operands()...)
	},
	"archive":   refineGitArchive,
	"ls-remote": refineGitLsRemote,
	"fetch-pack": func(c *classCall, args []string) {
		refineGitExec(c, args)
	},
	"send-pack": refineGitSendPack,
	"format-patch": func(c *classCall, args []string) {
		c.writes(gitFormatPatchArgs.scan(args).values("o", "output-directory")...)
	},
}

var gitFormatPatchArgs = argSpec{values: "ov", long: longs("output-directory=", "start-number=", "subject-prefix=",
	"suffix=", "in-reply-to=", "attach?", "inline?", "thread?", "signature=", "signature-file=", "base=",
	"from?", "to=", "cc=", "add-header=", "reroll-count=", "interdiff=", "range-diff=", "creation-factor=",
	"filename-max-length=", "cover-letter", "numbered", "no-numbered", "stdout", "rfc?")}

// refineGitExec catches --exec in any abbreviation, which names the
// program git runs on the other side of a transport.
func refineGitExec(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "exec") {
			c.raise(Dangerous, "git --exec runs a command")
		}
	}
}

// refineGitSendPack reads send-pack like push, whose plumbing it is: it
// pushes without the checks and hooks of git push, and force-pushes with
// --force, -f or a +refspec.
func refineGitSendPack(c *classCall, args []string) {
	c.raise(ShellComplex, "git send-pack pushes without the checks of git push")
	refineGitPush(c, args)
}

var gitPushArgs = argSpec{values: "o", long: longs("repo=", "all", "branches", "mirror", "delete", "tags",
	"dry-run", "porcelain", "force", "force-with-lease?", "force-if-includes", "recurse-submodules=", "thin",
	"receive-pack=", "exec=", "set-upstream", "progress", "prune", "no-verify", "verify", "follow-tags",
	"signed?", "atomic", "push-option=", "verbose", "quiet", "ipv4", "ipv6", "no-force-with-lease",
	"no-force-if-includes", "no-thin", "no-signed", "no-atomic", "no-follow-tags")}

// refineGitPush makes a force push dangerous in every spelling: -f in a
// cluster, --force*, --mirror (which force-updates every ref) and a
// refspec beginning with +.
func refineGitPush(c *classCall, args []string) {
	refineGitExec(c, args)
	ws := gitPushArgs.scan(args)
	for _, w := range ws {
		switch {
		case w.opt == "":
			if strings.HasPrefix(w.text, "+") {
				c.raise(Dangerous, "git push "+w.text+" force-pushes")
			}
		case w.opt == "f" || strings.HasPrefix(w.opt, "force") ||
			gitLongAbbrev(w.text, "force-with-lease", "force-if-includes"):
			c.raise(Dangerous, "git push --force rewrites the remote")
		case w.opt == "mirror" || gitLongAbbrev(w.text, "mirror"):
			c.raise(Dangerous, "git push --mirror rewrites every remote ref")
		}
	}
}

func refineGitReset(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "hard") {
			c.raise(Dangerous, "git reset --hard discards uncommitted work")
		}
	}
}

var gitCleanArgs = argSpec{values: "e", long: longs("force", "dry-run", "interactive", "quiet", "exclude=")}

func refineGitClean(c *classCall, args []string) {
	for _, w := range gitCleanArgs.scan(args) {
		if w.opt == "f" || gitLongAbbrev(w.text, "force") {
			c.raise(Dangerous, "git clean -f deletes untracked files")
		}
	}
}

var gitCloneArgs = argSpec{values: "bcjou", long: longs("template=", "local", "shared", "no-hardlinks", "quiet",
	"verbose", "progress", "no-checkout", "bare", "mirror", "origin=", "branch=", "upload-pack=", "reference=",
	"reference-if-able=", "dissociate", "separate-git-dir=", "depth=", "shallow-since=", "shallow-exclude=",
	"single-branch", "no-single-branch", "no-tags", "recurse-submodules?", "shallow-submodules", "jobs=",
	"config=", "server-option=", "filter=", "sparse", "remote-submodules", "bundle-uri=", "ref-format=",
	"revision=", "also-filter-submodules", "reject-shallow")}

// refineGitClone catches -u (another spelling of --upload-pack), and -c and
// --template: configuration and hooks that the clone itself already uses.
func refineGitClone(c *classCall, args []string) {
	for _, w := range gitCloneArgs.scan(args) {
		switch {
		case w.opt == "u":
			c.raise(Dangerous, "git clone -u runs a command")
		case w.opt == "c" || gitLongAbbrev(w.text, "config", "template"):
			c.raise(ShellComplex, "git clone "+w.text+" sets configuration or hooks the clone runs")
		}
	}
}

// refineGitInit catches --template, which installs hooks into .git/hooks.
func refineGitInit(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "template") {
			c.raise(ShellComplex, "git init --template installs hooks")
		}
	}
}

var gitRebaseArgs = argSpec{values: "sXx", optional: "CS", long: longs("exec=", "strategy=", "strategy-option=",
	"onto=", "interactive", "merge", "quiet", "verbose", "keep-base", "continue", "abort", "skip", "quit",
	"edit-todo", "show-current-patch", "apply", "empty=", "keep-empty", "no-keep-empty", "allow-empty-message",
	"autosquash", "no-autosquash", "autostash", "no-autostash", "rebase-merges?", "root", "update-refs",
	"signoff", "gpg-sign?", "committer-date-is-author-date", "reset-author-date", "ignore-whitespace",
	"whitespace=", "force-rebase", "no-ff", "fork-point", "no-fork-point", "reschedule-failed-exec",
	"no-reschedule-failed-exec", "stat", "no-stat", "no-verify", "verify")}

func refineGitRebase(c *classCall, args []string) {
	for _, w := range gitRebaseArgs.scan(args) {
		if w.opt == "x" || w.opt == "exec" || gitLongAbbrev(w.text, "exec") {
			c.raise(ShellComplex, "git rebase --exec runs a command after every commit")
		}
	}
}

// refineGitSubcommand makes one subcommand of a git command (bisect run,
// submodule foreach) shell-complex.
func refineGitSubcommand(word, reason string) func(*classCall, []string) {
	return func(c *classCall, args []string) {
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				if a == word {
					c.raise(ShellComplex, reason)
				}
				return
			}
		}
	}
}

var gitConfigArgs = argSpec{values: "f", long: longs("global", "system", "local", "worktree", "file=", "blob=",
	"get", "get-all", "get-regexp", "get-urlmatch", "replace-all", "add", "unset", "unset-all",
	"rename-section", "remove-section", "list", "fixed-value", "edit", "get-color", "get-colorbool", "null",
	"name-only", "show-origin", "show-scope", "type=", "bool", "int", "bool-or-int", "path", "expiry-date",
	"no-type", "includes", "no-includes", "default=", "comment=", "all", "regexp", "value=", "url=")}

// refineGitConfig makes setting configuration shell-complex: it can name the
// programs git runs (core.pager, core.hooksPath, alias.*).
func refineGitConfig(c *classCall, args []string) {
	ws := gitConfigArgs.scan(args)
	ops := ws.operands()
	write := ws.has("replace-all", "add", "unset", "unset-all", "rename-section", "remove-section", "e", "edit")
	for _, w := range ws {
		if w.opt != "" && gitLongAbbrev(w.text, "replace-all", "add", "unset", "unset-all", "rename-section",
			"remove-section", "edit") {
			write = true
		}
	}
	read := ws.has("get", "get-all", "get-regexp", "get-urlmatch", "l", "list", "get-color", "get-colorbool")
	if len(ops) > 0 {
		switch ops[0] {
		case "get", "list":
			read = true
		case "set", "unset", "rename-section", "remove-section", "edit":
			write = true
		}
	}
	if !read && len(ops) >= 2 {
		write = true
	}
	files := ws.values("f", "file")
	if write {
		c.writes(files...)
		c.raise(ShellComplex, "git config can set the programs git runs")
		return
	}
	c.reads(files...)
}

var gitGrepArgs = argSpec{values: "efABCm", optional: "O", long: longs("open-files-in-pager?", "max-depth=",
	"threads=", "context=", "after-context=", "before-context=", "max-count=", "color?", "cached", "no-index",
	"untracked", "no-exclude-standard", "exclude-standard", "recurse-submodules", "text", "textconv",
	"no-textconv", "ignore-case", "word-regexp", "invert-match", "full-name", "extended-regexp", "basic-regexp",
	"perl-regexp", "fixed-strings", "line-number", "column", "files-with-matches", "name-only",
	"files-without-match", "null", "only-matching", "count", "break", "heading", "show-function",
	"function-context", "and", "or", "not", "all-match", "quiet")}

func refineGitGrep(c *classCall, args []string) {
	ws := gitGrepArgs.scan(args)
	open := ws.has("O", "open-files-in-pager")
	for _, w := range ws {
		open = open || w.opt != "" && gitLongAbbrev(w.text, "open-files-in-pager")
	}
	if open {
		c.raise(ShellComplex, "git grep -O runs a program on the matching files")
	}
	if !ws.has("no-index") {
		return
	}
	files := ws.values("f")
	c.reads(files...)
	ops := ws.operands()
	if !ws.has("e") && len(files) == 0 && len(ops) > 0 {
		ops = ops[1:]
	}
	c.reads(ops...)
}

// gitDiffValues are the diff options that take the next word as their
// value when none is attached; it is not a path git compares.
var gitDiffValues = setOf("-S", "-G", "-I", "--output", "--skip-to", "--rotate-to", "--find-object",
	"--anchored", "--word-diff-regex", "--diff-algorithm", "--ws-error-highlight", "--color-moved-ws",
	"--src-prefix", "--dst-prefix", "--line-prefix", "--inter-hunk-context", "--output-indicator-new",
	"--output-indicator-old", "--output-indicator-context", "--ignore-matching-lines", "--diff-filter",
	"--stat-width", "--stat-name-width", "--stat-graph-width", "--stat-count")

// refineGitDiff records every operand as a read: git diff switches to
// --no-index by itself when a path lies outside the repository, so any
// operand that is not a revision may be a file anywhere on the machine.
// The -O order file is read too.
func refineGitDiff(c *classCall, args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.reads(args[i+1:]...)
			return
		case a == "-" || !strings.HasPrefix(a, "-"):
			c.reads(a)
		case a == "-O" && i+1 < len(args):
			i++
			c.reads(args[i])
		case strings.HasPrefix(a, "-O"):
			c.reads(a[2:])
		case gitDiffValues[a]:
			i++
		}
	}
}

// refineGitPathsAfterDashes records the paths after "--" of log and show,
// which may name files outside the repository.
func refineGitPathsAfterDashes(c *classCall, args []string) {
	if k := slices.Index(args, "--"); k >= 0 {
		c.reads(args[k+1:]...)
	}
}

// refineGitBlame records the paths after "--" and the file of --contents,
// which blame reads in place of the working tree's copy.
func refineGitBlame(c *classCall, args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.reads(args[i+1:]...)
			return
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name == "--contents" || len(name) > len("--con") && strings.HasPrefix("--contents", name) {
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.reads(value)
		}
	}
}

var (
	gitCommitArgs = argSpec{values: "CcFmt", optional: "uS", long: longs("file=", "template=", "message=",
		"reuse-message=", "reedit-message=", "fixup=", "squash=", "author=", "date=", "cleanup=", "trailer=",
		"pathspec-from-file=", "untracked-files?", "gpg-sign?", "all", "patch", "short", "branch", "porcelain",
		"long", "null", "reset-author", "signoff", "no-verify", "verify", "allow-empty", "allow-empty-message",
		"edit", "no-edit", "amend", "include", "only", "verbose", "quiet", "dry-run", "status", "no-status")}
	gitTagArgs = argSpec{values: "Fmu", optional: "n", long: longs("file=", "message=", "local-user=",
		"cleanup=", "sort=", "format=", "contains=", "no-contains=", "merged=", "no-merged=", "points-at=",
		"column?", "color?", "trailer=", "annotate", "sign", "delete", "verify", "list", "force", "create-reflog",
		"ignore-case", "omit-empty", "edit", "no-edit")}
	gitNotesArgs = argSpec{values: "FmCc", long: longs("file=", "message=", "reuse-message=",
		"reedit-message=", "ref=", "separator?", "force", "allow-empty", "no-separator", "stripspace",
		"no-stripspace")}
	gitHashObjectArgs = argSpec{values: "t", long: longs("path=", "stdin", "stdin-paths", "no-filters",
		"literally")}
)

// refineGitMessageFile records the message and template files of commit
// and tag (-F FILE, --file=FILE, -t FILE).
func refineGitMessageFile(spec *argSpec) func(*classCall, []string) {
	return func(c *classCall, args []string) {
		ws := spec.scan(args)
		c.reads(ws.values("F", "file", "template")...)
		if spec == &gitCommitArgs {
			c.reads(ws.values("t")...)
		}
	}
}

// refineGitNotes records the message files of notes add, append and edit.
func refineGitNotes(c *classCall, args []string) {
	c.reads(gitNotesArgs.scan(args).values("F", "file")...)
}

var gitArchiveArgs = argSpec{values: "o", long: longs("output=", "remote=", "exec=", "format=", "prefix=",
	"add-file=", "add-virtual-file=", "mtime=", "list", "verbose", "worktree-attributes")}

func refineGitArchive(c *classCall, args []string) {
	ws := gitArchiveArgs.scan(args)
	c.writes(ws.values("o")...)
	c.reads(ws.values("add-file")...)
	if ws.has("exec") {
		c.raise(Dangerous, "git archive --exec runs a command")
	}
}

var gitLsRemoteArgs = argSpec{values: "ou", long: longs("heads", "tags", "branches", "refs", "upload-pack=",
	"exit-code", "get-url", "symref", "sort=", "server-option=", "quiet")}

func refineGitLsRemote(c *classCall, args []string) {
	if gitLsRemoteArgs.scan(args).has("u") {
		c.raise(Dangerous, "git ls-remote -u runs a command")
	}
}
