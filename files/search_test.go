package files

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/workspace"
)

// searchTree holds matches of "needle" in searchable files and in every
// kind of file a search must skip.
var searchTree = map[string]string{
	".gitignore":           "*.log\n",
	"a.txt":                "alpha\nbeta needle\ngamma\nneedle needle\n",
	"b/c.txt":              "needle at start\nmiddle\nend needle",
	"bin.dat":              "needle\x00binary",
	".env":                 "needle=secret\n",
	"conf/prod.env":        "needle=secret\n",
	"x.log":                "needle in an ignored file\n",
	".git/HEAD":            "needle\n",
	"big.txt":              strings.Repeat("needle\n", 400),
	"link.txt":             "-> a.txt",
	"outdir":               "-> ../outside",
	"../outside/o.txt":     "needle outside\n",
	"crlf.md":              "crlf needle\r\nnext\r\n",
	"empty.txt":            "",
	"ctx/lines.txt":        "m1\nx2\nx3\nm4\nx5\nm6\nx7\nx8\nx9\nm10\n",
	"ctx/second.txt":       "x1\nm2\nx3",
	"deep/er/needle.go":    "package needle\n",
	"deep/er/.gitignore":   "*.go\n",
	"deep/er/kept.txt":     "kept needle\n",
	"deep/er/sub/file.txt": "needle deeper\n",
}

// refuseEnv is a Guard that protects every name ending in .env.
func refuseEnv(_ Access, written string, tg *workspace.Target) error {
	if strings.HasSuffix(written, ".env") {
		return &workspace.PathError{Kind: workspace.Protected, Path: written, Component: tg.Rel, Reason: "protected"}
	}
	return nil
}

func hitAt(path string, line int, text string) Match {
	return Match{Path: path, Line: line, Text: text}
}

