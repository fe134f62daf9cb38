package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
)

// TestRealLinesRun runs the constructs rein now reads itself through the
// shell tool, in the sandbox, and checks what the programs got: the
// variables set before a program, a glob's words, $HOME and $PWD, an
// unrolled loop, a venv's bin first, and a command ended by & started as
// a handle.
func TestRealLinesRun(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.DenyAll{})
	for _, n := range []string{"a.txt", "b.txt", "-n"} {
		os.WriteFile(filepath.Join(f.ws, "src", n), []byte(n+"\n"), 0o644)
	}
	venv := filepath.Join(f.ws, ".venv", "bin")
	os.MkdirAll(venv, 0o755)
	os.WriteFile(filepath.Join(venv, "activate"), []byte("# activate\n"), 0o644)
	os.WriteFile(filepath.Join(venv, "hello"), []byte("#!/bin/sh\necho \"hello from $VIRTUAL_ENV\"\ncommand -v hello\n"), 0o755)
	for _, c := range []struct{ line, want string }{
		{"TZ=UTC NO_COLOR=1 printenv TZ NO_COLOR", "UTC\n1\n"},
		{"env TZ=UTC printenv TZ", "UTC\n"},
		{"echo src/*.txt", "src/a.txt src/b.txt\n"},
		// A file named -n is an argument like any other: the argv the
		// policy decided is the argv echo got, and echo takes it for its
		// option, as it would from bash.
		{"cd src && echo *", "a.txt b.txt main.go"},
		{"echo $HOME \"$PWD\"", "/run/rein/home " + f.ws + "\n"},
		{"for f in a b; do echo \"x$f\"; done", "xa\nxb\n"},
		{"source .venv/bin/activate && hello", "hello from " + filepath.Join(f.ws, ".venv") + "\n" + filepath.Join(venv, "hello") + "\n"},
	} {
		env := f.call(t, "shell", obj{"line": c.line})
		res := env.Result()
		if env.Status != OK || res.Output != c.want {
			t.Errorf("%s: %s %q (%s), want %q", c.line, env.Status, res.Output, env.Reason, c.want)
		}
	}
	// A variable the table does not call harmless is asked: the deny-all
	// approver refuses it, naming it.
	env := f.call(t, "shell", obj{"line": "LD_PRELOAD=/tmp/x.so ls"})
	if env.Status != Denied || !strings.Contains(env.Reason, "LD_PRELOAD") {
		t.Errorf("LD_PRELOAD: %s %s", env.Status, env.Reason)
	}
	// One command ended by & starts a handle, polled like shell_start's.
	os.WriteFile(filepath.Join(f.ws, "bg.sh"), []byte("#!/bin/sh\necho started; sleep 0.2; echo done\n"), 0o755)
	env = f.call(t, "shell", obj{"line": "./bg.sh &"})
	if env.Status != OK {
		t.Fatalf("background: %+v", env)
	}
	h, _ := env.Result().Data.(map[string]any)["handle"].(string)
	if h == "" {
		t.Fatalf("background: no handle in %+v", env.Result())
	}
	if out, _, _ := pollUntilDone(t, f, h); out != "started\ndone\n" {
		t.Errorf("background output %q", out)
	}
}

// TestVenvPlantDecided: a program planted in a workspace venv's bin under
// a system program's name is decided as the workspace's program, not as
// the system's: ls there is never read-only.
func TestVenvPlantDecided(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAsk, nil, policy.DenyAll{})
	venv := filepath.Join(f.ws, ".venv", "bin")
	os.MkdirAll(venv, 0o755)
	os.WriteFile(filepath.Join(venv, "activate"), nil, 0o644)
	os.WriteFile(filepath.Join(venv, "ls"), []byte("#!/bin/sh\ntouch planted-ran\n"), 0o755)
	env := f.call(t, "shell", obj{"line": "source .venv/bin/activate && ls"})
	if env.Status != Denied || !strings.Contains(env.Reason, ".venv/bin/ls") {
		t.Errorf("planted ls: %s %s", env.Status, env.Reason)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "planted-ran")); err == nil {
		t.Error("the planted ls ran")
	}
	// Any program after the activation may start the venv's: git's gpg,
	// file's decompressors. git log is not read-only there.
	os.WriteFile(filepath.Join(venv, "gpg"), []byte("#!/bin/sh\ntouch gpg-ran\n"), 0o755)
	env = f.call(t, "shell", obj{"line": "source .venv/bin/activate && git log --show-signature -1"})
	if env.Status != Denied || !strings.Contains(env.Reason, "first on PATH") {
		t.Errorf("git log after an activation: %s %s", env.Status, env.Reason)
	}
	// An allow rule for git does not allow it there either: it names
	// git, not the venv's programs git may start.
	fa := newFixture(t, policy.ModeAsk, []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "git *"}}, policy.DenyAll{})
	os.MkdirAll(filepath.Join(fa.ws, ".venv", "bin"), 0o755)
	os.WriteFile(filepath.Join(fa.ws, ".venv", "bin", "activate"), nil, 0o644)
	if env := fa.call(t, "shell", obj{"line": "source .venv/bin/activate && git --version"}); env.Status != Denied || !strings.Contains(env.Reason, "first on PATH") {
		t.Errorf("git --version after an activation, with git allowed: %s %s", env.Status, env.Reason)
	}
	if env := fa.call(t, "shell", obj{"line": "git --version"}); env.Status != OK {
		t.Errorf("git --version with git allowed: %s %s", env.Status, env.Reason)
	}
	// Without the activation, ls is the system's, read-only.
	if env := f.call(t, "shell", obj{"line": "ls .venv"}); env.Status != OK {
		t.Errorf("ls: %s %s", env.Status, env.Reason)
	}
}
