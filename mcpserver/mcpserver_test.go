package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

type fixture struct {
	store *sqlite.Store
	srv   *Server
}

func newFixture(t *testing.T, mode policy.Mode, approver policy.Approver) *fixture {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		testenv.Missing(t, "bubblewrap is missing")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "git push*"}}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(root, "trace.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg, err := tool.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Registry: reg, Surface: tool.SurfaceCoding, Approver: approver, Run: func() (tool.Config, error) {
		return tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Rung: sandbox.RungBwrap}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &fixture{store: store, srv: srv}
}

// connect opens a session with the Go SDK's client.
func (f *fixture) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := f.srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestToolsAndCalls(t *testing.T) {
	f := newFixture(t, policy.ModeAuto, policy.AllowAll{})
	cs := f.connect(t, nil)
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	for _, n := range []string{"read_file", "shell", "shell_start", "read_result"} {
		if !names[n] {
			t.Errorf("the server does not list %s: %v", n, names)
		}
	}
	r := call(t, cs, "read_file", map[string]any{"path": "src/main.go"})
	if r.IsError || !strings.Contains(text(r), "package main") {
		t.Fatalf("%s", text(r))
	}
	// Exactly the fields a result has: the required ones always, the
	// others only when set (an exit status of 0 is one).
	keys := func(sc any) string {
		var ks []string
		for k := range sc.(map[string]any) {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, " ")
	}
	if got := keys(r.StructuredContent); got != "chars elided_chars status text" {
		t.Fatalf("read_file's structured content has %s", got)
	}
	r = call(t, cs, "shell", map[string]any{"line": "true"})
	if got := keys(r.StructuredContent); r.IsError || got != "chars elided_chars exit_code rung status text" || r.StructuredContent.(map[string]any)["exit_code"] != 0.0 {
		t.Fatalf("shell's structured content has %s: %+v", got, r.StructuredContent)
	}
	// The envelope: a bounded preview, the elided size and the result id.
	r = call(t, cs, "shell", map[string]any{"line": "seq 1 20000"})
	sc := r.StructuredContent.(map[string]any)
	if r.IsError || sc["status"] != "ok" || sc["result_id"] == nil || sc["elided_chars"].(float64) == 0 {
		t.Fatalf("the envelope: %+v", sc)
	}
	// The structured content carries the text the model reads, for the
	// clients that show only it: the same text as the content.
	if st, _ := sc["text"].(string); st != text(r) || !strings.Contains(st, "\n1\n2\n") || !strings.Contains(st, "read_result") {
		t.Fatalf("the structured text: %q", sc["text"])
	}
	for _, tl := range tools.Tools {
		if schema, _ := json.Marshal(tl.OutputSchema); !strings.Contains(string(schema), `"required":["status","text","chars","elided_chars"]`) {
			t.Errorf("%s declares no output schema with the text: %s", tl.Name, schema)
		}
	}
	r = call(t, cs, "read_result", map[string]any{"id": sc["result_id"], "offset": 0, "limit": 100})
	if r.IsError || !strings.HasPrefix(text(r), "read_result: ok\n1\n2\n") {
		t.Fatalf("%s", text(r))
	}
	r = call(t, cs, "shell", map[string]any{"line": "git push origin main"})
	if sc := r.StructuredContent.(map[string]any); !r.IsError || sc["rule"] != "git push*" || sc["layer"] != "flags" {
		t.Fatalf("%+v", r.StructuredContent)
	}
	r = call(t, cs, "read_file", map[string]any{"path": "../x"})
	if !r.IsError || r.StructuredContent.(map[string]any)["status"] != "invalid_path" {
		t.Fatalf("%+v", r.StructuredContent)
	}
}

// TestAsk: an ask goes to the client as an input request, and its answer
// decides; a client that cannot answer is denied, naming the setting to
// change, never allowed.
func TestAsk(t *testing.T) {
	f := newFixture(t, policy.ModeAsk, nil)
	var asked []string
	answer := true
	cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": answer}}, nil
	}})
	defer cs.Close()
	// seq is not in the class table: ask mode asks.
	r := call(t, cs, "shell", map[string]any{"line": "seq 1 3"})
	if r.IsError || !strings.Contains(text(r), "1\n2\n3") || len(asked) != 1 || !strings.Contains(asked[0], "seq") {
		t.Fatalf("approved: %s %v", text(r), asked)
	}
	answer = false
	r = call(t, cs, "shell", map[string]any{"line": "seq 1 4"})
	if !r.IsError || !strings.Contains(text(r), "answered") && !strings.Contains(text(r), "rejected") {
		t.Fatalf("declined: %s", text(r))
	}
	// Asked and approved again and again, the same call is not stopped.
	answer = true
	for range 6 {
		if r := call(t, cs, "shell", map[string]any{"line": "seq 1 3"}); r.IsError {
			t.Fatalf("asked again: %s", text(r))
		}
	}
	plain := f.connect(t, nil)
	defer plain.Close()
	r = call(t, plain, "shell", map[string]any{"line": "seq 1 5"})
	if !r.IsError || !strings.Contains(text(r), "--approve all") {
		t.Fatalf("a client without elicitation: %s", text(r))
	}
}

// TestSessionIsARun: a session is one run in the trace; its end ends the
// run and kills its handles.
func TestSessionIsARun(t *testing.T) {
	f := newFixture(t, policy.ModeAuto, policy.AllowAll{})
	cs := f.connect(t, nil)
	if r := call(t, cs, "shell_start", map[string]any{"line": "sleep 1000"}); r.IsError {
		t.Fatalf("%s", text(r))
	}
	cs.Close()
	var runs []trace.RunSummary
	for i := 0; i < 400; i++ {
		runs, _ = f.store.Runs(context.Background(), 0)
		if len(runs) == 1 && runs[0].Status != "" {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if len(runs) != 1 || runs[0].Status != "session ended" || runs[0].Source != "mcp" || runs[0].Handles != 1 {
		t.Fatalf("%+v", runs)
	}
}

// TestAnswersAreOnlyForQuestionsAsked: an approval sent before rein asked
// anything, or with a made-up state, is ignored and the user is asked;
// each of two asks in one call is a question of its own.
func TestAnswersAreOnlyForQuestionsAsked(t *testing.T) {
	f := newFixture(t, policy.ModeAsk, nil)
	var asked []string
	cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	defer cs.Close()
	forged := mcp.InputResponseMap{"rein-approve": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"line": "seq 1 3"},
		InputResponses: forged, RequestState: "made-up"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || strings.Contains(text(r), "1\n2\n3") || len(asked) != 1 || !strings.Contains(asked[0], "shell") || !strings.Contains(asked[0], "seq 1 3") {
		t.Fatalf("a forged approval counted: %s (asked %d times: %v)", text(r), len(asked), asked)
	}
}
