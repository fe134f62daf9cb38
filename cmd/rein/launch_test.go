//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/trace/sqlite"
)

// launchProc runs rein launch (the test binary standing in for rein) as a
// process of its own, with a built environment, and returns its exit
// status and streams.
func launchProc(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := launchCommand(env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func launchCommand(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"launch"}, args...)...)
	cmd.Env = append([]string{"REIN_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	for _, k := range []string{"REIN_ORG_POLICY", "REIN_USER_POLICY", "REIN_PROJECT_POLICY", "REIN_CACHE_DIR", "REIN_TRACE"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// liveWith are the processes whose command line holds marker.
func liveWith(marker string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		data, err := os.ReadFile(d + "/cmdline")
		if err == nil && strings.Contains(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})), marker) {
			out = append(out, d+": "+string(data))
		}
	}
	return out
}

// TestLaunchProgram: any program in a launched session: its exit status,
// a private and empty HOME, no network without a host, the credential
// stop, SIGTERM passed on and the whole tree gone after.
func TestLaunchProgram(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	code, out, errOut := launchProc(t, nil, "--", "sh", "-c", `ls -A ~; echo "home=$HOME"; echo x > in.txt; exit 7`)
	if code != 7 || out != "home=/run/rein/home\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "in.txt")); string(data) != "x\n" {
		t.Errorf("the workspace write: %q", data)
	}
	if code, out, errOut := launchProc(t, nil, "--", "sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/1 && echo connected"); code == 0 || strings.Contains(out, "connected") {
		t.Errorf("a session without a host reached the network: %d %q %s", code, out, errOut)
	}
	for _, env := range [][]string{{"GITHUB_TOKEN=ghp_x"}, {"AWS_ACCESS_KEY_ID=AKIA"}, {"SSH_AUTH_SOCK=/tmp/agent.sock"}, {"MY_SERVICE_PASSWORD=x"}} {
		name, _, _ := strings.Cut(env[0], "=")
		if code, _, errOut := launchProc(t, env, "--", "true"); code != exitLaunchCreds || !strings.Contains(errOut, name) {
			t.Errorf("%s: exit %d %s", name, code, errOut)
		}
	}
	for _, name := range []string{"HOME", "CLAUDE_CODE_RESTRICTED", "CLAUDE_CONFIG_DIR", "ANTHROPIC_CUSTOM_HEADERS", "https_proxy", "LD_PRELOAD"} {
		if code, _, errOut := launchProc(t, []string{name + "=/tmp/x"}, "--env", name, "--", "true"); code != exitLaunchRefused || !strings.Contains(errOut, name) {
			t.Errorf("--env %s: exit %d %s", name, code, errOut)
		}
	}
	// A program whose directory holds a key is not shown to the session.
	keyed := filepath.Join(t.TempDir(), "agent")
	os.MkdirAll(keyed, 0o755)
	os.WriteFile(filepath.Join(keyed, "id_rsa"), []byte("KEY"), 0o600)
	os.WriteFile(filepath.Join(keyed, "agent"), []byte("#!/bin/sh\ncat $(dirname $0)/id_rsa\n"), 0o755)
	if code, out, errOut := launchProc(t, nil, "--", filepath.Join(keyed, "agent")); code != exitLaunchRefused || strings.Contains(out, "KEY") || !strings.Contains(errOut, "id_rsa") {
		t.Errorf("a program beside a key: exit %d %q %s", code, out, errOut)
	}
	// The model's key is the one credential passed, and only when named.
	if code, out, errOut := launchProc(t, []string{"MODEL_API_KEY=k-123"}, "--key-env", "MODEL_API_KEY", "--", "sh", "-c", `echo "$MODEL_API_KEY"`); code != 0 || out != "k-123\n" {
		t.Errorf("--key-env: %d %q %s", code, out, errOut)
	}

	cmd := launchCommand(nil, "--", "sh", "-c", `sleep 3171 & trap 'echo got TERM; exit 9' TERM; echo ready; while :; do sleep 0.05; done`)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(so.String(), "ready"); {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) || !strings.Contains(so.String(), "got TERM") {
		t.Errorf("SIGTERM: exit %d\nstdout %q\nstderr %s", code, so.String(), se.String())
	}
	if left := liveWith("sleep 3171"); len(left) > 0 {
		t.Errorf("left running after the session: %q", left)
	}
}

