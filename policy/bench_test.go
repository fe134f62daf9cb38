package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/shell"
)

// benchRules makes n rules per act in the shapes real policies use: most
// name a program or a directory, a few start with a wildcard (which no
// index can narrow).
func benchRules(n int) []Rule {
	var rules []Rule
	effects := []Decision{Allow, Ask, Deny}
	for i := 0; i < n; i++ {
		eff := effects[i%3]
		var exec string
		switch i % 20 {
		case 0:
			exec = fmt.Sprintf("*word%d*", i)
		case 1, 2, 3, 4, 5:
			exec = fmt.Sprintf("git sub%d*", i)
		case 6, 7, 8:
			exec = fmt.Sprintf("npm run script%d", i)
		default:
			exec = fmt.Sprintf("prog%d *", i)
		}
		var p string
		switch i % 10 {
		case 0:
			p = fmt.Sprintf("**/*.ext%d", i)
		case 1:
			p = fmt.Sprintf("/abs%d/**", i)
		default:
			p = fmt.Sprintf("dir%d/**", i)
		}
		rules = append(rules,
			Rule{Act: ActExec, Effect: eff, Pattern: exec},
			Rule{Act: ActRead, Effect: eff, Pattern: p},
			Rule{Act: ActWrite, Effect: eff, Pattern: p},
			Rule{Act: ActDelete, Effect: eff, Pattern: p},
			Rule{Act: ActNet, Effect: eff, Pattern: fmt.Sprintf("host%d.example:443", i)},
			Rule{Act: ActTool, Effect: eff, Pattern: fmt.Sprintf("tool%d", i)},
		)
	}
	return rules
}

// BenchmarkCheck decides a three-stage line (a read-only stage, a pipe
// with a path argument, a write redirect) against n rules per act.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			f := newFixture(b)
			mode := ModeAsk
			o := f.options()
			o.Mode = &mode
			o.Rules = benchRules(n)
			p, err := Load(o)
			if err != nil {
				b.Fatal(err)
			}
			line, err := shell.Parser{Home: f.home}.Parse("git status --short && grep -n TODO main.go | sort -u > todo.txt")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if v := p.Check(line); v.Decision == Deny {
					b.Fatal(v.Reason)
				}
			}
		})
	}
}

// BenchmarkCheckHeredoc decides the lines real agents write most: a file
// written from a here-document then run, a program fed its code by one,
// and a line outside the grammar decided as opaque code (bash -c).
func BenchmarkCheckHeredoc(b *testing.B) {
	lines := map[string]string{
		"write-then-run": "cat <<'EOF' > reproduce.py\nimport sys\nprint(sys.argv)\nEOF\npython3 reproduce.py",
		"python-stdin":   "python3 <<'EOF'\nimport json\nprint(json.dumps({'a': 1}))\nEOF",
		"opaque":         "for f in a.py b.py; do python -m py_compile $f; done",
	}
	f := newFixture(b)
	mode := ModeAsk
	o := f.options()
	o.Mode = &mode
	o.Rules = benchRules(100)
	p, err := Load(o)
	if err != nil {
		b.Fatal(err)
	}
	for name, text := range lines {
		b.Run(name, func(b *testing.B) {
			line, err := shell.Parser{Home: f.home}.Plan(text)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				// Each decision meets its shell strings afresh.
				stringMemo.Lock()
				clear(stringMemo.m)
				stringMemo.Unlock()
				if v := p.Check(line); v.Decision == Deny {
					b.Fatal(v.Reason)
				}
			}
		})
	}
}

// BenchmarkGlobMatch is the bare mechanism under exec matching: one
// pattern against one string.
func BenchmarkGlobMatch(b *testing.B) {
	for b.Loop() {
		globMatch("git push*--force*", "git push origin main --force-with-lease")
	}
}

// BenchmarkLstat is the bare mechanism under path decisions: one lstat of
// a workspace file. A line's decision resolves each of its paths on disk,
// so its cost is a few of these plus the matching.
func BenchmarkLstat(b *testing.B) {
	f := newFixture(b)
	p := filepath.Join(f.ws, "main.go")
	for b.Loop() {
		if _, err := os.Lstat(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideGlob decides lines from text (parse, glob expansion over
// the workspace, the policy's check): a glob over a directory of 1,000
// entries, the same line naming one file, and, for the ratio, the bare
// mechanism a glob costs at least, one os.ReadDir of that directory.
func BenchmarkDecideGlob(b *testing.B) {
	f := newFixture(b)
	dir := filepath.Join(f.ws, "src")
	for i := range 1000 {
		ext := ".txt"
		if i%10 == 0 {
			ext = ".go"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d%s", i, ext)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p := f.load(ModeAuto)
	lp := p.LineParser(f.ws)
	for _, c := range []struct{ name, line string }{
		{"glob-1000", "grep -n TODO src/*.go"},
		{"no-glob", "grep -n TODO src/f0000.go"},
		{"env-no-glob", "CI=1 NO_COLOR=1 grep -n TODO src/f0000.go"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := lp.Plan(c.line)
				if err != nil || l.Opaque != nil {
					b.Fatal(err, l.Opaque)
				}
				if v := p.CheckIn(l, f.ws); v.Decision != Allow {
					b.Fatal(v.Reason)
				}
			}
		})
	}
	b.Run("bare-readdir-1000", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadDir(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