func TestSearchFiles(t *testing.T) {
	ws := walkTree(t, searchTree)
	lim := Limits{MaxSearchFileBytes: 1000}
	all := []Match{
		hitAt("a.txt", 2, "beta needle"), hitAt("a.txt", 4, "needle needle"),
		hitAt("b/c.txt", 1, "needle at start"), hitAt("b/c.txt", 3, "end needle"),
		hitAt("crlf.md", 1, "crlf needle"),
		hitAt("deep/er/kept.txt", 1, "kept needle"), hitAt("deep/er/sub/file.txt", 1, "needle deeper"),
	}
	skipped := SkippedFiles{Binary: 1, TooLarge: 1, Protected: 2}
	tests := []struct {
		name    string
		args    SearchFilesArgs
		lim     Limits
		want    []Match
		trunc   string
		files   int
		skipped *SkippedFiles
		errKind string
	}{
		{name: "everything searchable, in walk order", args: SearchFilesArgs{Pattern: "needle"}, want: all, files: 10, skipped: &skipped},
		{name: "line start", args: SearchFilesArgs{Pattern: "^needle"}, want: []Match{all[1], all[2], all[6]}},
		{name: "line end, before a carriage return only with one", args: SearchFilesArgs{Pattern: "needle$"}, want: []Match{all[0], all[1], all[3], all[5]}},
		{name: "line end before a carriage return", args: SearchFilesArgs{Pattern: "needle\r?$"}, want: []Match{all[0], all[1], all[3], all[4], all[5]}},
		{name: `\A and \z are the line's`, args: SearchFilesArgs{Pattern: `\Aneedle\z`}, want: []Match{}},
		{name: "classes do not cross lines", args: SearchFilesArgs{Pattern: `gamma\s*needle`}, want: []Match{}},
		{name: "negated classes do not cross lines", args: SearchFilesArgs{Pattern: `gamma[^x]*needle`}, want: []Match{}},
		{name: "dot-all does not cross lines", args: SearchFilesArgs{Pattern: `(?s)alpha.*beta`}, want: []Match{}},
		{name: "inner literal", args: SearchFilesArgs{Pattern: `\w+ needle`}, want: []Match{all[0], all[1], all[3], all[4], all[5]}},
		{name: "case folded", args: SearchFilesArgs{Pattern: `(?i)NEEDLE AT`}, want: []Match{all[2]}},
		{name: "empty matches count once a line", args: SearchFilesArgs{Pattern: `x*`, Path: "ctx/second.txt"}, want: []Match{
			hitAt("ctx/second.txt", 1, "x1"), hitAt("ctx/second.txt", 2, "m2"), hitAt("ctx/second.txt", 3, "x3"),
		}},
		{name: "glob on names", args: SearchFilesArgs{Pattern: "needle", Glob: "*.md"}, want: []Match{all[4]}},
		{name: "glob on paths", args: SearchFilesArgs{Pattern: "needle", Glob: "deep/**/*.txt"}, want: all[5:]},
		{name: "path", args: SearchFilesArgs{Pattern: "needle", Path: "b"}, want: all[2:4]},
		{name: "one file", args: SearchFilesArgs{Pattern: "needle", Path: "a.txt"}, want: all[:2], files: 1, skipped: &SkippedFiles{}},
		{name: "one binary file", args: SearchFilesArgs{Pattern: "needle", Path: "bin.dat"}, want: []Match{}, skipped: &SkippedFiles{Binary: 1}},
		{name: "one protected file", args: SearchFilesArgs{Pattern: "needle", Path: ".env"}, errKind: "protected"},
		{name: "an ignored directory is searched when named", args: SearchFilesArgs{Pattern: "needle", Path: "deep/er"}, want: all[5:]},
		{name: "capped by matches", args: SearchFilesArgs{Pattern: "needle"}, lim: Limits{MaxMatches: 3}, want: all[:3], trunc: "matches"},
		{name: "cap equal to the matches", args: SearchFilesArgs{Pattern: "needle"}, lim: Limits{MaxMatches: 7}, want: all},
		{name: "capped in the middle of a file", args: SearchFilesArgs{Pattern: "needle"}, lim: Limits{MaxMatches: 1}, want: all[:1], trunc: "matches"},
		{name: "capped by bytes", args: SearchFilesArgs{Pattern: "needle"}, lim: Limits{MaxOutputBytes: 11 + 13 + 14}, want: all[:2], trunc: "bytes"},
		{name: "bytes exactly enough", args: SearchFilesArgs{Pattern: "needle", Path: "a.txt"}, lim: Limits{MaxOutputBytes: 11 + 13}, want: all[:2]},
		{name: "bad regexp", args: SearchFilesArgs{Pattern: "(needle"}, errKind: "bad_argument"},
		{name: "huge repeat", args: SearchFilesArgs{Pattern: "a{5000}"}, errKind: "bad_argument"},
		{name: "a line break in the pattern", args: SearchFilesArgs{Pattern: `gamma\nneedle`}, errKind: "bad_argument"},
		{name: "empty pattern", args: SearchFilesArgs{Pattern: ""}, errKind: "bad_argument"},
		{name: "bad glob", args: SearchFilesArgs{Pattern: "x", Glob: "[a"}, errKind: "bad_argument"},
		{name: "negative context", args: SearchFilesArgs{Pattern: "x", Context: -1}, errKind: "bad_argument"},
		{name: "too much context", args: SearchFilesArgs{Pattern: "x", Context: 21}, errKind: "bad_argument"},
		{name: "outside", args: SearchFilesArgs{Pattern: "needle", Path: "../outside"}, errKind: "outside"},
		{name: "outside through a link", args: SearchFilesArgs{Pattern: "needle", Path: "outdir"}, errKind: "outside"},
		{name: "missing", args: SearchFilesArgs{Pattern: "needle", Path: "nope"}, errKind: "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := lim
			if tc.lim != (Limits{}) {
				l = tc.lim
				l.MaxSearchFileBytes = lim.MaxSearchFileBytes
			}
			tools := walkTools(t, ws, l)
			tools.Guard = refuseEnv
			got, err := tools.SearchFiles(context.Background(), tc.args)
			if errKind(err) != tc.errKind {
				t.Fatalf("error = %v, want kind %q", err, tc.errKind)
			}
			if tc.errKind != "" {
				return
			}
			if !reflect.DeepEqual(got.Matches, tc.want) {
				t.Errorf("matches:\ngot  %+v\nwant %+v", got.Matches, tc.want)
			}
			if got.Truncated != (tc.trunc != "") || got.TruncatedBy != tc.trunc {
				t.Errorf("truncated %v by %q, want %q", got.Truncated, got.TruncatedBy, tc.trunc)
			}
			if tc.files != 0 && got.FilesSearched != tc.files {
				t.Errorf("files searched %d, want %d", got.FilesSearched, tc.files)
			}
			if tc.skipped != nil {
				if got.Skipped != *tc.skipped {
					t.Errorf("skipped %+v, want %+v", got.Skipped, *tc.skipped)
				}
				n := tc.skipped.Binary + tc.skipped.TooLarge + tc.skipped.Protected + tc.skipped.HardLink + tc.skipped.Unreadable
				if got.FilesSkipped != n {
					t.Errorf("files skipped %d, want %d", got.FilesSkipped, n)
				}
			}
		})
	}
}

