package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	realKey     = "sk-real-0123456789"
	placeholder = "rein-placeholder-000000000000000000000000"
)

// upstream is a scripted provider over TLS: it records what it received
// and answers with the handler's bytes.
type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	body []string
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got = append(u.got, r)
		u.body = append(u.body, string(b))
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.got...)
}

type recorder struct {
	mu    sync.Mutex
	calls []Call
	spent []string
	full  int // the calls after which recording fails (0: never)
}

func (r *recorder) record(c Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	if r.full > 0 && len(r.calls) >= r.full {
		return fmt.Errorf("the trace is full")
	}
	return nil
}

func (r *recorder) all() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// gateway is a gateway in front of up, served on a loopback port.
func gateway(t *testing.T, up *upstream, c Config) (*Gateway, string, *recorder) {
	t.Helper()
	rec := &recorder{}
	if c.Family == "" {
		c.Family, c.Provider = Messages, "anthropic"
	}
	if c.Upstream == "" {
		c.Upstream = up.srv.URL
	}
	c.Header, c.Key, c.Placeholder = "X-Api-Key", realKey, placeholder
	if c.Family == Responses {
		c.Header = "Authorization"
	}
	c.Record = rec.record
	c.Spent = func(why string) { rec.mu.Lock(); rec.spent = append(rec.spent, why); rec.mu.Unlock() }
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: up.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	g, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	return g, srv.URL, rec
}

