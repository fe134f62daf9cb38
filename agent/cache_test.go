package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// promptCache applies Anthropic's documented prompt-caching rules to the
// requests it is shown: the prompt is a sequence of blocks (the tools, the
// system blocks, each message's content blocks, in that order); a block
// with cache_control is a breakpoint, at most four of them; at each
// breakpoint whose prefix is at least the minimum cacheable length, the
// prefix (its blocks byte for byte, cache_control aside) is written to
// the cache; a request reads the longest prefix written before that ends
// at one of its breakpoints or at a block boundary up to lookback blocks
// before one. Tokens are 4 characters of a block's JSON.
type promptCache struct {
	mu        sync.Mutex
	written   map[[32]byte]bool
	minTokens int
	lookback  int
}

type cacheUsage struct{ input, read, write int }

func (c *promptCache) apply(req map[string]any) (cacheUsage, error) {
	var blocks []any
	tools, _ := req["tools"].([]any)
	blocks = append(blocks, tools...)
	switch sys := req["system"].(type) {
	case string:
		blocks = append(blocks, map[string]any{"type": "text", "text": sys})
	case []any:
		blocks = append(blocks, sys...)
	}
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm := m.(map[string]any)
		switch content := mm["content"].(type) {
		case string:
			blocks = append(blocks, map[string]any{"role": mm["role"], "type": "text", "text": content})
		case []any:
			for _, b := range content {
				bb := b.(map[string]any)
				bb["role"] = mm["role"]
				blocks = append(blocks, bb)
			}
		}
	}
	var breakpoints []int
	hashes := make([][32]byte, len(blocks))
	tokens := make([]int, len(blocks))
	h := sha256.New()
	total := 0
	for i, b := range blocks {
		bb := b.(map[string]any)
		if _, ok := bb["cache_control"]; ok {
			breakpoints = append(breakpoints, i)
			delete(bb, "cache_control")
		}
		data, _ := json.Marshal(bb)
		h.Write(data)
		copy(hashes[i][:], h.Sum(nil))
		total += len(data) / 4
		tokens[i] = total
	}
	if len(breakpoints) > 4 {
		return cacheUsage{}, fmt.Errorf("A maximum of 4 blocks with cache_control may be provided. Found %d.", len(breakpoints))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := -1
	for _, b := range breakpoints {
		for j := b; j >= 0 && j >= b-c.lookback; j-- {
			if c.written[hashes[j]] && j > hit {
				hit = j
				break
			}
		}
	}
	read := 0
	if hit >= 0 {
		read = tokens[hit]
	}
	write := 0
	for _, b := range breakpoints {
		if tokens[b] >= c.minTokens {
			c.written[hashes[b]] = true
			if tokens[b] > read {
				write = tokens[b] - read
			}
		}
	}
	return cacheUsage{input: total - read - write, read: read, write: write}, nil
}

// cacheScript is a 40-step session as a coding agent works: reading,
// listing, searching, editing, writing, running commands, keeping a todo
// list, reading again what it changed.
func cacheScript() [][]ToolCall {
	var turns [][]ToolCall
	add := func(name, args string) { turns = append(turns, []ToolCall{{Name: name, Args: args}}) }
	add("todo_write", `{"items":[{"text":"read the code","state":"in_progress"},{"text":"fix the parser","state":"pending"}]}`)
	add("list_dir", `{"path":"."}`)
	for i := range 6 {
		add("read_file", fmt.Sprintf(`{"path":"src/f%d.txt"}`, i))
	}
	add("search_files", `{"pattern":"line 7"}`)
	add("shell", `{"line":"wc -l src/f0.txt src/f1.txt"}`)
	for i := range 10 {
		add("edit_file", fmt.Sprintf(`{"path":"src/f%d.txt","old":"line %d of file %d","new":"line %d of file %d, fixed"}`, i%6, i+1, i%6, i+1, i%6))
		if i%3 == 2 {
			add("read_file", fmt.Sprintf(`{"path":"src/f%d.txt"}`, i%6))
		}
	}
	add("todo_write", `{"items":[{"text":"read the code","state":"done"},{"text":"fix the parser","state":"in_progress"}]}`)
	for i := range 6 {
		add("write_file", fmt.Sprintf(`{"path":"notes/n%d.md","content":%q}`, i, strings.Repeat(fmt.Sprintf("note %d\n", i), 40)))
		add("shell", fmt.Sprintf(`{"line":"cat notes/n%d.md"}`, i))
	}
	for len(turns) < 39 {
		add("read_file", fmt.Sprintf(`{"path":"src/f%d.txt","limit":5}`, len(turns)%6))
	}
	return turns[:39]
}

