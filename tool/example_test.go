package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
)

// Tool calls through the router, as a model makes them: each decided by
// the policy, confined, bounded and recorded; a refusal names its rule.
func ExampleRouter_Call() {
	dir, err := os.MkdirTemp("", "rein-tool-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(dir, "home"), NoFiles: true, Mode: &mode})
	if err != nil {
		log.Fatal(err)
	}
	reg, _ := tool.Builtin()
	r, err := tool.NewRouter(reg, tool.Config{Policy: p})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close("done")
	ctx := context.Background()
	fmt.Print(r.Call(ctx, "read_file", json.RawMessage(`{"path":"hello.txt"}`)).Text())
	denied := r.Call(ctx, "shell", json.RawMessage(`{"line":"git push origin main"}`))
	fmt.Println(denied.Status, denied.Reason)
	// Output:
	// read_file: ok
	// hello
	// denied asked, and no approver is configured (stage 0 (git push origin main): workspace-mutating (git push changes the repository or the working tree): ask mode asks unless a rule allows it)
}
