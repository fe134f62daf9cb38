package files

import (
	"bytes"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// maxIgnoreBytes bounds how much of one .gitignore a walk reads: the rules
// are kept for the whole subtree, so a huge file must not grow the walk's
// memory with the tree.
const maxIgnoreBytes = 1 << 20

// ignoreRules are the .gitignore patterns in force in one directory of a
// walk: those of every .gitignore from the workspace root down to it, in
// increasing priority, each pattern scoped to the directory it came from.
// Matching is go-git's, which implements git's semantics (anchoring,
// negation, directory-only patterns, **) closely enough for a search and
// saves rein a parser of its own.
//
// Paths are matched as their components relative to the workspace root, so
// that the rules of a directory above the one a walk starts from apply the
// same way as git applies them.
type ignoreRules struct {
	patterns []gitignore.Pattern
	matcher  gitignore.Matcher
}

// ignored reports whether the entry at comps (relative to the root) is
// ignored. Like git, an ignored directory is not entered at all, so a
// negation cannot bring back a file below it.
func (r *ignoreRules) ignored(comps []string, isDir bool) bool {
	if r.matcher == nil {
		return false
	}
	return r.matcher.Match(comps, isDir)
}

// with returns the rules extended by the patterns of one more .gitignore,
// which take precedence over the ones already there. r itself is left as
// it is: it is still needed for the siblings of the directory.
func (r *ignoreRules) with(ps []gitignore.Pattern) *ignoreRules {
	if len(ps) == 0 {
		return r
	}
	all := make([]gitignore.Pattern, 0, len(r.patterns)+len(ps))
	all = append(append(all, r.patterns...), ps...)
	return &ignoreRules{patterns: all, matcher: gitignore.NewMatcher(all)}
}

// readIgnore reads the .gitignore called name in dir (one component, or a
// slash-separated path inside the root dir), scoping its patterns to domain,
// the components of its directory relative to the workspace root. A missing,
// unreadable or non-regular .gitignore (a link, say) has no rules: a walk
// must not fail, nor follow a link, because of one.
func readIgnore(dir *os.Root, name string, domain []string) []gitignore.Pattern {
	fi, err := dir.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	// O_NONBLOCK: a FIFO swapped in since the Lstat must not block the
	// open waiting for a writer.
	f, err := dir.OpenFile(name, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreBytes))
	if err != nil {
		return nil
	}
	return parseIgnore(data, domain)
}

// parseIgnore turns the text of a .gitignore into patterns scoped to domain:
// blank lines and comments (#) are dropped, and so is a carriage return
// ending a line.
func parseIgnore(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		s := strings.TrimSuffix(string(line), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(s, domain))
	}
	return ps
}

// ancestorIgnores returns the rules of every .gitignore in the directories
// above rel (slash-separated, relative to the root), from the root down; the
// .gitignore of rel itself is read when the walk lists rel.
//
// A walk that starts in a directory those rules ignore (build/, say, named
// on purpose) gets none of them: naming it is asking for what is in it, as
// with ripgrep, and the .gitignore files inside it still apply.
func ancestorIgnores(root *os.Root, rel string) *ignoreRules {
	rules := &ignoreRules{}
	if rel == "." || rel == "" {
		return rules
	}
	comps := strings.Split(rel, "/")
	for i := range comps {
		dir := strings.Join(comps[:i], "/")
		name := ".gitignore"
		if dir != "" {
			name = dir + "/" + name
		}
		rules = rules.with(readIgnore(root, name, comps[:i]))
	}
	for i := range comps {
		if rules.ignored(comps[:i+1], true) {
			return &ignoreRules{}
		}
	}
	return rules
}
