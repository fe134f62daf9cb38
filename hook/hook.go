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
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/reinhq/rein/internal/netname"
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
	// UpdatedInput replaces the tool's input: a command allowed (or asked
	// and approved) runs through rein's sandbox, not Claude Code's shell.
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
}

// Decision is the answer with what the trace keeps of it.
type Decision struct {
	Answer string
	Reason string
	// Verdict is the policy's, when the policy decided.
	Verdict *policy.Verdict
	// UpdatedInput, when set, is the tool input Claude Code runs instead.
	UpdatedInput map[string]any
	// Opaque, for a command outside rein's grammar, names the construct
	// that made it opaque shell code: asked, and only ever run confined.
	Opaque *shell.Refusal
}

// Output is the decision as Claude Code reads it.
func (d Decision) Output() Output {
	return Output{HookSpecificOutput: Specific{HookEventName: "PreToolUse", PermissionDecision: d.Answer,
		PermissionDecisionReason: "rein: " + d.Reason, UpdatedInput: d.UpdatedInput}}
}

// stoppers are Claude Code's tools that only stop a background command
// of the session (each, with why that is allowed with no rule): a
// command that was let run, stopped, reaches nothing new, and an agent
// that cannot stop its own background server waits for it to end (under
// -p, Claude Code waits for its background commands before it exits).
var stoppers = map[string]string{
	"TaskStop":  "stops a background command of this session, which reaches nothing new",
	"KillShell": "stops a background command of this session (TaskStop's former name), which reaches nothing new",
}

// commandKeys are the input fields by which a tool takes a command line.
var commandKeys = []string{"command", "cmd"}

// Confine rewrites an allowed or asked command so that Claude Code runs it
// through rein: the same line, decided again by the same policy, run in
// rein's sandbox. wrap returns the command line that runs line confined;
// the rest of the tool's input is kept. A denial is left as it is.
func Confine(in *Input, d Decision, wrap func(line string, asked bool, input map[string]any) string) Decision {
	if d.Answer == Deny {
		return d
	}
	var m map[string]any
	if json.Unmarshal(in.ToolInput, &m) != nil {
		return Denied("the tool input is not a JSON object")
	}
	// Every command field is rewritten, not the first: a tool that took
	// both would otherwise run the other unconfined.
	rewritten, other := false, false
	for _, k := range commandKeys {
		switch v, present := m[k]; line := v.(type) {
		case string:
			m[k] = wrap(line, d.Answer == Ask, m)
			rewritten = true
		default:
			other = other || present && v != nil
		}
	}
	if rewritten {
		d.UpdatedInput = m
		if other {
			d.Reason += "; its string command runs in rein's sandbox, the other is not rein's to run"
		} else {
			d.Reason += "; runs in rein's sandbox"
		}
	}
	return d
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
	return decide(p, ws, in, false)
}

// DecideConfined is Decide for a hook whose allowed Bash commands run
// through rein shell, confined, as the plan decided here: rein expands a
// Bash command's globs itself (Claude Code's own shell, which would
// expand them again when it runs the command unconfined, never sees
// them).
func DecideConfined(p *policy.Policy, ws *workspace.Workspace, in *Input) Decision {
	return decide(p, ws, in, true)
}

