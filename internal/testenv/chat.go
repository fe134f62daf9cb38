package testenv

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

// Chat is a scripted model that speaks the Chat Completions wire format,
// one streamed response per request: an answer "NAME {JSON}" is a call of
// tool NAME with those arguments, any other is plain text.
type Chat struct {
	Answers []string
	// ByTurn answers a request by the count of the assistant's turns it
	// holds, not by its arrival, so that a call made again (its driver
	// died waiting for it) gets the answer the first got.
	ByTurn bool
	// Before, when set, is called with an answer's index before it is
	// sent: a test holds a call there.
	Before func(i int)
}

// Start serves c on 127.0.0.1 until t ends; the count is of the requests
// it was sent.
func (c Chat) Start(t testing.TB) (*httptest.Server, *int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if c.ByTurn {
			var req struct{ Messages []struct{ Role string } }
			json.Unmarshal(body, &req)
			i = 0
			for _, m := range req.Messages {
				if m.Role == "assistant" {
					i++
				}
			}
		}
		if i >= len(c.Answers) {
			http.Error(w, `{"error":{"message":"no more turns","type":"invalid_request_error","param":null,"code":null}}`, http.StatusBadRequest)
			return
		}
		if c.Before != nil {
			c.Before(i)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s) }
		head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[`
		a := c.Answers[i]
		if name, args, ok := strings.Cut(a, " "); ok && strings.HasPrefix(args, "{") {
			send(head + fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}]}`, i, name))
			q, _ := json.Marshal(args)
			send(head + fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":%s}}]},"finish_reason":null}]}`, q))
			send(head + `{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			q, _ := json.Marshal(a)
			send(head + fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":%s},"finish_reason":null}]}`, q))
			send(head + `{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":100000,"completion_tokens":2000,"total_tokens":102000}}`)
		send("[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}
