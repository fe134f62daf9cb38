//go:build linux

package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/trace/sqlite"
)

// codexPath is the Codex CLI's native binary as npm ci installs it (the
// package's own launcher, bin/codex.js, runs the same binary).
var codexPath, _ = filepath.Abs("testdata/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")

// codexBin is the installed Codex CLI, or the test fails (skips outside
// CI).
func codexBin(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(codexPath); err != nil {
		testenv.Missing(t, "Codex is not installed: npm ci --prefix testdata/codex (%v)", err)
	}
	return codexPath
}

// codexCall is one scripted answer of the Responses API: a call of one of
// rein mcp's tools (Codex groups them in the namespace mcp__rein), or,
// with no tool, a final text.
type codexCall struct {
	tool string
	args map[string]any
	text string
}

// respServer is a scripted Responses API over TLS: each POST /v1/responses
// answers with the script's next step and records the output of the call
// before it, the keys it carried and its body.
type respServer struct {
	t       testing.TB
	srv     *httptest.Server
	ca      string // the server's certificate, for SSL_CERT_FILE
	mu      sync.Mutex
	script  []codexCall
	next    int
	outputs []string
	keys    []string
	bodies  []map[string]any
}

func newRespServer(t testing.TB, script ...codexCall) *respServer {
	s := &respServer{t: t, script: script}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.ca = filepath.Join(t.TempDir(), "ca.pem")
	cert := s.srv.Certificate()
	if err := os.WriteFile(s.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *respServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, r.Header.Get("Authorization"))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		w.Header().Set("content-type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[]}`)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.bodies = append(s.bodies, req)
	// The output of the last call, if the input ends with one.
	if in, _ := req["input"].([]any); len(in) > 0 {
		if last, _ := in[len(in)-1].(map[string]any); last["type"] == "function_call_output" {
			out, _ := json.Marshal(last["output"])
			var text string
			if json.Unmarshal(out, &text) != nil {
				text = string(out)
			}
			s.outputs = append(s.outputs, text)
		}
	}
	step := codexCall{text: "done"}
	if s.next < len(s.script) {
		step = s.script[s.next]
		s.next++
	}
	rid := fmt.Sprintf("resp_%d", len(s.bodies))
	var item map[string]any
	if step.tool != "" {
		args, _ := json.Marshal(step.args)
		item = map[string]any{"type": "function_call", "id": "fc_" + rid, "call_id": "call_" + rid, "namespace": "mcp__rein",
			"name": step.tool, "arguments": string(args)}
	} else {
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_" + rid,
			"content": []any{map[string]any{"type": "output_text", "text": step.text, "annotations": []any{}}}}
	}
	w.Header().Set("content-type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": rid}})
	ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	ev("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": rid, "model": "gpt-test",
		"status": "completed", "usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 40},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 105}}})
}

func (s *respServer) seen() ([]string, []string, []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.outputs...), append([]string(nil), s.keys...), append([]map[string]any(nil), s.bodies...)
}

