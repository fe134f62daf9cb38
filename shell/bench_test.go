package shell

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

var benchLines = map[string]string{
	"simple":   "go test ./...",
	"pipeline": "grep -n 'func Parse' parse.go | sort -u | head -20",
	"chain":    `cd src && go vet ./... && git diff --stat > "out file.txt" 2>&1 || echo failed`,
	// The shape most real agent lines that were refused before take: a
	// file written from a quoted here-document, then run.
	"heredoc":                "cat <<'EOF' > reproduce.py\nimport sys\nfrom pkg import thing\n\nprint(thing(sys.argv[1:]))  # $HOME stays\nassert thing([]) == {}\nEOF\npython3 reproduce.py",
	"comment-newline-braces": "git stash show -p stash@{0}  # what was stashed\nfind . -name '*.py' -exec grep -l TODO {} \\; | head -{1,2}0",
}

// BenchmarkParse is rein's whole parse: tokenising, the allowlist walk and
// quote removal.
func BenchmarkParse(b *testing.B) {
	for name, line := range benchLines {
		b.Run(name, func(b *testing.B) {
			p := Parser{Home: "/home/u"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTokenise is the bare mechanism under Parse: mvdan.cc/sh's
// parser alone on the same lines, for the ratio.
func BenchmarkTokenise(b *testing.B) {
	for name, line := range benchLines {
		b.Run(name, func(b *testing.B) {
			sp := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sp.Parse(strings.NewReader(line), ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