func post(t *testing.T, url, key, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const messagesStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"m1","model":"claude-test","usage":{"input_tokens":100,"cache_read_input_tokens":1000,"cache_creation_input_tokens":10,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

// The real key goes upstream and the placeholder does not; the client's
// keys and other headers are dropped; the answer passes through byte for
// byte; the call is recorded with its usage.
func TestForward(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_1")
		w.Header().Set("Set-Cookie", "track=1")
		io.WriteString(w, messagesStream)
	})
	_, url, rec := gateway(t, up, Config{Price: func(m string) (Price, bool) {
		return Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, m == "claude-test"
	}})
	req, _ := http.NewRequest("POST", url+"/v1/messages?beta=true", strings.NewReader(`{"model":"claude-test","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Api-Key", placeholder)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "tools-1")
	req.Header.Set("Cookie", "session=1")
	req.Header.Set("X-Goog-Api-Key", "other")
	req.Header.Set("X-Stainless-Lang", "js")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != messagesStream || resp.Header.Get("Request-Id") != "req_1" || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("answer %d %q %v", resp.StatusCode, body, resp.Header)
	}
	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests upstream", len(got))
	}
	h := got[0].Header
	if h.Get("X-Api-Key") != realKey || h.Get("Authorization") != "" || h.Get("Cookie") != "" || h.Get("X-Goog-Api-Key") != "" ||
		h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Anthropic-Beta") != "tools-1" || h.Get("X-Stainless-Lang") != "js" {
		t.Errorf("upstream headers: %v", h)
	}
	if got[0].URL.Path != "/v1/messages" || got[0].URL.RawQuery != "beta=true" {
		t.Errorf("upstream URL %s", got[0].URL)
	}
	for _, b := range up.body {
		if strings.Contains(b, placeholder) {
			t.Errorf("the placeholder went upstream")
		}
	}
	calls := rec.all()
	if len(calls) != 1 {
		t.Fatalf("calls %+v", calls)
	}
	c := calls[0]
	want := Usage{Input: 100, Output: 42, CacheRead: 1000, CacheWrite: 10}
	if c.Usage != want || c.Model != "claude-test" || c.Finish != "end_turn" || !c.Stream || c.Status != 200 || !c.Priced {
		t.Errorf("call %+v", c)
	}
	if wantCost := (100*3 + 42*15 + 1000*0.3 + 10*3.75) / 1e6; c.Cost < wantCost-1e-12 || c.Cost > wantCost+1e-12 {
		t.Errorf("cost %v, want %v", c.Cost, wantCost)
	}
}

// A request without the session's placeholder never goes upstream,
// whatever key it carries.
func TestKeyChecked(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	_, url, rec := gateway(t, up, Config{})
	for _, key := range []string{"", realKey, "sk-attacker", placeholder[:len(placeholder)-1], placeholder + "x"} {
		code, body := post(t, url+"/v1/messages", key, `{"model":"m","messages":[]}`)
		if code != 401 || !strings.Contains(body, `"authentication_error"`) {
			t.Errorf("key %q: %d %s", key, code, body)
		}
	}
	code, _ := post(t, url+"/v1/messages", "", `{"model":"m","messages":[]}`, "Authorization", "Bearer "+placeholder)
	if code != 200 {
		t.Errorf("bearer placeholder: %d", code)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d requests upstream, want 1", n)
	}
	if n := len(rec.all()); n != 1 {
		t.Errorf("%d calls recorded, want 1 (a request without the key is not a call)", n)
	}
}

// Only the family's model API paths go upstream: the files API, other
// paths and every spelling that would leave the base path are refused.
func TestPaths(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	_, url, _ := gateway(t, up, Config{})
	for _, c := range []struct {
		method, path string
		ok           bool
	}{
		{"POST", "/v1/messages", true},
		{"POST", "/v1/messages/count_tokens", true},
		{"GET", "/v1/models", true},
		{"GET", "/v1/models/claude-x", true},
		{"GET", "/v1/messages", false},
		{"POST", "/v1/files", false},
		{"POST", "/v1/messages/batches", false},
		{"GET", "/v1/models/a/b", false},
		{"POST", "/v1/messages/../files", false},
		{"POST", "/v1//messages", false},
		{"POST", "/v1/%6dessages", false},
		{"POST", "/v1/messages/", false},
		{"DELETE", "/v1/models/x", false},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(`{"model":"m"}`))
		req.URL.Opaque = c.path // sent as written
		req.Header.Set("X-Api-Key", placeholder)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode == 200) != c.ok {
			t.Errorf("%s %s: %d", c.method, c.path, resp.StatusCode)
		}
	}
	if n := len(up.requests()); n != 4 {
		t.Errorf("%d requests upstream, want 4", n)
	}
}

// A request that would make the provider reach another host is refused
// unless the policy allows the host, and recorded as a refusal.
func TestBodyInspected(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	allowed := func(_ context.Context, host string, port uint16) (bool, string) {
		if (host == "docs.example.org" || strings.HasSuffix(host, ".docs.example.org")) && port == 443 {
			return true, ""
		}
		return false, "no rule allows it"
	}
	for _, fam := range []Family{Messages, Responses} {
		_, url, rec := gateway(t, up, Config{Family: fam, Provider: string(fam), Host: allowed})
		path := "/v1/messages"
		cases := []struct {
			body string
			ok   bool
		}{
			{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{}}]}`, true},
			{`{"model":"m","messages":[],"tools":[{"type":"bash_20250124","name":"bash"},{"type":"custom","name":"x"}]}`, true},
			{`{"model":"m","messages":[],"mcp_servers":[{"type":"url","url":"https://evil.example.com/mcp","name":"x"}]}`, false},
			{`{"model":"m","messages":[],"mcp_servers":[{"type":"url","url":"https://docs.example.org/mcp","name":"x"}]}`, true},
			{`{"model":"m","messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, false},
			{`{"model":"m","messages":[],"tools":[{"type":"web_fetch_20250910","name":"web_fetch","allowed_domains":["docs.example.org"]}]}`, true},
			{`{"model":"m","messages":[],"tools":[{"type":"web_fetch_20250910","name":"web_fetch","allowed_domains":["docs.example.org","evil.example.com"]}]}`, false},
			{`{"model":"m","messages":[],"tools":[{"type":"code_execution_20250825","name":"code"}]}`, false},
			{`{"model":"m","messages":[],"tools":[{"type":"brand_new_server_tool","name":"x"}]}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://evil.example.com/x.png?d=secret"}}]}]}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"url","url":"https://evil.example.com/a.pdf"}}]}]}]}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`, true},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"new_kind","url":"https://evil.example.com"}}]}]}`, false},
			{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"WebFetch","input":{"url":"https://evil.example.com"}}]}]}`, true},
			{`{"model":"m","messages":[],"new_field":1}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"image","source":{"type":"url","url":"https://evil.example.com/i.png"}}]}}]}]}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"content","content":[{"type":"image","source":{"type":"url","url":"https://evil.example.com/i.png"}}]}}]}]}]}`, false},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"hi"}]}}]}]}`, true},
			{`{"model":"m","messages":[{"role":"user","content":[{"type":"web_fetch_tool_result","tool_use_id":"t","content":{"type":"web_fetch_result","url":"https://evil.example.com","content":{"type":"document","source":{"type":"url","url":"https://evil.example.com/x"}}}}]}]}`, false},
		}
		if fam == Responses {
			path = "/responses"
			cases = []struct {
				body string
				ok   bool
			}{
				{`{"model":"m","input":"hi","tools":[{"type":"function","name":"shell","parameters":{}}]}`, true},
				{`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`, true},
				{`{"model":"m","input":"x","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.example.com/mcp"}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"mcp","server_label":"x","server_url":"https://docs.example.org/mcp"}]}`, true},
				{`{"model":"m","input":"x","tools":[{"type":"mcp","server_label":"x","connector_id":"connector_gmail"}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"web_search","filters":{"allowed_domains":["docs.example.org"]}}]}`, true},
				{`{"model":"m","input":"x","tools":[{"type":"file_search","vector_store_ids":["v"]}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"code_interpreter"}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"mcp__rein","tools":[{"type":"function","name":"read_file"}]}]}`, true},
				{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"namespace","tools":[]}]}]}`, false},
				{`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"https://evil.example.com/i.png"}]}]}`, false},
				{`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, true},
				{`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_file","file_url":"https://evil.example.com/f.pdf"}]}]}`, false},
				{`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://evil.example.com/i.png"}]}]}`, false},
				{`{"model":"m","input":"x","background":true}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"shell","environment":{"type":"container_auto","network_policy":{"type":"allowlist","allowed_domains":["evil.example.com"]}}}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"shell"},{"type":"local_shell"},{"type":"apply_patch"}]}`, true},
				{`{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{},"container":"x"}]}`, false},
				{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[],"server_url":"https://evil.example.com"}]}`, false},
				{`{"model":"m","input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://evil.example.com/s.png"}}]}`, false},
				{`{"model":"m","input":"x","prompt":{"id":"pmpt_1"}}`, false},
			}
		}
		before := len(up.requests())
		allowedN := 0
		for _, c := range cases {
			req, _ := http.NewRequest("POST", url+path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+placeholder)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if (resp.StatusCode == 200) != c.ok {
				t.Errorf("%s %s: %d %s", fam, c.body, resp.StatusCode, b)
			}
			if c.ok {
				allowedN++
			} else if resp.StatusCode != 403 || !strings.Contains(string(b), "rein's gateway refused") {
				t.Errorf("%s %s: refusal %d %s", fam, c.body, resp.StatusCode, b)
			}
		}
		if n := len(up.requests()) - before; n != allowedN {
			t.Errorf("%s: %d requests upstream, want %d", fam, n, allowedN)
		}
		refused := 0
		for _, c := range rec.all() {
			if c.Refused != "" {
				refused++
			}
		}
		if refused != len(cases)-allowedN {
			t.Errorf("%s: %d refusals recorded, want %d", fam, refused, len(cases)-allowedN)
		}
	}
}

// Once the tokens reach the bound, the next request is refused, the
// session is told once, and nothing more goes upstream.
func TestBudget(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, messagesStream)
	})
	g, url, rec := gateway(t, up, Config{MaxTokens: 1000})
	body := `{"model":"claude-test","stream":true,"messages":[]}`
	for i := range 3 {
		code, b := post(t, url+"/v1/messages", placeholder, body)
		if i == 0 && code != 200 {
			t.Fatalf("first call: %d %s", code, b)
		}
		if i > 0 && (code != 403 || !strings.Contains(b, "token budget: 1152 tokens of 1000")) {
			t.Fatalf("call %d: %d %s", i, code, b)
		}
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d requests upstream", n)
	}
	if len(rec.spent) != 1 || g.Spent() == "" {
		t.Errorf("spent %q", rec.spent)
	}
	tokens, _, unpriced := g.Totals()
	if tokens != 1152 || len(unpriced) != 1 || unpriced[0] != "claude-test" {
		t.Errorf("totals %d %v", tokens, unpriced)
	}

	// A cost bound, over the priced models.
	g2, url2, _ := gateway(t, up, Config{MaxCost: 0.0001, Price: func(string) (Price, bool) { return Price{Input: 1}, true }})
	post(t, url2+"/v1/messages", placeholder, body)
	code, b := post(t, url2+"/v1/messages", placeholder, body)
	if code != 403 || !strings.Contains(b, "cost budget") || g2.Spent() == "" {
		t.Errorf("cost: %d %s", code, b)
	}
}

// The answer reaches the client as it arrives: the first event before
// the provider has finished, and a closed gateway cancels a request in
// flight upstream.
func TestStreamsAndCancels(t *testing.T) {
	release := make(chan struct{})
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			close(cancelled)
		}
	})
	g, url, _ := gateway(t, up, Config{})
	req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	req.Header.Set("X-Api-Key", placeholder)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(resp.Body, buf, len("event: ping\n"))
	if err != nil || !strings.HasPrefix(string(buf[:n]), "event: ping\n") {
		t.Fatalf("first bytes %q %v", buf[:n], err)
	}
	g.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight was not cancelled upstream")
	}
	close(release)
}

// A base URL that would send the key in the clear to another machine is
// refused.
func TestUpstreamChecked(t *testing.T) {
	for _, u := range []string{"http://api.example.com", "ftp://x", "https://user:pw@api.example.com", "https://api.example.com/v1/../x", "https://api.example.com?x=1", "http://10.0.0.1:8080"} {
		if _, err := New(context.Background(), Config{Family: Messages, Upstream: u, Key: "k", Header: "X-Api-Key", Placeholder: placeholder}); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080", "http://localhost:4000/v1", "https://api.anthropic.com", "http://[::1]:9/v1"} {
		if _, err := New(context.Background(), Config{Family: Messages, Upstream: u, Key: "k", Header: "X-Api-Key", Placeholder: placeholder}); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// Usage is read from each family's answers, streamed or whole.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		family Family
		stream bool
		body   string
		want   Usage
		model  string
		finish string
	}{
		{Messages, true, messagesStream, Usage{100, 42, 1000, 10}, "claude-test", "end_turn"},
		{Messages, false, `{"id":"m","model":"claude-x","stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":2}}`, Usage{7, 3, 2, 0}, "claude-x", "tool_use"},
		{Responses, true, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-x\",\"usage\":null}}\n\n" +
			"event: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-x\",\"status\":\"completed\",\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":20},\"output_tokens\":5}}}\r\n\r\n",
			Usage{30, 5, 20, 0}, "gpt-x", "completed"},
		{Responses, false, `{"model":"gpt-y","status":"completed","usage":{"input_tokens":9,"output_tokens":1}}`, Usage{9, 1, 0, 0}, "gpt-y", "completed"},
		{Responses, true, "data: {\"model\":\"gpt-c\",\"choices\":[{\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n\ndata: [DONE]\n\n",
			Usage{10, 4, 1, 0}, "gpt-c", "stop"},
	} {
		// Fed a byte at a time and whole: the same.
		for _, step := range []int{1, 7, len(c.body)} {
			u := newUsageReader(c.family, c.stream)
			for i := 0; i < len(c.body); i += step {
				u.Write([]byte(c.body[i:min(i+step, len(c.body))]))
			}
			got, model, finish, whole := u.result()
			if !whole {
				t.Errorf("%s step %d: the final usage was not read", c.family, step)
			}
			if got != c.want || model != c.model || finish != c.finish {
				t.Errorf("%s step %d: %+v %q %q, want %+v %q %q", c.family, step, got, model, finish, c.want, c.model, c.finish)
			}
		}
	}
}

// FuzzInspect: whatever the body, inspecting it never panics, and a body
// that names a URL of a host the policy does not allow is never passed
// when the URL is where the provider would fetch it from.
func FuzzInspect(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x.example/i"}}]}]}`,
		`{"model":"m","input":[{"type":"message","content":[{"type":"input_image","image_url":"https://x.example/i"}]}]}`,
		`{"model":"m","tools":[{"type":"mcp","server_url":"https://x.example"}]}`,
		`{"model":"m","mcp_servers":[{"url":"http://x.example:8080"}]}`,
	} {
		f.Add(s)
	}
	g := &Gateway{c: Config{Host: func(context.Context, string, uint16) (bool, string) { return false, "no" }}}
	f.Fuzz(func(t *testing.T, body string) {
		var req map[string]any
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		for _, fam := range []Family{Messages, Responses} {
			g.c.Family = fam
			for _, api := range []string{"/v1/messages", "/responses", "/chat/completions"} {
				why := g.inspect(context.Background(), api, req)
				if why == "" && strings.Contains(body, "x.example") && fam == Messages {
					if b, _ := json.Marshal(req["mcp_servers"]); strings.Contains(string(b), "x.example") {
						t.Fatalf("an MCP server of a host not allowed passed: %s", body)
					}
				}
			}
		}
		u := newUsageReader(Messages, true)
		u.Write([]byte(body))
		u.result()
	})
}

