package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

// fixture is a workspace, a HOME and policy files in temporary directories.
type fixture struct {
	t    testing.TB
	ws   string // physical workspace root
	home string
	user string // user policy file
	org  string
	proj string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home")}
	f.user = filepath.Join(f.home, ".config", "rein", "policy.toml")
	f.org = filepath.Join(root, "org", "policy.toml")
	f.proj = filepath.Join(f.ws, ".rein", "policy.toml")
	for _, d := range []string{f.ws, f.home, filepath.Join(f.ws, "src"), filepath.Join(f.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.write(filepath.Join(f.home, ".ssh", "id_rsa"), "secret")
	f.write(filepath.Join(f.ws, "main.go"), "package main\n")
	return f
}

func (f *fixture) write(p, content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) options() Options {
	return Options{
		Workspace: f.ws, Home: f.home,
		Getenv: func(k string) string {
			if k == "HOME" {
				return f.home
			}
			return ""
		},
	}
}

func (f *fixture) load(mode Mode, rules ...Rule) *Policy {
	f.t.Helper()
	o := f.options()
	o.Mode = &mode
	o.Rules = rules
	if _, err := os.Stat(f.org); err == nil {
		o.OrgFile = f.org
	}
	p, err := Load(o)
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return p
}

func (f *fixture) check(p *Policy, line string) *Verdict {
	f.t.Helper()
	l, err := shell.Parser{Home: f.home}.Parse(line)
	if err != nil {
		f.t.Fatalf("Parse(%q): %v", line, err)
	}
	return p.Check(l)
}

func exec(eff Decision, pattern string) Rule {
	return Rule{Act: ActExec, Effect: eff, Pattern: pattern}
}

// TestDecisionTable walks the per-stage decision table of the spec: each
// row in each mode.
func TestDecisionTable(t *testing.T) {
	f := newFixture(t)
	rules := []Rule{exec(Ask, "git commit*"), exec(Allow, "make *"), exec(Allow, "bash -c *"), exec(Allow, "mytool *")}
	cases := []struct {
		row, line       string
		safe, ask, auto Decision
		wantClass       Class
	}{
		{"ask rule", "git commit -m x", Deny, Ask, Ask, WorkspaceMutating},
		{"shell-complex, allow rule cannot lift", "bash -c 'ls'", Deny, Ask, Ask, ShellComplex},
		{"dangerous", "rm -r src", Deny, Ask, Ask, Dangerous},
		{"workspace-mutating with allow rule", "make all", Deny, Allow, Allow, WorkspaceMutating},
		{"write redirect is workspace-mutating", "ls > out.txt", Deny, Ask, Allow, WorkspaceMutating},
		{"allow rule on unknown", "mytool x", Allow, Allow, Allow, Unknown},
		{"read-only, no rule", "cat main.go", Allow, Allow, Allow, ReadOnly},
		{"workspace-mutating, no rule", "touch new.txt", Deny, Ask, Allow, WorkspaceMutating},
		{"unknown, no rule", "frobnicate --all", Deny, Ask, Allow, Unknown},
	}
	for _, c := range cases {
		for _, m := range []struct {
			mode Mode
			want Decision
		}{{ModeSafe, c.safe}, {ModeAsk, c.ask}, {ModeAuto, c.auto}} {
			t.Run(c.row+"/"+m.mode.String(), func(t *testing.T) {
				v := f.check(f.load(m.mode, rules...), c.line)
				if v.Decision != m.want || v.Class != c.wantClass {
					t.Errorf("%q in %s: got %s/%s, want %s/%s (%s)", c.line, m.mode, v.Decision, v.Class, m.want, c.wantClass, v.Reason)
				}
			})
		}
	}
}

func TestExecMatchingForms(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		pattern, line string
		want          bool
	}{
		{"rm *", "rm a", true},
		{"rm *", "rm", true},                     // trailing " *" matches the bare prefix
		{"rm *", "rmdir a", false},               // anchored
		{"rm *", "/bin/rm a", true},              // J uses the basename
		{"/usr/bin/rm *", "/usr/bin/rm a", true}, // R is the raw argv
		{"/usr/bin/rm *", "rm a", false},
		{"rm", "/bin/rm -f a", true}, // B alone
		{"git push*", "git push origin main", true},
		{"git push*", "git status", false},
		{"git p?sh *", "git push x", true},
		{"git p?sh *", "git pash x", true},
		{"git p?sh *", "git pish", true},
		{"echo a b", "echo 'a b'", true}, // words after quote removal, joined by spaces
		{"Rm *", "rm a", false},          // case-sensitive
		{"*curl*", "/usr/local/bin/curl -s x", true},
	}
	for _, c := range cases {
		t.Run(c.pattern+"|"+c.line, func(t *testing.T) {
			p := f.load(ModeAuto, exec(Deny, c.pattern))
			v := f.check(p, c.line)
			got := v.Decision == Deny && v.Rule != nil && v.Rule.Rule == c.pattern
			if got != c.want {
				t.Errorf("deny %q vs %q: denied=%v, want %v (%s)", c.pattern, c.line, got, c.want, v.Reason)
			}
		})
	}
}

func TestDenyReachesThroughWrappers(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAuto, exec(Deny, "rm *"), exec(Deny, "git push*"), exec(Allow, "sudo *"), exec(Allow, "bash *"), exec(Allow, "find *"))
	for _, line := range []string{
		"sudo rm x",
		"timeout 5 rm x",
		"nice -n 5 rm x",
		"env FOO=1 rm x",
		"xargs rm",
		"bash -c 'git push origin main'",
		"sh -c 'cd src; rm x'",
		`find . -name x -exec rm '{}' ';'`,
		"sudo timeout 5 bash -c 'nice rm x'",
		"command rm x",
	} {
		v := f.check(p, line)
		if v.Decision != Deny || v.Rule == nil || v.Rule.Layer != LayerFlags {
			t.Errorf("%q: got %s (%s), want deny by a flags rule", line, v.Decision, v.Reason)
		}
	}
}

