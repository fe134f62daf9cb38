package policy

import (
	"fmt"
	"strings"
)

// The option allowlists of git's read-only commands (status, diff, log,
// show, ls-files, grep, rev-parse, blame, version), as for every other
// read-only program: an option a command's list does not have makes the
// stage unknown, and the options whose value is a file are reads or
// writes. The lists are git's own: what `git CMD --git-completion-helper`
// and `git rev-list -h` print, which the drift test compares them with,
// and the diff and revision options their manual lists. git takes
// --no-OPTION for every OPTION and abbreviations of the long ones.

// gitWords splits a list of option names: a name ending in = takes a value.
func gitWords(lists ...string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, strings.Fields(l)...)
	}
	return out
}

// gitDiffOptions are the diff options (git diff, log, show).
const gitDiffOptions = `patch unified= function-context raw patch-with-raw patch-with-stat numstat shortstat
	dirstat? cumulative dirstat-by-file? check summary name-only name-status stat? stat-width= stat-name-width=
	stat-graph-width= stat-count= compact-summary binary full-index color? ws-error-highlight= abbrev? src-prefix=
	dst-prefix= line-prefix= inter-hunk-context= output-indicator-new= output-indicator-old=
	output-indicator-context= break-rewrites? find-renames? irreversible-delete find-copies? find-copies-harder
	rename-empty follow minimal ignore-all-space ignore-space-change ignore-space-at-eol ignore-cr-at-eol
	ignore-blank-lines ignore-matching-lines= indent-heuristic patience histogram diff-algorithm= anchored=
	word-diff? word-diff-regex= color-words? color-moved? color-moved-ws= relative? text exit-code quiet ext-diff
	textconv ignore-submodules? submodule? ita-invisible-in-index ita-visible-in-index pickaxe-all pickaxe-regex
	rotate-to= skip-to= find-object= diff-filter= output= orderfile= prefix default-prefix renames
	no-prefix diff-merges= combined-all-paths cc dd remerge-diff merge-base no-index cached staged base ours theirs`

// gitRevOptions are the revision and formatting options (git log, show).
const gitRevOptions = `max-count= skip= since= after= until= before= max-age= min-age= author= committer= grep-reflog=
	grep= all-match invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp
	remove-empty merges min-parents= max-parents= first-parent exclude-first-parent-only not all branches?
	tags? remotes? glob= exclude= exclude-hidden= reflog alternate-refs single-worktree ignore-missing bisect
	stdin cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge boundary
	simplify-by-decoration full-history dense sparse simplify-merges ancestry-path? show-pulls date-order
	author-date-order topo-order reverse walk? do-walk pretty? format= abbrev-commit oneline encoding=
	expand-tabs? notes? show-notes? standard-notes show-signature relative-date date= parents children
	left-right graph show-linear-break? log-size count since-as-filter= source use-mailmap mailmap
	clear-decorations decorate? decorate-refs= decorate-refs-exclude= full-diff root objects objects-edge
	unpacked header timestamp in-commit-order object-names disk-usage? bisect-vars bisect-all`

// gitReadOnlyArgs are the layouts and allowlists of git's read-only
// commands, built from the lists above and each command's own.
var gitReadOnlyArgs = map[string]*argSpec{}