// TestLaunchClaudeCode: the real Claude Code CLI whole inside a launched
// session: its Bash decided by rein's hook on the host and confined by the
// session (a script the policy allows cannot write outside the workspace),
// rein mcp's results reach the model, a connection to any host but the
// model's is refused and recorded, nothing runs after, and the session is
// one run in the trace.
func TestLaunchClaudeCode(t *testing.T) {
	requireBwrap(t)
	bin := claudeBin(t)
	home, ws := docFixture(t)
	tr := filepath.Join(t.TempDir(), "trace.db")
	t.Setenv("REIN_TRACE", tr)
	outside := t.TempDir()
	marker := filepath.Join(outside, "escaped")
	os.WriteFile(filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\necho building in $(pwd)\necho x > "+marker+"\necho built > out.txt\n"+
		"echo '{}' > $HOME/.claude/settings.json 2>/dev/null && echo settings-changed || echo settings-readonly\n"+
		"mv $HOME/.claude $HOME/.claude-old 2>/dev/null && echo moved || echo unmovable\n"), 0o755)
	// Another host the session must not reach.
	other, reached := otherHost(t, ws)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./build.sh\", \"./net.sh\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)

	s := newCCServer(t,
		ccTool("Bash", map[string]any{"command": "./build.sh", "description": "build"}),
		ccTool("Bash", map[string]any{"command": "./net.sh", "description": "reach another host"}),
		ccTool("mcp__rein__shell", map[string]any{"line": "echo hello from mcp"}),
		ccTool("Bash", map[string]any{"command": "sleep 3172", "description": "wait", "run_in_background": true}),
		ccTool("Bash", map[string]any{"command": "cat ~/.ssh/id_rsa", "description": "read the key"}),
		ccTool("mcp__rein__shell", map[string]any{"line": "touch asked.txt"}),
		ccTool("Bash", map[string]any{"command": "./keys.sh", "description": "look for the key"}),
		ccTool("Bash", map[string]any{"command": "./model.sh", "description": "reach the model's host around the gateway"}),
	)
	// Where the key could be: the environment, the session's files, and
	// the model's host reached directly through the egress proxy.
	os.WriteFile(filepath.Join(ws, "keys.sh"), []byte("#!/bin/sh\nenv | grep -E '^ANTHROPIC_(API_KEY|BASE_URL|AUTH_TOKEN)='\ngrep -rl sk-ant-test-key /run/rein/home /tmp /proc/*/environ 2>/dev/null || echo no-file-holds-it\n"), 0o755)
	modelPort := s.srv.Listener.Addr().(*net.TCPAddr).Port
	os.WriteFile(filepath.Join(ws, "model.sh"), []byte(fmt.Sprintf("#!/bin/bash\np=${HTTPS_PROXY##*:}\nexec 3<>/dev/tcp/127.0.0.1/$p\nprintf 'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n' >&3\nhead -1 <&3\n", modelPort)), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./build.sh\", \"./net.sh\", \"./keys.sh\", \"./model.sh\"]\n"), 0o644)
	env := []string{"ANTHROPIC_BASE_URL=" + s.srv.URL, "ANTHROPIC_API_KEY=sk-ant-test-key"}
	// A host besides the model's, so that the session has an egress
	// proxy: the model's host is not among those it reaches.
	code, out, errOut := launchProc(t, env, "--claude", bin, "--allow-host", "example.invalid", "claude-code", "--", "-p", "do the task", "--output-format", "json")
	seen := s.seen()
	if code != 0 || len(seen) != 8 {
		t.Fatalf("exit %d, the model saw %d results: %q\nstdout %s\nstderr %s", code, len(seen), seen, out, errOut)
	}
	if !strings.Contains(seen[0], "building in "+ws) || !strings.Contains(seen[0], "settings-readonly") || !strings.Contains(seen[0], "unmovable") {
		t.Errorf("the allowed command's output: %q", seen[0])
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(data) != "built\n" {
		t.Errorf("the workspace write: %q", data)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a command in the session wrote outside the workspace")
	}
	if !strings.Contains(seen[1], "403") || reached.Load() != 0 {
		t.Errorf("another host: %q, reached %d times", seen[1], reached.Load())
	}
	if !strings.Contains(seen[2], "hello from mcp") {
		t.Errorf("rein mcp in the session: %q", seen[2])
	}
	if !strings.Contains(seen[4], "protected") || strings.Contains(strings.Join(seen, " "), "SECRET") {
		t.Errorf("the denied read: %q", seen[4])
	}
	if _, err := os.Stat(filepath.Join(ws, "asked.txt")); err == nil || !strings.Contains(seen[5], "never approved from inside the session") {
		t.Errorf("an ask of rein mcp in the session: %q", seen[5])
	}
	if left := liveWith("sleep 3172"); len(left) > 0 {
		t.Errorf("left running after the session: %q", left)
	}
	// The real key is in no variable and no file of the session; the
	// agent has the placeholder and the gateway's address; the model's
	// host is not reachable around the gateway; and every request the
	// model's API received carried the real key (the gateway's).
	if !strings.Contains(seen[6], "ANTHROPIC_API_KEY=rein-session-") || !strings.Contains(seen[6], "ANTHROPIC_BASE_URL=http://127.0.0.1:3129\n") ||
		strings.Contains(seen[6], "sk-ant-test-key") || !strings.Contains(seen[6], "no-file-holds-it") {
		t.Errorf("the key in the session: %q", seen[6])
	}
	if !strings.Contains(seen[7], "403") {
		t.Errorf("the model's host around the gateway: %q", seen[7])
	}
	keys := s.keysSeen()
	for _, k := range keys {
		if k != "sk-ant-test-key" {
			t.Errorf("the model's API received the key %q", k)
		}
	}

	store, err := sqlite.Open(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	runs, err := store.Runs(ctx, 10)
	if err != nil || len(runs) != 1 || !strings.HasPrefix(runs[0].ID, "launch-") {
		t.Fatalf("the trace's runs: %+v %v", runs, err)
	}
	steps, _ := store.Steps(ctx, runs[0].ID)
	tools := map[string]int{}
	for _, st := range steps {
		tools[st.Tool]++
	}
	if tools["Bash"] != 6 || tools["mcp__rein__shell"] != 2 || tools["shell"] != 2 {
		t.Errorf("the session's steps: %v", tools)
	}
	// Each model call is in the trace with its usage.
	calls, _ := store.ProviderCalls(ctx, runs[0].ID)
	var messages int
	for _, c := range calls {
		if strings.Contains(c.Request, `"path":"/v1/messages"`) && c.Failure == "" {
			messages++
			if c.Provider != "anthropic" || c.Input != 12 || c.Output != 7 || c.LatencyMS <= 0 || c.FirstMS <= 0 {
				t.Errorf("a model call's record: %+v", c)
			}
		}
	}
	if messages < 9 || len(calls) != len(keys) {
		t.Errorf("%d model calls in the trace (%d requests the API received): %+v", messages, len(keys), calls)
	}
	events, _ := store.PolicyEvents(ctx, runs[0].ID)
	var refusedNet bool
	for _, ev := range events {
		if ev.Kind == "net" && ev.Decision == "deny" && strings.Contains(ev.Reason, fmt.Sprint(other)) {
			refusedNet = true
		}
	}
	if !refusedNet {
		t.Errorf("the refused connection is not in the trace: %+v", events)
	}
}

// TestLaunchBundle: a bundle written once is verified before a session
// starts from it; a changed file, a manifest rewritten without rein's key,
// an extra file or a loosened mode refuse it; a credential in the
// environment and a flag that skips hooks refuse the session.
func TestLaunchBundle(t *testing.T) {
	requireBwrap(t)
	bin := claudeBin(t)
	docFixture(t)
	keyEnv := []string{"ANTHROPIC_API_KEY=sk-ant-test-key"}
	write := func() string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "bundle")
		if code, out, errOut := launchProc(t, nil, "--claude", bin, "--write-bundle", dir, "claude-code"); code != 0 || strings.TrimSpace(out) != filepath.Join(dir, "manifest.json") {
			t.Fatalf("--write-bundle: %d %q %s", code, out, errOut)
		}
		return dir
	}
	// The modes are the bundle's whatever the umask.
	old := syscall.Umask(0o277)
	dir := write()
	syscall.Umask(old)
	fi, _ := os.Stat(dir)
	entries, _ := os.ReadDir(dir)
	if fi.Mode().Perm() != 0o700 || len(entries) != 6 {
		t.Fatalf("the bundle: %v, %d files", fi.Mode(), len(entries))
	}
	for _, e := range entries {
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", e.Name(), info.Mode())
		}
	}
	if code, out, errOut := launchProc(t, keyEnv, "--claude", bin, "--bundle", dir, "claude-code", "--", "--version"); code != 0 || !strings.Contains(out, "Claude Code") {
		t.Fatalf("the bundle as written: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := launchProc(t, nil, "--claude", bin, "--write-bundle", dir, "claude-code"); code != exitLaunchBundle || !strings.Contains(errOut, "exists") {
		t.Errorf("a bundle written over another: %d %s", code, errOut)
	}

	for _, c := range []struct {
		name   string
		tamper func(dir string)
		want   string
	}{
		{"a changed file", func(dir string) {
			os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"disableAllHooks": true}`), 0o600)
		}, "settings.json changed"},
		{"a manifest rewritten without the key", func(dir string) {
			p := filepath.Join(dir, "manifest.json")
			data, _ := os.ReadFile(p)
			var m map[string]any
			json.Unmarshal(data, &m)
			m["program"] = "/bin/sh"
			data, _ = json.Marshal(m)
			os.WriteFile(p, data, 0o600)
		}, "not written by rein"},
		{"an extra file", func(dir string) { os.WriteFile(filepath.Join(dir, "CLAUDE.md"), nil, 0o600) }, "does not list: CLAUDE.md"},
		{"a loosened mode", func(dir string) { os.Chmod(filepath.Join(dir, "hook.sh"), 0o644) }, "hook.sh is not a regular file of mode 600"},
		{"a link", func(dir string) {
			os.Remove(filepath.Join(dir, "prompt.md"))
			os.Symlink("/etc/passwd", filepath.Join(dir, "prompt.md"))
		}, "prompt.md"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := write()
			c.tamper(dir)
			code, _, errOut := launchProc(t, keyEnv, "--claude", bin, "--bundle", dir, "claude-code", "--", "--version")
			if code != exitLaunchBundle || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d %s", code, errOut)
			}
		})
	}

	for _, args := range [][]string{{"--bare"}, {"--safe-mode"}, {"--settings", "{}"}, {"--setting-sources=project"}, {"-p", "x", "--mcp-config", "{}"}, {"--restricted"}, {"--some-new-flag"}} {
		if code, _, errOut := launchProc(t, nil, append([]string{"--claude", bin, "claude-code", "--"}, args...)...); code != exitLaunchRefused || !strings.Contains(errOut, "refused") && !strings.Contains(errOut, "passes on") {
			t.Errorf("%q: exit %d %s", args, code, errOut)
		}
	}
	if code, _, errOut := launchProc(t, []string{"GH_TOKEN=x", "ANTHROPIC_API_KEY=k"}, "--claude", bin, "claude-code", "--", "--version"); code != exitLaunchCreds || !strings.Contains(errOut, "GH_TOKEN") || strings.Contains(errOut, "ANTHROPIC_API_KEY") {
		t.Errorf("a credential: exit %d %s", code, errOut)
	}
}

// TestLaunchConfigNet: configuration a session leaves for the host's
// tools, under a name no table has, is named when the session ends; what
// the session made elsewhere is not.
func TestLaunchConfigNet(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	code, _, errOut := launchProc(t, nil, "--", "sh", "-c", `mkdir -p .newtool pkg && echo x > .newtool/config.toml && echo y > pkg/.toolrc && echo z > main.txt`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "rein launch: changed configuration your tools may read (2 file(s); review before your tools run): .newtool/config.toml, pkg/.toolrc\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "main.txt")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // past the clock's slack
	if code, _, errOut := launchProc(t, nil, "--", "sh", "-c", `echo z > main.txt`); code != 0 || strings.Contains(errOut, "changed configuration") {
		t.Errorf("a session that changed none: exit %d: %s", code, errOut)
	}
}

// TestLaunchLongHome: a session with a network runs for a HOME far deeper
// than a unix socket's address allows (a CI runner's temporary home).
func TestLaunchLongHome(t *testing.T) {
	requireBwrap(t)
	home := filepath.Join(t.TempDir(), strings.Repeat("a-long-directory-name/", 6))
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	_, ws := docFixture(t)
	cmd := exec.Command(os.Args[0], "launch", "--allow-host", "127.0.0.1:1", "--workspace", ws, "--", "sh", "-c", "echo ok")
	cmd.Env = []string{"REIN_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "REIN_ORG_POLICY=" + os.DevNull}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestLaunchReadmeBuild: rein launch as the README builds it, rein-init
// beside rein (so the session's init is rein-init): the relay inside the
// session still carries the hook's calls and the MCP server.
func TestLaunchReadmeBuild(t *testing.T) {
	requireBwrap(t)
	bin := claudeBin(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Built before the fixture changes HOME, and with it go's cache.
	dir := t.TempDir()
	for _, c := range [][]string{{"build", "-o", filepath.Join(dir, "rein"), "./cmd/rein"}, {"build", "-o", filepath.Join(dir, "rein-init"), "./cmd/rein-init"}} {
		build := exec.Command("go", c...)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	_, ws := docFixture(t)
	s := newCCServer(t,
		ccTool("Bash", map[string]any{"command": "echo hi from bash", "description": "say hi"}),
		ccTool("mcp__rein__shell", map[string]any{"line": "echo hello from mcp"}),
	)
	cmd := exec.Command(filepath.Join(dir, "rein"), "launch", "--claude", bin, "claude-code", "--", "-p", "do the task", "--output-format", "json")
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "ANTHROPIC_BASE_URL=" + s.srv.URL, "ANTHROPIC_API_KEY=sk-ant-test-key"}
	for _, k := range []string{"REIN_ORG_POLICY", "REIN_USER_POLICY", "REIN_PROJECT_POLICY", "REIN_CACHE_DIR", "REIN_TRACE"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	out, err := cmd.CombinedOutput()
	seen := s.seen()
	if err != nil || len(seen) != 2 || !strings.Contains(seen[0], "hi from bash") || !strings.Contains(seen[1], "hello from mcp") {
		t.Fatalf("%v: the model saw %q\n%s", err, seen, out)
	}
}

// otherHost is a listener on 127.0.0.1 a launched session must not reach:
// its port, and the count of connections it took; net.sh in ws asks the
// session's egress proxy for it (CONNECT) and prints the answer's first
// line.
func otherHost(t *testing.T, ws string) (int, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reached := new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	os.WriteFile(filepath.Join(ws, "net.sh"), []byte(fmt.Sprintf("#!/bin/bash\np=${HTTPS_PROXY##*:}\nexec 3<>/dev/tcp/127.0.0.1/$p\nprintf 'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n' >&3\nhead -1 <&3\n", port)), 0o755)
	return port, reached
}

// TestLaunchBudget: a session's token budget stops the real Claude Code
// mid-way: the next model call is refused with an error Claude Code shows
// its user, the session ends with rein's own status, 120, and nothing
// more reached the model.
func TestLaunchBudget(t *testing.T) {
	requireBwrap(t)
	bin := claudeBin(t)
	home, ws := docFixture(t)
	tr := filepath.Join(t.TempDir(), "trace.db")
	t.Setenv("REIN_TRACE", tr)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./step.sh\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	os.WriteFile(filepath.Join(ws, "step.sh"), []byte("#!/bin/sh\necho step >> steps.txt\n"), 0o755)
	var turns []ccTurn
	for range 10 {
		turns = append(turns, ccTool("Bash", map[string]any{"command": "./step.sh", "description": "a step"}))
	}
	s := newCCServer(t, turns...)
	env := []string{"ANTHROPIC_BASE_URL=" + s.srv.URL, "ANTHROPIC_API_KEY=sk-ant-test-key"}
	// Each call costs 19 tokens (12 in, 7 out): the third is refused.
	code, out, errOut := launchProc(t, env, "--claude", bin, "--max-tokens", "30", "claude-code", "--", "-p", "do the task", "--output-format", "json")
	if code != launch.ExitBudget || !strings.Contains(errOut, "token budget: 38 tokens of 30") || !strings.Contains(out, "rein's gateway refused this request") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	steps, _ := os.ReadFile(filepath.Join(ws, "steps.txt"))
	if n := len(s.keysSeen()); n != 2 || string(steps) != "step\nstep\n" {
		t.Errorf("the model's API received %d requests, %q ran", n, steps)
	}
	store, err := sqlite.Open(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runs, _ := store.Runs(context.Background(), 10)
	calls, _ := store.ProviderCalls(context.Background(), runs[0].ID)
	if len(calls) < 3 || calls[len(calls)-1].Failure != "refused" || !strings.Contains(calls[len(calls)-1].Error, "token budget") || !strings.HasPrefix(runs[0].Status, "budget:") {
		t.Errorf("the trace: %+v %+v", runs[0], calls)
	}
}
