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