// TestShellStringHome: a ~ inside sh -c is the policy's HOME, whatever the
// HOME of the process deciding.
func TestShellStringHome(t *testing.T) {
	f := newFixture(t)
	t.Setenv("HOME", "/nonexistent-home")
	p := f.load(ModeAuto, exec(Deny, "cat "+f.home+"/notes*"))
	cases := map[string]Decision{
		"bash -c 'cat ~/.ssh/id_rsa'":     Deny, // protected, resolved under the policy's HOME
		"bash -c 'cat ~/notes.txt'":       Deny, // the deny rule sees the expanded word
		"sh -c 'cd ~ && cat .ssh/id_rsa'": Deny,
		"bash -c 'rm -rf ~'":              Deny, // hard deny of HOME
	}
	for line, want := range cases {
		if v := f.check(p, line); v.Decision != want {
			t.Errorf("%q: got %s (%s), want %s", line, v.Decision, v.Reason, want)
		}
	}
}

func TestAllowDoesNotReachThroughWrappers(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk, exec(Allow, "go test *"), exec(Allow, "rm *"))
	cases := []struct {
		line string
		want Decision
	}{
		{"go test ./...", Allow},
		{"timeout 60 go test ./...", Allow}, // benign wrapper stripped
		{"nice go test ./...", Allow},
		{"sudo go test ./...", Ask},      // sudo is dangerous
		{"env X=1 go test ./...", Ask},   // env is not benign
		{"bash -c 'go test ./...'", Ask}, // shell-complex
		{"rm main.go", Allow},
		{"xargs -0 rm", Ask}, // xargs with options is shell-complex
	}
	for _, c := range cases {
		if v := f.check(p, c.line); v.Decision != c.want {
			t.Errorf("%q: got %s, want %s (%s)", c.line, v.Decision, c.want, v.Reason)
		}
	}
}

// TestLocalPrograms: a program named by a path outside the system
// directories is whatever that file is, not the system program of the same
// name; a link to a system program is denied as that program.
func TestLocalPrograms(t *testing.T) {
	f := newFixture(t)
	f.write(filepath.Join(f.ws, "cat"), "#!/bin/sh\nrm -rf ~\n")
	testenv.Must(t, os.Symlink("/bin/rm", filepath.Join(f.ws, "del")))
	p := f.load(ModeAsk, exec(Allow, "cat *"), exec(Deny, "rm *"))
	cases := []struct {
		line  string
		want  Decision
		class Class
	}{
		{"cat main.go", Allow, ReadOnly},
		{"./cat main.go", Ask, Unknown},
		{"src/../cat main.go", Ask, Unknown},
		{"timeout 5 ./cat main.go", Ask, Unknown},
		{"/bin/cat main.go", Allow, ReadOnly},
		{"./del main.go", Deny, WorkspaceMutating}, // a link to /bin/rm is rm
		{"sudo ./del main.go", Deny, Dangerous},
	}
	for _, c := range cases {
		v := f.check(p, c.line)
		if v.Decision != c.want || v.Class != c.class {
			t.Errorf("%q: got %s/%s, want %s/%s (%s)", c.line, v.Decision, v.Class, c.want, c.class, v.Reason)
		}
	}
	if v := f.check(f.load(ModeAsk, exec(Allow, "./cat *")), "./cat main.go"); v.Decision != Allow {
		t.Errorf("the raw argv of a local program cannot be allowed: %s", v.Reason)
	}
}

