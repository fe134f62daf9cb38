package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is one (act, effect, pattern) of a policy, with where it came from.
type Rule struct {
	Act     Act
	Effect  Decision
	Pattern string
	// Match and NotMatch are examples the pattern must and must not match,
	// checked when the policy loads.
	Match    []string
	NotMatch []string

	Layer Layer
	File  string
	Line  int
}

func (r *Rule) attribution() *Attribution {
	return &Attribution{Rule: r.Pattern, Act: r.Act, Effect: r.Effect, Layer: r.Layer, File: r.File, Line: r.Line}
}

// ruleSet holds the compiled rules of one act and effect. Rules are
// compiled once when the policy loads; a check never compiles anything.
type ruleSet struct {
	rules []*Rule
	// exec, net and tool rules
	wild  []wildcard
	index prefixIndex
	// path rules: absolute doublestar patterns
	globs []string
	gidx  globIndex
}

// add compiles r into the set; home and root anchor path patterns.
func (s *ruleSet) add(r *Rule, home, root string) error {
	i := len(s.rules)
	s.rules = append(s.rules, r)
	if r.Act.isPath() {
		g, err := anchorGlob(r.Pattern, home, root)
		if err != nil {
			return err
		}
		s.globs = append(s.globs, g)
		s.gidx.add(g, i)
		return nil
	}
	w := compileWildcard(r.Pattern)
	s.wild = append(s.wild, w)
	s.index.add(w.literalPrefix(), i)
	if w.bare != "" && !strings.ContainsAny(w.bare, "*?") {
		// The bare form is shorter than the literal prefix of the pattern
		// ("rm" for "rm *"), so it needs its own entry to be found.
		s.index.add(w.bare, i)
	}
	return nil
}

// matchString returns the first rule (in load order, so strongest layer
// first) whose pattern matches any of the strings.
func (s *ruleSet) matchString(strs ...string) *Rule {
	best := -1
	for _, str := range strs {
		s.index.candidates(str, func(i int) bool {
			if (best < 0 || i < best) && s.wild[i].match(str) {
				best = i
			}
			return true
		})
	}
	if best < 0 {
		return nil
	}
	return s.rules[best]
}

// matchPath returns the first rule whose glob matches any of the paths.
func (s *ruleSet) matchPath(paths ...string) *Rule {
	best := -1
	for _, p := range paths {
		s.gidx.candidates(p, func(i int) bool {
			if (best < 0 || i < best) && globPathMatch(s.globs[i], p) {
				best = i
			}
			return true
		})
	}
	if best < 0 {
		return nil
	}
	return s.rules[best]
}

// globPathMatch matches an absolute path against an absolute doublestar
// pattern. A pattern naming a directory's contents (dir/**) also matches
// the directory itself, which is what a user protecting dir means.
func globPathMatch(g, p string) bool {
	// A name that is not UTF-8 (a file's, on disk) is matched with each
	// invalid byte as U+FFFD, which * and ? match: doublestar would
	// otherwise match none of it, and a protected file named so would not
	// be protected.
	ok, _ := doublestar.Match(g, strings.ToValidUTF8(p, "\uFFFD"))
	return ok
}

// anchorGlob makes a path pattern absolute: ~/ at home, / as written,
// **/ anywhere on the filesystem, anything else at the workspace root.
func anchorGlob(p, home, root string) (string, error) {
	if !doublestar.ValidatePattern(p) {
		return "", fmt.Errorf("invalid path pattern %q", p)
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return "", fmt.Errorf("path pattern %q needs HOME, which is not set", p)
		}
		return path.Join(home, strings.TrimPrefix(p, "~")), nil
	case strings.HasPrefix(p, "/"):
		return path.Clean(p), nil
	case strings.HasPrefix(p, "**/") || p == "**":
		return "/" + p, nil
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("path pattern %q: only ~ and ~/ are supported", p)
	}
	if root == "" {
		return "", fmt.Errorf("relative path pattern %q needs a workspace", p)
	}
	return path.Join(filepath.ToSlash(root), p), nil
}

// globPrefix is the literal directory prefix of an absolute glob.
func globPrefix(g string) string {
	i := strings.IndexAny(g, `*?[{\`)
	if i < 0 {
		return g
	}
	return g[:i]
}
