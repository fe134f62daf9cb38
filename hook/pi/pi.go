// Package pi is the hook's adapter for Pi (npm
// @mariozechner/pi-coding-agent, the pi CLI): the extension rein writes
// for Pi sends each tool call's event here as JSON, and gets rein's answer
// back. Pi's tools are decided as the actions they are: bash a command
// line; read a path, in every spelling Pi's read may open; write and edit
// a path; grep, find and ls a search; any other tool by the tool rules
// (and a command field it takes as a command line too). An allowed or
// asked bash command is rewritten to run through rein shell, confined.
//
// Pi resolves a path as its dist/core/tools/path-utils.js does (0.73.1):
// a leading @ dropped, Unicode spaces made plain spaces, ~ and ~/ its
// HOME, a relative path against its working directory; its read then tries,
// when the name does not exist, a narrow no-break space before AM. or PM.,
// the NFD form, a curly apostrophe for ', and NFD with the curly
// apostrophe. The adapter decides every spelling that exists, and a
// relative path from the directory as Pi gave it and from its real path.
//
// pi imports hook and the decision layer; it runs nothing.
package pi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/reinhq/rein/hook"
)

// Input is one tool call as rein's Pi extension sends it.
type Input struct {
	SessionID  string          `json:"session_id"`
	CwdDir     string          `json:"cwd"`
	ToolName   string          `json:"tool_name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolInput  json.RawMessage `json:"input"`
	// UI says Pi can put a question to its user (an interactive
	// session); without one, an ask is a block.
	UI bool `json:"ui"`
}

// Session is the call's session id.
func (in *Input) Session() string { return in.SessionID }

// Tool is the tool's name.
func (in *Input) Tool() string { return in.ToolName }

// Input is the tool's input.
func (in *Input) Input() json.RawMessage { return in.ToolInput }

// Cwd is the directory Pi runs the call from.
func (in *Input) Cwd() string { return in.CwdDir }

// Output is rein's answer, as the extension reads it: Decision allow,
// deny or ask, the reason, and, when set, the tool's input Pi runs
// instead.
type Output struct {
	Decision string         `json:"decision"`
	Reason   string         `json:"reason"`
	Input    map[string]any `json:"input,omitempty"`
}

// OutputOf is the decision as the extension reads it.
func OutputOf(d hook.Decision) Output {
	return Output{Decision: string(d.Answer), Reason: "rein: " + d.Reason, Input: d.UpdatedInput}
}

// Adapter is Pi's adapter.
type Adapter struct{}

// Name is the agent's name on the command line.
func (Adapter) Name() string { return "pi" }

// Agent is the agent's name in reasons.
func (Adapter) Agent() string { return "Pi" }

// ProjectEnv: Pi sets no variable for its extensions; the project is the
// call's directory unless --workspace says otherwise.
func (Adapter) ProjectEnv() string { return "" }

// OwnConfig are Pi's configuration files and directories: its agent
// directory (settings, models, extensions, skills) and the project's.
func (Adapter) OwnConfig(ws, home string) []string {
	return []string{filepath.Join(ws, ".pi"), filepath.Join(home, ".pi")}
}

// Parse reads one call; anything malformed is an error.
func (Adapter) Parse(data []byte) (hook.Call, error) { return Parse(data) }

// Parse reads one call; anything malformed is an error.
func Parse(data []byte) (*Input, error) {
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("the hook input is not Pi's tool call: %v", err)
	}
	if in.ToolName == "" {
		return nil, fmt.Errorf("the hook input names no tool")
	}
	if in.CwdDir == "" || !filepath.IsAbs(in.CwdDir) {
		return nil, fmt.Errorf("the hook input names no absolute working directory")
	}
	if len(in.ToolInput) == 0 || string(in.ToolInput) == "null" {
		in.ToolInput = json.RawMessage("{}")
	}
	return &in, nil
}

// Encode writes the decision as the extension reads it.
func (Adapter) Encode(d hook.Decision) ([]byte, error) { return json.Marshal(OutputOf(d)) }

// Decide decides one call.
func (Adapter) Decide(e *hook.Engine, c hook.Call) hook.Decision {
	name := c.Tool()
	var m map[string]any
	if json.Unmarshal(c.Input(), &m) != nil {
		return hook.Denied("the tool input is not a JSON object")
	}
	str := func(k string) (string, bool) { s, ok := m[k].(string); return s, ok }
	switch name {
	case "bash":
		cmd, ok := str("command")
		if !ok {
			return hook.Denied("bash without a command string")
		}
		return e.Decide(hook.Action{Kind: hook.Run, Tool: name, Command: cmd})
	case "read", "write", "edit":
		path, ok := str("path")
		if !ok || path == "" {
			return hook.Denied(name + " without a path")
		}
		kind := hook.Write
		if name == "read" {
			kind = hook.Read
		}
		var d hook.Decision
		for i, sp := range spellings(path, c.Cwd(), e.Policy.Home, name == "read") {
			pd := e.Decide(hook.Action{Kind: kind, Tool: name, Path: sp.path})
			if sp.fallback {
				pd = hook.Stricter(pd, fallback(e, name, path, sp.path))
			}
			if i == 0 {
				d = pd
			} else {
				d = hook.Stricter(d, pd)
			}
		}
		return d
	case "grep", "find", "ls":
		path, _ := str("path")
		if path == "" {
			path = "."
		}
		a := hook.Action{Kind: hook.Search, Tool: name, Contents: name == "grep"}
		if name == "find" {
			pat, _ := str("pattern")
			a.Patterns = append(a.Patterns, pat)
		}
		if g, _ := str("glob"); g != "" {
			a.Patterns = append(a.Patterns, g)
		}
		// The directory searched, from Pi's directory as given and from
		// its real path: the stricter answer wins.
		var d hook.Decision
		for i, sp := range spellings(path, c.Cwd(), e.Policy.Home, false) {
			a.Path = sp.path
			if sd := e.Decide(a); i == 0 {
				d = sd
			} else {
				d = hook.Stricter(d, sd)
			}
		}
		return d
	}
	// A tool whose input carries a command (Monitor, a plugin's runner)
	// runs it as the shell would: it is decided as a command line too.
	return e.DecideTool(name, m)
}

// unicodeSpaces are the characters Pi reads as a plain space in a path.
var unicodeSpaces = regexp.MustCompile("[\u00A0\u2000-\u200A\u202F\u205F\u3000]")

// expand is a path as Pi's expandPath makes it: a leading @ dropped,
// Unicode spaces made plain, ~ and ~/ the HOME.
func expand(path, home string) string {
	path = unicodeSpaces.ReplaceAllString(strings.TrimPrefix(path, "@"), " ")
	switch {
	case path == "~":
		return home
	case strings.HasPrefix(path, "~/"):
		return home + path[1:]
	}
	return path
}

// amPm finds a space before AM. or PM., as Pi's screenshot spelling does.
var amPm = regexp.MustCompile(`(?i) (AM|PM)\.`)

// spelling is a path a call of Pi's file tools may open; fallback says
// it is another spelling than the one asked for, which Pi's read opens
// only when that one does not exist.
type spelling struct {
	path     string
	fallback bool
}

// fallback refuses a fallback spelling that leads where the name asked
// for would not: out of the workspace, or nowhere (a link to nothing).
// Whoever approves a read of the name asked for is not shown it.
func fallback(e *hook.Engine, tool, asked, path string) hook.Decision {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return hook.Denied(fmt.Sprintf("%s of %q may open %q, which Pi's read tries when the name asked for does not exist, and it is a link that leads nowhere", tool, asked, path))
	}
	if _, err := e.Workspace.Resolve(real); err != nil {
		return hook.Denied(fmt.Sprintf("%s of %q may open %q, which Pi's read tries when the name asked for does not exist, and it leads out of the workspace (to %s)", tool, asked, path, real))
	}
	return hook.Decision{Answer: hook.Allow}
}

// spellings are the paths a call of Pi's file tools may open: the path
// as Pi resolves it from cwd (and, when cwd is reached through a link,
// from its real path), and for read every fallback spelling of it that
// exists on disk.
func spellings(path, cwd, home string, read bool) []spelling {
	p := expand(path, home)
	bases := []string{""}
	if !filepath.IsAbs(p) {
		// Node's path.resolve: lexical, from the directory Pi gave.
		bases = []string{cwd}
		if real, err := filepath.EvalSymlinks(cwd); err == nil && real != cwd {
			bases = append(bases, real)
		}
	}
	var out []spelling
	seen := map[string]bool{}
	add := func(s string, fb bool) {
		if !seen[s] {
			seen[s] = true
			out = append(out, spelling{s, fb})
		}
	}
	for _, b := range bases {
		resolved := p
		if b != "" {
			// Not filepath.Join, which would clean a .. before the
			// engine sees it.
			resolved = b + "/" + p
		}
		add(resolved, false)
		if !read {
			continue
		}
		nfd := norm.NFD.String(resolved)
		for _, v := range []string{
			amPm.ReplaceAllString(resolved, "\u202F$1."),
			nfd,
			strings.ReplaceAll(resolved, "'", "\u2019"),
			strings.ReplaceAll(nfd, "'", "\u2019"),
		} {
			if v == resolved {
				continue
			}
			// A spelling that exists, or a link that leads nowhere, is
			// one Pi's read may open.
			if _, err := os.Lstat(v); err == nil {
				add(v, true)
			}
		}
	}
	return out
}

// Confine rewrites an allowed or asked call so that Pi runs its command
// through rein: the same line, decided again by the same policy, run in
// rein's sandbox from the directory Pi runs it in. A denial is left as it
// is.
func (Adapter) Confine(c hook.Call, d hook.Decision, x hook.Confiner) hook.Decision {
	return hook.ConfineCommands(c, d, func(m map[string]any, line string) (string, *hook.Decision) {
		if _, ok := x.Foreground(line); ok {
			// Pi runs bash to its end: a command left running would hold
			// the call until rein's ceiling.
			refused := hook.Denied("a command ended by & runs in the background, which Pi's bash cannot: run it in the foreground, bounded (timeout 60 CMD), or start it outside Pi")
			return "", &refused
		}
		return x.Line(line, d.Answer == hook.Ask, timeout(m), false), nil
	})
}

// timeout is Pi's own timeout for a bash call (seconds, taken at most a
// day: the confiner bounds it again), or 0.
func timeout(input map[string]any) time.Duration {
	s, ok := input["timeout"].(float64)
	if !ok || s <= 0 {
		return 0
	}
	return time.Duration(min(s, float64(24*time.Hour/time.Second))) * time.Second
}
