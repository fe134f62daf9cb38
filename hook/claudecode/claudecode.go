// Package claudecode is the hook's adapter for Claude Code: it reads
// Claude Code's PreToolUse hook input, decides each of its tools as the
// actions it is (Bash a command line; Read, Write, Edit, MultiEdit and
// NotebookEdit a path; Glob, Grep and LS a search; WebFetch a fetch;
// WebSearch a web search; TaskStop and KillShell a stop; MCP tools and any
// other a tool, and each command field such a tool takes a command line
// too), rewrites an allowed or asked command to run through rein shell,
// and writes the answer as Claude Code reads it.
//
// claudecode imports hook and the decision layer; it runs nothing.
package claudecode

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/reinhq/rein/hook"
)

// Input is Claude Code's PreToolUse hook input.
type Input struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	CwdDir         string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// Session is the call's session id.
func (in *Input) Session() string { return in.SessionID }

// Tool is the tool's name.
func (in *Input) Tool() string { return in.ToolName }

// Input is the tool's input.
func (in *Input) Input() json.RawMessage { return in.ToolInput }

// Cwd is the directory the call runs from.
func (in *Input) Cwd() string { return in.CwdDir }

// Output is the hook's answer, as Claude Code reads it.
type Output struct {
	HookSpecificOutput Specific `json:"hookSpecificOutput"`
}

// Specific is the PreToolUse part of the answer.
type Specific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
	// UpdatedInput replaces the tool's input: a command allowed (or asked
	// and approved) runs through rein's sandbox, not Claude Code's shell.
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
}

// OutputOf is the decision as Claude Code reads it.
func OutputOf(d hook.Decision) Output {
	return Output{HookSpecificOutput: Specific{HookEventName: "PreToolUse", PermissionDecision: string(d.Answer),
		PermissionDecisionReason: "rein: " + d.Reason, UpdatedInput: d.UpdatedInput}}
}

// Adapter is Claude Code's adapter.
type Adapter struct{}

// Name is the agent's name on the command line.
func (Adapter) Name() string { return "claude-code" }

// Agent is the agent's name in reasons.
func (Adapter) Agent() string { return "Claude Code" }

// ProjectEnv is the variable Claude Code sets to the project for its
// hooks.
func (Adapter) ProjectEnv() string { return "CLAUDE_PROJECT_DIR" }

// OwnConfig are Claude Code's configuration files and directories.
func (Adapter) OwnConfig(ws, home string) []string {
	return []string{filepath.Join(ws, ".claude"), filepath.Join(ws, ".mcp.json"), filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")}
}

// Parse reads the hook input; anything malformed is an error.
func (Adapter) Parse(data []byte) (hook.Call, error) { return Parse(data) }

// Parse reads the hook input; anything malformed is an error.
func Parse(data []byte) (*Input, error) {
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("the hook input is not JSON: %v", err)
	}
	if in.HookEventName != "" && in.HookEventName != "PreToolUse" {
		return nil, fmt.Errorf("the hook input is a %s event, not PreToolUse", in.HookEventName)
	}
	if in.ToolName == "" {
		return nil, fmt.Errorf("the hook input names no tool")
	}
	if len(in.ToolInput) == 0 || string(in.ToolInput) == "null" {
		in.ToolInput = json.RawMessage("{}")
	}
	return &in, nil
}

// Encode writes the decision as Claude Code reads it.
func (Adapter) Encode(d hook.Decision) ([]byte, error) { return json.Marshal(OutputOf(d)) }

// stoppers are Claude Code's tools that only stop a background command
// of the session (each, with why that is allowed with no rule): an agent
// that cannot stop its own background server waits for it to end (under
// -p, Claude Code waits for its background commands before it exits).
var stoppers = map[string]string{
	"TaskStop":  "stops a background command of this session, which reaches nothing new",
	"KillShell": "stops a background command of this session (TaskStop's former name), which reaches nothing new",
}

// Decide decides one call.
func (Adapter) Decide(e *hook.Engine, c hook.Call) hook.Decision {
	name := c.Tool()
	var m map[string]any
	if json.Unmarshal(c.Input(), &m) != nil {
		return hook.Denied("the tool input is not a JSON object")
	}
	field := func(names ...string) (string, bool) {
		for _, n := range names {
			if s, ok := m[n].(string); ok {
				return s, true
			}
		}
		return "", false
	}
	switch name {
	case "Bash":
		cmd, ok := field("command")
		if !ok {
			return hook.Denied("Bash without a command string")
		}
		return e.Decide(hook.Action{Kind: hook.Run, Tool: name, Command: cmd})
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		key := "file_path"
		if name == "NotebookEdit" {
			key = "notebook_path"
		}
		path, ok := field(key)
		if !ok || path == "" {
			return hook.Denied(name + " without " + key)
		}
		kind := hook.Write
		if name == "Read" {
			kind = hook.Read
		}
		return e.Decide(hook.Action{Kind: kind, Tool: name, Path: path})
	case "Glob", "Grep", "LS":
		path, _ := field("path")
		a := hook.Action{Kind: hook.Search, Tool: name, Path: path, Contents: name == "Grep"}
		if name == "Glob" {
			pat, _ := field("pattern")
			a.Patterns = append(a.Patterns, pat)
		}
		if g, _ := field("glob"); g != "" {
			a.Patterns = append(a.Patterns, g)
		}
		return e.Decide(a)
	case "WebFetch":
		raw, ok := field("url")
		if !ok {
			return hook.Denied("WebFetch without a url")
		}
		return e.Decide(hook.Action{Kind: hook.Fetch, Tool: name, URL: raw})
	case "WebSearch":
		return e.Decide(hook.Action{Kind: hook.WebSearch, Tool: name})
	}
	if why, ok := stoppers[name]; ok {
		return e.Decide(hook.Action{Kind: hook.StopTask, Tool: name, Why: why})
	}
	// A tool whose input carries a command (Monitor, a plugin's runner)
	// runs it as the shell would: it is decided as a command line too.
	return e.DecideTool(name, m)
}

// Confine rewrites an allowed or asked call so that Claude Code runs each
// of its commands through rein: the same line, decided again by the same
// policy, run in rein's sandbox; the rest of the tool's input is kept. A
// command that ends in & runs in the foreground of a background task of
// Claude Code's (which the model reads and stops by its id). A denial is
// left as it is.
func (Adapter) Confine(c hook.Call, d hook.Decision, x hook.Confiner) hook.Decision {
	return hook.ConfineCommands(c, d, func(m map[string]any, line string) (string, *hook.Decision) {
		if fg, ok := x.Foreground(line); ok {
			line = fg
			m["run_in_background"] = true
		}
		bg, _ := m["run_in_background"].(bool)
		return x.Line(line, d.Answer == hook.Ask, timeout(m), bg), nil
	})
}

// timeout is Claude Code's own timeout for the call (milliseconds, taken
// at most a day: the confiner bounds it again), or 0.
func timeout(input map[string]any) time.Duration {
	ms, ok := input["timeout"].(float64)
	if !ok || ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, float64(24*time.Hour/time.Millisecond))) * time.Millisecond
}
