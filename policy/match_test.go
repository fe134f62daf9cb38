package policy

import (
	"slices"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// indexGlobs are anchored globs of every shape the index treats apart.
var indexGlobs = []string{
	"/h/.ssh/**", "/h/.netrc", "/**/.env", "/**/.env.*", "/**/*.pem", "/**/id_rsa*",
	"/**/.git/hooks/**", "/**/.git/config", "/etc/**", "/lib*/**", "/w/vendor/**",
	"/w/a?c/**", "/**/x*y", "/**/*", "/**", "/w/{a,b}/**", "/w/[ab]/c", "/w/exact",
}

// FuzzGlobIndex: the index never hides a glob that matches.
func FuzzGlobIndex(f *testing.F) {
	for _, p := range []string{"/h/.ssh", "/h/.ssh/id", "/w/.env", "/x/.env.local", "/a/b.pem", "/w/id_rsa.pub",
		"/w/.git/hooks", "/w/.git/hooks/pre-commit", "/etc", "/lib64/x", "/w/vendor", "/w/abc/d", "/q/xzy", "/w/a/x", "/w/b/c", "/w/exact", "/"} {
		f.Add(p)
	}
	var x globIndex
	for i, g := range indexGlobs {
		x.add(g, i)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) == 0 || p[0] != '/' {
			return
		}
		var want, got []int
		for i, g := range indexGlobs {
			if ok, _ := doublestar.Match(g, p); ok {
				want = append(want, i)
			}
		}
		x.candidates(p, func(i int) bool {
			if ok, _ := doublestar.Match(indexGlobs[i], p); ok && !slices.Contains(got, i) {
				got = append(got, i)
			}
			return true
		})
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: the index finds %v, a full scan %v", p, got, want)
		}
	})
}

var indexWildcards = []string{"rm *", "rm", "git push*", "*curl*", "git p?sh *", "?s", "npm run lint", "go test *", "*", "a*b*c"}

// FuzzWildcardIndex: the prefix index and the literal prefilter never hide
// a pattern that matches.
func FuzzWildcardIndex(f *testing.F) {
	for _, s := range []string{"rm", "rm -rf x", "git push origin", "/usr/bin/curl x", "git pAsh x", "ls", "npm run lint", "go test", "abc"} {
		f.Add(s)
	}
	var set ruleSet
	for _, w := range indexWildcards {
		if err := set.add(&Rule{Act: ActExec, Effect: Deny, Pattern: w}, "", ""); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, w := range indexWildcards {
			full := globMatch(w, s) || (len(w) > 2 && w[len(w)-2:] == " *" && globMatch(w[:len(w)-2], s))
			found := false
			set.index.candidates(s, func(j int) bool {
				if j == i && set.wild[j].match(s) {
					found = true
				}
				return true
			})
			if full != found {
				t.Fatalf("%q vs %q: full match %v, through the index %v", w, s, full, found)
			}
		}
	})
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "a b/c", true}, {"a*", "a", true}, {"a*c", "abbbc", true},
		{"a*c", "abbb", false}, {"a?c", "abc", true}, {"a?c", "ac", false}, {"a?c", "aéc", true},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false}, {"", "", true}, {"", "a", false},
	}
	for _, c := range cases {
		if got := globMatch(c.p, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}
