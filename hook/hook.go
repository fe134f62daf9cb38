// Package hook decides a foreign agent's own tool calls with rein's
// policy: Claude Code's PreToolUse hook reads the call as JSON and answers
// allow, deny or ask, with a reason naming the rule and layer. Bash goes
// through the grammar and the policy; the file tools through the path
// rules, the protected set and the workspace; WebFetch and WebSearch
// through the net rules; MCP tools and anything else through the tool
// rules. Bad input and internal errors answer deny: Claude Code treats a
// hook that fails as one that allows, so rein must never fail open.
//
// hook imports the decision layer (policy, shell, workspace); it runs
// nothing and must not import sandbox or tool.
package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// Input is Claude Code's PreToolUse hook input.
type Input struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// The answers.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// Output is the hook's answer, as Claude Code reads it.
type Output struct {
	HookSpecificOutput Specific `json:"hookSpecificOutput"`
}

// Specific is the PreToolUse part of the answer.
type Specific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// Decision is the answer with what the trace keeps of it.
type Decision struct {
	Answer string
	Reason string
	// Verdict is the policy's, when the policy decided.
	Verdict *policy.Verdict
}

// Output is the decision as Claude Code reads it.
func (d Decision) Output() Output {
	return Output{HookSpecificOutput: Specific{HookEventName: "PreToolUse", PermissionDecision: d.Answer, PermissionDecisionReason: "rein: " + d.Reason}}
}

// Denied is the answer to input that cannot be decided.
func Denied(why string) Decision { return Decision{Answer: Deny, Reason: why} }

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

// Decide decides one call with p, whose workspace is the project Claude
// Code runs in.
func Decide(p *policy.Policy, ws *workspace.Workspace, in *Input) Decision {
	field := func(names ...string) (string, bool) {
		var m map[string]any
		if json.Unmarshal(in.ToolInput, &m) != nil {
			return "", false
		}
		for _, n := range names {
			if s, ok := m[n].(string); ok {
				return s, true
			}
		}
		return "", false
	}
	switch in.ToolName {
	case "Bash":
		cmd, ok := field("command")
		if !ok {
			return Denied("Bash without a command string")
		}
		line, err := shell.Parse(cmd)
		if err != nil {
			return Denied("refused by rein's grammar: " + err.Error())
		}
		dir := in.Cwd
		if dir == "" || !filepath.IsAbs(dir) {
			dir = p.Workspace
		}
		return fromVerdict(p.CheckIn(line, dir))
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		path, ok := field("file_path", "notebook_path")
		if !ok || path == "" {
			return Denied(in.ToolName + " without a file path")
		}
		act := policy.ActWrite
		if in.ToolName == "Read" {
			act = policy.ActRead
		}
		return decidePath(p, ws, act, path, in.Cwd)
	case "Glob", "Grep", "LS":
		path, _ := field("path")
		if path == "" {
			path = in.Cwd
		}
		if path == "" {
			path = p.Workspace
		}
		return decidePath(p, ws, policy.ActRead, path, in.Cwd)
	case "WebFetch":
		raw, ok := field("url")
		if !ok {
			return Denied("WebFetch without a url")
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return Denied(fmt.Sprintf("WebFetch of %q, which is not a URL with a host", raw))
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if port == "" {
			return Denied(fmt.Sprintf("WebFetch of a %q URL: only http and https are decided", u.Scheme))
		}
		target := u.Hostname() + ":" + port
		if u.Scheme == "http" {
			target += u.EscapedPath()
		}
		return fromVerdict(p.CheckNet(target))
	case "WebSearch":
		// The search goes to the agent's provider, named by a pseudo-host
		// that a [net] rule can allow.
		return fromVerdict(p.CheckNet("web-search"))
	}
	return fromVerdict(p.CheckTool(in.ToolName))
}

// decidePath decides an access to a path a file tool names: the protected
// set, a write outside the workspace, and the path rules.
func decidePath(p *policy.Policy, ws *workspace.Workspace, act policy.Act, path, cwd string) Decision {
	if !filepath.IsAbs(path) {
		base := cwd
		if base == "" {
			base = p.Workspace
		}
		path = filepath.Join(base, path)
	}
	path = filepath.Clean(path)
	// What the agent's tool will really touch: through the workspace's
	// links, or (outside it) through the host's.
	resolved := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		resolved = real
	}
	if t, err := ws.Resolve(path); err == nil {
		resolved = t.Path
	} else if act != policy.ActRead {
		// A write must land inside the workspace; a new file is fine.
		var pe *workspace.PathError
		if !errors.As(err, &pe) || pe.Kind != workspace.NotFound {
			return Denied(fmt.Sprintf("%s of %s: %v", act, path, err))
		}
	}
	if a := p.Protection(act, path, resolved); a != nil {
		return Decision{Answer: Deny, Reason: fmt.Sprintf("%s of %s: protected by %s", act, path, a), Verdict: &policy.Verdict{Decision: policy.Deny, Rule: a}}
	}
	return fromVerdict(p.CheckPath(act, resolved))
}

func fromVerdict(v *policy.Verdict) Decision {
	d := Decision{Reason: policy.Printable(v.Reason), Verdict: v}
	switch v.Decision {
	case policy.Allow:
		d.Answer = Allow
	case policy.Ask:
		d.Answer = Ask
	default:
		d.Answer = Deny
	}
	return d
}
