package otlp_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/otlp"
	"github.com/reinhq/rein/trace/sqlite"
)

// collector is an OTLP/HTTP collector double on 127.0.0.1: it keeps each
// request to /v1/traces whole (its headers and its bytes) and decoded.
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
}

type request struct {
	path   string
	header http.Header
	body   []byte
	spans  *coltracepb.ExportTraceServiceRequest
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := request{path: r.URL.Path, header: r.Header.Clone(), body: body, spans: &coltracepb.ExportTraceServiceRequest{}}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a POST of application/x-protobuf", http.StatusUnsupportedMediaType)
			return
		}
		if err := proto.Unmarshal(body, req.spans); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.requests = append(c.requests, req)
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) got() []request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests)
}

// Distinctive texts the store is seeded with: what the model and the
// tools saw (never exported without Content), a secret the writing
// process knew (redacted when written), and one only the exporting
// process knows (redacted when exported).
const (
	marker       = "CONTENT-MARKER-5b1e"
	storeSecret  = "s3cr3t-writer-Qx81vZ"
	exportSecret = "s3cr3t-export-Kp27wN"
)

var base = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// seed records an agent run as rein run does: step 1 a model call and two
// tool calls (one a command that exited 2 on the bwrap rung, one refused
// by a user rule), step 2 a model call and a gate attempt; and a tool-only
// run as an MCP session records it.
func seed(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor(storeSecret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	add := func(recs ...trace.Record) []int64 {
		t.Helper()
		ids, err := store.AppendAll(ctx, recs...)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	add(trace.Run{ID: "r1", StartedAt: at(0), Workspace: "/w", Surface: "coding", Mode: "auto", Source: "run", PID: 7})
	add(trace.ProviderCall{RunID: "r1", Step: 1, Attempt: 1, Provider: "anthropic", Model: "claude-sonnet-4-5", Input: 1200, Output: 80,
		CacheRead: 1000, LatencyMS: 900, FirstMS: 300, Finish: "tool_use",
		Request: `{"messages":[{"role":"user","text":"` + marker + ` prompt"}]}`, Response: `{"text":"` + marker + ` answer ` + exportSecret + `"}`, At: at(1000)})
	add(trace.Step{RunID: "r1", Index: 0, Tool: "shell", Args: `{"line":"make ` + marker + ` TOKEN=` + storeSecret + `"}`, Status: "failed",
		Observation: "shell: failed (exit 2)\n" + marker + " output", ResultID: "res1", StartedAt: at(1010), DurationMS: 250},
		trace.SandboxEvent{RunID: "r1", Kind: "run", Detail: `{"rung":"bwrap","limits":{},"limit_hit":"","poisoned":""}`, At: at(1260)})
	add(trace.Step{RunID: "r1", Index: 1, Tool: "shell", Args: `{"line":"git push ` + marker + `"}`, Status: "denied",
		Reason: "git push " + marker + " is denied", Observation: "shell: denied: git push " + marker + " is denied", StartedAt: at(1300), DurationMS: 2},
		trace.PolicyEvent{RunID: "r1", Kind: "refusal", Decision: "deny", Rule: "git push *", Layer: "user", File: "/home/u/.config/rein/policy.toml",
			Reason: "git push " + marker + " is denied", At: at(1301)})
	add(trace.StepTime{RunID: "r1", Step: 1, ModelMS: 900, ToolsMS: 252, ReinMS: 48, Input: 1200, CacheRead: 1000, At: at(1400)})
	add(trace.ProviderCall{RunID: "r1", Step: 2, Attempt: 1, Provider: "anthropic", Model: "claude-sonnet-4-5", Input: 1500, Output: 20,
		LatencyMS: 500, Finish: "end_turn", Request: `{}`, Response: `{}`, At: at(2000)})
	add(trace.GateAttempt{RunID: "r1", Step: 2, Line: "go test ./" + marker, Status: "passed", ExitCode: 0, Tampered: "[]", DurationMS: 300,
		Evidence: "go test -json", At: at(2400)})
	add(trace.StepTime{RunID: "r1", Step: 2, ModelMS: 500, ReinMS: 500, Input: 1500, At: at(2500)})
	add(trace.RunEnd{RunID: "r1", EndedAt: at(2600), Status: "done"})

	add(trace.Run{ID: "m1", StartedAt: at(0), Workspace: "/w", Surface: "coding", Mode: "ask", Source: "mcp", PID: 8})
	add(trace.Step{RunID: "m1", Index: 0, Tool: "read_file", Args: `{"path":"` + marker + `"}`, Status: "ok", Observation: "read_file: ok\n" + marker,
		StartedAt: at(100), DurationMS: 5})
	return store
}

// span is what the test checks of one span.
type span struct {
	name, parent string
	start, end   time.Time
	attrs        map[string]string
	events       []string
	errored      bool
}

func spans(t *testing.T, r request) map[string]span {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	var all []*tracepb.Span
	for _, rs := range r.spans.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				byID[string(s.SpanId)] = s
				all = append(all, s)
			}
		}
	}
	out := map[string]span{}
	for _, s := range all {
		sp := span{name: s.Name, start: time.Unix(0, int64(s.StartTimeUnixNano)).UTC(), end: time.Unix(0, int64(s.EndTimeUnixNano)).UTC(),
			attrs: attrs(s.Attributes), errored: s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR}
		if p := byID[string(s.ParentSpanId)]; p != nil {
			sp.parent = p.Name
		}
		for _, e := range s.Events {
			a := attrs(e.Attributes)
			sp.events = append(sp.events, fmt.Sprintf("%s@%s %s/%s/%s/%s", e.Name, time.Unix(0, int64(e.TimeUnixNano)).UTC().Format("15:04:05.000"),
				a["rein.policy.kind"], a["rein.verdict"], a["rein.rule"], a["rein.layer"]))
		}
		// Tool calls and model calls share names: the call's index and
		// the model call's step tell them apart.
		key := s.Name
		if i := sp.attrs["rein.call.index"]; i != "" {
			key += " #" + i
		}
		if sp.attrs["gen_ai.operation.name"] == "chat" {
			key += " step " + sp.attrs["rein.step"]
		}
		if _, dup := out[key]; dup {
			t.Fatalf("two spans named %s", key)
		}
		out[key] = sp
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().Values {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = "[" + strings.Join(parts, ",") + "]"
		case v.GetValue() == nil:
			m[kv.Key] = ""
		default:
			switch x := v.GetValue().(type) {
			case *commonpb.AnyValue_StringValue:
				m[kv.Key] = x.StringValue
			case *commonpb.AnyValue_IntValue:
				m[kv.Key] = fmt.Sprint(x.IntValue)
			case *commonpb.AnyValue_BoolValue:
				m[kv.Key] = fmt.Sprint(x.BoolValue)
			case *commonpb.AnyValue_DoubleValue:
				m[kv.Key] = fmt.Sprint(x.DoubleValue)
			}
		}
	}
	return m
}

