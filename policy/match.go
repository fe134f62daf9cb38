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
}

func compileWildcard(p string) wildcard {
	w := wildcard{pattern: p}
	if strings.HasSuffix(p, " *") {
		w.bare = strings.TrimSuffix(p, " *")
	}
	return w
}

func (w wildcard) match(s string) bool {
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

type trieNode struct {
	rules    []int
	children map[byte]*trieNode
}

func (x *prefixIndex) add(prefix string, rule int) {
	n := &x.root
	for i := 0; i < len(prefix); i++ {
		if n.children == nil {
			n.children = map[byte]*trieNode{}
		}
		c := n.children[prefix[i]]
		if c == nil {
			c = &trieNode{}
			n.children[prefix[i]] = c
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
		if i >= len(s) || n.children == nil {
			return true
		}
		n = n.children[s[i]]
		if n == nil {
			return true
		}
	}
}
