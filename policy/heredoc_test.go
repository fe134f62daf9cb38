package policy

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

// TestHereDocuments decides lines whose standard input is a here-document:
// a write of the file named, program text for a reader of standard input
// (scanned like -c's), and a shell's commands exposed to the deny rules.
func TestHereDocuments(t *testing.T) {
	f := newFixture(t)
	deny := Rule{Act: ActExec, Effect: Deny, Pattern: "git push*"}
	cases := []struct {
		line   string
		mode   Mode
		want   Decision
		reason string
	}{
		{"cat <<'EOF' > notes.txt\nhello $USER\nEOF", ModeAuto, Allow, "workspace-mutating"},
		{"cat <<'EOF' > notes.txt\nhello\nEOF", ModeSafe, Deny, "safe mode does not write"},
		{"cat <<'EOF' > ~/.ssh/authorized_keys\nkey\nEOF", ModeAuto, Deny, "protected"},
		{"python3 <<'EOF'\nprint(open('" + "~/.ssh/id_rsa').read())\nEOF", ModeAuto, Deny, "inline program names"},
		{"python3 <<'EOF'\nprint(1)\nEOF", ModeAuto, Ask, "reads its program from standard input"},
		{"bash <<'EOF'\necho hi\ngit push origin main\nEOF", ModeAuto, Deny, `"git push*"`},
		{"sh -s <<'EOF'\nrm -rf /\nEOF", ModeAuto, Deny, "hard deny"},
		{"bash <<'EOF'\ncat ~/.aws/credentials\nEOF", ModeAuto, Deny, "protected"},
		// A file read later on standard input replaces the here-document.
		{"python3 <<'EOF' < script.py\nprint(open('~/.ssh/id_rsa'))\nEOF", ModeAuto, Ask, "reads its program from standard input"},
	}
	for _, c := range cases {
		p := f.load(c.mode, deny)
		l, err := shell.Parser{Home: f.home}.Parse(c.line)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.line, err)
		}
		v := p.Check(l)
		if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s mode: %q: %s (%s), want %s containing %q", c.mode, c.line, v.Decision, v.Reason, c.want, c.reason)
		}
	}
}

// TestOpaqueLines decides lines outside the grammar as opaque code: asked
// in every mode but safe (denied), whatever allow rule there is, and
// denied where a command rein can still read in them is.
func TestOpaqueLines(t *testing.T) {
	f := newFixture(t)
	rules := []Rule{{Act: ActExec, Effect: Deny, Pattern: "git push*"}, {Act: ActExec, Effect: Allow, Pattern: "bash *"}}
	cases := []struct {
		line   string
		mode   Mode
		want   Decision
		reason string
	}{
		{"ls *.py", ModeAuto, Ask, "opaque shell code (glob at byte 3"},
		{"ls *.py", ModeSafe, Deny, "opaque shell code"},
		{"for b in a b; do git push origin $b; done > log", ModeAuto, Deny, `"git push*"`},
		{"X=1 rm -rf / $Y", ModeAuto, Deny, "hard deny"},
		{"for f in {a,b}; do git push origin {x,y} $f; done > log", ModeAuto, Deny, `"git push*"`},
		{"echo $X; rm -rf {/,x}", ModeAuto, Deny, "hard deny"},
		{"cat <<EOF > ~/.bashrc\n$PATH\nEOF", ModeAuto, Deny, "protected"},
		{"cd $(git rev-parse --show-toplevel) && make", ModeAuto, Ask, "opaque shell code (command-substitution"},
	}
	for _, c := range cases {
		p := f.load(c.mode, rules...)
		l, err := shell.Parser{Home: f.home}.Plan(c.line)
		if err != nil {
			t.Fatalf("Plan(%q): %v", c.line, err)
		}
		v := p.Check(l)
		if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) || v.Opaque == nil {
			t.Errorf("%s mode: %q: %s (%s) opaque %v, want %s containing %q", c.mode, c.line, v.Decision, v.Reason, v.Opaque, c.want, c.reason)
		}
	}
}

// TestHereDocumentsReachTheDenyRules: a shell fed its commands on
// standard input, behind a wrapper or inside opaque code or a shell
// string, still shows them to the deny rules, hard denies and protected
// paths; so do redirects opaque code writes with >& or <>.
func TestHereDocumentsReachTheDenyRules(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAuto, Rule{Act: ActExec, Effect: Deny, Pattern: "git push*"})
	for _, line := range []string{
		"env bash <<<'git push'",
		"sudo bash <<'EOF'\ngit push origin main\nEOF",
		"timeout 5 sh -s <<< 'git push'",
		"bash <<EOF\ngit push origin $BR\nEOF",
		"echo $X; bash <<<\"git push\"",
		"bash -c 'bash <<<\"git push\"'",
		"echo $X; env bash <<'EOF'\nrm -rf ~\nEOF",
		"echo $X; python3 <<'EOF'\nopen('~/.ssh/id_rsa')\nEOF",
		"echo $X >&.git/hooks/pre-commit",
		"echo $X 1<>.git/hooks/pre-commit",
		"true\r\ngit push origin main",
	} {
		l, err := shell.Parser{Home: f.home}.Plan(line)
		if err != nil {
			t.Fatalf("Plan(%q): %v", line, err)
		}
		if v := p.Check(l); v.Decision != Deny {
			t.Errorf("%q: %s (%s), want deny", line, v.Decision, v.Reason)
		}
	}
}