func init() {
	diffValues, diffOptional, diffFlags := "SGOl", "UMCBX", "pusRabwWDzqh0123"
	logValues, logFlags := "nLS", "icEFPgcmtrvz"
	add := func(cmd, values, optional, flags string, numeric bool, kinds map[string]valKind, lists ...string) {
		spec := &argSpec{values: values, optional: optional, long: map[string]optKind{}}
		for _, w := range gitWords(lists...) {
			for n, k := range longs(w) {
				spec.long[n] = k
			}
		}
		spec.long["help"] = optFlag
		spec.long["end-of-options"] = optFlag
		spec.allow = &allowlist{flags: flags, kinds: kinds, numeric: numeric}
		gitReadOnlyArgs[cmd] = spec
	}
	diffKinds := map[string]valKind{"output": valWrite, "O": valRead, "orderfile": valRead}
	add("diff", diffValues, diffOptional, diffFlags, false, diffKinds, gitDiffOptions)
	logKinds := map[string]valKind{"output": valWrite, "O": valRead, "orderfile": valRead}
	for _, cmd := range []string{"log", "show"} {
		add(cmd, diffValues+logValues, diffOptional, diffFlags+logFlags, true, logKinds, gitDiffOptions, gitRevOptions)
	}
	add("status", "", "uM", "vsbz", false, nil, `verbose short branch show-stash ahead-behind porcelain? long null
		untracked-files? ignored? ignore-submodules? column? find-renames? renames`)
	add("ls-files", "xX", "", "ztvfcdmoiskuh", false, map[string]valKind{"X": valRead, "exclude-from": valRead},
		`cached deleted modified others ignored stage killed directory eol empty-directory unmerged resolve-undo
		exclude= exclude-from= exclude-per-directory= exclude-standard full-name recurse-submodules error-unmatch
		with-tree= abbrev? debug deduplicate sparse format=`)
	// grep's -O runs a pager on the files; refineGitGrep makes it
	// shell-complex, and the list marks it never read-only.
	add("grep", "efABCm", "O", "viwaIrEGFPnhHlLzocNpWq", true, map[string]valKind{
		"f": valRead, "O": valNever, "open-files-in-pager": valNever,
	}, `cached no-index untracked exclude-standard recurse-submodules invert-match ignore-case word-regexp text
		textconv recursive max-depth= extended-regexp basic-regexp fixed-strings perl-regexp line-number column
		full-name files-with-matches name-only files-without-match only-matching count color? break heading
		context= before-context= after-context= threads= show-function function-context and or not quiet
		all-match max-count= index null open-files-in-pager? e= file=`)
	add("blame", "LS", "CM", "bfnpctlsewh", false, map[string]valKind{
		"S": valRead, "ignore-revs-file": valRead, "contents": valRead,
	}, `incremental root show-stats progress score-debug show-name show-number porcelain line-porcelain
		show-email ignore-rev= ignore-revs-file= color-lines color-by-age minimal contents= abbrev? date= reverse=
		first-parent encoding=`)
	add("version", "", "", "", false, nil, "build-options")
	add("rev-parse", "", "", "q", false, map[string]valKind{"resolve-git-dir": valRead}, `git-dir
		absolute-git-dir git-common-dir show-toplevel show-prefix show-cdup show-superproject-working-tree
		is-inside-work-tree is-inside-git-dir is-bare-repository is-shallow-repository shared-index-path verify
		quiet abbrev-ref? short? symbolic symbolic-full-name all branches? tags? remotes? glob= exclude=
		exclude-hidden= disambiguate= since= after= until= before= default= prefix= parseopt sq-quote sq not
		revs-only no-revs flags no-flags local-env-vars resolve-git-dir= git-path= path-format= show-object-format?
		stop-at-non-option keep-dashdash stuck-long`)
}

// checkGitOptions checks a read-only git command's words against its
// allowlist. --no-X is known when X is.
func checkGitOptions(c *classCall, sub string, args []string) {
	spec := gitReadOnlyArgs[sub]
	if spec == nil || c.f.Class != ReadOnly {
		return
	}
	var words []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if name, ok := strings.CutPrefix(a, "--no-"); ok {
			if n, _, _ := strings.Cut(name, "="); spec.knownLong(spec.longName(n)) {
				continue
			}
		}
		words = append(words, a)
	}
	inner := &classCall{f: c.f, name: "git " + sub, args: words, depth: c.depth, perFile: c.perFile}
	checkOptions(inner, spec)
	if c.f.Class == Unknown && strings.HasPrefix(c.f.Reason, "-") {
		c.f.Reason = fmt.Sprintf("%s (git %s's options are an allowlist)", c.f.Reason, sub)
	}
}