func TestSearchFilesContext(t *testing.T) {
	ws := walkTree(t, searchTree)
	tools := walkTools(t, ws, Limits{})
	tests := []struct {
		name string
		args SearchFilesArgs
		want []Match
	}{
		{name: "file start, overlaps and file end", args: SearchFilesArgs{Pattern: "^m", Path: "ctx/lines.txt", Context: 2}, want: []Match{
			{Path: "ctx/lines.txt", Line: 1, Text: "m1", After: []string{"x2", "x3"}},
			{Path: "ctx/lines.txt", Line: 4, Text: "m4", After: []string{"x5"}},
			{Path: "ctx/lines.txt", Line: 6, Text: "m6", After: []string{"x7", "x8"}},
			{Path: "ctx/lines.txt", Line: 10, Text: "m10", Before: []string{"x9"}},
		}},
		{name: "wide context", args: SearchFilesArgs{Pattern: "m6", Path: "ctx/lines.txt", Context: 20}, want: []Match{
			{Path: "ctx/lines.txt", Line: 6, Text: "m6", Before: []string{"m1", "x2", "x3", "m4", "x5"}, After: []string{"x7", "x8", "x9", "m10"}},
		}},
		{name: "last line without a line break", args: SearchFilesArgs{Pattern: "m2", Path: "ctx/second.txt", Context: 1}, want: []Match{
			{Path: "ctx/second.txt", Line: 2, Text: "m2", Before: []string{"x1"}, After: []string{"x3"}},
		}},
		{name: "carriage returns are not shown", args: SearchFilesArgs{Pattern: "needle", Path: "crlf.md", Context: 1}, want: []Match{
			{Path: "crlf.md", Line: 1, Text: "crlf needle", After: []string{"next"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tools.SearchFiles(context.Background(), tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Matches, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got.Matches, tc.want)
			}
		})
	}
}

// TestSearchFilesChunks compares the chunked search with a line-by-line
// one on files with lines longer than the read buffer, context across
// buffer boundaries, and files with and without a final line break.
func TestSearchFilesChunks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := []string{"foo", "bar", "baar", "qux", "x", "needle", "é", " ", " ", "  "}
	ws := walkTree(t, nil)
	const nfiles = 8
	contents := make([]string, nfiles)
	for i := range contents {
		var b strings.Builder
		for b.Len() < 400<<10 {
			n := rnd.IntN(12)
			switch rnd.IntN(50) {
			case 0:
				n = 2000 + rnd.IntN(4000)
			case 1:
				n = 100000 + rnd.IntN(200000)
			}
			for range n {
				b.WriteString(words[rnd.IntN(len(words))])
			}
			b.WriteByte('\n')
		}
		s := b.String()
		if i%2 == 1 {
			s = strings.TrimSuffix(s, "\n")
		}
		contents[i] = s
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tools := walkTools(t, ws, Limits{MaxMatches: 1 << 30, MaxOutputBytes: 1 << 30})
	for _, pattern := range []string{"needle", "^foo", "qux$", "ba+r qux", `\bx\b`, "é{3}", "^$", "(?i)NEEDLE", "(?i)Baar qux"} {
		for _, ctxLines := range []int{0, 1, 3} {
			for i, content := range contents {
				name := fmt.Sprintf("f%02d.txt", i)
				got, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: pattern, Path: name, Context: ctxLines})
				if err != nil {
					t.Fatal(err)
				}
				want := lineByLine(name, content, regexp.MustCompile(pattern), ctxLines)
				if !reflect.DeepEqual(got.Matches, want) {
					t.Fatalf("%s, pattern %q, context %d: %d matches, want %d; first difference at %d",
						name, pattern, ctxLines, len(got.Matches), len(want), firstDiff(got.Matches, want))
				}
			}
		}
	}
}

