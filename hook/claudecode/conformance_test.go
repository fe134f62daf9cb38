package claudecode

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/hooktest"
)

// TestConformance runs the hook adapters' suite against Claude Code's:
// each neutral action written as the tool Claude Code would use for it.
func TestConformance(t *testing.T) {
	hooktest.Run(t, hooktest.Subject{
		Adapter: Adapter{},
		Call: func(a hook.Action, cwd string) ([]byte, bool) {
			var tool string
			input := map[string]any{}
			switch a.Kind {
			case hook.Run:
				tool, input["command"] = "Bash", a.Command
			case hook.Read:
				tool, input["file_path"] = "Read", a.Path
			case hook.Write:
				tool, input["file_path"], input["content"] = "Write", a.Path, "x"
			case hook.Search:
				switch {
				case a.Contents:
					tool, input["path"] = "Grep", a.Path
					if len(a.Patterns) > 0 {
						input["pattern"] = a.Patterns[0]
					}
				case len(a.Patterns) > 0:
					tool, input["path"], input["pattern"] = "Glob", a.Path, a.Patterns[0]
				default:
					tool, input["path"] = "LS", a.Path
				}
			case hook.Fetch:
				tool, input["url"], input["prompt"] = "WebFetch", a.URL, "read it"
			case hook.WebSearch:
				tool, input["query"] = "WebSearch", "rein"
			case hook.CallTool:
				tool = a.Tool
			default:
				return nil, false
			}
			data, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input})
			return data, true
		},
		Answer: func(out []byte) (hook.Answer, string, error) {
			var o Output
			if err := json.Unmarshal(out, &o); err != nil {
				return "", "", err
			}
			if o.HookSpecificOutput.HookEventName != "PreToolUse" {
				return "", "", fmt.Errorf("the answer is for %q", o.HookSpecificOutput.HookEventName)
			}
			return hook.Answer(o.HookSpecificOutput.PermissionDecision), strings.TrimPrefix(o.HookSpecificOutput.PermissionDecisionReason, "rein: "), nil
		},
		Garbage: [][]byte{[]byte(`{"tool_name":""}`), []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash"}`)},
	})
}
