//go:build linux

package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// The test binary serves as the sandbox's init, as rein's binary does.
func TestMain(m *testing.M) {
	sandbox.Main()
	// In a loopback-only network namespace, before a Claude Code CLI.
	if spec := os.Getenv(netnsEnv); spec != "" && len(os.Args) > 2 && os.Args[1] == "--" {
		os.Unsetenv(netnsEnv)
		os.Exit(netnsMain(spec, os.Args[2:]))
	}
	// As rein itself, for tests that run it as a process (rein mcp).
	// (Inside a launched session the test binary is the init, and
	// sandbox.Main is the session's relay.)
	if os.Getenv("REIN_TEST_MAIN") == "1" {
		os.Exit(profiled(func() int { return run(os.Args[1:], os.Stdout, os.Stderr) }))
	}
	os.Exit(m.Run())
}

func TestSandboxCommand(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
	code, out, errOut := rein(t, "sandbox", "--", "sh", "-c", "pwd; env; echo x > f; exit 4")
	if code != 4 || !strings.Contains(out, ws+"\n") || strings.Contains(out, "hunter2") || strings.Contains(out, "AWS_") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if data, _ := os.ReadFile(ws + "/f"); string(data) != "x\n" {
		t.Fatalf("the write did not land: %q", data)
	}
	code, out, _ = rein(t, "sandbox", "--json", "--read-only", "--", "sh", "-c", "echo y > g")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code == 0 || res.Status != sandbox.Failed {
		t.Fatalf("read-only write: exit %d %v\n%s", code, err, out)
	}
	if code, _, errOut := rein(t, "sandbox", "--timeout", "1h", "--", "true"); code != exitSandbox || !strings.Contains(errOut, "ceiling") {
		t.Fatalf("timeout above the ceiling: %d %s", code, errOut)
	}
	if code, _, _ := rein(t, "sandbox", "--", "no-such-program-rein"); code != 127 {
		t.Fatalf("missing program: exit %d", code)
	}
	// The landlock rung, and --json's spooled output.
	code, out, _ = rein(t, "sandbox", "--rung", "landlock", "--json", "--", "sh", "-c", "echo spooled")
	res = sandbox.Result{}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Rung != "landlock" || res.Stdout.File == "" {
		t.Fatalf("landlock: exit %d %v\n%s", code, err, out)
	}
	if data, _ := os.ReadFile(res.Stdout.File); string(data) != "spooled\n" {
		t.Fatalf("the spool holds %q", data)
	}
	if code, _, errOut := rein(t, "sandbox", "--rung", "none", "--", "true"); code != 0 || !strings.Contains(errOut, "unconfined") {
		t.Fatalf("none: exit %d %s", code, errOut)
	}
}

// TestSandboxSpoolBound: --json spools the streams no further than the
// file size limit, and says how much it dropped.
func TestSandboxSpoolBound(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	code, out, errOut := rein(t, "sandbox", "--json", "--file-size", "10MiB", "--", "head", "-c", "200M", "/dev/zero")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errOut)
	}
	fi, err := os.Stat(res.Stdout.File)
	if err != nil || fi.Size() != 10<<20 || res.Stdout.Bytes != 200<<20 || res.Stdout.Dropped != 190<<20 || !strings.Contains(out, `"dropped_bytes": 199229440`) {
		t.Fatalf("the spool holds %v (%v), the result says %+v", fi, err, res.Stdout)
	}
}