// TestLineRegexp checks that the rewriting for whole-buffer search keeps
// what a pattern matches within one line, and the inner literal found.
func TestLineRegexp(t *testing.T) {
	lines := []string{"", "a", "aa", "aaa", "foo bar", "FOO Bar", "Straße", "STRASSE", "x9", "é", "ü1", "a.b", "axb",
		"\tindent", "trailing ", "ErrNotFound", "err: not found", "func main() {", "abc abd", "foobaz", "foobarbaz",
		"READTIMEOUT(", "KELVIN", "\u212aelvin", "ABcd", "abCD", "éABC", "x12YZW"}
	tests := []struct{ pattern, lit, fold string }{
		{"a", "", ""}, {"^a$", "", ""}, {`(?i)straße`, "", ""}, {`\pL+\d`, "", ""}, {`(?P<n>a|b)c`, "", ""},
		{`[[:alpha:]]+`, "", ""}, {`(?s).+`, "", ""}, {`(?m)^a$`, "", ""}, {`\Qa.b\E`, "a.b", ""}, {`a{2,3}`, "", ""},
		{`[^a]`, "", ""}, {`\S+\s`, "", ""}, {`x\b`, "", ""}, {`(?U)a+`, "", ""}, {`é|ü`, "", ""},
		{`\w+Found`, "Found", ""}, {`(?i:err)NotFound`, "NotFound", ""}, {`foo(bar)?baz`, "foo", ""},
		{`func \w+\(`, "func ", ""}, {`a+bcd`, "bcd", ""}, {`abc|abd`, "", ""}, {`\Afoo`, "foo", ""},
		{`bar\z`, "bar", ""}, {`(?:main){2}`, "main", ""},
		{`(?i)timeout`, "", "timeout"}, {`(?i)ReadTimeout\(`, "", "readtimeout("}, {`(?i)kelvin`, "", ""},
		{`(?i)é+abc`, "", "abc"}, {`(?i)x\d+yzw`, "", "yzw"}, {`Abc(?i)def`, "Abc", ""}, {`(?i)ab(?-i)CD`, "", "abcd"},
	}
	for _, tc := range tests {
		s, err := newSearcher(tc.pattern, 0)
		if err != nil {
			t.Errorf("%s: %v", tc.pattern, err)
			continue
		}
		if string(s.lit) != tc.lit || string(s.foldLit) != tc.fold {
			t.Errorf("%s: literals %q, %q; want %q, %q", tc.pattern, s.lit, s.foldLit, tc.lit, tc.fold)
		}
		orig := regexp.MustCompile(tc.pattern)
		for _, l := range lines {
			if got, want := s.re.MatchString(l), orig.MatchString(l); got != want {
				t.Errorf("%s on %q: %v, want %v (rewritten as %s)", tc.pattern, l, got, want, s.re)
			}
		}
	}
}

func TestLowerASCII(t *testing.T) {
	src := make([]byte, 0, 300)
	for i := range 256 {
		src = append(src, byte(i))
	}
	src = append(src, "Hello, WORLD: Straße ÉTÉ"...)
	for off := range 9 {
		in := src[off:]
		got := make([]byte, len(in))
		lowerASCII(got, in)
		for i, c := range in {
			want := c
			if 'A' <= c && c <= 'Z' {
				want = c + 'a' - 'A'
			}
			if got[i] != want {
				t.Fatalf("offset %d: byte %#x became %#x, want %#x", off, c, got[i], want)
			}
		}
	}
}

func TestSearchFilesFolded(t *testing.T) {
	ws := walkTree(t, map[string]string{"k.txt": "KELVIN\n\u212aelvin\nkelvin\nother\n", "t.txt": "ReadTimeout\nREADTIMEOUT\nread_timeout\n"})
	tools := walkTools(t, ws, Limits{})
	for _, tc := range []struct {
		pattern string
		want    []int
	}{{"(?i)kelvin", []int{1, 2, 3}}, {"(?i)readtimeout", []int{1, 2}}, {"(?i)READ_?TIMEOUT", []int{1, 2, 3}}} {
		got, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: tc.pattern})
		if err != nil {
			t.Fatal(err)
		}
		var lines []int
		for _, mt := range got.Matches {
			lines = append(lines, mt.Line)
		}
		if !reflect.DeepEqual(lines, tc.want) {
			t.Errorf("%s: lines %v, want %v", tc.pattern, lines, tc.want)
		}
	}
}

