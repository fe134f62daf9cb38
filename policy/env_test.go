package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

// TestEnvNamesJudged: every variable the corpus of real agents' lines
// sets before a command, and every name the table's own rationale names,
// is judged by the table (harmless or not): a name it does not judge
// fails here, so that the table is reviewed, not grown by default.
func TestEnvNamesJudged(t *testing.T) {
	f, err := os.Open("../testdata/agentlines/lines.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	for _, n := range []string{"PYTHONPATH", "NODE_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH", "GIT_SSH_COMMAND", "GIT_DIR",
		"PAGER", "LESSOPEN", "RIPGREP_CONFIG_PATH", "PATH", "CI", "NO_COLOR", "TERM", "LANG", "LC_ALL", "TZ",
		"PYTHONUNBUFFERED", "DEBIAN_FRONTEND", "RUST_BACKTRACE", "BASH_ENV", "GOFLAGS"} {
		names[n] = true
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct{ Line string }
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		plan, err := (shell.Parser{Home: "/h"}).Plan(l.Line)
		if err != nil {
			continue
		}
		stages := plan.Stages()
		if plan.Opaque != nil {
			stages = shell.Parser{Home: "/h"}.SimpleCommands(l.Line)
		}
		for _, st := range stages {
			env := st.Env
			if e, _, ok := envWrapped(st.Argv); ok {
				env = append(env, e...)
			}
			for _, e := range env {
				n, _, _ := strings.Cut(e, "=")
				names[n] = true
			}
		}
	}
	if len(names) < 25 {
		t.Fatalf("only %d names found: the corpus was not read", len(names))
	}
	for n := range names {
		if _, ok := envJudgement(n); !ok {
			t.Errorf("%s is set by a real agent's line, and the table of variables does not judge it: add it, harmless or not, with the reason", n)
		}
	}
	for _, e := range envNames {
		if e.Reason == "" {
			t.Errorf("%s has no reason", e.Name)
		}
	}
}

// TestEnvDecisions: harmless variables change nothing, any other is
// asked (denied in safe mode) and makes a read-only program not
// read-only, no allow rule lifts it, [env] set of the user's file does,
// env NAME=value cmd is decided as cmd with the variables, and a deny rule
// still reaches the program.
func TestEnvDecisions(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		line            string
		safe, ask, auto Decision
		class           Class
	}{
		{"CI=1 NO_COLOR=1 git status", Allow, Allow, Allow, ReadOnly},
		{"LC_ALL=C TZ=UTC sort main.go", Allow, Allow, Allow, ReadOnly},
		{"env CI=1 git status", Allow, Allow, Allow, ReadOnly},
		{"GIT_SSH_COMMAND='sh -c id' git status", Deny, Ask, Ask, Unknown},
		{"LD_PRELOAD=./evil.so ls", Deny, Ask, Ask, Unknown},
		{"PAGER=./evil git log", Deny, Ask, Ask, Unknown},
		{"env GIT_EXTERNAL_DIFF=./x git diff", Deny, Ask, Ask, Unknown},
		{"RIPGREP_CONFIG_PATH=rc rg x", Deny, Ask, Ask, Unknown},
		{"SOMETHING_NEW=1 cat main.go", Deny, Ask, Ask, Unknown},
		{"PATH=.:/usr/bin ls", Deny, Ask, Ask, Unknown},
		{"LANG=C.UTF-8 LC_ALL=en_US.UTF-8 LANGUAGE=en:fr TZ=Europe/Paris ls", Allow, Allow, Allow, ReadOnly},
		// Values that name files: message catalogues are printf
		// formats, a zone file is read from anywhere.
		{"LC_ALL=C.UTF-8 LANGUAGE=../../tmp/loc/xx ls nonexist", Deny, Ask, Ask, Unknown},
		{"LANG=/tmp/x ls", Deny, Ask, Ask, Unknown},
		{"TZ=/etc/shadow date", Deny, Ask, Ask, Unknown},
		{"TZ=:../../x date", Deny, Ask, Ask, Unknown},
		{"TERM=../../x ls", Deny, Ask, Ask, Unknown},
		{"PYTHONWARNINGS=ignore::unittest.__main__.X pytest", Deny, Ask, Ask, Unknown},
		// A workspace program named env is the workspace's, whatever
		// follows it.
		{"./env CI=1 ls", Deny, Ask, Ask, ShellComplex},
		{"src/env CI=1 ls", Deny, Ask, Ask, ShellComplex},
		{"CI=1 git push origin main", Deny, Deny, Deny, WorkspaceMutating},
		{"env CI=1 git push origin main", Deny, Deny, Deny, WorkspaceMutating},
	}
	f.write(filepath.Join(f.ws, "env"), "#!/bin/sh\necho PWNED\n")
	f.write(filepath.Join(f.ws, "src", "env"), "#!/bin/sh\necho PWNED\n")
	rules := []Rule{exec(Allow, "git *"), exec(Allow, "ls *"), exec(Allow, "pytest *"), exec(Deny, "git push*")}
	for _, c := range cases {
		for _, m := range []struct {
			mode Mode
			want Decision
		}{{ModeSafe, c.safe}, {ModeAsk, c.ask}, {ModeAuto, c.auto}} {
			p := f.load(m.mode, rules...)
			v := f.check(p, c.line)
			if v.Decision != m.want {
				t.Errorf("%s in %s mode: %s (%s), want %s", c.line, m.mode, v.Decision, v.Reason, m.want)
			}
			if m.mode == ModeAsk && v.Class != c.class && v.Decision != Deny {
				t.Errorf("%s: class %s, want %s", c.line, v.Class, c.class)
			}
		}
	}
	// [env] set in the user's file lifts a name; in a project file it is
	// an error.
	f.write(f.user, "[env]\nset = [\"GIT_SSH_COMMAND\", \"MY_*\", \"PATH\"]\n")
	o := f.options()
	o.UserFile = f.user
	mode := ModeAuto
	o.Mode = &mode
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"GIT_SSH_COMMAND=x git status", "MY_FLAG=1 git status"} {
		if v := f.check(p, line); v.Decision != Allow {
			t.Errorf("%s with [env] set: %s (%s)", line, v.Decision, v.Reason)
		}
	}
	// PATH is asked whatever [env] set says: the programs decided are
	// those the sandbox's PATH finds.
	if v := f.check(p, "PATH=/tmp git status"); v.Decision != Ask {
		t.Errorf("PATH with [env] set: %s (%s)", v.Decision, v.Reason)
	}
	f.write(f.proj, "[env]\nset = [\"PYTHONPATH\"]\n")
	o.ProjectFile = f.proj
	if _, err := Load(o); err == nil || !strings.Contains(err.Error(), "env.set") {
		t.Errorf("a project file's [env] set: %v", err)
	}
	f.write(f.user, "[env]\nset = [\"A-B\"]\n")
	o.ProjectFile = ""
	if _, err := Load(o); err == nil || !strings.Contains(err.Error(), "not a variable") {
		t.Errorf("a bad name in [env] set: %v", err)
	}
}