// TestExportAgentRun: an agent run is one trace whose root is the run,
// each step a span under it, and each model call, tool call and gate
// attempt a span under its step, with the records' times and the GenAI
// and rein attributes; without Content, none of the run's text leaves.
func TestExportAgentRun(t *testing.T) {
	store := seed(t)
	c := newCollector(t)
	if err := otlp.Export(context.Background(), store, "r1", otlp.Options{Endpoint: c.URL, Version: "v9.9.9"}); err != nil {
		t.Fatal(err)
	}
	reqs := c.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != "/v1/traces" {
		t.Errorf("posted to %s, want /v1/traces (the base URL's default path)", r.path)
	}
	res := attrs(r.spans.ResourceSpans[0].Resource.Attributes)
	if res["service.name"] != "rein" || res["service.version"] != "v9.9.9" || len(res) != 2 {
		t.Errorf("resource %v", res)
	}

	got := spans(t, r)
	want := map[string]span{
		"invoke_agent rein": {parent: "", start: at(0), end: at(2600), attrs: map[string]string{
			"rein.run.id": "r1", "rein.workspace": "/w", "rein.surface": "coding", "rein.mode": "auto", "rein.source": "run",
			"rein.run.status": "done", "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "rein"}},
		"step 1": {parent: "invoke_agent rein", start: at(100), end: at(1400), attrs: map[string]string{"rein.step": "1"}},
		"step 2": {parent: "invoke_agent rein", start: at(1500), end: at(2500), attrs: map[string]string{"rein.step": "2"}},
		"chat claude-sonnet-4-5 step 1": {parent: "step 1", start: at(100), end: at(1000), attrs: map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
			"gen_ai.usage.input_tokens": "1200", "gen_ai.usage.output_tokens": "80", "gen_ai.usage.cache_read.input_tokens": "1000",
			"gen_ai.response.finish_reasons": "[tool_use]", "rein.step": "1", "rein.attempt": "1", "rein.first_token_ms": "300"}},
		"chat claude-sonnet-4-5 step 2": {parent: "step 2", start: at(1500), end: at(2000), attrs: map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
			"gen_ai.usage.input_tokens": "1500", "gen_ai.usage.output_tokens": "20",
			"gen_ai.response.finish_reasons": "[end_turn]", "rein.step": "2", "rein.attempt": "1"}},
		"execute_tool shell #0": {parent: "step 1", start: at(1010), end: at(1260), errored: true, attrs: map[string]string{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "shell", "rein.call.index": "0", "rein.status": "failed",
			"rein.rung": "bwrap", "rein.exit_status": "2", "error.type": "failed"}},
		"execute_tool shell #1": {parent: "step 1", start: at(1300), end: at(1302), errored: true, attrs: map[string]string{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "shell", "rein.call.index": "1", "rein.status": "denied",
			"rein.verdict": "deny", "rein.rule": "git push *", "rein.layer": "user", "rein.rule.file": "/home/u/.config/rein/policy.toml",
			"error.type": "denied"},
			events: []string{"rein.policy@10:00:01.301 refusal/deny/git push */user"}},
		"gate": {parent: "step 2", start: at(2100), end: at(2400), attrs: map[string]string{
			"rein.step": "2", "rein.gate.status": "passed", "rein.exit_status": "0", "rein.gate.evidence": "go test -json"}},
	}
	if len(got) != len(want) {
		t.Errorf("%d spans, want %d: %v", len(got), len(want), keys(got))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no span %s; got %v", name, keys(got))
			continue
		}
		if g.parent != w.parent || !g.start.Equal(w.start) || !g.end.Equal(w.end) || g.errored != w.errored {
			t.Errorf("%s: parent %q %s..%s error %v; want parent %q %s..%s error %v", name, g.parent, g.start, g.end, g.errored, w.parent, w.start, w.end, w.errored)
		}
		if fmt.Sprint(g.attrs) != fmt.Sprint(w.attrs) {
			t.Errorf("%s: attributes\n got %v\nwant %v", name, g.attrs, w.attrs)
		}
		if !slices.Equal(g.events, w.events) {
			t.Errorf("%s: events %q, want %q", name, g.events, w.events)
		}
	}
	// The trace is the run's, whoever exports it.
	tid := hex.EncodeToString(r.spans.ResourceSpans[0].ScopeSpans[0].Spans[0].TraceId)
	if tid != otlp.TraceID("r1") {
		t.Errorf("trace id %s, want %s", tid, otlp.TraceID("r1"))
	}
	for _, text := range []string{marker, storeSecret, exportSecret, "prompt", "answer", "make ", "is denied", "go test ./"} {
		if bytes.Contains(r.body, []byte(text)) {
			t.Errorf("the request holds %q without Content", text)
		}
	}
}