// TestShellAndExec: policy first, then the sandbox; nothing runs when the
// policy denies, or asks with no one to answer.
func TestShellAndExec(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	out := ws + "/out.txt"
	// Ask mode asks about a write; with no terminal and no --approve, that
	// is a deny, and nothing runs.
	if code, _, errOut := rein(t, "shell", "echo hi > out.txt"); code != exitDeny || !strings.Contains(errOut, "not run") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a denied line ran")
	}
	if code, _, errOut := rein(t, "shell", "--approve", "all", "echo hi > out.txt"); code != 0 {
		t.Fatalf("approved line: exit %d: %s", code, errOut)
	}
	if data, _ := os.ReadFile(out); string(data) != "hi\n" {
		t.Fatalf("the approved line did not run: %q", data)
	}
	// A deny rule wins over --approve all.
	if code, _, errOut := rein(t, "shell", "--approve", "all", "--deny", "cat *", "cat out.txt"); code != exitDeny || !strings.Contains(errOut, `"cat *"`) {
		t.Fatalf("deny rule: exit %d: %s", code, errOut)
	}
	// A glob is expanded by rein over the workspace and runs as the
	// files it matched. A glob after another command of the line is
	// opaque shell code: asked, and with no one to answer, not run;
	// approved, bash runs it in the sandbox. A line bash would reject is
	// refused by the grammar.
	if code, stdout, errOut := rein(t, "shell", "ls *.txt"); code != 0 || stdout != "out.txt\n" {
		t.Fatalf("glob: exit %d: %q %s", code, stdout, errOut)
	}
	if code, _, errOut := rein(t, "shell", "true && ls *"); code != exitDeny || !strings.Contains(errOut, "opaque shell code (glob") {
		t.Fatalf("glob after a command: exit %d: %s", code, errOut)
	}
	if code, stdout, errOut := rein(t, "shell", "--approve", "all", "true && ls *.txt"); code != 0 || stdout != "out.txt\n" {
		t.Fatalf("approved glob: exit %d: %q %s", code, stdout, errOut)
	}
	if code, _, errOut := rein(t, "shell", "true &"); code != exitUsage || !strings.Contains(errOut, "ends with &") {
		t.Fatalf("background line: exit %d: %s", code, errOut)
	}
	if code, _, _ := rein(t, "shell", "ls 'unterminated"); code != exitRefuse {
		t.Fatalf("malformed: exit %d", code)
	}
	// Read-only work runs without asking; the exit status is the line's.
	if code, stdout, _ := rein(t, "shell", "cat out.txt && false"); code != 1 || stdout != "hi\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if code, _, _ := rein(t, "exec", "--approve", "all", "--", "sh", "-c", "exit 5"); code != 5 {
		t.Fatalf("exec: exit %d", code)
	}
	// Safe mode mounts the workspace read-only even for a program an allow
	// rule lets run: a script is unknown to the class table.
	if err := os.WriteFile(ws+"/w.sh", []byte("echo x > out.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := rein(t, "exec", "--mode", "safe", "--allow", "sh w.sh", "--", "sh", "w.sh")
	if code == 0 || code == exitDeny || !strings.Contains(errOut, "Read-only") {
		t.Fatalf("safe mode: exit %d: %s", code, errOut)
	}
}

func TestDoctor(t *testing.T) {
	requireBwrap(t)
	code, out, errOut := rein(t, "doctor")
	if code != 0 || !strings.Contains(out, "bwrap     ok") || !strings.Contains(out, "landlock  ok") || !strings.Contains(out, "none      by name") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "beneath the writable paths") || !strings.Contains(out, "\nthe landlock rung leaves open what bwrap closes:\n  - host processes are listed in /proc") {
		t.Fatalf("the landlock rung's supervisor and what it leaves open are not said:\n%s", out)
	}
	// Every limit has a line: how it is enforced here, or why not.
	for _, l := range []string{"memory       cgroup v", "processes    cgroup v", "cpu_seconds  rlimit", "open_files   rlimit", "file_size    rlimit", "tmp_size     tmpfs"} {
		if !strings.Contains(out, "\n  "+l) {
			t.Fatalf("no line %q:\n%s", l, out)
		}
	}
}

// requireBwrap skips a test that needs bubblewrap where it is missing,
// and fails it instead when REIN_REQUIRE_SANDBOX=1 (as in CI).
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the sandbox tests need bubblewrap: %v", err)
	}
}