// TestPromptCacheShare: a scripted 40-step run against a server that
// speaks the Messages wire format and applies the documented caching
// rules (byte-identical prefixes to a breakpoint, 1,024 tokens at least,
// four breakpoints at most, 20 blocks of lookback) reads more than 80% of
// its input from the cache; each step's time and cache share are in the
// trace, and the run's summary line says the share.
func TestPromptCacheShare(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	for i := range 6 {
		var b strings.Builder
		for l := 1; l <= 60; l++ {
			fmt.Fprintf(&b, "line %d of file %d: some text the agent reads\n", l, i)
		}
		os.WriteFile(filepath.Join(ws, "src", fmt.Sprintf("f%d.txt", i)), []byte(b.String()), 0o644)
	}
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	turns := cacheScript()
	pc := &promptCache{written: map[[32]byte]bool{}, minTokens: 1024, lookback: 20}
	var mu sync.Mutex
	var read, all int
	var failures []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		json.Unmarshal(body, &req)
		n := 0
		for _, m := range req["messages"].([]any) {
			if m.(map[string]any)["role"] == "assistant" {
				n++
			}
		}
		u, err := pc.apply(req)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
			mu.Lock()
			failures = append(failures, err.Error())
			mu.Unlock()
			return
		}
		mu.Lock()
		read, all = read+u.read, all+u.input+u.read+u.write
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`,
			n, u.input, u.write, u.read))
		stop := "end_turn"
		if n < len(turns) {
			c := turns[n][0]
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_%d","name":%q,"input":{}}}`, n, c.Name))
			q, _ := json.Marshal(c.Args)
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, q))
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			stop = "tool_use"
		} else {
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}`)
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		}
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":30}}`, stop))
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	defer srv.Close()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	provider := NewMessages(ChatConfig{Name: "anthropic", BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-test"})
	out, err := Run(context.Background(), Contract{Goal: "fix the parser", Workspace: ws, Budget: Budget{Steps: 60}},
		Options{Provider: provider, Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
	if err != nil || out.Kind != Finished || out.Steps != 40 {
		t.Fatalf("%+v %v", out, err)
	}
	if len(failures) > 0 {
		t.Fatalf("the server refused: %v", failures)
	}
	share := float64(read) / float64(all)
	t.Logf("40 steps: %d of %d input tokens read from the cache (%.3f); the outcome's share %.3f", read, all, share, float64(out.Tokens.CacheRead)/float64(out.Tokens.Input))
	if share <= 0.8 {
		t.Errorf("the cache-hit share is %.3f, not above 0.8", share)
	}
	times, err := store.StepTimes(context.Background(), out.Run)
	if err != nil || len(times) != 40 {
		t.Fatalf("%d step times: %v", len(times), err)
	}
	var sumRead int64
	for i, st := range times {
		sumRead += st.CacheRead
		if st.Step != i+1 || st.ModelMS <= 0 || st.ReinMS < 0 || st.FirstMS <= 0 || st.FirstMS > st.ModelMS || (i < 39) != (st.ToolsMS > 0) {
			t.Errorf("step time %d: %+v", i, st)
		}
	}
	if sumRead != out.Tokens.CacheRead {
		t.Errorf("the steps read %d tokens from the cache, the outcome %d", sumRead, out.Tokens.CacheRead)
	}
}
