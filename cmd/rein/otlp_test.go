//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/trace/otlp"
)

// otlpCollector is an OTLP/HTTP collector double on 127.0.0.1 that keeps
// every request's bytes and spans.
type otlpCollector struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	spans  []*tracepb.Span
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not OTLP", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.bodies = append(c.bodies, body)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *otlpCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.spans)
}

// run is the spans of the run's trace, by name, and every request's bytes.
func (c *otlpCollector) run(id string) (map[string]*tracepb.Span, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == otlp.TraceID(id) {
			out[s.Name] = s
		}
	}
	return out, bytes.Join(c.bodies, nil)
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// TestOTLPExportOnRunEnd: with [trace] otlp_endpoint in the user's policy,
// a run of rein tool is sent to the collector when it ends, as a trace
// whose root is the run and whose child is the call, with no content; a
// failed export is one warning and leaves the exit status alone; rein
// trace export sends it again as the same trace.
func TestOTLPExportOnRunEnd(t *testing.T) {
	_, ws := docFixture(t)
	const marker = "OTLP-CONTENT-MARKER-31c9"
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main // "+marker+"\n"), 0o644)
	c := newOTLPCollector(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(user, []byte("[trace]\notlp_endpoint = \""+c.URL+"\"\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)

	code, out, errOut := rein(t, "tool", "--json", "read_file", `{"path":"main.go"}`)
	if code != 0 || errOut != "" {
		t.Fatalf("rein tool: exit %d\n%s%s", code, out, errOut)
	}
	var res struct{ Run string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Run == "" {
		t.Fatalf("no run id in %s: %v", out, err)
	}
	spans, body := c.run(res.Run)
	root, call := spans["rein cli"], spans["execute_tool read_file"]
	if len(spans) != 2 || root == nil || call == nil {
		t.Fatalf("the run's spans: %v", spans)
	}
	if attr(root, "rein.run.id") != res.Run || attr(root, "rein.run.status") != "ok" || attr(root, "rein.workspace") != ws ||
		!bytes.Equal(call.ParentSpanId, root.SpanId) || attr(call, "gen_ai.tool.name") != "read_file" || attr(call, "rein.status") != "ok" {
		t.Errorf("root %v\ncall %v", root, call)
	}
	if bytes.Contains(body, []byte(marker)) || bytes.Contains(body, []byte(`"path"`)) {
		t.Error("the export holds the call's content without otlp_content")
	}

	// rein trace export sends it again: the same trace.
	before := c.count()
	export := newTraceExportCmd()
	var stdout bytes.Buffer
	export.SetOut(&stdout)
	export.SetErr(&stdout)
	export.SetArgs([]string{res.Run})
	if err := export.Execute(); err != nil || !strings.Contains(stdout.String(), "exported run "+res.Run+" as trace "+otlp.TraceID(res.Run)) {
		t.Fatalf("rein trace export: %v\n%s", err, stdout.String())
	}
	if after := c.count(); after != before+2 {
		t.Errorf("rein trace export sent %d spans, want 2", after-before)
	}

	// A collector that is gone: a warning, and the call's own exit status.
	c.Close()
	code, out, errOut = rein(t, "tool", "read_file", `{"path":"main.go"}`)
	if code != 0 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "rein: warning: the run ") || !strings.Contains(errOut, "not exported to OpenTelemetry") {
		t.Errorf("with the collector gone: exit %d\n%s%s", code, out, errOut)
	}
}

// TestOTLPContent: with otlp_content = true the call's arguments and
// observation leave, redacted: a secret of the environment never does.
func TestOTLPContent(t *testing.T) {
	_, ws := docFixture(t)
	const secret = "otlp-s3cr3t-value-8812"
	t.Setenv("DEPLOY_TOKEN", secret)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main // token "+secret+" MARKER-77\n"), 0o644)
	c := newOTLPCollector(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(user, []byte("[trace]\notlp_endpoint = \""+c.URL+"/v1/traces\"\notlp_content = true\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	code, out, errOut := rein(t, "tool", "--json", "read_file", `{"path":"main.go"}`)
	if code != 0 {
		t.Fatalf("rein tool: exit %d\n%s%s", code, out, errOut)
	}
	var res struct{ Run string }
	json.Unmarshal([]byte(out), &res)
	spans, body := c.run(res.Run)
	call := spans["execute_tool read_file"]
	if call == nil || attr(call, "gen_ai.tool.call.arguments") != `{"path":"main.go"}` || !strings.Contains(attr(call, "gen_ai.tool.call.result"), "MARKER-77") {
		t.Fatalf("the call's content: %v", call)
	}
	if bytes.Contains(body, []byte(secret)) {
		t.Error("the export holds the environment's secret")
	}
}

// TestOTLPProjectRefused: a project's policy may not name the collector:
// rein refuses the file (exit 2) naming the key.
func TestOTLPProjectRefused(t *testing.T) {
	_, ws := docFixture(t)
	os.MkdirAll(filepath.Join(ws, ".rein"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".rein", "policy.toml"), []byte("[trace]\notlp_endpoint = \"http://127.0.0.1:4318\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := rein(t, "policy", "check", "--", "ls"); code != exitUsage || !strings.Contains(errOut, "trace.otlp_endpoint") {
		t.Fatalf("a project's otlp_endpoint: exit %d %s", code, errOut)
	}
	if code, _, errOut := rein(t, "tool", "read_file", `{"path":"main.go"}`); code != exitUsage || !strings.Contains(errOut, "trace.otlp_endpoint") {
		t.Fatalf("rein tool with a project's otlp_endpoint: exit %d %s", code, errOut)
	}
}

// TestOTLPMCPSession: each session of rein mcp is a run, exported when it
// ends, its calls under it.
func TestOTLPMCPSession(t *testing.T) {
	_, ws := docFixture(t)
	c := newOTLPCollector(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(user, []byte("[trace]\notlp_endpoint = \""+c.URL+"\"\n"), 0o644)
	cmd := exec.Command(os.Args[0], "mcp", "--approve", "none")
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1", "REIN_USER_POLICY="+user)
	cmd.Dir = ws
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "main.go"}}); err != nil || r.IsError {
			t.Fatalf("read_file: %v %v", r, err)
		}
	}
	// Closing the session ends the server, which ends the run.
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	spans := c.spans
	c.mu.Unlock()
	var root *tracepb.Span
	calls := 0
	for _, s := range spans {
		switch s.Name {
		case "rein mcp":
			root = s
		case "execute_tool read_file":
			calls++
		}
	}
	if root == nil || calls != 2 || len(spans) != 3 || attr(root, "rein.source") != "mcp" {
		t.Fatalf("the session's spans: %v", spans)
	}
	for _, s := range spans {
		if s != root && !bytes.Equal(s.ParentSpanId, root.SpanId) {
			t.Errorf("%s is not under the session's run", s.Name)
		}
	}
}

// TestOTLPAgentRun: rein run is exported when it ends, each step a span
// holding its model call and the tool calls that call asked for.
func TestOTLPAgentRun(t *testing.T) {
	_, ws := docFixture(t)
	c := newOTLPCollector(t)
	user := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(user, []byte("[trace]\notlp_endpoint = \""+c.URL+"\"\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x\n"), 0o644)
	srv, _ := scriptedModel(t, `read_file {"path":"main.go"}`, `read_file {"path":"notes.txt"}`, "Done.")
	code, out, errOut := rein(t, "run", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--approve", "all", "--json", "look around")
	var res struct{ Run string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Run == "" {
		t.Fatalf("rein run: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if strings.Contains(errOut, "not exported") {
		t.Fatalf("the export failed: %s", errOut)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == otlp.TraceID(res.Run) {
			byID[string(s.SpanId)] = s
		}
	}
	// Each span as "name < parent", with the tool's path for a call.
	var got []string
	for _, s := range byID {
		line := s.Name
		if p := byID[string(s.ParentSpanId)]; p != nil {
			line += " < " + p.Name
		}
		got = append(got, line)
	}
	slices.Sort(got)
	want := []string{
		"chat m < step 1", "chat m < step 2", "chat m < step 3",
		"execute_tool read_file < step 1", "execute_tool read_file < step 2",
		"invoke_agent rein",
		"step 1 < invoke_agent rein", "step 2 < invoke_agent rein", "step 3 < invoke_agent rein",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans\n got %q\nwant %q", got, want)
	}
}

// TestOTLPWorkspaceUserPolicyRefused: a user policy file the environment
// names inside the workspace (a repository sets REIN_USER_POLICY through
// an agent's settings) may not name the collector either: it is the
// repository's, and rein refuses it (exit 2) naming the key.
func TestOTLPWorkspaceUserPolicyRefused(t *testing.T) {
	_, ws := docFixture(t)
	c := newOTLPCollector(t)
	planted := filepath.Join(ws, "src", "user.toml")
	if err := os.WriteFile(planted, []byte("[trace]\notlp_endpoint = \""+c.URL+"\"\notlp_content = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REIN_USER_POLICY", planted)
	code, _, errOut := rein(t, "tool", "read_file", `{"path":"main.go"}`)
	if code != exitUsage || !strings.Contains(errOut, "trace.otlp_endpoint") || !strings.Contains(errOut, "is the repository's") {
		t.Fatalf("a user policy in the workspace naming the collector: exit %d %s", code, errOut)
	}
	if n := c.count(); n != 0 {
		t.Errorf("the repository's collector got %d spans", n)
	}
}
