package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

// TestSandboxHome: a line's ~ is the sandbox's private HOME, and paths
// there are decided as that HOME (the run's own, like the workspace),
// never as the user's: read and written without asking (but in safe
// mode), protected where the user's HOME is, left only by a path that
// then is decided for where it leads.
func TestSandboxHome(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		line            string
		safe, ask, auto Decision
		reason          string // of the ask-mode verdict
	}{
		{"cat ~/x", Allow, Allow, Allow, "stage 0 (cat ~/x): read-only (reads files)"},
		{"cat < ~/x", Allow, Allow, Allow, "stage 0 (cat < ~/x): read-only (reads files)"},
		// The write redirect makes the stage workspace-mutating, which ask
		// mode asks; the path itself is allowed, so auto runs it.
		{"echo hi > ~/f", Deny, Ask, Allow, "stage 0 (echo hi > ~/f): workspace-mutating (it redirects output into a file): ask mode asks unless a rule allows it"},
		{"touch ~/f", Deny, Ask, Allow, "stage 0 (touch ~/f): workspace-mutating (creates files): ask mode asks unless a rule allows it"},
		// rm in the private HOME is not rm outside the workspace.
		{"rm ~/f", Deny, Ask, Allow, "stage 0 (rm ~/f): workspace-mutating (removes files): ask mode asks unless a rule allows it"},
		{"cd ~ && ls", Allow, Allow, Allow, "all 2 stages are allowed"},
		{"cd && ls", Allow, Allow, Allow, "all 2 stages are allowed"},
		{"cd ~ && cat x > y", Deny, Ask, Allow, "stage 1 (cat x > y): workspace-mutating (it redirects output into a file): ask mode asks unless a rule allows it"},
		// Only HOME itself is there when the line starts.
		{"cd ~/sub", Deny, Deny, Deny, "stage 0 (cd ~/sub): read /run/rein/home/sub: cd target /run/rein/home/sub lies below the sandbox's private HOME, which is made for the run: only a cd to HOME itself is known to land where it was checked"},
		// .. is taken from /run/rein/home: two of them lead to /run.
		{"ls ~/../../etc/shadow", Deny, Ask, Ask, "stage 0 (ls ~/../../etc/shadow): read /run/rein/home/../../etc/shadow: outside the workspace"},
		{"cat ~/../../../etc/shadow", Deny, Deny, Deny, `stage 0 (cat ~/../../../etc/shadow): read /run/rein/home/../../../etc/shadow: protected by deny rule "/etc/shadow" (builtin layer)`},
		{"cat ~/../x", Deny, Ask, Ask, "stage 0 (cat ~/../x): read /run/rein/home/../x: outside the workspace"},
		// A relative .. out of HOME climbs from another place on the rungs
		// that keep HOME elsewhere.
		{"cd ~ && cat ../x", Deny, Deny, Deny, "stage 1 (cat ../x): read ../x: climbs out of the sandbox's private HOME with ..: where that leads depends on the sandbox; name the path from / instead"},
		// The protected set's ~/ entries hold in the private HOME too: a
		// ~/.gitconfig written there is one the run's git obeys.
		{"cat ~/.ssh/config", Deny, Deny, Deny, `stage 0 (cat ~/.ssh/config): read /run/rein/home/.ssh/config: protected by deny rule "~/.ssh/**" (builtin layer)`},
		{"echo x > ~/.gitconfig", Deny, Deny, Deny, `stage 0 (echo x > ~/.gitconfig): write /run/rein/home/.gitconfig: protected by deny rule "~/.gitconfig" (builtin layer)`},
		{"cp main.go ~/.bashrc", Deny, Deny, Deny, `stage 0 (cp main.go ~/.bashrc): write /run/rein/home/.bashrc: protected by deny rule "~/.bashrc" (builtin layer)`},
		// HOME is not on the host to look at, so it is taken to be the
		// directory it is: cp .gitconfig ~ writes ~/.gitconfig.
		{"cp .gitconfig ~", Deny, Deny, Deny, `stage 0 (cp .gitconfig ~): write /run/rein/home/.gitconfig: protected by deny rule "~/.gitconfig" (builtin layer)`},
		{"rm -rf ~", Deny, Deny, Deny, "stage 0 (rm -rf ~): hard deny: rm of /run/rein/home (HOME)"},
		// The user's HOME is still outside the workspace, written by path.
		{"cat " + f.home + "/notes", Deny, Ask, Ask, "stage 0 (cat " + f.home + "/notes): read " + f.home + "/notes: outside the workspace"},
	} {
		for _, m := range []struct {
			mode Mode
			want Decision
		}{{ModeSafe, c.safe}, {ModeAsk, c.ask}, {ModeAuto, c.auto}} {
			p := f.load(m.mode)
			if p.SandboxHome != DefaultSandboxHome {
				t.Fatalf("SandboxHome = %q, want %q", p.SandboxHome, DefaultSandboxHome)
			}
			l, err := shell.Parser{Home: p.SandboxHome}.Parse(c.line)
			if err != nil {
				t.Fatalf("%s: %v", c.line, err)
			}
			v := p.Check(l)
			if v.Decision != m.want {
				t.Errorf("%s mode: %s: %s (%s), want %s", m.mode, c.line, v.Decision, v.Reason, m.want)
			}
			if m.mode == ModeAsk && v.Reason != c.reason {
				t.Errorf("%s:\n got reason %s\nwant reason %s", c.line, v.Reason, c.reason)
			}
		}
	}
}

