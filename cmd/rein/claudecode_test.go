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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

// The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in
// testdata/claudecode; .ci/run installs it with npm ci) driven with -p
// against a scripted Messages API on 127.0.0.1.

// ccReply is one scripted model response: a tool call, or text that ends
// the turn.
type ccReply struct {
	tool  string
	input any
	text  string
	// again keeps the same turn for the next request.
	again bool
	// more are further tool calls in the same response, which Claude
	// Code may run side by side.
	more []ccReply
}

// ccTurn answers a request from the tool result the model last saw.
type ccTurn func(last string) ccReply

func ccTool(name string, input any) ccTurn {
	return func(string) ccReply { return ccReply{tool: name, input: input} }
}

// ccServer speaks Anthropic's Messages streaming wire format as the vendor
// does (server-sent events, the tool input as input_json_delta chunks) and
// plays a script. Requests without tools (Claude Code's own side queries)
// get a short text and do not advance the script.
type ccServer struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	turns   []ccTurn
	next    int
	results []string // the tool results the model was sent, in order
	count   int      // responses sent, for their ids
	sock    string   // the same API on a unix socket, for a network namespace
	keys    []string // every key a request carried (x-api-key, or a bearer token)
}

// keysSeen are the keys the requests carried.
func (s *ccServer) keysSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func newCCServer(t testing.TB, turns ...ccTurn) *ccServer {
	s := &ccServer{t: t, turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.sock = serveUnix(t, http.HandlerFunc(s.serve))
	return s
}

func (s *ccServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.keys = append(s.keys, r.Header.Get("X-Api-Key")+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	s.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.Contains(r.URL.Path, "count_tokens") {
		w.Header().Set("content-type", "application/json")
		fmt.Fprint(w, `{"input_tokens": 10}`)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply := ccReply{text: "none"}
	if len(req.Tools) > 0 {
		// The results of the last response's calls: in the user messages
		// after the last assistant one (Claude Code may add a reminder of
		// its own after them).
		last := ""
		from := 0
		for i, m := range req.Messages {
			if m.Role == "assistant" {
				from = i + 1
			}
		}
		for _, m := range req.Messages[from:] {
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "tool_result" {
						last += resultText(b.Content)
					}
				}
			}
		}
		s.mu.Lock()
		if last != "" {
			s.results = append(s.results, last)
		}
		reply = ccReply{text: "done"}
		if s.next < len(s.turns) {
			reply = s.turns[s.next](last)
			if !reply.again {
				s.next++
			}
		}
		s.mu.Unlock()
	}
	w.Header().Set("content-type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	s.mu.Lock()
	s.count++
	id := fmt.Sprintf("msg_%04d", s.count)
	// Each response's call has an id of its own, also when a turn is
	// played again (a poll until the output is in).
	toolID := fmt.Sprintf("toolu_%04d", s.count)
	s.mu.Unlock()
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
	stop := "end_turn"
	if reply.tool != "" {
		for i, call := range append([]ccReply{reply}, reply.more...) {
			in, _ := json.Marshal(call.input)
			id := toolID
			if i > 0 {
				id = fmt.Sprintf("toolu_%04d%c", s.count, 'a'+i)
			}
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": id, "name": call.tool, "input": map[string]any{}}})
			half := len(in) / 2
			for _, part := range []string{string(in[:half]), string(in[half:])} {
				ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
			ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
		stop = "tool_use"
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": reply.text}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// resultText is a tool result's content as the model reads it: a string,
// or the text of its blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, x := range blocks {
			b.WriteString(x.Text)
		}
		return b.String()
	}
	return string(raw)
}

func (s *ccServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.results...)
}

// claudePath is where npm ci installs Claude Code, found before a test
// moves to its workspace.
var claudePath, _ = filepath.Abs("testdata/claudecode/node_modules/.bin/claude")

// claudeBin is the installed Claude Code CLI, or the test fails (skips
// outside CI).
func claudeBin(t *testing.T) string {
	t.Helper()
	bin := claudePath
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "Claude Code is not installed: npm ci --prefix testdata/claudecode (%v)", err)
	}
	return bin
}