// TestReviewedBypasses pins lines that once got through.
func TestReviewedBypasses(t *testing.T) {
	f := newFixture(t)
	for _, d := range []string{".git/hooks", "hooks", "d", "x/vendor", ".git/modules/sub/hooks"} {
		testenv.Must(t, os.MkdirAll(filepath.Join(f.ws, d), 0o755))
	}
	f.write(filepath.Join(f.ws, "hooks", "pre-commit"), "#!/bin/sh\n")
	f.write(filepath.Join(f.ws, "d", "config"), "[core]\n")
	f.write(filepath.Join(f.ws, ".git", "config"), "[core]\n")
	f.write(filepath.Join(f.home, ".aws", "credentials"), "k")
	testenv.Must(t, os.Symlink("/bin/cat", filepath.Join(f.ws, "kat")))
	testenv.Must(t, os.Symlink("/bin/rm", filepath.Join(f.ws, "del")))
	p := f.load(ModeAuto)
	cases := map[string]Decision{
		"cp -r hooks .git":                            Deny, // writes .git/hooks
		"mv d/config .git":                            Deny, // overwrites .git/config
		"cp -r x/vendor .":                            Deny, // writes vendor/
		"./kat " + f.home + "/.aws/credentials":       Deny, // a link to cat reads what cat reads
		"./del -rf /":                                 Deny, // a link to rm meets rm's hard deny
		"cp x .git/modules/sub/hooks/pre-commit":      Deny,
		"cp x " + f.home + "/.config/rein/trust.toml": Deny,
		"python3 -c 'import sys; print(open(sys.argv[1]).read())' " + f.home + "/.aws/credentials": Deny,
		"env -C / rm -rf tmp":                         Deny, // hard deny, resolved where env moves rm
		"env -C " + f.home + " cat .aws/credentials":  Deny,
		"sudo -D " + f.home + " cat .aws/credentials": Deny,
	}
	for line, want := range cases {
		if v := f.check(p, line); v.Decision != want {
			t.Errorf("%q: got %s (%s), want %s", line, v.Decision, v.Reason, want)
		}
	}
	// In ask mode: xargs hides the paths (unknown, so asked), and git's
	// global options do not hide the subcommand from a deny rule.
	p = f.load(ModeAsk, exec(Deny, "git push*"))
	for line, want := range map[string]Decision{
		"echo " + f.home + "/.ssh/id_rsa | xargs cat": Ask,
		"git --no-pager push origin main":             Deny,
		"git -P -c color.ui=never push":               Deny,
	} {
		if v := f.check(p, line); v.Decision != want {
			t.Errorf("%q: got %s (%s), want %s", line, v.Decision, v.Reason, want)
		}
	}
	// A read-only workspace stays read-only whatever an ask rule says.
	f.write(f.user, "[workspace]\nread_only = true\n[write]\nask = [\"**\"]\n")
	p = f.load(ModeAuto)
	if v := f.check(p, "echo x > out.txt"); v.Decision != Deny {
		t.Errorf("read-only workspace asked instead of denied: %s", v.Reason)
	}
}

// TestManyConditionalCds: a short line of conditional cds is decided fast
// and refused, instead of being checked from an exploding set of
// directories.
func TestManyConditionalCds(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAuto)
	line := strings.Repeat("cd src && cd .. && ", 500) + "ls"
	start := time.Now()
	v := f.check(p, line)
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v", d)
	}
	if v.Decision == Allow && len(v.Stages) != 1001 {
		t.Fatalf("stages %d", len(v.Stages))
	}
}

