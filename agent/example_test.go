package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// A run with a local model, its gate the project's tests, which it may
// not change. A program that embeds rein calls sandbox.Main first in its
// main function.
func ExampleRun() {
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ".", Mode: &mode, Verification: []string{"**/*_test.go"}})
	if err != nil {
		log.Fatal(err)
	}
	model := agent.NewChat(agent.ChatConfig{Name: "ollama", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5-coder"})
	out, err := agent.Run(context.Background(), agent.Contract{
		Goal: "fix the failing test", Workspace: p.Workspace,
		Verify: &agent.Gate{Line: "go test ./..."}, Protect: []string{"**/*_test.go"},
	}, agent.Options{Provider: model, Tool: tool.Config{Policy: p, Profile: sandbox.Profile{Env: tool.Env(os.Environ(), p)}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Kind, out.Reason)
}