// TestPythonModule: python -m pytest is decided as pytest, unless the
// working directory shadows the module, when it is the workspace's code;
// other modules and options stay what they were.
func TestPythonModule(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAuto, exec(Allow, "pytest *"))
	for line, want := range map[string]Decision{
		"python3 -m pytest -q":            Allow,
		"python -u -m pytest tests/":      Allow,
		"python3 -m unittest discover":    Allow,
		"python3 -m http.server":          Ask,
		"python3 -X importtime -m pytest": Ask,
		"python3 -c 'import pytest'":      Ask,
	} {
		if v := f.check(p, line); v.Decision != want {
			t.Errorf("%s: %s (%s), want %s", line, v.Decision, v.Reason, want)
		}
	}
	// A pytest.py in the workspace is imported first: workspace code.
	for _, shadow := range []string{"pytest.py", "pytest/__init__.py", "pytest.cpython-311-x86_64-linux-gnu.so"} {
		f.write(filepath.Join(f.ws, shadow), "")
		pa := f.load(ModeAsk)
		v := f.check(pa, "python3 -m pytest")
		if v.Class != Unknown || !strings.Contains(v.Reason, "workspace's code") {
			t.Errorf("with %s: %s %s (%s)", shadow, v.Decision, v.Class, v.Reason)
		}
		os.RemoveAll(filepath.Join(f.ws, strings.Split(shadow, "/")[0]))
	}
}

// TestLineParserView: a glob over the workspace is expanded; one that
// reads a directory outside it, by its path or through a link, stays
// opaque, naming why.
func TestLineParserView(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk)
	f.write(filepath.Join(f.ws, "src", "a.go"), "")
	if err := os.Symlink(f.home, filepath.Join(f.ws, "out")); err != nil {
		t.Fatal(err)
	}
	lp := p.LineParser(f.ws)
	l, err := lp.Plan("ls src/*.go")
	if err != nil || l.Opaque != nil || strings.Join(l.Stages()[0].Argv, " ") != "ls src/a.go" {
		t.Fatalf("ls src/*.go: %v %+v", err, l)
	}
	for _, line := range []string{"ls out/*", "ls " + f.home + "/*", "ls ../*", "cat out/.ssh/*"} {
		l, err := lp.Plan(line)
		if err != nil || l.Opaque == nil || !strings.Contains(l.Opaque.Message, "outside the workspace") {
			t.Errorf("%s: %v %+v", line, err, l.Opaque)
		}
	}
}