func TestHardDenies(t *testing.T) {
	f := newFixture(t)
	// Allow everything in every way a rule can; hard denies still win.
	p := f.load(ModeAuto, exec(Allow, "*"))
	for _, line := range []string{
		"rm -rf /",
		"rm -rf /usr",
		"rm -r " + f.home,
		"rm -rf ~",
		"rm -rf " + f.ws,
		"rm -rf .",
		"rm -rf ..",
		"cd src && rm -rf ../..",
		"rmdir /tmp",
		"unlink /etc",
		"shred -u /boot",
		"sudo rm -rf /",
		"bash -c 'rm -rf /'",
		"bash -c 'cd / && rm -rf usr'",
		"sh -c 'cd .. && rm -rf ws'",
		"sudo sh -c 'cd src; cd ..; rm -r .'",
		"bash -c 'cd; rm -rf .'",
		"mkfs.ext4 /dev/sda1",
		"dd if=/dev/zero of=/dev/sda",
	} {
		v := f.check(p, line)
		if v.Decision != Deny || v.Rule == nil || v.Rule.Layer != LayerBuiltin || !strings.HasPrefix(v.Rule.Rule, "hard deny") {
			t.Errorf("%q: got %s (%s), want a builtin hard deny", line, v.Decision, v.Reason)
		}
	}
	if v := f.check(p, "rm -rf src"); v.Decision == Deny {
		t.Errorf("rm -rf src is not a hard deny: %s", v.Reason)
	}
}

func TestLayers(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, "[exec]\nallow = [\"git push*\"]\n")
	f.write(f.org, "mode = \"auto\"\n\n[exec]\ndeny = [\"git push --force*\"]\n")
	p := f.load(ModeAsk)
	v := f.check(p, "git push --force origin")
	if v.Decision != Deny || v.Rule.Layer != LayerOrg || v.Rule.File != f.org || v.Rule.Line != 4 {
		t.Fatalf("org deny must beat user allow: %+v %s", v.Rule, v.Reason)
	}
	v = f.check(p, "git push origin main")
	if v.Decision != Allow || v.Rule.Layer != LayerUser || v.Rule.File != f.user || v.Rule.Line != 2 {
		t.Fatalf("user allow: %s %+v", v.Decision, v.Rule)
	}
}

func TestProjectTrust(t *testing.T) {
	f := newFixture(t)
	f.write(f.proj, "mode = \"auto\"\n[exec]\nallow = [\"frob *\"]\ndeny = [\"curl *\"]\n")
	o := f.options()
	o.ProjectFile = f.proj

	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeAsk {
		t.Errorf("an untrusted project widened the mode to %s", p.Mode)
	}
	if v := f.check(p, "frob x"); v.Decision != Ask {
		t.Errorf("untrusted project allow applied: %s", v.Reason)
	}
	if v := f.check(p, "curl https://x"); v.Decision != Deny || v.Rule.Layer != LayerProject {
		t.Errorf("untrusted project deny not applied: %s", v.Reason)
	}
	if got := p.Sources[len(p.Sources)-1]; got.State != "untrusted" || !strings.Contains(got.Note, "rein trust") {
		t.Errorf("source: %+v", got)
	}

	if _, _, _, err := Trust(o); err != nil {
		t.Fatal(err)
	}
	p, err = Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if v := f.check(p, "frob x"); v.Decision != Allow || v.Rule.Layer != LayerProject {
		t.Errorf("trusted project allow not applied: %s", v.Reason)
	}
	if p.Mode != ModeAuto {
		t.Errorf("trusted project mode not applied: %s", p.Mode)
	}

	f.write(f.proj, "mode = \"auto\"\n[exec]\nallow = [\"frob *\", \"rm *\"]\n")
	p, err = Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if v := f.check(p, "frob x"); v.Decision != Ask {
		t.Errorf("a changed project file kept its trust: %s", v.Reason)
	}
	if got := p.Sources[len(p.Sources)-1]; got.State != "untrusted" || !strings.Contains(got.Note, "changed") {
		t.Errorf("changed file not reported: %+v", got)
	}
}

