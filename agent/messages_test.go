package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// messagesServer speaks Anthropic's Messages streaming wire format as the
// vendor does: named server-sent events (message_start, content blocks
// with text and input_json deltas split mid-token, pings, message_delta
// with the stop reason and usage, message_stop).
type messagesServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	turns    []turn
	requests []map[string]any
	headers  []http.Header
}

func newMessagesServer(t *testing.T, turns ...turn) *messagesServer {
	ms := &messagesServer{turns: turns}
	ms.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		json.Unmarshal(body, &req)
		ms.mu.Lock()
		ms.requests, ms.headers = append(ms.requests, req), append(ms.headers, r.Header.Clone())
		if r.URL.Path != "/v1/messages" || len(ms.turns) == 0 {
			ms.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no more turns"}}`)
			return
		}
		tn := ms.turns[0]
		ms.turns = ms.turns[1:]
		ms.mu.Unlock()
		if tn.check != nil {
			tn.check(t, req)
		}
		if tn.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			if tn.retryAfter != "" {
				w.Header().Set("Retry-After", tn.retryAfter)
			}
			w.WriteHeader(tn.status)
			io.WriteString(w, tn.body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		ev := func(name, data string) {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			fl.Flush()
		}
		ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}`, req["model"]))
		if tn.streamErr != "" {
			ev("error", tn.streamErr)
			return
		}
		idx := 0
		if tn.text != "" {
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			ev("ping", `{"type": "ping"}`)
			for s := tn.text; s != ""; {
				k := min(6, len(s))
				q, _ := json.Marshal(s[:k])
				s = s[k:]
				ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, q))
			}
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			idx++
		}
		for _, c := range tn.calls {
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, idx, c.ID, c.Name))
			for s := c.Args; s != ""; {
				k := min(4, len(s))
				q, _ := json.Marshal(s[:k])
				s = s[k:]
				ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, q))
			}
			ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
			idx++
		}
		if tn.cut {
			return
		}
		stop := tn.finish
		if stop == "" {
			stop = "end_turn"
			if len(tn.calls) > 0 {
				stop = "tool_use"
			}
		}
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":42}}`, stop))
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(ms.srv.Close)
	return ms
}

func messagesFor(ms *messagesServer) Provider {
	return NewMessages(ChatConfig{Name: "anthropic", BaseURL: ms.srv.URL, APIKey: "sk-ant-test", Model: "claude-test"})
}

// TestMessagesStream: text and a tool call whose input arrives in pieces
// come back whole; the request is Messages' shape, with the tool results
// of a turn in one user message, the key as the SDK sends it, and prompt-cache
// breakpoints at the end of the system block and of the transcript.
func TestMessagesStream(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1") // never read
	ms := newMessagesServer(t, turn{
		text:  "Let me look.",
		calls: []ToolCall{{ID: "toolu_01", Name: "read_file", Args: `{"path":"calc.go"}`}},
	})
	resp, err := messagesFor(ms).Stream(context.Background(), Request{
		System: "sys",
		Messages: []Message{{Role: RoleUser, Text: "goal"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "t1", Name: "list_dir", Args: `{}`}, {ID: "t2", Name: "list_dir", Args: `{"path":"a"}`}}},
			{Role: RoleTool, ToolCallID: "t1", Text: "one"}, {Role: RoleTool, ToolCallID: "t2", Text: "two"}},
		Tools:     []ToolDef{{Name: "read_file", Description: "read", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
		MaxTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Let me look." || resp.Finish != FinishToolCalls || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Args != `{"path":"calc.go"}` ||
		resp.Usage != (Usage{Input: 135, Output: 42, CacheRead: 100, CacheWrite: 10}) {
		t.Fatalf("%+v", resp)
	}
	req, h := ms.requests[0], ms.headers[0]
	// The key goes as the SDK sends it, in one of the headers the API reads.
	if (h.Get("X-Api-Key") != "sk-ant-test" && h.Get("Authorization") != "Bearer sk-ant-test") || h.Get("Anthropic-Version") == "" || req["model"] != "claude-test" || req["max_tokens"] != float64(100) || req["stream"] != true {
		t.Fatalf("headers %v request %v", h, callArgs(req))
	}
	sys := req["system"].([]any)[0].(map[string]any)
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	results := last["content"].([]any)
	if sys["cache_control"] == nil || len(msgs) != 3 || last["role"] != "user" || len(results) != 2 || results[1].(map[string]any)["cache_control"] == nil {
		t.Fatalf("request %v", callArgs(req))
	}
}

// TestMessagesFailures: Anthropic's errors, classed; no retry by the SDK.
func TestMessagesFailures(t *testing.T) {
	for _, tc := range []struct {
		tn    turn
		class FailureClass
	}{
		{turn{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, FailOverloaded},
		{turn{status: 429, retryAfter: "3", body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`}, FailRateLimited},
		{turn{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}, FailAuth},
		{turn{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`}, FailContextOverflow},
		{turn{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`}, FailRequest},
		{turn{text: "cut short", cut: true}, FailTransport},
		// After HTTP 200, inside the stream, as the API reports load.
		{turn{streamErr: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, FailOverloaded},
		{turn{streamErr: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`}, FailRateLimited},
		{turn{streamErr: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`}, FailServer},
		{turn{streamErr: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}, FailRequest},
		{turn{streamErr: `not json`}, FailServer},
	} {
		ms := newMessagesServer(t, tc.tn)
		_, err := messagesFor(ms).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, MaxTokens: 10})
		var pe *ProviderError
		if !errors.As(err, &pe) || pe.Class != tc.class || len(ms.requests) != 1 {
			t.Fatalf("%d: %#v (%d requests)", tc.tn.status, err, len(ms.requests))
		}
	}
}

// TestRunMessages: a whole run through the Messages family, to a passing
// gate.
func TestRunMessages(t *testing.T) {
	ws := fixture(t, nil)
	ms := newMessagesServer(t,
		turn{calls: []ToolCall{call("toolu_1", "edit_file", `{"path":"calc.go","old":"a - b","new":"a + b"}`)}},
		turn{text: "Fixed."},
	)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode, Verification: []string{"*_test.go"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Contract{Goal: "fix Add", Workspace: ws, Verify: gateGoTest(), Protect: []string{"*_test.go"}},
		Options{Provider: messagesFor(ms), Tool: tool.Config{Policy: p, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
	if err != nil || out.Kind != Succeeded || out.Steps != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "calc.go")); string(data) != calcFixed {
		t.Fatalf("calc.go: %q", data)
	}
}
