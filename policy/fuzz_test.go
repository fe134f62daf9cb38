package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/shell"
)

// FuzzCheck decides any line the grammar admits: no panic, one verdict per
// stage, a decision no weaker than any stage's, and the same answer twice.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"git status && rm -rf ~", "cd src && cat ../.env", "sudo bash -c 'cd / && rm -rf usr'",
		"find . -exec sh -c 'rm {}' ';'", "cat keys/id_rsa > out", "timeout 5 env -i ./cat x | tee y",
		"python3 -c 'open(\"~/.ssh/id_rsa\")'", "cd missing; ls", "xargs -0 rm < list", "git -c core.pager=x log",
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	if err := os.Symlink(filepath.Join(fx.home, ".ssh"), filepath.Join(fx.ws, "keys")); err != nil {
		f.Fatal(err)
	}
	p := fx.load(ModeAsk, exec(Deny, "rm *"), exec(Allow, "git *"), exec(Ask, "tee *"))
	f.Fuzz(func(t *testing.T, line string) {
		l, err := shell.Parser{Home: fx.home}.Parse(line)
		if err != nil {
			return
		}
		v := p.Check(l)
		if len(v.Stages) != len(l.Stages()) {
			t.Fatalf("%q: %d verdicts for %d stages", line, len(v.Stages), len(l.Stages()))
		}
		for _, s := range v.Stages {
			if s.Decision > v.Decision {
				t.Fatalf("%q: stage %d is %s but the line is %s", line, s.Index, s.Decision, v.Decision)
			}
			if s.Reason == "" {
				t.Fatalf("%q: stage %d has no reason", line, s.Index)
			}
		}
		if again := p.Check(l); again.Decision != v.Decision || again.Reason != v.Reason {
			t.Fatalf("%q: decided %s then %s", line, v.Decision, again.Decision)
		}
	})
}