func keys(m map[string]span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExportContent: with Content the arguments, observations, reasons
// and model requests and responses leave, as the store holds them, and
// redacted again with the exporting process's secrets.
func TestExportContent(t *testing.T) {
	store := seed(t)
	c := newCollector(t)
	o := otlp.Options{Endpoint: c.URL + "/v1/traces", Content: true, Redactor: trace.NewRedactor(exportSecret)}
	if err := otlp.Export(context.Background(), store, "r1", o); err != nil {
		t.Fatal(err)
	}
	r := c.got()[0]
	for _, secret := range []string{storeSecret, exportSecret} {
		if bytes.Contains(r.body, []byte(secret)) {
			t.Errorf("the request holds the secret %q", secret)
		}
	}
	got := spans(t, r)
	for name, w := range map[string]map[string]string{
		"execute_tool shell #0": {"gen_ai.tool.call.arguments": `{"line":"make ` + marker + ` TOKEN=[redacted]"}`, "gen_ai.tool.call.result": "shell: failed (exit 2)\n" + marker + " output"},
		"execute_tool shell #1": {"rein.reason": "git push " + marker + " is denied"},
		"gate":                  {"rein.gate.line": "go test ./" + marker},
	} {
		for k, v := range w {
			if got[name].attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got[name].attrs[k], v)
			}
		}
	}
	if answer := got["chat claude-sonnet-4-5 step 1"].attrs["rein.response"]; answer != `{"text":"`+marker+` answer [redacted]"}` {
		t.Errorf("the model's answer: %q", answer)
	}
}