// TestLimitFlags: the limit flags reach the sandbox and its result, a bad
// value is a usage error, and a flag cannot raise a limit the policy sets.
func TestLimitFlags(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	code, out, errOut := rein(t, "sandbox", "--json", "--memory", "256MiB", "--processes", "64", "--open-files", "100", "--", "sh", "-c", "ulimit -n")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Stdout.Text != "100\n" {
		t.Fatalf("exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	got := map[string]int64{}
	for _, a := range res.Limits {
		got[a.Limit] = a.Value
	}
	want := map[string]int64{"memory": 256 << 20, "processes": 64, "open_files": 100, "core_size": 0, "tmp_size": 256 << 20}
	if len(got) != len(want) {
		t.Fatalf("limits %+v, want %v", res.Limits, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("limits %+v, want %v", res.Limits, want)
		}
	}
	if code, _, errOut := rein(t, "sandbox", "--memory", "lots", "--", "true"); code != exitUsage || !strings.Contains(errOut, "--memory") {
		t.Fatalf("bad size: exit %d %s", code, errOut)
	}
	if code, _, errOut := rein(t, "sandbox", "--memory", "1MiB", "--", "true"); code != exitSandbox || !strings.Contains(errOut, "below the least accepted") {
		t.Fatalf("tiny memory: exit %d %s", code, errOut)
	}
	code, _, errOut = rein(t, "sandbox", "--file-size", "1KiB", "--", "sh", "-c", "head -c 4096 /dev/zero > f")
	if code != 128+25 || !strings.Contains(errOut, "file size limit of 1 KiB") {
		t.Fatalf("file size: exit %d %s", code, errOut)
	}
	if fi, err := os.Stat(ws + "/f"); err != nil || fi.Size() != 1024 {
		t.Fatalf("the file: %v %v", fi, err)
	}
	// The org policy sets a memory limit: a flag may lower it, not raise it.
	if err := os.WriteFile(os.Getenv("REIN_ORG_POLICY"), []byte("[limits]\nmemory = \"256MiB\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := rein(t, "shell", "--memory", "1GiB", "true"); code != exitSandbox || !strings.Contains(errOut, "--memory 1073741824 is above the policy's limits.memory of 268435456 (org layer") {
		t.Fatalf("raising the policy's limit: exit %d %s", code, errOut)
	}
	code, out, errOut = rein(t, "shell", "--json", "--memory", "128MiB", "true")
	var v struct{ Result sandbox.Result }
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Result.Limits[0].Limit != "memory" || v.Result.Limits[0].Value != 128<<20 {
		t.Fatalf("lowering: exit %d %v %s %s", code, err, out, errOut)
	}
}

// TestToolAndTrace: one call through the router from the command line,
// the schemas a model sees, and the trace of it all, verified.
func TestToolAndTrace(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	code, out, errOut := rein(t, "tool", "read_file", `{"path":"main.go"}`)
	if code != 0 || !strings.HasPrefix(out, "read_file: ok\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = rein(t, "tool", "--deny", "git push*", "shell", `{"line":"git push origin main"}`)
	if code != 1 || !strings.Contains(out, `denied by deny rule "git push*" (flags layer)`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "tool", "--json", "--approve", "all", "shell", `{"line":"echo hi"}`)
	var v struct {
		Run      string
		Envelope struct{ Status, Preview string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Envelope.Status != "ok" || v.Envelope.Preview != "hi\n" || v.Run == "" {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if code, _, errOut := rein(t, "tool", "nope", `{}`); code != 1 {
		t.Fatalf("unknown tool: %d %s", code, errOut)
	}
	code, out, _ = rein(t, "tools", "--json")
	var specs []struct {
		Name        string
		InputSchema map[string]any `json:"input_schema"`
	}
	if err := json.Unmarshal([]byte(out), &specs); err != nil || code != 0 || len(specs) < 10 || specs[0].InputSchema["type"] != "object" {
		t.Fatalf("tools: %v\n%s", err, out)
	}
	code, out, _ = rein(t, "trace", "runs")
	if code != 0 || strings.Count(out, "\n") != 5 {
		t.Fatalf("trace runs: exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "trace", "refusals")
	if code != 0 || !strings.Contains(out, `rule "git push*" (flags layer)`) {
		t.Fatalf("trace refusals: exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "trace", "show", v.Run)
	if code != 0 || !strings.Contains(out, `shell {"line":"echo hi"} -> ok`) || !strings.Contains(out, "sandbox run:") {
		t.Fatalf("trace show: exit %d\n%s", code, out)
	}
	if code, out, _ := rein(t, "trace", "verify"); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("verify: %d %s", code, out)
	}
	// The store can be named elsewhere.
	other := ws + "/../elsewhere.db"
	t.Setenv("REIN_TRACE", other)
	if code, _, _ := rein(t, "tool", "list_dir", `{"path":"."}`); code != 0 {
		t.Fatal("REIN_TRACE")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("REIN_TRACE was not used: %v", err)
	}
}

// TestHookClaudeCode: recorded PreToolUse inputs get Claude Code's hook
// output, malformed input is denied, every decision is in the trace, and
// install merges the entry into a settings file once.
func TestHookClaudeCode(t *testing.T) {
	home, ws := docFixture(t)
	hookCall := func(input string) (string, string) {
		var out, errOut strings.Builder
		code := runIn([]string{"hook", "claude-code"}, strings.NewReader(input), &out, &errOut)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		var o struct {
			HookSpecificOutput struct {
				HookEventName, PermissionDecision, PermissionDecisionReason string
			}
		}
		if err := json.Unmarshal([]byte(out.String()), &o); err != nil || o.HookSpecificOutput.HookEventName != "PreToolUse" {
			t.Fatalf("not hook output: %v %q", err, out.String())
		}
		return o.HookSpecificOutput.PermissionDecision, o.HookSpecificOutput.PermissionDecisionReason
	}
	in := func(tool, input string) string {
		return `{"session_id":"abc","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `}`
	}
	for _, c := range []struct{ input, want, reason string }{
		{in("Bash", `{"command":"git status"}`), "allow", ""},
		{in("Bash", `{"command":"rm -rf ~"}`), "deny", "hard deny"},
		{in("Read", `{"file_path":"`+home+`/.ssh/id_rsa"}`), "deny", "protected"},
		{in("Write", `{"file_path":"`+ws+`/main.go","content":"x"}`), "allow", ""},
		{in("mcp__x__y", `{}`), "ask", "no tool rule"},
		{`{"tool_name": `, "deny", "not JSON"},
		{`{"tool_name":"Bash","tool_input":{"command":"ls"}}`, "deny", "no project directory"},
	} {
		t.Setenv("CLAUDE_PROJECT_DIR", "")
		got, reason := hookCall(c.input)
		if got != c.want || !strings.Contains(reason, c.reason) || !strings.HasPrefix(reason, "rein: ") {
			t.Errorf("%s: %s %q, want %s containing %q", c.input, got, reason, c.want, c.reason)
		}
	}
	code, out, _ := rein(t, "trace", "show", "claude-code-abc")
	if code != 0 || strings.Count(out, "step ") != 5 || !strings.Contains(out, "Bash") {
		t.Fatalf("trace show: exit %d\n%s", code, out)
	}
	settings := ws + "/.claude/settings.json"
	os.MkdirAll(ws+"/.claude", 0o755)
	os.WriteFile(settings, []byte(`{"model": "x", "hooks": {"PostToolUse": []}}`), 0o644)
	for range 2 {
		if code, _, errOut := rein(t, "hook", "install", "--settings", settings); code != 0 {
			t.Fatalf("install: %d %s", code, errOut)
		}
	}
	var s map[string]any
	data, _ := os.ReadFile(settings)
	if err := json.Unmarshal(data, &s); err != nil || s["model"] != "x" {
		t.Fatalf("%v %s", err, data)
	}
	pre := s["hooks"].(map[string]any)["PreToolUse"].([]any)
	if len(pre) != 1 || !strings.Contains(string(data), "hook claude-code") {
		t.Fatalf("the entry was not added exactly once: %s", data)
	}
}
