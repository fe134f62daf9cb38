package policy

import (
	"strings"
	"unicode/utf8"
)

// wildcard is a compiled exec, net or tool pattern: * is any run of
// characters (spaces and / included), ? is one character, everything else
// is literal; the match is anchored at both ends. A pattern ending in " *"
// also matches its bare prefix, so "rm *" matches "rm".
type wildcard struct {
	pattern string
	// bare is the prefix a trailing " *" also accepts exactly; empty when
	// the pattern does not end in " *".
	bare string
	// must is the longest literal run of the pattern: a string without it
	// cannot match, which rejects most candidates before globMatch runs.
	must string
}

func compileWildcard(p string) wildcard {
	w := wildcard{pattern: p}
	if strings.HasSuffix(p, " *") {
		w.bare = strings.TrimSuffix(p, " *")
	}
	// Both forms of a pattern with a bare prefix contain the bare prefix's
	// literal runs, so must comes from there.
	src := p
	if w.bare != "" {
		src = w.bare
	}
	for _, run := range strings.FieldsFunc(src, func(r rune) bool { return r == '*' || r == '?' }) {
		if len(run) > len(w.must) {
			w.must = run
		}
	}
	return w
}

func (w wildcard) match(s string) bool {
	if !strings.Contains(s, w.must) {
		return false
	}
	if w.bare != "" && globMatch(w.bare, s) {
		return true
	}
	return globMatch(w.pattern, s)
}

// literalPrefix is the part of a pattern before its first wildcard, used
// to index rules so a check only tries the ones that can match.
func (w wildcard) literalPrefix() string {
	if i := strings.IndexAny(w.pattern, "*?"); i >= 0 {
		return w.pattern[:i]
	}
	return w.pattern
}

// globMatch matches s against a pattern of * and ? in linear time for the
// common case and O(len(p)·len(s)) at worst: on a mismatch it only
// backtracks to the last star, which is enough for patterns without
// character classes.
func globMatch(p, s string) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				nextPx, nextSx = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					_, n := utf8.DecodeRuneInString(s[sx:])
					px++
					sx += n
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextSx > 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}

// prefixIndex finds the rules whose literal prefix is a prefix of a
// string. It is a byte trie: walking a string down it visits exactly the
// candidates, so a check against a thousand rules tries a handful.
type prefixIndex struct {
	root trieNode
}

// trieNode keeps its children in two parallel slices: nodes have few
// children, and a short scan beats hashing a byte.
type trieNode struct {
	rules    []int
	keys     []byte
	children []*trieNode
}

func (n *trieNode) child(c byte) *trieNode {
	for i, k := range n.keys {
		if k == c {
			return n.children[i]
		}
	}
	return nil
}

func (x *prefixIndex) add(prefix string, rule int) {
	n := &x.root
	for i := 0; i < len(prefix); i++ {
		c := n.child(prefix[i])
		if c == nil {
			c = &trieNode{}
			n.keys = append(n.keys, prefix[i])
			n.children = append(n.children, c)
		}
		n = c
	}
	n.rules = append(n.rules, rule)
}

// candidates calls fn with every rule whose prefix starts s, in the order
// of their prefixes' lengths; fn returns false to stop.
func (x *prefixIndex) candidates(s string, fn func(rule int) bool) bool {
	n := &x.root
	for i := 0; ; i++ {
		for _, r := range n.rules {
			if !fn(r) {
				return false
			}
		}
		if i >= len(s) {
			return true
		}
		n = n.child(s[i])
		if n == nil {
			return true
		}
	}
}

// globIndex finds the path globs that can match a path. Most globs either
// start with a literal directory (/w/vendor/**) or name a file at any depth
// (/**/*.pem, /**/id_rsa*); the first are found by a trie over their
// literal prefix, the second by tries over the literal start or end of the
// file name. Only the candidates are then matched in full.
type globIndex struct {
	dirs   prefixIndex // literal directory prefix
	starts prefixIndex // basename globs, by their literal start
	ends   prefixIndex // basename globs, by their reversed literal end
}

func (x *globIndex) add(g string, id int) {
	if base, ok := strings.CutPrefix(g, "/**/"); ok && !strings.ContainsAny(base, `/\{[`) {
		start := base
		if i := strings.IndexAny(base, "*?"); i >= 0 {
			start = base[:i]
		}
		end := base
		if i := strings.LastIndexAny(base, "*?"); i >= 0 {
			end = base[i+1:]
		}
		if len(end) >= len(start) {
			x.ends.add(reverse(end), id)
		} else {
			x.starts.add(start, id)
		}
		return
	}
	// dir/** also matches dir itself, which is shorter than the prefix
	// "dir/": index without the final slash so dir finds it too.
	x.dirs.add(strings.TrimSuffix(globPrefix(g), "/"), id)
}

// candidates calls fn with every glob that may match p (absolute).
func (x *globIndex) candidates(p string, fn func(id int) bool) {
	base := p[strings.LastIndexByte(p, '/')+1:]
	_ = x.dirs.candidates(p, fn) &&
		x.starts.candidates(base, fn) &&
		x.ends.candidates(reverse(base), fn)
}

func reverse(s string) string {
	b := make([]byte, len(s))
	for i := range len(s) {
		b[len(s)-1-i] = s[i]
	}
	return string(b)
}