// TestExportToolRun: a run with no agent steps (an MCP session) has its
// tool calls right under its root.
func TestExportToolRun(t *testing.T) {
	store := seed(t)
	c := newCollector(t)
	if err := otlp.Export(context.Background(), store, "m1", otlp.Options{Endpoint: c.URL}); err != nil {
		t.Fatal(err)
	}
	got := spans(t, c.got()[0])
	root, call := got["rein mcp"], got["execute_tool read_file #0"]
	if len(got) != 2 || root.attrs["rein.run.status"] != "unfinished" || call.parent != "rein mcp" || !call.start.Equal(at(100)) || !call.end.Equal(at(105)) {
		t.Fatalf("spans %+v", got)
	}
	// A run not ended ends at its last record.
	if !root.start.Equal(at(0)) || !root.end.Equal(at(105)) {
		t.Errorf("root %s..%s", root.start, root.end)
	}
}

// TestExportIgnoresEnvironment: the OTEL_EXPORTER_OTLP_* variables, which
// a repository can set through an agent's settings, neither redirect the
// spans nor add headers (an API key the repository's collector would
// collect) to them.
func TestExportIgnoresEnvironment(t *testing.T) {
	store := seed(t)
	c, elsewhere := newCollector(t), newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", elsewhere.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", elsewhere.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-planted=1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-planted-traces=1")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", filepath.Join(t.TempDir(), "nothing.pem"))
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "planted=1")
	if err := otlp.Export(context.Background(), store, "r1", otlp.Options{Endpoint: c.URL}); err != nil {
		t.Fatal(err)
	}
	if n := len(elsewhere.got()); n != 0 {
		t.Fatalf("the environment's collector got %d requests", n)
	}
	reqs := c.got()
	if len(reqs) != 1 {
		t.Fatalf("the policy's collector got %d requests, want 1", len(reqs))
	}
	for k := range reqs[0].header {
		if strings.HasPrefix(strings.ToLower(k), "x-planted") || k == "Content-Encoding" {
			t.Errorf("the request carries the environment's header %s", k)
		}
	}
	if res := attrs(reqs[0].spans.ResourceSpans[0].Resource.Attributes); res["planted"] != "" {
		t.Errorf("the resource carries the environment's attributes: %v", res)
	}
}

