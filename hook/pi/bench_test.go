package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/workspace"
)

// BenchmarkDecide is the gate's own decision of one Pi tool call, as
// rein hook pi makes it once the policy is loaded: a bash line through
// the grammar and the policy, and a read (its path and every fallback
// spelling); parse is Parse alone, for the floor of the wire format.
func BenchmarkDecide(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, OnHost: true})
	if err != nil {
		b.Fatal(err)
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, tool, input string }{
		{"bash", "bash", `{"command":"go test ./... 2>&1 | tail -20"}`},
		{"read", "read", `{"path":"src/main.go"}`},
	} {
		data, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "tool_name": c.tool, "tool_call_id": "c", "input": json.RawMessage(c.input)})
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				call, err := Parse(data)
				if err != nil {
					b.Fatal(err)
				}
				e := &hook.Engine{Policy: p, Workspace: w, Cwd: ws, Agent: "Pi"}
				if d := (Adapter{}).Decide(e, call); d.Answer == hook.Deny {
					b.Fatal(d.Reason)
				}
			}
		})
		b.Run(c.name+"/parse", func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