// lineByLine is the reference search: each line on its own.
func lineByLine(name, content string, re *regexp.Regexp, ctxLines int) []Match {
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	var hit []bool
	for _, l := range lines {
		hit = append(hit, re.MatchString(l))
	}
	out := []Match{}
	shown := 0 // lines 1..shown were returned
	for i, l := range lines {
		if !hit[i] {
			continue
		}
		mt := Match{Path: name, Line: i + 1, Text: showLine([]byte(l), 0)}
		if len(l) > maxLineBytes {
			mt.Text = showLine([]byte(l), max(re.FindStringIndex(l)[0]-maxLineBytes/4, 0))
		}
		for j := max(shown, i-ctxLines); j < i; j++ {
			mt.Before = append(mt.Before, showLine([]byte(lines[j]), 0))
		}
		shown = i + 1
		for j := i + 1; j < len(lines) && j <= i+ctxLines && !hit[j]; j++ {
			mt.After = append(mt.After, showLine([]byte(lines[j]), 0))
			shown = j + 1
		}
		out = append(out, mt)
	}
	return out
}

func firstDiff(a, b []Match) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestSearchFilesLongLine(t *testing.T) {
	line := strings.Repeat("x", 5000) + "needle" + strings.Repeat("y", 5000)
	ws := walkTree(t, map[string]string{"long.txt": "short\n" + line + "\n"})
	got, err := walkTools(t, ws, Limits{}).SearchFiles(context.Background(), SearchFilesArgs{Pattern: "needle", Context: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != 1 {
		t.Fatalf("got %d matches", len(got.Matches))
	}
	text := got.Matches[0].Text
	want := "…" + strings.Repeat("x", maxLineBytes/4) + "needle" + strings.Repeat("y", maxLineBytes-maxLineBytes/4-len("needle")) + "…"
	if text != want {
		t.Errorf("text is %d bytes %q…, want %d bytes", len(text), text[:20], len(want))
	}
	if !reflect.DeepEqual(got.Matches[0].Before, []string{"short"}) {
		t.Errorf("before = %q", got.Matches[0].Before)
	}
}

// TestSearchFilesLinear runs patterns that take exponential time in a
// backtracking engine over a long line that almost matches.
func TestSearchFilesLinear(t *testing.T) {
	ws := walkTree(t, map[string]string{"a.txt": strings.Repeat("a", 100000) + "b\n"})
	tools := walkTools(t, ws, Limits{})
	for _, p := range []string{`(a+)+$`, `(a|aa)+$`, `(a*)*c`, `^(a+)+x`} {
		start := time.Now()
		got, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: p})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Matches) != 0 {
			t.Errorf("%s: %d matches", p, len(got.Matches))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s took %v", p, d)
		}
	}
}