// TestLaunchCodex: the real Codex CLI whole inside a launched session: its
// model reached over TLS through rein's gateway alone, with the real key
// only there; its own command tool off, so that it reads a file, runs a
// command and writes only through rein mcp, each call decided by rein's
// policy; a command the policy allows is confined (it cannot write
// outside the workspace); every model call is in the trace with its
// usage.
func TestLaunchCodex(t *testing.T) {
	requireBwrap(t)
	bin := codexBin(t)
	home, ws := docFixture(t)
	tr := filepath.Join(t.TempDir(), "trace.db")
	t.Setenv("REIN_TRACE", tr)
	outside := t.TempDir()
	marker := filepath.Join(outside, "escaped")
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the answer is 42\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\necho building in $(pwd)\necho x > "+marker+" 2>&1 || echo cannot-escape\necho built > out.txt\n"+
		"env | grep -E '^OPENAI_' ; grep -rl sk-openai-real /run/rein/home /tmp /proc/*/environ 2>/dev/null || echo no-file-holds-it\n"), 0o755)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("[exec]\nallow = [\"./build.sh\"]\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)

	s := newRespServer(t,
		codexCall{tool: "read_file", args: map[string]any{"path": "notes.txt"}},
		codexCall{tool: "shell", args: map[string]any{"line": "./build.sh"}},
		codexCall{tool: "write_file", args: map[string]any{"path": filepath.Join(outside, "note.txt"), "content": "x"}},
		codexCall{tool: "read_file", args: map[string]any{"path": filepath.Join(home, ".ssh", "id_rsa")}},
	)
	env := []string{"OPENAI_BASE_URL=" + s.srv.URL + "/v1", "OPENAI_API_KEY=sk-openai-real", "SSL_CERT_FILE=" + s.ca}
	code, out, errOut := launchProc(t, env, "--codex", bin, "codex", "--", "exec", "--skip-git-repo-check", "-m", "gpt-test", "do the task")
	outputs, keys, bodies := s.seen()
	if code != 0 || len(outputs) != 4 {
		t.Fatalf("exit %d, the model saw %d outputs: %q\nstdout %s\nstderr %s", code, len(outputs), outputs, out, errOut)
	}
	t.Logf("the model saw: %q", outputs)
	if !strings.Contains(outputs[0], "the answer is 42") {
		t.Errorf("read_file through rein mcp: %q", outputs[0])
	}
	if !strings.Contains(outputs[1], "building in "+ws) || !strings.Contains(outputs[1], "cannot-escape") ||
		strings.Contains(outputs[1], "sk-openai-real") || !strings.Contains(outputs[1], "no-file-holds-it") {
		t.Errorf("the allowed command: %q", outputs[1])
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(data) != "built\n" {
		t.Errorf("the workspace write: %q", data)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a command in the session wrote outside the workspace")
	}
	if _, err := os.Stat(filepath.Join(outside, "note.txt")); err == nil || !strings.Contains(outputs[2], "outside the workspace") {
		t.Errorf("a write outside the workspace: %q", outputs[2])
	}
	if !strings.Contains(outputs[3], "outside the workspace") || strings.Contains(outputs[3], "SECRET") {
		t.Errorf("a read of the key: %q", outputs[3])
	}
	for _, k := range keys {
		if k != "Bearer sk-openai-real" {
			t.Errorf("the model's API received %q", k)
		}
	}
	// Codex's own command tool is off: the model is offered rein's tools
	// (and no hosted tool reached the provider).
	for _, b := range bodies {
		tools, _ := json.Marshal(b["tools"])
		if strings.Contains(string(tools), `"exec_command"`) || strings.Contains(string(tools), `"web_search"`) || !strings.Contains(string(tools), `"mcp__rein"`) {
			t.Errorf("the tools offered: %s", tools)
		}
	}

	// The model's host cannot be let in beside the gateway.
	if code, _, errOut := launchProc(t, env, "--codex", bin, "--allow-host", "127.0.0.1:1", "codex", "--", "exec", "x"); code != exitUsage || !strings.Contains(errOut, "the model's host") {
		t.Errorf("--allow-host the model's host: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"-c", "features.shell_tool=true", "exec", "x"}, {"exec", "--enable", "shell_tool", "x"}, {"exec", "--trust", "x"}, {"login"}, {"exec", "--brand-new-flag", "x"}} {
		if code, _, errOut := launchProc(t, env, append([]string{"--codex", bin, "codex", "--"}, args...)...); code != exitLaunchRefused || !strings.Contains(errOut, "refused") {
			t.Errorf("rein launch codex -- %q: exit %d: %s", args, code, errOut)
		}
	}

	store, err := sqlite.Open(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	runs, _ := store.Runs(ctx, 10)
	if len(runs) != 1 || runs[0].Surface != "codex" {
		t.Fatalf("the trace's runs: %+v", runs)
	}
	calls, _ := store.ProviderCalls(ctx, runs[0].ID)
	var responses int
	for _, c := range calls {
		if strings.Contains(c.Request, `"path":"/v1/responses"`) {
			responses++
			if c.Provider != "openai" || c.Model != "gpt-test" || c.Input != 60 || c.CacheRead != 40 || c.Output != 5 || c.Finish != "completed" {
				t.Errorf("a model call's record: %+v", c)
			}
		}
	}
	if responses != len(bodies) {
		t.Errorf("%d calls in the trace, %d the API received: %+v", responses, len(bodies), calls)
	}
}