func TestPaths(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(filepath.Dir(f.ws), "outside")
	f.write(filepath.Join(outside, "notes.txt"), "x")
	f.write(filepath.Join(f.ws, ".env"), "K=v")
	f.write(filepath.Join(f.ws, ".env.example"), "K=")
	f.write(filepath.Join(f.ws, "gen.go"), "// Code generated by stringer; DO NOT EDIT.\n\npackage main\n")
	f.write(filepath.Join(f.ws, "vendor", "x", "a.go"), "package x\n")
	testenv.Must(t, os.Symlink(filepath.Join(f.home, ".ssh"), filepath.Join(f.ws, "keys")))
	testenv.Must(t, os.Symlink(filepath.Join(f.home, ".ssh", "id_ed25519"), filepath.Join(f.ws, "dangling")))
	testenv.Must(t, os.Symlink(outside, filepath.Join(f.ws, "src", "out")))
	testenv.Must(t, os.Symlink(filepath.Join(f.ws, ".git", "hooks", "pre-commit"), filepath.Join(f.ws, "hook")))

	p := f.load(ModeAuto)
	cases := []struct {
		line string
		want Decision
		rule string // expected deciding rule, if any
	}{
		{"cat main.go", Allow, ""},
		{"cat ~/.ssh/id_rsa", Deny, "~/.ssh/**"},
		{"mv ~/.ssh stolen", Deny, "~/.ssh/**"}, // the directory itself
		{"rm -r .git/hooks", Deny, "**/.git/**"},
		{"cat keys/id_rsa", Deny, "~/.ssh/**"},   // through a workspace link
		{"echo x > dangling", Deny, "~/.ssh/**"}, // dangling final link
		{"echo x > hook", Deny, "**/.git/**"},    // link into .git/hooks
		{"cat .env", Deny, "**/.env"},
		{"cat .env.example", Allow, ""},
		{"cat src/../.env", Deny, "**/.env"},
		{"echo x > gen.go", Deny, "generated file (its header says so)"},
		{"echo x > vendor/x/a.go", Deny, "vendor/**"},
		{"rm vendor/x/a.go", Deny, "vendor/**"},
		{"cat src/out/notes.txt", Ask, ""}, // outside, through a link
		{"cd src && cat ../../outside/notes.txt", Ask, ""},
		{"ls > /dev/null 2> /dev/stderr", Allow, ""},
		{"echo x > /etc/passwd", Deny, "/etc/**"},
		{"cat /etc/shadow", Deny, "/etc/shadow"},
		{"cat /etc/hostname", Ask, ""},
		{"echo x > .rein/policy.toml", Deny, ".rein/**"},
		{"cp main.go ~/.bashrc", Deny, "~/.bashrc"},
		{"python3 -c 'print(open(\"" + f.home + "/.ssh/id_rsa\").read())'", Deny, "~/.ssh/**"},
		{"node -e 'require(\"fs\").readFileSync(\"~/.aws/credentials\")'", Deny, "~/.aws/**"},
		// Agents' configuration and repository metadata, by any writer.
		{`echo '{"disableAllHooks": true}' > .claude/settings.local.json`, Deny, "**/.claude/**"},
		{"echo x > .git/HEAD", Deny, "**/.git/**"},
		{"tee -a .mcp.json", Deny, "**/.mcp.json"},
		{"cp main.go .vscode/tasks.json", Deny, "**/.vscode/**"},
		{"mkdir -p sub/.git", Deny, "**/.git"},
		{"echo '[submodule]' > .gitmodules", Deny, "**/.gitmodules"},
		{"rm -rf .cursor", Deny, ""},
		{"sed -i s/a/b/ .codex/config.toml", Deny, "**/.codex/**"},
		{"cat .claude/settings.json", Allow, ""},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			v := f.check(p, c.line)
			if v.Decision != c.want {
				t.Fatalf("got %s, want %s (%s)", v.Decision, c.want, v.Reason)
			}
			if c.rule != "" && (v.Rule == nil || v.Rule.Rule != c.rule) {
				t.Fatalf("decided by %+v, want rule %q (%s)", v.Rule, c.rule, v.Reason)
			}
		})
	}
}

func TestCdTracking(t *testing.T) {
	f := newFixture(t)
	f.write(filepath.Join(f.ws, "src", ".env"), "K=v")
	f.write(filepath.Join(f.ws, "afile"), "x")
	p := f.load(ModeAuto)
	cases := []struct {
		line string
		want Decision
	}{
		{"cd src && cat .env", Deny},
		{"cd src; cat .env", Deny},
		{"cat .env", Deny}, // **/.env names a path: protected whether or not it exists
		{"cd missing && ls", Deny},
		{"cd afile && ls", Deny},
		{"cd / && ls", Ask},
		{"cd && ls", Allow},                // HOME is the sandbox's private one
		{"true || cd src; cat .env", Deny}, // the cd may or may not happen: both are checked
	}
	for _, c := range cases {
		if v := f.check(p, c.line); v.Decision != c.want {
			t.Errorf("%q: got %s, want %s (%s)", c.line, v.Decision, c.want, v.Reason)
		}
	}
	// A conditional cd: the stage after it is checked from both directories.
	f.write(filepath.Join(f.ws, "src", "secret.txt"), "x")
	p = f.load(ModeAuto, Rule{Act: ActRead, Effect: Deny, Pattern: "src/secret.txt"})
	if v := f.check(p, "false && cd src ; cat secret.txt"); v.Decision != Deny {
		t.Errorf("conditional cd lost: %s", v.Reason)
	}
	if v := f.check(p, "cat secret.txt"); v.Decision != Allow {
		t.Errorf("cat secret.txt at the root: %s", v.Reason)
	}
}

