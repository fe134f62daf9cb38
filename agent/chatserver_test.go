package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// turn is one scripted answer of the fake Chat Completions server: a
// status with a body, or a streamed response of text and tool calls.
type turn struct {
	status     int
	retryAfter string
	body       string
	text       string
	calls      []ToolCall
	finish     string
	// cut ends the stream in the middle, with no [DONE].
	cut bool
	// streamErr, for the Messages server, is an error event sent after
	// the stream began with HTTP 200, as the API does under load.
	streamErr string
	// check looks at the request the turn answers.
	check func(t *testing.T, req map[string]any)
}

// chatServer speaks OpenAI's Chat Completions streaming wire format as
// the vendor does: server-sent events of chat.completion.chunk objects,
// the tool calls' arguments split across chunks, usage in a last chunk
// with no choices, then data: [DONE].
type chatServer struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	turns []turn
	// requests are the bodies received, in order.
	requests []map[string]any
	auth     []string
}

func newChatServer(t *testing.T, turns ...turn) *chatServer {
	cs := &chatServer{t: t, turns: turns}
	cs.srv = httptest.NewServer(http.HandlerFunc(cs.serve))
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *chatServer) url() string { return cs.srv.URL + "/v1" }

func (cs *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cs.mu.Lock()
	cs.requests = append(cs.requests, req)
	cs.auth = append(cs.auth, r.Header.Get("Authorization"))
	if len(cs.turns) == 0 {
		cs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"the script has no more turns","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	tn := cs.turns[0]
	cs.turns = cs.turns[1:]
	cs.mu.Unlock()
	if tn.check != nil {
		tn.check(cs.t, req)
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
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	n := 0
	chunk := func(choices string, usage string) {
		n++
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1764547200,\"model\":%q,\"system_fingerprint\":\"fp_1\",\"choices\":[%s]%s}\n\n", len(cs.requests), req["model"], choices, usage)
		fl.Flush()
	}
	chunk(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`, "")
	// Text in pieces of at most 7 bytes, as a model streams it.
	for s := tn.text; s != ""; {
		k := min(7, len(s))
		piece, _ := json.Marshal(s[:k])
		s = s[k:]
		chunk(fmt.Sprintf(`{"index":0,"delta":{"content":%s},"logprobs":null,"finish_reason":null}`, piece), "")
	}
	for i, c := range tn.calls {
		chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]},"logprobs":null,"finish_reason":null}`, i, c.ID, c.Name), "")
		// The arguments split across chunks, mid-token.
		for s := c.Args; s != ""; {
			k := min(5, len(s))
			piece, _ := json.Marshal(s[:k])
			s = s[k:]
			chunk(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"logprobs":null,"finish_reason":null}`, i, piece), "")
		}
	}
	if tn.cut {
		// The connection ends mid-stream.
		return
	}
	finish := tn.finish
	if finish == "" {
		finish = "stop"
		if len(tn.calls) > 0 {
			finish = "tool_calls"
		}
	}
	chunk(fmt.Sprintf(`{"index":0,"delta":{},"logprobs":null,"finish_reason":%q}`, finish), "")
	chunk("", `,"usage":{"prompt_tokens":12000,"completion_tokens":30,"total_tokens":12030,"prompt_tokens_details":{"cached_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`)
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}

func (cs *chatServer) requestCount() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.requests)
}

// lastToolMessage is the content of the last tool message of a request.
func lastToolMessage(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "tool" || m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

func callArgs(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
