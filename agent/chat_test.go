package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func chatFor(cs *chatServer) Provider {
	return NewChat(ChatConfig{Name: "test", BaseURL: cs.url(), APIKey: "sk-test-key", Model: "m-1"})
}

// TestChatStream: text and tool calls streamed in pieces come back whole,
// with the finish reason and the usage of the last chunk; the request
// carries the system block, the transcript, the tools and the cap.
func TestChatStream(t *testing.T) {
	cs := newChatServer(t, turn{
		text:  "Reading the file first.",
		calls: []ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"calc.go"}`}, {ID: "call_2", Name: "list_dir", Args: `{"path":"."}`}},
		check: func(t *testing.T, req map[string]any) {
			msgs := req["messages"].([]any)
			if req["model"] != "m-1" || req["stream"] != true || req["max_tokens"] != float64(64) || len(msgs) != 4 ||
				msgs[0].(map[string]any)["role"] != "system" || msgs[3].(map[string]any)["role"] != "tool" || msgs[3].(map[string]any)["tool_call_id"] != "c0" {
				t.Errorf("request: %v", callArgs(req))
			}
			tools := req["tools"].([]any)
			fn := tools[0].(map[string]any)["function"].(map[string]any)
			if fn["name"] != "read_file" || fn["parameters"].(map[string]any)["type"] != "object" {
				t.Errorf("tools: %v", callArgs(tools))
			}
			if so, _ := req["stream_options"].(map[string]any); so["include_usage"] != true {
				t.Errorf("stream_options: %v", so)
			}
		},
	})
	resp, err := chatFor(cs).Stream(context.Background(), Request{
		System: "sys",
		Messages: []Message{{Role: RoleUser, Text: "goal"}, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c0", Name: "list_dir", Args: `{}`}}},
			{Role: RoleTool, ToolCallID: "c0", Text: "list_dir: ok"}},
		Tools:     []ToolDef{{Name: "read_file", Description: "read", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		MaxTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Reading the file first." || resp.Finish != FinishToolCalls || len(resp.ToolCalls) != 2 ||
		resp.ToolCalls[0] != (ToolCall{ID: "call_1", Name: "read_file", Args: `{"path":"calc.go"}`}) || resp.ToolCalls[1].Args != `{"path":"."}` ||
		resp.Usage != (Usage{Input: 12000, Output: 30, CacheRead: 100}) {
		t.Fatalf("%+v", resp)
	}
	if cs.auth[0] != "Bearer sk-test-key" {
		t.Fatalf("authorization %q", cs.auth[0])
	}
}

// TestChatFailures: each HTTP failure is classed as the spec says, with
// Retry-After read, and the SDK never retries on its own (one request per
// call).
func TestChatFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tn    turn
		class FailureClass
		after time.Duration
	}{
		{"429", turn{status: 429, retryAfter: "7", body: `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}, FailRateLimited, 7 * time.Second},
		{"500", turn{status: 500, body: `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`}, FailServer, 0},
		{"529", turn{status: 529, body: `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`}, FailOverloaded, 0},
		{"401", turn{status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}, FailAuth, 0},
		{"400 context", turn{status: 400, body: `{"error":{"message":"maximum context length","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}, FailContextOverflow, 0},
		{"cut", turn{text: "partial answer", cut: true}, FailTransport, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, tc.tn)
			_, err := chatFor(cs).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Class != tc.class || pe.RetryAfter != tc.after {
				t.Fatalf("%#v", err)
			}
			if n := cs.requestCount(); n != 1 {
				t.Fatalf("%d requests: the SDK retried", n)
			}
		})
	}
}

// TestIdleTimeout: a stream that stops sending ends as a timeout, which
// the loop retries.
func TestIdleTimeout(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	p := NewChat(ChatConfig{BaseURL: srv.URL + "/v1", Model: "m", IdleTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Class != FailTimeout || !pe.Class.Retried() || time.Since(start) > 5*time.Second {
		t.Fatalf("%#v after %s", err, time.Since(start))
	}
}
