//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hookAnswer runs the hook on one input and returns its decision and the
// command Claude Code would run instead, if any.
func hookAnswer(t *testing.T, input string, flags ...string) (decision, reason string, updated map[string]any) {
	t.Helper()
	var out, errOut strings.Builder
	if code := runIn(append([]string{"hook", "claude-code"}, flags...), strings.NewReader(input), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var o struct {
		HookSpecificOutput struct {
			PermissionDecision, PermissionDecisionReason string
			UpdatedInput                                 map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out.String()), &o); err != nil {
		t.Fatalf("not hook output: %v %q", err, out.String())
	}
	h := o.HookSpecificOutput
	return h.PermissionDecision, h.PermissionDecisionReason, h.UpdatedInput
}

// runAsClaudeCode runs a command line as Claude Code's Bash tool does: with
// bash, from dir, the test binary standing in for rein.
func runAsClaudeCode(t *testing.T, dir, line string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestHookConfines: an allowed Bash command comes back rewritten so that
// Claude Code runs it through rein shell, in rein's sandbox: the same line
// and output, and a policy miss (a script a rule allows that writes
// outside the workspace) contained. The rest of the tool's input is kept;
// a denial and --no-confine are left as they are; a tool whose input is a
// command is confined too; an ask approved in Claude Code runs confined.
func TestHookConfines(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	marker := filepath.Join(home, "escaped")
	os.WriteFile(filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\necho building\necho x > "+marker+"\necho built > out.txt\n"), 0o755)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./build.sh\", \"echo *\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	t.Setenv("CLAUDE_PROJECT_DIR", ws)
	in := func(tool, input string) string {
		return `{"session_id":"s1","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `}`
	}

	d, reason, up := hookAnswer(t, in("Bash", `{"command":"echo hello && ./build.sh","description":"build","timeout":60000}`))
	if d != "allow" || up == nil || !strings.Contains(reason, "runs in rein's sandbox") || up["description"] != "build" || up["timeout"] != float64(60000) {
		t.Fatalf("%s %q %v", d, reason, up)
	}
	line, _ := up["command"].(string)
	if !strings.Contains(line, " shell --workspace ") || !strings.Contains(line, "--approve none") || !strings.Contains(line, "--timeout 1m0s") ||
		!strings.HasSuffix(line, "-- 'echo hello && ./build.sh'") {
		t.Fatalf("the rewritten command: %s", line)
	}
	out, code := runAsClaudeCode(t, ws, line)
	if code != 0 || !strings.Contains(out, "hello\n") || !strings.Contains(out, "building\n") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(data) != "built\n" {
		t.Errorf("the workspace write did not land: %q", data)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the allowed script wrote outside the workspace: the command ran unconfined")
	}

	// A background command, which Claude Code does not time, gets rein's
	// ceiling; a timeout past it, the ceiling.
	if _, _, up := hookAnswer(t, in("Bash", `{"command":"echo bg","run_in_background":true}`)); up == nil || !strings.Contains(up["command"].(string), "--timeout 10m0s") {
		t.Fatalf("background: %v", up)
	}
	if _, _, up := hookAnswer(t, in("Bash", `{"command":"echo long","timeout":3600000}`)); up == nil || !strings.Contains(up["command"].(string), "--timeout 10m0s") {
		t.Fatalf("a long timeout: %v", up)
	}
	// Denied: as it was, nothing to run.
	if d, _, up := hookAnswer(t, in("Bash", `{"command":"cat ~/.ssh/id_rsa"}`)); d != "deny" || up != nil {
		t.Fatalf("a denial: %s %v", d, up)
	}
	// --no-confine: decided only.
	if d, _, up := hookAnswer(t, in("Bash", `{"command":"echo hi"}`), "--no-confine"); d != "allow" || up != nil {
		t.Fatalf("--no-confine: %s %v", d, up)
	}
	// A tool whose input is a command.
	if d, _, up := hookAnswer(t, in("Monitor", `{"command":"echo watching"}`)); up == nil || !strings.Contains(up["command"].(string), "-- 'echo watching'") {
		t.Fatalf("Monitor: %s %v", d, up)
	}
	// Both command fields of a tool are rewritten, not the first only.
	if _, _, up := hookAnswer(t, in("Runner", `{"command":"echo one","cmd":"echo two"}`)); up == nil ||
		!strings.Contains(up["command"].(string), "-- 'echo one'") || !strings.Contains(up["cmd"].(string), "-- 'echo two'") {
		t.Fatalf("two command fields: %v", up)
	}
	// Asked: Claude Code asks its user; approved, the line runs confined,
	// its asks answered yes, its denials still denials.
	d, _, up = hookAnswer(t, in("Bash", `{"command":"touch new.txt"}`))
	if d != "ask" || up == nil || !strings.Contains(up["command"].(string), "--approve line") {
		t.Fatalf("an ask: %s %v", d, up)
	}
	if out, code := runAsClaudeCode(t, ws, up["command"].(string)); code != 0 {
		t.Fatalf("the approved ask: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Fatalf("the approved ask did not run: %v", err)
	}
}

// TestHookConfinesFromItsDirectory: the rewritten command runs the line
// from the directory the hook decided it from (the call's cwd), so a line
// approved for one directory does not run in another.
func TestHookConfinesFromItsDirectory(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	for _, d := range []string{"build", "sub/build"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
		os.WriteFile(filepath.Join(ws, d, "f"), []byte("x"), 0o644)
	}
	sub := filepath.Join(ws, "sub")
	input := `{"session_id":"s2","cwd":"` + sub + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build; pwd"}}`
	t.Setenv("CLAUDE_PROJECT_DIR", ws)
	d, _, up := hookAnswer(t, input)
	if d != "ask" || up == nil || !strings.Contains(up["command"].(string), "--dir "+sub) {
		t.Fatalf("%s %v", d, up)
	}
	out, code := runAsClaudeCode(t, sub, up["command"].(string))
	if code != 0 || strings.TrimSpace(out) != sub {
		t.Fatalf("exit %d: %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "build", "f")); err != nil {
		t.Error("the workspace's top build was removed: the line ran from another directory than the one decided")
	}
	if _, err := os.Stat(filepath.Join(sub, "build")); err == nil {
		t.Error("sub/build is still there")
	}
}

// TestHookConfinesHeredocAndOpaque: a here-document write is decided as a
// write of its file and runs confined, its body byte for byte; a line
// outside the grammar is asked (not denied), runs confined under bash once
// approved, and is denied under --no-confine; the confined run carries the
// plan the hook decided and refuses a line that parses to another.
func TestHookConfinesHeredocAndOpaque(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	t.Setenv("CLAUDE_PROJECT_DIR", ws)
	in := func(command string) string {
		data, _ := json.Marshal(map[string]any{"session_id": "s2", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]string{"command": command}})
		return string(data)
	}

	body := "SELECT * FROM t WHERE a = '$1';\n\tindented `x` \\ \n"
	d, reason, up := hookAnswer(t, in("cat <<'EOF' > q.sql\n"+body+"EOF"))
	if d != "ask" || up == nil || !strings.Contains(reason, "workspace-mutating") {
		t.Fatalf("here-document: %s %q %v", d, reason, up)
	}
	line := up["command"].(string)
	if !strings.Contains(line, " --plan '") {
		t.Fatalf("the rewritten command carries no plan: %s", line)
	}
	if out, code := runAsClaudeCode(t, ws, line); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "q.sql")); string(data) != body {
		t.Fatalf("q.sql = %q, want %q", data, body)
	}

	// Opaque: asked, run by bash in the sandbox once approved.
	d, reason, up = hookAnswer(t, in("for f in a b; do echo \"$f\" >> loop.txt; done | cat"))
	if d != "ask" || up == nil || !strings.Contains(reason, "opaque shell code (compound-command") {
		t.Fatalf("opaque: %s %q %v", d, reason, up)
	}
	if out, code := runAsClaudeCode(t, ws, up["command"].(string)); code != 0 {
		t.Fatalf("opaque, approved: exit %d: %s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "loop.txt")); string(data) != "a\nb\n" {
		t.Fatalf("loop.txt = %q", data)
	}
	// Nothing would confine it under --no-confine.
	if d, reason, up := hookAnswer(t, in("ls *.go"), "--no-confine"); d != "deny" || up != nil || !strings.Contains(reason, "--no-confine") {
		t.Fatalf("opaque under --no-confine: %s %q %v", d, reason, up)
	}
	// Only a line bash would reject too is denied for its syntax.
	if d, reason, _ := hookAnswer(t, in("echo 'unterminated")); d != "deny" || !strings.Contains(reason, "bash would not run it either") {
		t.Fatalf("malformed: %s %q", d, reason)
	}

	// The confined run refuses a line whose plan is not the one decided.
	_, _, up = hookAnswer(t, in("echo decided > d.txt"))
	forged := strings.Replace(up["command"].(string), "-- 'echo decided > d.txt'", "-- 'echo other > d.txt'", 1)
	out, code := runAsClaudeCode(t, ws, forged)
	if code != exitSandbox || !strings.Contains(out, "another plan than the one decided") {
		t.Fatalf("a line that parses to another plan ran: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "d.txt")); err == nil {
		t.Fatal("d.txt was written")
	}
}

// TestHookApprovedLineNotItsNetwork: approving an asked command in Claude
// Code approves the command, not the connections it makes: a host no
// rule allows is refused, named in the output; a host a rule allows is
// reached.
func TestHookApprovedLineNotItsNetwork(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed:", err)
	}
	_, ws := docFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	user := filepath.Join(filepath.Dir(ws), "user.toml")
	os.WriteFile(user, []byte("[sandbox]\nnetwork = \"proxy\"\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	t.Setenv("CLAUDE_PROJECT_DIR", ws)
	in, _ := json.Marshal(map[string]any{"session_id": "s3", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]string{"command": "curl -sS --max-time 5 " + srv.URL + "/"}})
	d, _, up := hookAnswer(t, string(in))
	if d != "ask" || up == nil {
		t.Fatalf("curl is not asked: %s %v", d, up)
	}
	out, code := runAsClaudeCode(t, ws, up["command"].(string))
	if strings.Contains(out, "reached") || !strings.Contains(out, "the command was approved, not its network") || !strings.Contains(out, host) {
		t.Fatalf("the approved line's connection: exit %d\n%s", code, out)
	}
	os.WriteFile(user, []byte(fmt.Sprintf("[sandbox]\nnetwork = \"proxy\"\n[net]\nallow = [%q]\n", host)), 0o644)
	d, _, up = hookAnswer(t, string(in))
	if out, code := runAsClaudeCode(t, ws, up["command"].(string)); d != "ask" || code != 0 || !strings.Contains(out, "reached") {
		t.Fatalf("a host a rule allows: %s exit %d\n%s", d, code, out)
	}
}
