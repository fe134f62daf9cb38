//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestPolicyCheckTilde: rein policy check decides a line's ~ as rein shell
// runs it, the sandbox's private HOME, and shows the stage as written.
func TestPolicyCheckTilde(t *testing.T) {
	home, _ := docFixture(t)
	for _, c := range []struct {
		line  string
		code  int
		first string
	}{
		{"cat ~/x", exitOK, "allow: stage 0 (cat ~/x): read-only (reads files)"},
		{"cd ~ && ls", exitOK, "allow: all 2 stages are allowed"},
		{"echo hi > ~/f", exitAsk, "ask: stage 0 (echo hi > ~/f): workspace-mutating (it redirects output into a file): ask mode asks unless a rule allows it"},
		{"ls ~/../../etc/shadow", exitAsk, "ask: stage 0 (ls ~/../../etc/shadow): read /run/rein/home/../../etc/shadow: outside the workspace"},
		{"cat ~/../../../etc/shadow", exitDeny, `deny: stage 0 (cat ~/../../../etc/shadow): read /run/rein/home/../../../etc/shadow: protected by deny rule "/etc/shadow" (builtin layer)`},
		{"cat ~user/x", exitAsk, `ask: opaque shell code (tilde-user at byte 4: "~user": rein expands only ~ and ~/path: write the directory's path), decided as bash -c: stage 0 (cat ~user/x): shell-complex (bash -c runs a command string): no allow rule can lift it`},
		// The user's HOME by its path is the user's.
		{"cat " + home + "/.ssh/id_rsa", exitDeny, "deny: stage 0 (cat " + home + "/.ssh/id_rsa): read " + home + `/.ssh/id_rsa: protected by deny rule "~/.ssh/**" (builtin layer)`},
	} {
		code, out, errOut := rein(t, "policy", "check", "--", c.line)
		if first, _, _ := strings.Cut(out, "\n"); code != c.code || first != c.first {
			t.Errorf("%s: exit %d, want %d\n got %s\nwant %s\n%s", c.line, code, c.code, first, c.first, errOut)
		}
	}
}

// TestShellTilde: rein shell runs ~ as the sandbox's HOME, which policy
// check decided: a cd there and a listing of it, without asking.
func TestShellTilde(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	code, out, errOut := rein(t, "shell", "--approve", "none", "--rung", "bwrap", "cd ~ && ls -a && cat ~/../../../etc/hostname")
	if code != exitDeny || out != "" || !strings.Contains(errOut, "hostname") {
		t.Errorf("the line reaching out of HOME: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = rein(t, "shell", "--approve", "none", "--rung", "bwrap", "cd ~ && ls -a")
	if code != exitOK || out != ".\n..\n" {
		t.Errorf("exit %d, stdout %q\n%s", code, out, errOut)
	}
}
