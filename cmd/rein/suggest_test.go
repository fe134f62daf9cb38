//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicySuggest records a session of real rein commands, with asks
// approved and refused, and pastes what rein policy suggest prints into
// the user's policy file: rein policy check then allows each approved
// line, and its neighbours (other arguments, other programs, the refusal
// met once, the dangerous line approved) are still asked.
func TestPolicySuggest(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	t.Setenv("REIN_TRACE", filepath.Join(filepath.Dir(ws), "trace.db"))
	session := []struct {
		approve, line string
		code          int
	}{
		{"all", "touch made", 0},
		{"all", "ls && mkdir out", 0},
		{"all", "rm -rf out", 0},               // dangerous: no rule can allow it
		{"all", "bash -c 'touch x'", 0},        // shell-complex: no rule either
		{"none", "touch refused", exitDeny},    // refused twice: a rule is drafted
		{"none", "touch  ./refused", exitDeny}, // the same operation
		{"none", "touch once", exitDeny},       // refused once: nothing
		{"all", "rm -rf /", exitDeny},          // a hard deny, twice: listed, never drafted
		{"all", "rm -rf / ", exitDeny},         //
		{"all", "touch 'a*b'", 0},              // cannot be stated as a rule
	}
	for _, s := range session {
		if code, out, errOut := rein(t, "shell", "--approve", s.approve, s.line); code != s.code {
			t.Fatalf("rein shell --approve %s %q: exit %d, want %d\n%s%s", s.approve, s.line, code, s.code, out, errOut)
		}
	}
	code, out, errOut := rein(t, "policy", "suggest")
	if code != 0 {
		t.Fatalf("suggest: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("rein policy suggest:\n%s", out)
	for _, want := range []string{
		"[exec]\nallow = [\n",
		"  \"touch made\",  # approved in run ",
		"  \"mkdir out\",  # approved in run ",
		"  \"touch refused\",  # refused in run ",
		"  \"touch ./refused\",  # refused in run ",
		"# No rule can allow this:\n#   exec rm -rf out\n",
		"\n#   exec bash -c 'touch x'\n",
		"# Cannot be stated as a rule:\n#   exec touch 'a*b'\n",
		"# Denied by the current policy:\n#   exec rm -rf /\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the suggestion lacks %q", want)
		}
	}
	if n := strings.Count(out, "\",  # "); n != 4 {
		t.Errorf("%d rules drafted, want 4", n)
	}

	// Nothing was written by suggest; the person pastes it.
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	if _, err := os.Stat(user); !os.IsNotExist(err) {
		t.Fatalf("suggest wrote the user policy: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		code int
	}{
		{"touch made", exitOK},
		{"mkdir out", exitOK},
		{"ls && mkdir out", exitOK},
		{"touch refused", exitOK},
		{"touch ./refused", exitOK},
		{"touch other", exitAsk},
		{"touch made other", exitAsk},
		{"mkdir -p out", exitAsk},
		{"mkdir out2", exitAsk},
		{"touch once", exitAsk},
		{"rm -rf out", exitAsk},
		{"bash -c 'touch x'", exitAsk},
		{"touch 'a*b'", exitAsk},
		{"rm -rf /", exitDeny},
	} {
		if code, out, errOut := rein(t, "policy", "check", "--", c.line); code != c.code {
			t.Errorf("policy check %q with the suggestion pasted: exit %d, want %d\n%s%s", c.line, code, c.code, out, errOut)
		}
	}
}