// TestExportErrors: a collector that refuses, an endpoint not there and
// a run not in the store are errors, and a context's end bounds the
// export.
func TestExportErrors(t *testing.T) {
	store := seed(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refusing.Close()
	if err := otlp.Export(context.Background(), store, "r1", otlp.Options{Endpoint: refusing.URL}); err == nil {
		t.Error("a collector answering 400: no error")
	}
	if err := otlp.Export(context.Background(), store, "nope", otlp.Options{Endpoint: refusing.URL}); !errors.Is(err, otlp.ErrNoRun) {
		t.Errorf("an unknown run: %v", err)
	}
	if err := otlp.Export(context.Background(), store, "r1", otlp.Options{Endpoint: "ftp://127.0.0.1/"}); err == nil {
		t.Error("an ftp endpoint: no error")
	}
	// A partial success is an error naming what the collector said (the
	// answer made by the generated package, read by rein's own decoding).
	partial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	defer partial.Close()
	if err := otlp.Export(context.Background(), store, "r1", otlp.Options{Endpoint: partial.URL}); err == nil || !strings.Contains(err.Error(), "rejected 3 spans: too old") {
		t.Errorf("a partial success: %v", err)
	}
	// A collector that answers 503 is retried until the context ends.
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := otlp.Export(ctx, store, "r1", otlp.Options{Endpoint: unavailable.URL}); err == nil {
		t.Error("a collector answering 503: no error")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the export took %s past its context's 300ms", took)
	}
}

// nameMarker is text the model chose that has the shape of a name: no
// charset keeps it out, only knowing where it came from does.
const nameMarker = "hunter2Zq7"

// seedChosen records, through the router as rein tool and rein mcp do,
// a run whose metadata the model chose: a command a builtin rule refuses
// and quotes, and two tools the model invented (one named with a
// sentence, one with an identifier); and, as a launched session's gateway
// and hooks do, a run whose agent asked for a model that does not exist
// and for one named with a sentence, and called an MCP tool.
func seedChosen(t *testing.T, store *sqlite.Store) (runID string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(dir, "home"), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.NewRouter(reg, tool.Config{Policy: p, Store: store, Source: "cli", Redactor: trace.NewRedactor(storeSecret),
		Results: &tool.Results{Dir: filepath.Join(dir, "results")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if env := r.Call(ctx, "shell", json.RawMessage(`{"line":"rm -rf /EXFIL_`+nameMarker+`_data"}`)); env.Status != tool.Denied || !strings.HasPrefix(env.Rule, "hard deny: ") || !strings.Contains(env.Rule, nameMarker) {
		t.Fatalf("the hard deny: %s %q (%s)", env.Status, env.Rule, env.Reason)
	}
	for _, name := range []string{"my data: " + nameMarker + " " + exportSecret + " lorem ipsum", "exfil_" + nameMarker} {
		if env := r.Call(ctx, name, json.RawMessage(`{}`)); env.Status != tool.NotFound {
			t.Fatalf("the invented tool %q: %s %s", name, env.Status, env.Reason)
		}
	}
	r.Close("ok")

	recs := []trace.Record{
		trace.Run{ID: "l1", StartedAt: at(0), Workspace: ws, Surface: "claude", Mode: "auto", Source: "launch", PID: 9},
		trace.ProviderCall{RunID: "l1", Step: 1, Attempt: 1, Provider: "anthropic", Model: "claude-sonnet-4-5", Input: 10, Output: 1,
			LatencyMS: 100, Finish: "end_turn", Request: `{}`, Response: `{}`, At: at(10)},
		trace.ProviderCall{RunID: "l1", Step: 2, Attempt: 1, Provider: "anthropic", Model: "my model: " + nameMarker + " " + exportSecret, Input: 10, Output: 1,
			LatencyMS: 100, Finish: "end_turn", Request: `{}`, Response: `{}`, At: at(200)},
		trace.ProviderCall{RunID: "l1", Step: 3, Attempt: 1, Provider: "anthropic", Model: "model-" + nameMarker, LatencyMS: 50,
			Failure: "http_404", Error: "the provider answered 404", Request: `{}`, At: at(400)},
		trace.Step{RunID: "l1", Index: 0, Tool: "mcp__github__create_issue", Args: `{}`, Status: "allow", StartedAt: at(500), DurationMS: 1},
		trace.RunEnd{RunID: "l1", EndedAt: at(600), Status: "ok"},
	}
	if _, err := store.AppendAll(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	return r.RunID()
}

// TestExportChosenMetadata: without Content, the names and rules the
// model chose leave only in a form that holds nothing of what it wrote: a
// builtin rule as its kind, an invented tool as "unknown" (whatever its
// shape), a launched agent's model only when the provider answered for
// it and it is a name; with Content they leave whole, redacted.
func TestExportChosenMetadata(t *testing.T) {
	store := seed(t)
	run := seedChosen(t, store)
	export := func(content bool) (tools, launch map[string]span, body []byte) {
		t.Helper()
		c := newCollector(t)
		o := otlp.Options{Endpoint: c.URL, Content: content, Redactor: trace.NewRedactor(exportSecret)}
		for _, id := range []string{run, "l1"} {
			if err := otlp.Export(context.Background(), store, id, o); err != nil {
				t.Fatal(err)
			}
		}
		reqs := c.got()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		return spans(t, reqs[0]), spans(t, reqs[1]), append(reqs[0].body, reqs[1].body...)
	}

	tools, launch, body := export(false)
	for _, text := range []string{nameMarker, exportSecret, "EXFIL", "my data", "my model", "lorem"} {
		if bytes.Contains(body, []byte(text)) {
			t.Errorf("without Content the request holds %q", text)
		}
	}
	denied := tools["execute_tool shell #0"]
	if denied.attrs["rein.rule"] != "hard deny" || denied.attrs["rein.layer"] != "builtin" || denied.attrs["rein.verdict"] != "deny" ||
		len(denied.events) != 1 || !strings.HasSuffix(denied.events[0], " refusal/deny/hard deny/builtin") {
		t.Errorf("the hard deny's span: %+v", denied)
	}
	for _, key := range []string{"execute_tool unknown #1", "execute_tool unknown #2"} {
		if s, ok := tools[key]; !ok || s.attrs["gen_ai.tool.name"] != "unknown" || s.attrs["rein.status"] != "not_found" {
			t.Errorf("%s: %+v; got %v", key, s, keys(tools))
		}
	}
	for key, model := range map[string]string{"chat claude-sonnet-4-5 step 1": "claude-sonnet-4-5", "chat unknown step 2": "unknown", "chat unknown step 3": "unknown"} {
		if s, ok := launch[key]; !ok || s.attrs["gen_ai.request.model"] != model || s.attrs["gen_ai.provider.name"] != "anthropic" {
			t.Errorf("%s: %+v; got %v", key, s, keys(launch))
		}
	}
	if s, ok := launch["execute_tool mcp__github__create_issue #0"]; !ok || s.attrs["gen_ai.tool.name"] != "mcp__github__create_issue" {
		t.Errorf("an MCP tool's name: got %v", keys(launch))
	}

	tools, launch, body = export(true)
	if bytes.Contains(body, []byte(exportSecret)) {
		t.Error("with Content the request holds the exporting process's secret")
	}
	if rule := tools["execute_tool shell #0"].attrs["rein.rule"]; !strings.HasPrefix(rule, "hard deny: rm of /EXFIL_"+nameMarker+"_data") {
		t.Errorf("with Content the hard deny's rule is %q", rule)
	}
	for _, key := range []string{"execute_tool my data: " + nameMarker + " [redacted] lorem ipsum #1", "execute_tool exfil_" + nameMarker + " #2"} {
		if _, ok := tools[key]; !ok {
			t.Errorf("with Content no span %s; got %v", key, keys(tools))
		}
	}
	for _, key := range []string{"chat my model: " + nameMarker + " [redacted] step 2", "chat model-" + nameMarker + " step 3"} {
		if _, ok := launch[key]; !ok {
			t.Errorf("with Content no span %s; got %v", key, keys(launch))
		}
	}
}
