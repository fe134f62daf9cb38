package policy_test

import (
	"fmt"
	"os"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
)

// Decide a line in a workspace with one rule from the command line.
func Example() {
	ws, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(ws)
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{
		Workspace: ws, Home: "/home/example", Mode: &mode,
		Rules:  []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "git push*"}},
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	line, _ := shell.Parser{Home: "/home/example"}.Parse("git status && sudo git push origin main")
	v := p.Check(line)
	fmt.Println(v.Decision)
	for _, s := range v.Stages {
		fmt.Println(s.Index, s.Decision, s.Class)
	}
	fmt.Println(v.Rule.Rule, v.Rule.Layer)
	// Output:
	// deny
	// 0 allow read-only
	// 1 deny dangerous
	// git push* flags
}