func TestAttributionAndStages(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, "[exec]\nallow = [\"git status*\"]\ndeny  = [\"git push*\"]\n")
	p := f.load(ModeAsk)
	v := f.check(p, "git status && git push > log.txt")
	if v.Decision != Deny || len(v.Stages) != 2 {
		t.Fatalf("%+v", v)
	}
	s0, s1 := v.Stages[0], v.Stages[1]
	if s0.Index != 0 || s0.Decision != Allow || s0.Rule.Rule != "git status*" || s0.Rule.Layer != LayerUser || s0.Rule.File != f.user || s0.Rule.Line != 2 {
		t.Errorf("stage 0: %+v %+v", s0, s0.Rule)
	}
	if s1.Index != 1 || s1.Decision != Deny || s1.Rule.Rule != "git push*" || s1.Rule.Line != 3 {
		t.Errorf("stage 1: %+v %+v", s1, s1.Rule)
	}
	if len(s1.Paths) != 1 || s1.Paths[0].Path != "log.txt" || s1.Paths[0].Resolved != filepath.Join(f.ws, "log.txt") || s1.Paths[0].Access != ActWrite {
		t.Errorf("stage 1 paths: %+v", s1.Paths)
	}
	if !strings.Contains(v.Reason, "git push*") || !strings.Contains(v.Reason, f.user+":3") {
		t.Errorf("reason does not name rule and file: %s", v.Reason)
	}
}

func TestCheckPathNetTool(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, `[read]
deny = ["secrets/**"]
[write]
ask = ["docs/legal/**"]
[net]
allow = ["proxy.golang.org:443", "*.npmjs.org"]
deny = ["evil.example"]
presets = ["pypi"]
[tool]
deny = ["fetch_url"]
allow = ["mcp__github__*"]
`)
	p := f.load(ModeAsk)
	cases := []struct {
		v    *Verdict
		want Decision
	}{
		{p.CheckPath(ActRead, "secrets/a"), Deny},
		{p.CheckPath(ActRead, "main.go"), Allow},
		{p.CheckPath(ActWrite, "docs/legal/terms.md"), Ask},
		{p.CheckPath(ActWrite, "src/new.go"), Allow},
		{p.CheckPath(ActDelete, "../x"), Ask},
		{p.CheckNet("proxy.golang.org:443"), Allow},
		{p.CheckNet("proxy.golang.org:80"), Ask},
		{p.CheckNet("registry.npmjs.org"), Allow},
		{p.CheckNet("evil.example:443"), Deny},
		{p.CheckNet("pypi.org:443"), Allow},
		{p.CheckNet("example.com:443/x"), Ask},
		{p.CheckTool("fetch_url"), Deny},
		{p.CheckTool("mcp__github__create_issue"), Allow},
		{p.CheckTool("other"), Ask},
	}
	for i, c := range cases {
		if c.v.Decision != c.want {
			t.Errorf("case %d: got %s, want %s (%s)", i, c.v.Decision, c.want, c.v.Reason)
		}
	}
	safe := f.load(ModeSafe)
	if v := safe.CheckNet("proxy.golang.org:443"); v.Decision != Deny {
		t.Errorf("safe mode reached the network: %s", v.Reason)
	}
	if v := safe.CheckPath(ActWrite, "src/new.go"); v.Decision != Deny {
		t.Errorf("safe mode wrote: %s", v.Reason)
	}
}

// TestExemptDeviceRedirect: a redirect to /dev/null, /dev/stdout or
// /dev/stderr writes nothing, so it leaves a reader read-only; one to a
// file does not.
func TestExemptDeviceRedirect(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk)
	for _, c := range []struct {
		line string
		want Decision
	}{
		{"grep -n TODO main.go 2>/dev/null", Allow},
		{"cat main.go > /dev/stdout 2> /dev/stderr", Allow},
		{"grep -n TODO main.go 2> errors.txt", Ask},
		{"cat main.go > /dev/tty", Deny},
	} {
		if v := f.check(p, c.line); v.Decision != c.want {
			t.Errorf("%s: %s (%s), want %s", c.line, v.Decision, v.Reason, c.want)
		}
	}
}