// runClaude runs claude -p in ws against the server, with a private HOME
// and TMPDIR, the test binary standing in for rein, and returns its JSON
// result.
func runClaude(t *testing.T, s *ccServer, ws, home string, args ...string) map[string]any {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(claudeBin(t), append([]string{"-p", "do the task", "--output-format", "json"}, args...)...)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "TMPDIR=" + tmp, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + s.srv.URL,
		"ANTHROPIC_API_KEY=sk-ant-test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "REIN_TEST_MAIN=1"}
	for _, k := range []string{"REIN_ORG_POLICY", "REIN_USER_POLICY", "REIN_PROJECT_POLICY", "REIN_CACHE_DIR", "XDG_CONFIG_HOME", "IS_SANDBOX"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	// Nothing but the scripted API is reachable: Claude Code runs in a
	// network namespace holding only loopback.
	inLoopbackNetns(t, cmd, s.srv.URL[strings.LastIndexByte(s.srv.URL, ':')+1:], s.sock)
	out, err := cmd.Output()
	var res map[string]any
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("claude: %v %v\n%s\n%s", err, jerr, out, stderr)
	}
	return res
}

// TestClaudeCodeHookConfines: with rein's hook installed, in every
// permission mode that runs tools, Claude Code's Bash runs an allowed
// command through rein, in rein's sandbox (a script an allow rule names
// cannot write outside the workspace, its output reaches the model), and
// a denied one not at all, the model seeing rein's reason and never the
// secret.
func TestClaudeCodeHookConfines(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("SECRET-KEY-MATERIAL\n"), 0o600)
	marker := filepath.Join(home, "escaped")
	os.WriteFile(filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\necho building in $(pwd)\necho x > "+marker+"\necho built > out.txt\n"), 0o755)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./build.sh\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	installHook(t, ws)

	for _, mode := range []string{"default", "acceptEdits", "bypassPermissions", "dontAsk"} {
		t.Run(mode, func(t *testing.T) {
			os.Remove(marker)
			os.Remove(filepath.Join(ws, "out.txt"))
			s := newCCServer(t,
				ccTool("Bash", map[string]any{"command": "./build.sh", "description": "build"}),
				ccTool("Bash", map[string]any{"command": "cat ~/.ssh/id_rsa", "description": "read the key"}),
			)
			args := []string{"--permission-mode", mode}
			if mode == "bypassPermissions" && os.Geteuid() == 0 {
				// Claude Code refuses to bypass permissions as root outside
				// a sandbox it is told of.
				t.Setenv("IS_SANDBOX", "1")
			}
			res := runClaude(t, s, ws, home, args...)
			seen := s.seen()
			if len(seen) != 2 {
				t.Fatalf("the model saw %d tool results: %q (%v)", len(seen), seen, res["result"])
			}
			if !strings.Contains(seen[0], "building in "+ws) {
				t.Errorf("the allowed command's output did not reach the model: %q", seen[0])
			}
			if data, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(data) != "built\n" {
				t.Errorf("the allowed command's workspace write: %q", data)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the allowed script wrote outside the workspace: Bash ran unconfined")
			}
			if !strings.Contains(seen[1], "rein: ") || !strings.Contains(seen[1], "protected") || strings.Contains(strings.Join(seen, " "), "SECRET-KEY-MATERIAL") {
				t.Errorf("the denied command: %q", seen[1])
			}
		})
	}
}

