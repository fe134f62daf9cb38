//go:build linux

package launch

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/hook"
	hookcc "github.com/reinhq/rein/hook/claudecode"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// testAgent is an agent whose hook is Claude Code's and whose MCP tools
// are named as Claude Code names them: what the server needs of one.
type testAgent struct{}

func (testAgent) Name() string                             { return "test-agent" }
func (testAgent) Title() string                            { return "Test Agent" }
func (testAgent) Program() string                          { return "true" }
func (testAgent) Hook() hook.Adapter                       { return hookcc.Adapter{} }
func (testAgent) KeyVars() []string                        { return nil }
func (testAgent) ConfigVars() []string                     { return nil }
func (testAgent) Reserved(string) bool                     { return false }
func (testAgent) Env(Model, string, string) []string       { return nil }
func (testAgent) CheckArgs([]string) string                { return "" }
func (testAgent) Model(func(string) string) (Model, error) { return Model{}, nil }
func (testAgent) Files(string, Model) map[string][]byte    { return nil }
func (testAgent) Guidance() []string                       { return nil }
func (testAgent) ProgramDirs(string) []string              { return nil }
func (testAgent) Start(string, string, string) ([]string, map[string]string) {
	return nil, nil
}
func (testAgent) ToolName(tool string) string { return "mcp__rein__" + tool }

// fixture is a workspace with a home and an empty org policy, the user's
// and the project's none.
func fixture(t *testing.T) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "w")
	for _, f := range []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(ws, "main.go"), filepath.Join(root, "org.toml")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("REIN_ORG_POLICY", filepath.Join(root, "org.toml"))
	t.Setenv("REIN_USER_POLICY", "")
	t.Setenv("REIN_PROJECT_POLICY", "")
	return ws
}

// TestServer: the session's socket answers a hook call for one of
// rein mcp's own tools with allow (that server decides it again), any
// other name as the hook does, and a connection that names no service
// within its deadline, or a burst of them, does not stop it.
func TestServer(t *testing.T) {
	ws := fixture(t)
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Append(context.Background(), trace.Run{ID: "launch-x", StartedAt: time.Now(), Workspace: ws})
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := (&Session{Agent: testAgent{}, Workspace: ws}).serve(context.Background(), "launch-x", store, sock, func(netproxy.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	var idle []net.Conn
	for range 2 * maxConns {
		c, err := net.Dial("unix", sock)
		if err == nil {
			idle = append(idle, c)
		}
	}
	ask := func(tool string) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": map[string]any{"x": 1}})
			c.Write(append([]byte("hook\n"), in...))
			c.(*net.UnixConn).CloseWrite()
			out, _ := io.ReadAll(c)
			c.Close()
			if len(out) > 0 {
				return string(out)
			}
		}
		t.Fatalf("no answer for %s", tool)
		return ""
	}
	// The idle connections time out and free their slots.
	if out := ask("mcp__rein__shell"); !strings.Contains(out, `"allow"`) {
		t.Errorf("rein mcp's tool: %s", out)
	}
	for _, name := range []string{"mcp__rein__evil__run", "mcp__rein__", "mcp__reinx__shell"} {
		if out := ask(name); strings.Contains(out, `"allow"`) {
			t.Errorf("%s: %s", name, out)
		}
	}
	for _, c := range idle {
		c.Close()
	}
}

// TestServerTraceBounded: the round's flood, scaled: hook inputs of
// megabytes through the relay keep a bounded head each; past the
// session's bound every call is refused and the bound is recorded once;
// more calls a second than the relay takes are refused, not queued.
func TestServerTraceBounded(t *testing.T) {
	ws := fixture(t)
	dbPath := filepath.Join(t.TempDir(), "t.db")
	store, err := sqlite.Open(dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Append(context.Background(), trace.Run{ID: "launch-x", StartedAt: time.Now(), Workspace: ws})
	fulls := 0
	bounded := &trace.Bounded{Store: store, Limit: 64 << 10, OnFull: func() { fulls++ }}
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := (&Session{Agent: testAgent{}, Workspace: ws}).serve(context.Background(), "launch-x", bounded, sock, func(netproxy.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	call := func(content string) string {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Write",
			"tool_input": map[string]any{"file_path": filepath.Join(ws, "big.txt"), "content": content}})
		go func() { c.Write(append([]byte("hook\n"), in...)); c.(*net.UnixConn).CloseWrite() }()
		out, _ := io.ReadAll(c)
		return string(out)
	}
	big := strings.Repeat("A", 4<<20)
	for i := range 3 {
		if out := call(big); !strings.Contains(out, `"allow"`) {
			t.Fatalf("call %d: %s", i, out)
		}
	}
	steps, err := store.Steps(context.Background(), "launch-x")
	if err != nil || len(steps) != 3 {
		t.Fatalf("%d steps: %v", len(steps), err)
	}
	for _, st := range steps {
		if len(st.Args) > 16<<10+200 || !strings.Contains(st.Args, "bytes in all, sha256 ") {
			t.Fatalf("a step keeps %d bytes of its input: %.200q", len(st.Args), st.Args[len(st.Args)-200:])
		}
	}
	// Past the bound: refused, recorded once.
	var refused string
	for range 80 {
		if out := call("x"); strings.Contains(out, "session_trace") {
			refused = out
		}
		time.Sleep(45 * time.Millisecond) // under the relay's rate
	}
	if !strings.Contains(refused, `"deny"`) || fulls != 1 {
		t.Fatalf("past the bound: %d times full, last %s", fulls, refused)
	}
	// Faster than the relay's rate: refused at once.
	srv2, err := (&Session{Agent: testAgent{}, Workspace: ws}).serve(context.Background(), "launch-x", store, filepath.Join(t.TempDir(), "s2.sock"), func(netproxy.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.close()
	sock = filepath.Join(filepath.Dir(srv2.l.Addr().String()), "s2.sock")
	n := 0
	for range 4 * hookRate {
		if strings.Contains(call("x"), "hook calls a second") {
			n++
		}
	}
	if n == 0 {
		t.Error("no call was refused for the rate")
	}
}