func TestSearchFilesSymlinkNotFollowed(t *testing.T) {
	ws := walkTree(t, map[string]string{
		"in.txt":                "inside secret\n",
		"out":                   "-> ../outside",
		"filelink.txt":          "-> ../outside/secret.txt",
		"inlink.txt":            "-> in.txt",
		"../outside/secret.txt": "outside secret\n",
	})
	got, err := walkTools(t, ws, Limits{}).SearchFiles(context.Background(), SearchFilesArgs{Pattern: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Match{hitAt("in.txt", 1, "inside secret")}; !reflect.DeepEqual(got.Matches, want) || got.FilesSearched != 1 {
		t.Fatalf("got %+v (%d files), want %+v", got.Matches, got.FilesSearched, want)
	}
}

func TestSearchFilesHardLink(t *testing.T) {
	ws := walkTree(t, map[string]string{"../outside/secret.txt": "outside secret\n", "in.txt": "inside secret\n"})
	if err := os.Link(filepath.Join(ws, "../outside/secret.txt"), filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	got, err := walkTools(t, ws, Limits{}).SearchFiles(context.Background(), SearchFilesArgs{Pattern: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Match{hitAt("in.txt", 1, "inside secret")}; !reflect.DeepEqual(got.Matches, want) || got.Skipped != (SkippedFiles{HardLink: 1}) {
		t.Fatalf("got %+v skipped %+v", got.Matches, got.Skipped)
	}
}

// TestSearchFilesSwappedLink swaps a file for a link to a protected file
// and back while searching: the search must skip the file rather than read
// the protected one through the link.
func TestSearchFilesSwappedLink(t *testing.T) {
	ws := walkTree(t, map[string]string{".env": "secret needle\n", "a.txt": "public needle\n"})
	tools := walkTools(t, ws, Limits{})
	tools.Guard = refuseEnv
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, tmp := filepath.Join(ws, "a.txt"), filepath.Join(ws, "tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				err = os.Symlink(".env", tmp)
			} else {
				err = os.WriteFile(tmp, []byte("public needle\n"), 0o644)
			}
			if err == nil {
				err = os.Rename(tmp, a)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for n := 0; time.Now().Before(deadline) || n < 50; n++ {
		got, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: "needle"})
		if err != nil {
			t.Fatal(err)
		}
		for _, mt := range got.Matches {
			if strings.Contains(mt.Text, "secret") {
				t.Fatalf("search %d read the protected file through %s", n, mt.Path)
			}
		}
	}
	close(stop)
	<-done
}

// TestSearchFilesDeterministic checks that the limits cut the same
// matches on every run, whatever order the workers finish in.
func TestSearchFilesDeterministic(t *testing.T) {
	paths := map[string]string{}
	var want []Match
	for d := range 6 {
		for f := range 40 {
			name := fmt.Sprintf("d%d/f%02d.txt", d, f)
			var b strings.Builder
			for l := range 50 {
				if (d+f+l)%17 == 0 {
					fmt.Fprintf(&b, "hit %d\n", l)
					want = append(want, hitAt(name, l+1, fmt.Sprintf("hit %d", l)))
				} else {
					b.WriteString(strings.Repeat("filler ", 1+(d*f+l)%20) + "\n")
				}
			}
			paths[name] = b.String()
		}
	}
	ws := walkTree(t, paths)
	for _, lim := range []Limits{{MaxMatches: 100}, {MaxOutputBytes: 1000}, {MaxMatches: len(want)}} {
		tools := walkTools(t, ws, lim)
		var first *SearchFilesResult
		for range 5 {
			got, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: "^hit"})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = got
				n := len(got.Matches)
				if !reflect.DeepEqual(got.Matches, want[:n]) {
					t.Fatalf("%+v: matches are not the first %d in walk order", lim, n)
				}
				if got.Truncated != (n < len(want)) {
					t.Fatalf("%+v: %d of %d matches, truncated %v", lim, n, len(want), got.Truncated)
				}
				continue
			}
			if !reflect.DeepEqual(got, first) {
				t.Fatalf("%+v: results differ between runs", lim)
			}
		}
	}
}

func TestSearchFilesCancelled(t *testing.T) {
	ws := walkTree(t, searchTree)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := walkTools(t, ws, Limits{}).SearchFiles(ctx, SearchFilesArgs{Pattern: "needle"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestSearchFilesCancelledMidway(t *testing.T) {
	paths := map[string]string{}
	for i := range 200 {
		paths[fmt.Sprintf("d%d/f%d.txt", i%20, i)] = strings.Repeat("some text\n", 200)
	}
	ws := walkTree(t, paths)
	tools := walkTools(t, ws, Limits{})
	tools.Guard = func(Access, string, *workspace.Target) error {
		time.Sleep(100 * time.Microsecond)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err := tools.SearchFiles(ctx, SearchFilesArgs{Pattern: "needle"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want context.DeadlineExceeded", err)
	}
}

// BenchmarkSearchFiles searches a generated tree of 2,000 files of about
// 5 KB for a pattern with an inner literal and one without.
func BenchmarkSearchFiles(b *testing.B) {
	paths := map[string]string{}
	rnd := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("func return if else for range struct type var const package import error nil string int")
	for i := range 2000 {
		var s strings.Builder
		for s.Len() < 5000 {
			for range 1 + rnd.IntN(10) {
				s.WriteString(words[rnd.IntN(len(words))])
				s.WriteByte(' ')
			}
			if rnd.IntN(400) == 0 {
				s.WriteString("ErrNotFound")
			}
			s.WriteByte('\n')
		}
		paths[fmt.Sprintf("d%02d/e%02d/f%d.go", i%20, i%7, i)] = s.String()
	}
	ws := walkTree(b, paths)
	tools := walkTools(b, ws, Limits{})
	for _, p := range []string{`Err\w+Found`, `[A-Z]\w+Found`} {
		b.Run(p, func(b *testing.B) {
			b.SetBytes(2000 * 5000)
			for b.Loop() {
				res, err := tools.SearchFiles(context.Background(), SearchFilesArgs{Pattern: p})
				if err != nil || len(res.Matches) == 0 {
					b.Fatal(err, len(res.Matches))
				}
			}
		})
	}
}