// TestClaudeCodeMCPResults: rein mcp as Claude Code's MCP server gives the
// model what it needs in what Claude Code shows it: a command's output, a
// handle it then polls to the background line's output, the head of a long
// result with the id to page through, and the page with its end.
func TestClaudeCodeMCPResults(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	var long strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&long, "line %d of a long file\n", i)
	}
	long.WriteString("the very last line\n")
	os.WriteFile(filepath.Join(ws, "long.txt"), []byte(long.String()), 0o644)
	handleRe := regexp.MustCompile(`shell_poll \{\\*"handle\\*": \\*"([^"\\]+)`)
	idRe := regexp.MustCompile(`"result_id\\*":\s*\\*"([^"\\]+)`)
	handle, polls := "", 0
	s := newCCServer(t,
		ccTool("mcp__rein__shell", map[string]any{"line": "echo hello from mcp"}),
		// The line takes a moment, so that the model polls it while it runs.
		ccTool("mcp__rein__shell_start", map[string]any{"line": "sleep 1 && echo from the background"}),
		func(last string) ccReply {
			m := handleRe.FindStringSubmatch(last)
			if m == nil {
				return ccReply{text: "no handle in: " + last}
			}
			handle = m[1]
			return ccReply{tool: "mcp__rein__shell_poll", input: map[string]any{"handle": handle}}
		},
		func(last string) ccReply {
			// Poll again until the line's output is in, for 10 seconds at
			// most.
			if !strings.Contains(last, "from the background") && polls < 100 {
				polls++
				time.Sleep(100 * time.Millisecond)
				return ccReply{tool: "mcp__rein__shell_poll", input: map[string]any{"handle": handle}, again: true}
			}
			return ccReply{tool: "mcp__rein__read_file", input: map[string]any{"path": "long.txt"}}
		},
		func(last string) ccReply {
			m := idRe.FindStringSubmatch(last)
			if m == nil {
				return ccReply{text: "no result id in: " + last}
			}
			return ccReply{tool: "mcp__rein__read_result", input: map[string]any{"id": m[1], "offset": long.Len() - 60}}
		},
	)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"rein": map[string]any{
		"command": os.Args[0], "args": []string{"mcp", "--approve", "all"}, "env": map[string]string{"REIN_TEST_MAIN": "1"}}}})
	res := runClaude(t, s, ws, home, "--mcp-config", string(cfg), "--strict-mcp-config", "--allowedTools", "mcp__rein")
	seen := s.seen()
	if len(seen) < 5 {
		t.Fatalf("the model saw %d tool results: %q (%v)", len(seen), seen, res["result"])
	}
	if !strings.Contains(seen[0], "hello from mcp") {
		t.Errorf("a command's output: %q", seen[0])
	}
	if !handleRe.MatchString(seen[1]) {
		t.Errorf("no handle to poll: %q", seen[1])
	}
	find := func(prefix string) string {
		for _, x := range seen {
			if strings.Contains(x, prefix) {
				return x
			}
		}
		return ""
	}
	// Polled until the output is in: some poll, not necessarily the
	// first, carries it.
	polled := false
	for _, x := range seen {
		polled = polled || strings.Contains(x, `"text":"shell_poll: ok`) && strings.Contains(x, "from the background")
	}
	if !polled {
		t.Errorf("the handle's output never reached the model: %q", seen)
	}
	long2 := find(`"text":"read_file: ok`)
	if !strings.Contains(long2, "line 0 of a long file") || !idRe.MatchString(long2) || !strings.Contains(long2, "elided; read_result") {
		t.Errorf("a long result's head and id: %.400q", long2)
	}
	if page := find(`"text":"read_result: ok`); !strings.Contains(page, "the very last line") {
		t.Errorf("the page: %q", page)
	}
}

// TestClaudeCodeMCPWithHook: with rein's hook installed too, the hook
// decides mcp__rein__* calls by the [tool] rules: with no rule naming them
// the call is asked, which under -p is a refusal; with an allow rule it
// reaches rein mcp, which decides the call again.
func TestClaudeCodeMCPWithHook(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*",
		"hooks": []any{map[string]any{"type": "command", "command": shell.Quote(os.Args[0]) + " hook claude-code", "timeout": 30}}}}}})
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"rein": map[string]any{
		"command": os.Args[0], "args": []string{"mcp", "--approve", "all"}, "env": map[string]string{"REIN_TEST_MAIN": "1"}}}})
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	t.Setenv("REIN_USER_POLICY", user)
	for _, c := range []struct {
		name, policy, want string
	}{
		{"no rule", "", "no tool rule names mcp__rein__shell"},
		{"an allow rule", "[tool]\nallow = [\"mcp__rein__*\"]\n", "hello through both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(user, []byte(c.policy), 0o644)
			s := newCCServer(t, ccTool("mcp__rein__shell", map[string]any{"line": "echo hello through both"}))
			res := runClaude(t, s, ws, home, "--mcp-config", string(cfg), "--strict-mcp-config", "--allowedTools", "mcp__rein")
			seen := s.seen()
			if len(seen) != 1 || !strings.Contains(seen[0], c.want) {
				t.Fatalf("the model saw %q (%v)", seen, res["result"])
			}
		})
	}
}