// TestSandboxHomeRules: path rules anchored at ~ hold in the private HOME
// as in the user's, and a deny of the user's HOME by its own path does
// too; the private HOME is never read as the user's.
func TestSandboxHomeRules(t *testing.T) {
	f := newFixture(t)
	f.write(f.home+"/notes/a", "mine")
	p := f.load(ModeAuto,
		Rule{Act: ActRead, Effect: Deny, Pattern: "~/notes/**"},
		Rule{Act: ActWrite, Effect: Ask, Pattern: "~/.cache/**"},
		Rule{Act: ActRead, Effect: Deny, Pattern: f.home + "/keep"})
	for line, want := range map[string]Decision{
		"cat ~/notes/a":       Deny,
		"echo x > ~/.cache/y": Ask,
		"cat ~/keep":          Deny,
		"cat ~/other":         Allow,
	} {
		l, err := shell.Parser{Home: p.SandboxHome}.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if v := p.Check(l); v.Decision != want {
			t.Errorf("%s: %s (%s), want %s", line, v.Decision, v.Reason, want)
		}
	}
}

// TestTildeUser: ~user (another user's home) is refused by the grammar
// before the policy sees it, whatever the HOME: rein cannot know it, and
// it is not the sandbox's.
func TestTildeUser(t *testing.T) {
	for _, line := range []string{"cat ~user/x", "cd ~root", "echo hi > ~nobody/f"} {
		_, err := shell.Parser{Home: DefaultSandboxHome}.Parse(line)
		var ref *shell.Refusal
		if !errors.As(err, &ref) || ref.Construct != shell.TildeUser {
			t.Errorf("%s: %v, want a %s refusal", line, err, shell.TildeUser)
		}
	}
}

// TestSandboxHomeOptions: the default, another sandbox HOME, lines run on
// the host (no sandbox HOME, ~ is the user's), and the HOMEs refused.
func TestSandboxHomeOptions(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.SandboxHome = "/sb/home/"
	p, err := Load(o)
	if err != nil || p.SandboxHome != "/sb/home" {
		t.Fatalf("SandboxHome /sb/home/: %v, %q", err, p.SandboxHome)
	}
	if v := p.CheckPath(ActWrite, "/sb/home/x"); v.Decision != Allow || v.Reason != "in the sandbox's private HOME" {
		t.Errorf("write /sb/home/x: %s (%s)", v.Decision, v.Reason)
	}
	if v := p.CheckPath(ActRead, DefaultSandboxHome+"/x"); v.Decision != Ask {
		t.Errorf("read %s/x with another sandbox HOME: %s (%s), want ask", DefaultSandboxHome, v.Decision, v.Reason)
	}

	o = f.options()
	o.OnHost = true
	p, err = Load(o)
	if err != nil || p.SandboxHome != "" {
		t.Fatalf("OnHost: %v, %q", err, p.SandboxHome)
	}
	for line, want := range map[string]string{
		// The stage reads as written; the path it reads, as resolved.
		"cat ~/x":                          "stage 0 (cat ~/x): read " + f.home + "/x: outside the workspace",
		"cat " + DefaultSandboxHome + "/x": "stage 0 (cat /run/rein/home/x): read /run/rein/home/x: outside the workspace",
		"cd && ls":                         "stage 0 (cd): read " + f.home + ": outside the workspace",
	} {
		l, err := shell.Parser{Home: p.Home}.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if v := p.Check(l); v.Decision != Ask || v.Reason != want {
			t.Errorf("on the host: %s: %s (%s), want ask (%s)", line, v.Decision, v.Reason, want)
		}
	}

	for _, c := range []struct {
		home   string
		onHost bool
		want   string
	}{
		{"run/home", false, "is not an absolute directory below the root"},
		{"/", false, "is not an absolute directory below the root"},
		{"/x", true, "was given for lines that run on the host"},
		{f.ws + "/home", false, "overlap"},
		{f.ws[:strings.LastIndex(f.ws, "/")], false, "overlap"},
	} {
		o := f.options()
		o.SandboxHome, o.OnHost = c.home, c.onHost
		if _, err := Load(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SandboxHome %q, OnHost %v: %v, want %q", c.home, c.onHost, err, c.want)
		}
	}
}