func decide(p *policy.Policy, ws *workspace.Workspace, in *Input, confined bool) Decision {
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
		return decideBash(p, in, cmd, confined)
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		name := "file_path"
		if in.ToolName == "NotebookEdit" {
			name = "notebook_path"
		}
		path, ok := field(name)
		if !ok || path == "" {
			return Denied(in.ToolName + " without " + name)
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
		d := decidePath(p, ws, policy.ActRead, path, in.Cwd)
		if d.Answer == Deny {
			return d
		}
		// A pattern with a base of its own reaches beyond path.
		for _, k := range []string{"pattern", "glob"} {
			if k == "pattern" && in.ToolName != "Glob" {
				continue
			}
			pat, _ := field(k)
			if filepath.IsAbs(pat) || strings.HasPrefix(pat, "~") || slices.Contains(strings.Split(pat, "/"), "..") {
				return Decision{Answer: Ask, Reason: fmt.Sprintf("%s's %s %q reaches outside the directory searched", in.ToolName, k, pat)}
			}
		}
		if in.ToolName == "Grep" && d.Answer == Allow {
			// A search of a directory reads every file in it, ignored and
			// hidden ones too when its glob names them: the protected
			// secrets among them are not decided one by one.
			if fi, err := os.Stat(expandHome(path, p.Home)); err == nil && fi.IsDir() {
				return Decision{Answer: Ask, Reason: "Grep over a directory reads files the policy may protect (.env, keys), which rein cannot decide one by one"}
			}
		}
		return d
	case "WebFetch":
		raw, ok := field("url")
		if !ok {
			return Denied("WebFetch without a url")
		}
		target, why := fetchTarget(raw)
		if why != "" {
			return Denied(why)
		}
		return fromVerdict(p.CheckNet(target))
	case "WebSearch":
		// The search goes to the agent's provider, named by a pseudo-host
		// that a [net] rule can allow.
		return fromVerdict(p.CheckNet("web-search"))
	}
	if why, ok := stoppers[in.ToolName]; ok {
		// A [tool] rule that names it still decides.
		if v := p.CheckTool(in.ToolName); v.Rule != nil {
			return fromVerdict(v)
		}
		return Decision{Answer: Allow, Reason: in.ToolName + " " + why}
	}
	d := fromVerdict(p.CheckTool(in.ToolName))
	// A tool whose input carries a command (Monitor, a plugin's runner)
	// runs it as Bash would: it is decided as a Bash command too, and a
	// [tool] allow rule for the tool does not let the command through.
	var m map[string]any
	json.Unmarshal(in.ToolInput, &m)
	for _, k := range commandKeys {
		v, present := m[k]
		switch cmd, ok := v.(string); {
		case ok:
			// Every command field, each decided: the stricter answer wins.
			d = stricter(decideBash(p, in, cmd, confined), d)
		case present && v != nil:
			d = stricter(Decision{Answer: Ask, Reason: fmt.Sprintf("%s's %s is not a command line rein can decide (%T)", in.ToolName, k, v)}, d)
		}
	}
	return d
}

// decideBash decides a command line a tool runs in Claude Code's shell.
func decideBash(p *policy.Policy, in *Input, cmd string, confined bool) Decision {
	if len(cmd) > maxCommandBytes || strings.Count(cmd, "|")+strings.Count(cmd, ";")+strings.Count(cmd, "&") > maxSeparators {
		return Denied(fmt.Sprintf("a command over %d KiB or %d separators is not decided", maxCommandBytes>>10, maxSeparators))
	}
	dir := in.Cwd
	if dir == "" || !filepath.IsAbs(dir) {
		dir = p.Workspace
	}
	// Unconfined, Claude Code's own shell runs the line: only what holds
	// in a live shell is planned.
	parser := shell.Parser{Home: p.Home, ShellRuns: true}
	if confined {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			parser = p.LineParser(r)
		}
	}
	line, err := parser.Plan(cmd)
	if err != nil {
		return Denied("bash would not run it either: " + err.Error())
	}
	if why := checkBash(cmd, line, dir, p.Home); why != "" {
		return Denied(why)
	}
	d := fromVerdict(p.CheckIn(line, dir))
	d.Opaque = line.Opaque
	if d.Answer == Allow {
		if why := checkGit(line, dir, p.Workspace); why != "" {
			return Decision{Answer: Ask, Reason: why}
		}
		if why := checkRecursive(line, dir); why != "" {
			return Decision{Answer: Ask, Reason: why}
		}
	}
	return d
}