// TestClaudeCodeHeredocAndOpaque: the lines real agents write most reach
// Claude Code's Bash through rein's hook as they are. A here-document
// write that a rule allows runs confined, its body landing byte for byte;
// a line outside rein's grammar is asked, not denied: unattended (claude
// -p, nobody to ask) it does not run, and the model reads Claude Code's
// need for approval, not a refusal of its syntax.
func TestClaudeCodeHeredocAndOpaque(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"cat\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	installHook(t, ws)

	body := "import sys\nprint(f\"{sys.argv} costs $5\")  # `not run`\n\tdone\n"
	s := newCCServer(t,
		ccTool("Bash", map[string]any{"command": "cat <<'EOF' > reproduce.py\n" + body + "EOF", "description": "write the script"}),
		ccTool("Bash", map[string]any{"command": "for f in a b; do echo $f > opaque-$f.txt; done | cat", "description": "a loop"}),
	)
	res := runClaude(t, s, ws, home, "--permission-mode", "default")
	seen := s.seen()
	if len(seen) != 2 {
		t.Fatalf("the model saw %d tool results: %q (%v)", len(seen), seen, res["result"])
	}
	if data, err := os.ReadFile(filepath.Join(ws, "reproduce.py")); err != nil || string(data) != body {
		t.Errorf("the here-document write: %q %v (the model saw %q)", data, err, seen[0])
	}
	// The reason ends as only an ask (or an allow) rewritten to run
	// confined does: the hook asked, it did not deny.
	if !strings.Contains(seen[1], "rein: opaque shell code (compound-command at byte 0") || !strings.HasSuffix(seen[1], "; runs in rein's sandbox") ||
		strings.Contains(seen[1], "bash would not run") {
		t.Errorf("the opaque line was not asked: %q", seen[1])
	}
	if _, err := os.Stat(filepath.Join(ws, "opaque-a.txt")); err == nil {
		t.Errorf("the asked line ran with nobody to approve it (the model saw %q)", seen[1])
	}
}