// A body the gateway and a provider could read differently is refused:
// a key twice in one object, at any depth; nesting past the bound;
// anything after the object.
func TestStrict(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"model":"m","messages":[]}`:                               true,
		`{"a":{"b":[{"c":1},{"c":2}],"d":{}},"e":[[],{}],"f":"x"}`:  true,
		`{"tools":[],"tools":[{"type":"web_search_20250305"}]}`:     false,
		`{"tools":[{"type":"custom","type":"web_fetch_20250910"}]}`: false,
		`{"a":{"b":1,"b":2}}`:                                       false,
		`{"a":[{"x":1,"y":{"z":1},"x":2}]}`:                         false,
		`{"t\u006fols":[],"tools":[]}`:                              false,
		`{"a":1} {"b":2}`:                                           false,
		`{"a":1`:                                                    false,
		`[]`:                                                        true,
		strings.Repeat("[", 200) + strings.Repeat("]", 200):         false,
		`{"a":` + strings.Repeat(`{"b":`, 127) + `1` + strings.Repeat(`}`, 128): true,
	} {
		if got := strict([]byte(body)) == ""; got != ok {
			t.Errorf("%.80s: %v, want %v (%s)", body, got, ok, strict([]byte(body)))
		}
	}
}

// Past the calls it serves at once, the gateway refuses with 429 (which
// agents retry) and reads no body.
func TestMaxCalls(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { <-release; io.WriteString(w, "{}") })
	_, url, _ := gateway(t, up, Config{MaxCalls: 2})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			code, _ := post(t, url+"/v1/messages", placeholder, `{"model":"m","messages":[]}`)
			done <- code
		}()
	}
	for len(up.requests()) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := post(t, url+"/v1/messages", placeholder, `{"model":"m","messages":[]}`); code != 429 || !strings.Contains(body, "more than 2 calls at once") {
		t.Errorf("a third call at once: %d %s", code, body)
	}
	close(release)
	if a, b := <-done, <-done; a != 200 || b != 200 {
		t.Errorf("the calls served: %d %d", a, b)
	}
}

// Calls in flight hold their estimate: past what is left of the budget a
// call waits (429), and the session's spending stays within one call of
// the bound however many are sent at once.
func TestBudgetHeld(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, messagesStream)
	})
	g, url, _ := gateway(t, up, Config{MaxTokens: 2000})
	body := `{"model":"claude-test","stream":true,"max_tokens":1000,"messages":[]}`
	codes := make(chan int, 8)
	for range 8 {
		go func() {
			code, _ := post(t, url+"/v1/messages", placeholder, body)
			codes <- code
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	got := map[int]int{}
	for range 8 {
		got[<-codes]++
	}
	if got[200] != 2 || got[429] != 6 {
		t.Errorf("8 calls at once: %v, want 2 through (1000 tokens held each) and 6 told to wait", got)
	}
	if tokens, _, _ := g.Totals(); tokens != 2*1152 {
		t.Errorf("spent %d", tokens)
	}
	if code, b := post(t, url+"/v1/messages", placeholder, body); code != 403 || !strings.Contains(b, "token budget") {
		t.Errorf("after: %d %s", code, b)
	}
}

// An answer whose final usage never comes (a stream without it, an
// answer too long to read, a client that hangs up first) is counted from
// its bytes, never as nothing.
func TestUsageEstimated(t *testing.T) {
	big := strings.Repeat("x", 5<<20)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\""+strings.Repeat("y", 4000)+"\"}}]}\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"model":"gpt-x","output_text":"`+big+`","usage":{"input_tokens":1,"output_tokens":1}}`)
		}
	})
	_, url, rec := gateway(t, up, Config{Family: Responses, Provider: "openai", MaxTokens: 1 << 40})
	for _, path := range []string{"/chat/completions", "/responses"} {
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[]}`))
		if path == "/responses" {
			req, _ = http.NewRequest("POST", url+path, strings.NewReader(`{"model":"gpt-x","input":"hi"}`))
		}
		req.Header.Set("Authorization", "Bearer "+placeholder)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	calls := rec.all()
	if len(calls) != 2 || !calls[0].Estimated || calls[0].Usage.Output < 1000 || !calls[1].Estimated || calls[1].Usage.Output < 1<<20 {
		t.Errorf("calls %+v", calls)
	}
}

// With --max-cost alone a model without a price is refused: its calls
// could not be bounded. A trace that takes no more records refuses every
// later call.
func TestUnboundable(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	_, url, _ := gateway(t, up, Config{MaxCost: 1, Price: func(m string) (Price, bool) { return Price{Input: 1}, m == "priced" }})
	if code, b := post(t, url+"/v1/messages", placeholder, `{"model":"unpriced","messages":[]}`); code != 403 || !strings.Contains(b, "has no price") {
		t.Errorf("an unpriced model: %d %s", code, b)
	}
	if code, _ := post(t, url+"/v1/messages", placeholder, `{"model":"priced","messages":[]}`); code != 200 {
		t.Errorf("a priced model after: %d", code)
	}
	g2, url2, rec := gateway(t, up, Config{})
	rec.full = 1
	post(t, url2+"/v1/messages", placeholder, `{"model":"m","messages":[]}`)
	if code, b := post(t, url2+"/v1/messages", placeholder, `{"model":"m","messages":[]}`); code != 403 || !strings.Contains(b, "no call it cannot record") {
		t.Errorf("a full trace: %d %s", code, b)
	}
	_ = g2
	for _, q := range []string{"?beta=true", "?limit=5"} {
		if code, _ := post(t, url+"/v1/messages"+q, placeholder, `{"model":"priced","messages":[]}`); code != 200 {
			t.Errorf("%s: %d", q, code)
		}
	}
	if code, b := post(t, url+"/v1/messages?api-version=1", placeholder, `{"model":"priced","messages":[]}`); code != 403 || !strings.Contains(b, "api-version") {
		t.Errorf("an unknown query parameter: %d %s", code, b)
	}
}
