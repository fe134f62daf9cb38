//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func rein(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestPolicyCheckExitStatus(t *testing.T) {
	docFixture(t)
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"policy", "check", "--", "git status"}, exitOK},
		{[]string{"policy", "check", "--", "touch x"}, exitAsk},
		{[]string{"policy", "check", "--mode", "safe", "--", "touch x"}, exitDeny},
		{[]string{"policy", "check", "--", "ls $(pwd)"}, exitAsk}, // opaque code is asked
		{[]string{"policy", "check", "--mode", "safe", "--", "ls $(pwd)"}, exitDeny},
		{[]string{"policy", "check", "--", "ls 'unterminated"}, exitRefuse}, // bash would reject it too
		{[]string{"policy", "check", "--argv", "--", "ls", "*"}, exitOK},    // an argv is verbatim
		{[]string{"policy", "check", "--argv", "--", "rm", "-rf", "/"}, exitDeny},
		{[]string{"policy", "check", "--mode", "yolo", "--", "ls"}, exitUsage},
		{[]string{"policy", "check", "--", "ls", "extra"}, exitUsage},
		{[]string{"policy", "check"}, exitUsage},
		{[]string{"policy", "check", "--deny", "", "--", "ls"}, exitUsage},
		{[]string{"policy", "check", "--workspace", "/nonexistent/dir", "--", "ls"}, exitUsage},
	}
	for _, c := range cases {
		if code, out, errOut := rein(t, c.args...); code != c.code {
			t.Errorf("rein %q: exit %d, want %d\n%s%s", c.args, code, c.code, out, errOut)
		}
	}
}

func TestPolicyCheckJSON(t *testing.T) {
	_, ws := docFixture(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	if err := os.WriteFile(user, []byte("[exec]\nallow = [\"git status*\"]\ndeny = [\"git push*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := rein(t, "--user-policy", user, "policy", "check", "--json", "--", "git status && git push > log.txt")
	if code != exitDeny {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var got struct {
		Decision string          `json:"decision"`
		Refusal  json.RawMessage `json:"refusal"`
		Stages   []struct {
			Index    int      `json:"index"`
			Argv     []string `json:"argv"`
			Class    string   `json:"class"`
			Decision string   `json:"decision"`
			Rule     *string  `json:"rule"`
			Layer    *string  `json:"layer"`
			File     *string  `json:"file"`
			Line     int      `json:"line"`
			Paths    []struct {
				Path, Resolved, Access, Decision string
			} `json:"paths"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Decision != "deny" || string(got.Refusal) != "null" || len(got.Stages) != 2 {
		t.Fatalf("%s", out)
	}
	s0, s1 := got.Stages[0], got.Stages[1]
	if s0.Index != 0 || s0.Decision != "allow" || *s0.Rule != "git status*" || *s0.Layer != "user" || *s0.File != user || s0.Line != 2 || s0.Class != "read-only" {
		t.Errorf("stage 0: %+v", s0)
	}
	if s1.Index != 1 || s1.Decision != "deny" || *s1.Rule != "git push*" || s1.Line != 3 || len(s1.Paths) != 1 ||
		s1.Paths[0].Path != "log.txt" || s1.Paths[0].Resolved != filepath.Join(ws, "log.txt") || s1.Paths[0].Access != "write" {
		t.Errorf("stage 1: %+v", s1)
	}

	code, out, _ = rein(t, "policy", "check", "--json", "--", "ls $GOPATH")
	if code != exitAsk || !strings.Contains(out, `"decision": "ask"`) || !strings.Contains(out, `"opaque": true`) || !strings.Contains(out, `"construct": "parameter-expansion"`) ||
		!strings.Contains(out, `"offset": 3`) || !strings.Contains(out, `"source": "ls $GOPATH"`) {
		t.Errorf("opaque JSON: %d\n%s", code, out)
	}
	code, out, _ = rein(t, "policy", "check", "--json", "--", "ls $(pwd")
	if code != exitRefuse || !strings.Contains(out, `"decision": "refused"`) || !strings.Contains(out, `"opaque": false`) || !strings.Contains(out, `"malformed": true`) || !strings.Contains(out, `"stages": []`) {
		t.Errorf("refusal JSON: %d\n%s", code, out)
	}
	// A stage decided by the class table has null attribution.
	_, out, _ = rein(t, "policy", "check", "--json", "--", "ls")
	if !strings.Contains(out, `"rule": null`) || !strings.Contains(out, `"layer": null`) {
		t.Errorf("unattributed stage: %s", out)
	}
}

func TestPolicyConfigErrorExit(t *testing.T) {
	docFixture(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	if err := os.WriteFile(user, []byte("mode = \"ask\"\n[exec]\nallw = [\"x\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := rein(t, "--user-policy", user, "policy", "check", "--", "ls")
	if code != exitUsage || !strings.Contains(errOut, user+":3: exec.allw: unknown key") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestTrustAndShow(t *testing.T) {
	_, ws := docFixture(t)
	proj := filepath.Join(ws, ".rein", "policy.toml")
	if err := os.MkdirAll(filepath.Dir(proj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proj, []byte("[exec]\nallow = [\"frob *\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := rein(t, "policy", "check", "--", "frob x"); code != exitAsk {
		t.Fatalf("untrusted project allow applied: exit %d", code)
	}
	_, out, _ := rein(t, "policy", "show")
	if !strings.Contains(out, "untrusted") || !strings.Contains(out, "rein trust "+ws) {
		t.Errorf("show does not report the untrusted file:\n%s", out)
	}
	code, out, errOut := rein(t, "trust")
	if code != exitOK || !strings.Contains(out, "sha256") {
		t.Fatalf("trust: %d %s %s", code, out, errOut)
	}
	if code, out, _ := rein(t, "policy", "check", "--", "frob x"); code != exitOK || !strings.Contains(out, "project layer") {
		t.Fatalf("trusted project allow not applied: exit %d\n%s", code, out)
	}
	_, out, _ = rein(t, "policy", "show")
	if !strings.Contains(out, "trusted") || !strings.Contains(out, "exec  allow") || !strings.Contains(out, proj+":2") {
		t.Errorf("show:\n%s", out)
	}
	code, out, _ = rein(t, "policy", "show", "--json")
	var shown struct {
		Sources []struct{ Layer, Path, State string }
		Rules   []struct {
			Pattern, Layer, File string
			Line                 int
		}
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != exitOK {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	if len(shown.Rules) != 1 || shown.Rules[0].Pattern != "frob *" || shown.Rules[0].File != proj || shown.Rules[0].Line != 2 {
		t.Errorf("show --json rules: %+v", shown.Rules)
	}
	if code, _, errOut := rein(t, "trust", filepath.Join(ws, "src")); code != exitUsage || !strings.Contains(errOut, "no project policy") {
		t.Errorf("trust without a file: %d %s", code, errOut)
	}
}

// TestOutputIsPrintable: an argv or path carrying terminal escapes is shown
// escaped, never raw.
func TestOutputIsPrintable(t *testing.T) {
	docFixture(t)
	for _, args := range [][]string{
		{"policy", "check", "--", "cat 'a\x1b]0;pwned\x07' \"b\u202ec\""},
		{"policy", "check", "--argv", "--", "cat", "x\x1b[2J"},
		{"policy", "check", "--", "ls \x1b[31m*"},
	} {
		_, out, errOut := rein(t, args...)
		if strings.ContainsAny(out+errOut, "\x1b\x07\u202e") {
			t.Errorf("rein %q printed a raw control character:\n%q", args, out)
		}
	}
}
