package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// responsesServer speaks OpenAI's Responses streaming wire format: named
// events (response.created, output items, text and function-call argument
// deltas split mid-token, response.completed with the whole response and
// its usage).
func responsesServer(t *testing.T, status int, body string, output string, usage string, seen *map[string]any) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		json.Unmarshal(data, seen)
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name, d string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, d); w.(http.Flusher).Flush() }
		head := `"id":"resp_1","object":"response","created_at":1764547200,"model":"m-1"`
		ev("response.created", `{"type":"response.created","sequence_number":0,"response":{`+head+`,"status":"in_progress","output":[]}}`)
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Look"}`)
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"ing."}`)
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":1,"delta":"{\"pa"}`)
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":4,"item_id":"fc_1","output_index":1,"delta":"th\":\"calc.go\"}"}`)
		ev("response.completed", `{"type":"response.completed","sequence_number":5,"response":{`+head+`,"status":"completed","output":`+output+`,"usage":`+usage+`}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestResponsesStream: the whole response from response.completed; the
// request in the Responses shape (instructions, input items with the
// function call and its output by call id, function tools, store off).
func TestResponsesStream(t *testing.T) {
	var seen map[string]any
	srv := responsesServer(t, 0, "",
		`[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Looking.","annotations":[]}]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"calc.go\"}","status":"completed"}]`,
		`{"input_tokens":50,"input_tokens_details":{"cached_tokens":10},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":70}`, &seen)
	p := NewResponses(ChatConfig{Name: "openai", BaseURL: srv.URL + "/v1", APIKey: "sk-test-key", Model: "m-1"})
	resp, err := p.Stream(context.Background(), Request{System: "sys",
		Messages: []Message{{Role: RoleUser, Text: "goal"}, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c0", Name: "list_dir", Args: `{}`}}}, {Role: RoleTool, ToolCallID: "c0", Text: "listing"}},
		Tools:    []ToolDef{{Name: "read_file", Description: "read", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}, MaxTokens: 99})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Looking." || resp.Finish != FinishToolCalls || len(resp.ToolCalls) != 1 || resp.ToolCalls[0] != (ToolCall{ID: "call_1", Name: "read_file", Args: `{"path":"calc.go"}`}) ||
		resp.Usage != (Usage{Input: 50, Output: 20, CacheRead: 10}) {
		t.Fatalf("%+v", resp)
	}
	input := seen["input"].([]any)
	fc, out := input[1].(map[string]any), input[2].(map[string]any)
	if seen["instructions"] != "sys" || seen["store"] != false || seen["max_output_tokens"] != float64(99) || seen["stream"] != true || len(input) != 3 ||
		fc["type"] != "function_call" || fc["call_id"] != "c0" || out["type"] != "function_call_output" || out["call_id"] != "c0" || out["output"] != "listing" ||
		seen["tools"].([]any)[0].(map[string]any)["type"] != "function" {
		t.Fatalf("request %v", callArgs(seen))
	}
}

// TestResponsesFailures: HTTP failures are classed as on the other
// families.
func TestResponsesFailures(t *testing.T) {
	var seen map[string]any
	srv := responsesServer(t, 429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "", "", &seen)
	_, err := NewResponses(ChatConfig{BaseURL: srv.URL + "/v1", Model: "m"}).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Class != FailRateLimited {
		t.Fatalf("%#v", err)
	}
}