// TestClaudeCodeSideBySide: with rein's hook confining Bash, Claude Code
// runs two Bash calls of one response side by side and a background
// server beside the calls after it, each its own rein shell process in
// the same workspace, and none waits for another's end.
func TestClaudeCodeSideBySide(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	// The server is up until told to stop (or 20 s), and says so in a
	// file it removes when it ends.
	os.WriteFile(filepath.Join(ws, "server.sh"), []byte("#!/bin/sh\ntouch server.up\ni=0\nwhile [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\nrm -f server.up\necho server stopped\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "client.sh"), []byte("#!/bin/sh\nif [ -e server.up ]; then echo 'server is up'; else echo 'no server'; fi\ntouch stop\n"), 0o755)
	// A watcher that never ends on its own, until Claude Code stops it.
	marker := fmt.Sprintf("rein-watcher-%d", os.Getpid())
	os.WriteFile(filepath.Join(ws, "watch.sh"), []byte("#!/bin/sh\nexec sh -c 'while :; do touch beat; sleep 0.1; done; : "+marker+"'\n"), 0o755)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./server.sh\", \"./client.sh\", \"./watch.sh\", \"sleep\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	installHook(t, ws)

	// Claude Code runs calls of one response side by side when it takes
	// them all to be read-only, as it does sleep.
	const nap = 3 * time.Second
	s := newCCServer(t,
		func(string) ccReply {
			return ccReply{tool: "Bash", input: map[string]any{"command": "sleep 3", "description": "a"},
				more: []ccReply{{tool: "Bash", input: map[string]any{"command": "sleep 3", "description": "b"}}}}
		},
		ccTool("Bash", map[string]any{"command": "./server.sh", "description": "serve", "run_in_background": true}),
		func(string) ccReply {
			// The model asks once the server is up, as a model that
			// read its log would: a busy machine starts it late.
			waitFor(filepath.Join(ws, "server.up"), 10*time.Second)
			return ccReply{tool: "Bash", input: map[string]any{"command": "./client.sh", "description": "ask the server"}}
		},
		ccTool("Bash", map[string]any{"command": "./watch.sh", "description": "watch", "run_in_background": true}),
		func(last string) ccReply {
			// Stopped as the model stops a background command: by its id.
			id, _, _ := strings.Cut(strings.TrimPrefix(last[strings.Index(last, "ID: "):], "ID: "), ".")
			waitFor(filepath.Join(ws, "beat"), 10*time.Second)
			return ccReply{tool: "TaskStop", input: map[string]any{"task_id": id}}
		},
	)
	res := runClaude(t, s, ws, home, "--permission-mode", "default")
	seen := s.seen()
	if len(seen) != 5 {
		t.Fatalf("the model saw %d tool results: %q (%v)", len(seen), seen, res["result"])
	}
	// The server runs until the client, a later call, stops it: had the
	// client waited for the server's end, it would find no server.
	if !strings.Contains(seen[2], "server is up") {
		t.Errorf("the call after the background server did not run beside it: %q", seen[2])
	}
	// The two sleeps, each a rein shell run of its own, overlapped, and
	// neither lasted the other's nap as well: no run waited for the other.
	code, out, stderr := rein(t, "trace", "runs", "--json", "--workspace", ws)
	if code != 0 {
		t.Fatalf("trace runs: %d %s", code, stderr)
	}
	type traceRun struct {
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
		Source    string    `json:"source"`
	}
	var runs []traceRun
	json.Unmarshal([]byte(out), &runs)
	runs = slices.DeleteFunc(runs, func(r traceRun) bool {
		return r.Source != "cli"
	})
	if len(runs) != 5 {
		t.Fatalf("%d confined runs in the trace, want 5 (the model saw %q): %s", len(runs), seen, out)
	}
	// The sleeps are the first two to start.
	slices.SortFunc(runs, func(x, y traceRun) int {
		return x.StartedAt.Compare(y.StartedAt)
	})
	a, b := runs[0], runs[1]
	for _, r := range runs[:2] {
		if d := r.EndedAt.Sub(r.StartedAt); d < nap || d >= 2*nap-time.Second {
			t.Errorf("a sleep's confined run took %v (it waited for the other?): %s", d, out)
		}
	}
	if !a.StartedAt.Before(b.EndedAt) || !b.StartedAt.Before(a.EndedAt) {
		t.Errorf("the two calls of one response did not overlap: %+v %+v", a, b)
	}
	// TaskStop ended the watcher's whole tree.
	if !strings.Contains(seen[4], "stop") {
		t.Errorf("TaskStop: %q", seen[4])
	}
	if left := testenv.ProcessesWith(marker); len(left) > 0 {
		t.Errorf("the watcher outlived TaskStop: %v", left)
	}
}

// TestClaudeCodeGlobAndBackground: with rein's hook confining Bash, a
// glob is expanded by rein over the workspace and decided as the files it
// names, and a command ended by & runs as Claude Code's own background
// task, confined, beside the calls after it.
func TestClaudeCodeGlobAndBackground(t *testing.T) {
	requireBwrap(t)
	claudeBin(t)
	home, ws := docFixture(t)
	for _, n := range []string{"one.txt", "two.txt"} {
		os.WriteFile(filepath.Join(ws, n), []byte(n+"\n"), 0o644)
	}
	os.WriteFile(filepath.Join(ws, "server.sh"), []byte("#!/bin/sh\ntouch server.up\ni=0\nwhile [ ! -e stop ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\nrm -f server.up\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "client.sh"), []byte("#!/bin/sh\nif [ -e server.up ]; then echo 'server is up'; else echo 'no server'; fi\ntouch stop\n"), 0o755)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./server.sh\", \"./client.sh\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	installHook(t, ws)
	s := newCCServer(t,
		ccTool("Bash", map[string]any{"command": "cat *.txt", "description": "read them"}),
		ccTool("Bash", map[string]any{"command": "./server.sh &", "description": "serve"}),
		func(string) ccReply {
			waitFor(filepath.Join(ws, "server.up"), 10*time.Second)
			return ccReply{tool: "Bash", input: map[string]any{"command": "./client.sh", "description": "ask the server"}}
		},
	)
	res := runClaude(t, s, ws, home, "--permission-mode", "default")
	seen := s.seen()
	if len(seen) != 3 {
		t.Fatalf("the model saw %d tool results: %q (%v)", len(seen), seen, res["result"])
	}
	if !strings.Contains(seen[0], "one.txt\ntwo.txt") {
		t.Errorf("cat *.txt: %q", seen[0])
	}
	if !strings.Contains(strings.ToLower(seen[1]), "background") {
		t.Errorf("./server.sh &: %q, want Claude Code's background task", seen[1])
	}
	if !strings.Contains(seen[2], "server is up") {
		t.Errorf("the call after the background command: %q", seen[2])
	}
	// The glob's words are what the trace says ran: rein's plan.
	code, out, stderr := rein(t, "trace", "runs", "--json", "--workspace", ws)
	if code != 0 || !strings.Contains(out, "cli") {
		t.Fatalf("trace runs: %d %s %s", code, out, stderr)
	}
}

// waitFor waits until path exists, for at most d.
func waitFor(path string, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}

// installHook puts rein's hook, run by the test binary, in the project's
// Claude Code settings for every tool.
func installHook(t *testing.T, ws string) {
	t.Helper()
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*",
		"hooks": []any{map[string]any{"type": "command", "command": shell.Quote(os.Args[0]) + " hook claude-code", "timeout": 30}}}}}}
	data, _ := json.Marshal(settings)
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
