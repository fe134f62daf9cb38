//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// treeServer is a Chat Completions server for a run tree: each request
// is answered from the script of its run's goal (its first user
// message's first line) at the run's step (the assistant messages so
// far); a script's line is a reply, or "tool {args}" for a call, or
// "block" to hold the request until the client gives up. It counts the
// requests and keeps when each came.
type treeServer struct {
	*httptest.Server
	mu   sync.Mutex
	at   []time.Time
	seen []string
	// held is told of each request held.
	held chan string
}

func newTreeServer(t *testing.T, scripts map[string][]string) *treeServer {
	s := &treeServer{held: make(chan string, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(data, &req)
		goal, step := "", 0
		for _, m := range req.Messages {
			if m.Role == "user" && goal == "" {
				text, _ := m.Content.(string)
				if parts, ok := m.Content.([]any); ok && len(parts) > 0 {
					if p, ok := parts[0].(map[string]any); ok {
						text, _ = p["text"].(string)
					}
				}
				goal, _, _ = strings.Cut(text, "\n")
			}
			if m.Role == "assistant" {
				step++
			}
		}
		s.mu.Lock()
		s.at, s.seen = append(s.at, time.Now()), append(s.seen, goal)
		s.mu.Unlock()
		a := "Done."
		if sc := scripts[goal]; step < len(sc) {
			a = sc[step]
		}
		if a == "block" {
			s.held <- goal
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s) }
		head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[`
		if name, args, ok := strings.Cut(a, " "); ok && strings.HasPrefix(args, "{") {
			send(head + fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}]}`, step, name))
			q, _ := json.Marshal(args)
			send(head + fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":%s}}]},"finish_reason":null}]}`, q))
			send(head + `{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else if calls, ok := strings.CutPrefix(a, "many "); ok {
			// Several calls in one response: "many name {args}|name {args}".
			for i, c := range strings.Split(calls, "|") {
				name, args, _ := strings.Cut(c, " ")
				q, _ := json.Marshal(args)
				send(head + fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`, i, step, i, name, q))
			}
			send(head + `{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			q, _ := json.Marshal(a)
			send(head + fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":%s},"finish_reason":null}]}`, q))
			send(head + `{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		send(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":20,"total_tokens":1020}}`)
		send("[DONE]")
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRunTree: rein run with a model that hands two files to two
// read-only children: the run finishes with its children's spending in
// its outcome, prints each child's lines under its own, and rein runs
// lists the tree, each child under its parent's step.
func TestRunTree(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	srv := newTreeServer(t, map[string][]string{
		"two":    {`many spawn_agent {"goal":"read a","read_only":true}|spawn_agent {"goal":"read b","read_only":true}`, "Both read."},
		"read a": {`list_dir {"path":"."}`, "A is read."},
		"read b": {"B is read."},
	})
	code, out, errOut := rein(t, "run", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--mode", "auto", "two")
	if code != 0 || !strings.Contains(out, "finished:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	run := regexp.MustCompile(`run (\d{8}T\d{6}-[0-9a-f]{8}),`).FindStringSubmatch(out)
	if run == nil {
		t.Fatalf("no run id:\n%s", out)
	}
	for _, want := range []string{"  child 1.0 | step 1   list_dir", "  child 1.0 | finished:", "  child 1.1 | finished:", "step 1   spawn_agent"} {
		if !strings.Contains(out, want) {
			t.Errorf("rein run's lines lack %q:\n%s", want, out)
		}
	}
	code, out, _ = rein(t, "runs")
	lines := strings.Split(out, "\n")
	var rows []string
	for _, l := range lines {
		if strings.Contains(l, run[1]) || strings.Contains(l, "└") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	if code != 0 || len(rows) != 3 || !strings.HasPrefix(rows[0], run[1]) || !regexp.MustCompile(`finished 2 \+3 \d+ \+\d+ `).MatchString(rows[0]) ||
		!strings.HasPrefix(rows[1], "└ .1.0 (step 1)") || !strings.Contains(rows[1], "finished 2 ") || !strings.HasPrefix(rows[2], "└ .1.1 (step 1)") || !strings.Contains(rows[2], "finished 1 ") {
		t.Fatalf("rein runs:\n%s", out)
	}
	code, out, _ = rein(t, "runs", "--json")
	var rs []struct {
		RunID      string `json:"run"`
		Parent     string `json:"parent"`
		ParentStep int    `json:"parent_step"`
		Depth      int    `json:"depth"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil || code != 0 || len(rs) < 3 || rs[1].Parent != run[1] || rs[1].ParentStep != 1 || rs[1].Depth != 1 {
		t.Fatalf("rein runs --json: %v\n%s", err, out)
	}
	// A child is driven by its parent only.
	if code, _, errOut := rein(t, "run", "resume", run[1]+".1.0"); code == 0 || !strings.Contains(errOut, "has ended") && !strings.Contains(errOut, "drives it") {
		t.Errorf("rein run resume of a child: exit %d %s", code, errOut)
	}
}

// TestRunTreeCancel: rein run cancel of the root, while its two children
// wait on the model, stops the whole tree within a second or so: the
// run ends cancelled (exit 130), each child ends cancelled, and the
// server sees no request after the cancel.
func TestRunTreeCancel(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	srv := newTreeServer(t, map[string][]string{
		"two":    {`many spawn_agent {"goal":"wait a","read_only":true}|spawn_agent {"goal":"wait b","read_only":true}`, "Both read."},
		"wait a": {"block"},
		"wait b": {"block"},
	})
	done := make(chan struct {
		code int
		out  string
	}, 1)
	go func() {
		code, out, errOut := rein(t, "run", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--mode", "auto", "--json", "two")
		done <- struct {
			code int
			out  string
		}{code, out + errOut}
	}()
	for range 2 {
		select {
		case <-srv.held:
		case <-time.After(30 * time.Second):
			t.Fatal("the children did not call the model")
		}
	}
	_, out, _ := rein(t, "runs", "--json")
	var rs []struct {
		RunID  string `json:"run"`
		Parent string `json:"parent"`
	}
	json.Unmarshal([]byte(out), &rs)
	root := ""
	for _, r := range rs {
		if r.Parent == "" {
			root = r.RunID
			break
		}
	}
	if root == "" {
		t.Fatalf("no root run listed:\n%s", out)
	}
	asked := time.Now()
	if code, out, errOut := rein(t, "run", "cancel", root); code != 0 {
		t.Fatalf("rein run cancel: exit %d %s%s", code, out, errOut)
	}
	var res struct {
		code int
		out  string
	}
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the tree did not stop")
	}
	took := time.Since(asked)
	if res.code != 130 || !strings.Contains(res.out, "cancelled by request") {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	srv.mu.Lock()
	for i, at := range srv.at {
		if at.After(asked) {
			t.Errorf("a request after the cancel, of %q", srv.seen[i])
		}
	}
	srv.mu.Unlock()
	_, out, _ = rein(t, "runs", "--json")
	var after []struct {
		RunID  string `json:"run"`
		Parent string `json:"parent"`
		State  string `json:"state"`
	}
	json.Unmarshal([]byte(out), &after)
	n := 0
	for _, r := range after {
		if r.Parent == root {
			n++
			if r.State != "cancelled" {
				t.Errorf("child %s: %s", r.RunID, r.State)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d children listed:\n%s", n, out)
	}
	t.Logf("the tree stopped %s after rein run cancel", took.Round(time.Millisecond))
}