// decidePath decides an access to a path a file tool names: the protected
// set, a write outside the workspace, and the path rules.
func decidePath(p *policy.Policy, ws *workspace.Workspace, act policy.Act, path, cwd string) Decision {
	if strings.HasPrefix(path, "~") && path != "~" && !strings.HasPrefix(path, "~/") {
		return Denied(fmt.Sprintf("%s names another user's home", path))
	}
	path = expandHome(path, p.Home)
	if !filepath.IsAbs(path) {
		base := cwd
		if base == "" {
			base = p.Workspace
		}
		path = filepath.Join(base, path)
	}
	// A path with .. is decided as written and as the disk resolves it
	// (through a link, .. leads elsewhere), the stricter answer winning.
	if raw := path; slices.Contains(strings.Split(raw, "/"), "..") {
		lexical := decidePath(p, ws, act, filepath.Clean(raw), "")
		// Not filepath.Dir, which would clean the .. away.
		i := strings.LastIndexByte(raw, '/')
		if real, err := filepath.EvalSymlinks(raw[:i]); err == nil {
			physical := decidePath(p, ws, act, filepath.Join(real, raw[i+1:]), "")
			return stricter(lexical, physical)
		}
		return lexical
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
	if act != policy.ActRead {
		if why := hookProtected(resolved, p.Workspace, p.Home); why != "" {
			return Denied(why)
		}
		// A file with other names may be one outside the workspace.
		if fi, err := os.Lstat(resolved); err == nil {
			if n := links(fi); fi.Mode().IsRegular() && n > 1 {
				return Denied(fmt.Sprintf("%s has %d names (hard links); a write through it may reach a file outside the workspace", path, n))
			}
		}
	}
	return fromVerdict(p.CheckPath(act, resolved))
}

// expandHome expands a leading ~ or ~/ with home.
func expandHome(path, home string) string {
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

// hookProtected are the paths a foreign agent must not write besides the
// policy's protected set: git's files, and its own configuration, which
// could remove the hook or add servers and hooks of its own.
func hookProtected(path, ws, home string) string {
	// A .git file or directory the agent writes is a repository git obeys
	// (its config runs commands: core.fsmonitor, hooks).
	if slices.Contains(strings.Split(path, "/"), ".git") {
		return fmt.Sprintf("write of %s: git's own files are written by git, not by the agent", path)
	}
	for _, p := range []string{filepath.Join(ws, ".claude"), filepath.Join(ws, ".mcp.json"), filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return fmt.Sprintf("write of %s: Claude Code's own configuration (which could remove this hook) is not written by the agent", path)
		}
	}
	return ""
}

var strength = map[string]int{Allow: 0, Ask: 1, Deny: 2}

func stricter(a, b Decision) Decision {
	if strength[b.Answer] > strength[a.Answer] {
		return b
	}
	return a
}

// fetchTarget is the net target of a WebFetch URL: its host, normalised as
// a browser would (lower case, no trailing dot, IDNA), with the URL's port,
// or 443 when it names none (Claude Code upgrades http to https), written
// as the egress proxy writes targets ("host:port", "[v6]:port"). An IP
// literal that is not a public address, or a numeric host form, is
// refused.
func fetchTarget(raw string) (string, string) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Sprintf("WebFetch of %q, which is not a URL with a host", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Sprintf("WebFetch of a %q URL: only http and https are decided", u.Scheme)
	}
	port := "443"
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Sprintf("WebFetch of %q, whose port is not a port", raw)
		}
		port = strconv.Itoa(n)
	}
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if _, err := netip.ParseAddr(name); err != nil {
		// A name as a browser sends it: IDNA to ASCII first.
		ascii, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", fmt.Sprintf("WebFetch of host %q, which is not a valid name", name)
		}
		name = ascii
	}
	// Then the egress proxy's own rule of what a host is.
	host, addr, why := netname.Host(name)
	switch {
	case why != "":
		return "", fmt.Sprintf("WebFetch of host %q: %s", host, why)
	case addr.IsValid() && (!addr.IsGlobalUnicast() || addr.IsPrivate()):
		return "", fmt.Sprintf("WebFetch of %s, which is not a public address", addr)
	case addr.IsValid():
		return net.JoinHostPort(addr.String(), port), ""
	}
	return host + ":" + port, ""
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
