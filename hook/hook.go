// Package hook decides a foreign agent's own tool calls with rein's
// policy, as neutral actions: run a command line, read or write a path,
// search a directory, fetch a URL, search the web, call a tool, stop a
// background command. A command goes through the grammar and the policy;
// a path through the path rules, the protected set and the workspace; a
// fetch through the net rules; a tool through the tool rules. Each agent's
// wire format is an adapter's (hook/claudecode for Claude Code), which
// reads a call into actions and writes the decision back; an adapter is
// registered with the command line by one entry. Bad input and internal
// errors answer deny: an agent treats a hook that fails as one that
// allows, so rein must never fail open.
//
// hook imports the decision layer (policy, shell, workspace) and the
// trace's record types; it runs nothing and must not import sandbox or
// tool.
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
	"time"

	"golang.org/x/net/idna"

	"github.com/reinhq/rein/internal/netname"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// Answer is a decision's answer.
type Answer string

// The answers.
const (
	Allow Answer = "allow"
	Deny  Answer = "deny"
	Ask   Answer = "ask"
)

// Decision is the answer with what the trace keeps of it.
type Decision struct {
	Answer Answer
	Reason string
	// Verdict is the policy's, when the policy decided.
	Verdict *policy.Verdict
	// UpdatedInput, when set, is the tool input the agent runs instead
	// (in its own wire format): a command rewritten to run confined.
	UpdatedInput map[string]any
	// Opaque, for a command outside rein's grammar, names the construct
	// that made it opaque shell code: asked, and only ever run confined.
	Opaque *shell.Refusal
}

// Denied is the answer to input that cannot be decided.
func Denied(why string) Decision { return Decision{Answer: Deny, Reason: why} }

// ActionKind names what an action does.
type ActionKind string

// The actions an agent's tool calls are decided as.
const (
	// Run: a command line the agent's shell runs (Command).
	Run ActionKind = "run"
	// Read and Write: a path the tool reads or writes (Path).
	Read  ActionKind = "read"
	Write ActionKind = "write"
	// Search: a search under a directory (Path, "" for the agent's
	// directory) by Patterns that may name a base of their own; with
	// Contents, one that reads every file's contents.
	Search ActionKind = "search"
	// Fetch: a URL the agent's tool fetches (URL).
	Fetch ActionKind = "fetch"
	// WebSearch: a search the agent's provider makes on the web.
	WebSearch ActionKind = "web_search"
	// CallTool: a tool decided by the tool rules alone (an MCP server's,
	// one of the agent's own that rein does not model).
	CallTool ActionKind = "call"
	// StopTask: a tool that only stops a background command of the
	// session (Why says so): allowed with no rule, as a command that was
	// let run, stopped, reaches nothing new.
	StopTask ActionKind = "stop"
)

// Action is one thing a tool call does, in rein's terms.
type Action struct {
	Kind ActionKind
	// Tool is the agent's name for the tool: in reasons, and what the
	// tool rules match.
	Tool     string
	Command  string
	Path     string
	Patterns []string
	Contents bool
	URL      string
	Why      string
}

// Engine decides actions for one call of one agent.
type Engine struct {
	Policy    *policy.Policy
	Workspace *workspace.Workspace
	// Cwd is the directory the agent runs the call from ("": the
	// workspace).
	Cwd string
	// Confined says the agent's commands run through rein shell,
	// confined, as the plan decided here: rein expands a command's globs
	// itself. Unconfined, the agent's shell runs the line, and only what
	// holds in a live shell is planned (a loop stays opaque).
	Confined bool
	// Agent names the agent in reasons ("Claude Code"); OwnConfig are
	// its configuration's paths (absolute), which it never writes.
	Agent     string
	OwnConfig []string
}

func (e *Engine) agent() string {
	if e.Agent == "" {
		return "the agent"
	}
	return e.Agent
}

// dir is the directory a command runs from: the call's, or the
// workspace.
func (e *Engine) dir() string {
	if e.Cwd == "" || !filepath.IsAbs(e.Cwd) {
		return e.Policy.Workspace
	}
	return e.Cwd
}

// Decide decides one action.
func (e *Engine) Decide(a Action) Decision {
	p := e.Policy
	switch a.Kind {
	case Run:
		return e.decideRun(a.Command)
	case Read, Write:
		act := policy.ActWrite
		if a.Kind == Read {
			act = policy.ActRead
		}
		return e.decidePath(act, a.Path, e.Cwd)
	case Search:
		path := a.Path
		if path == "" {
			path = e.Cwd
		}
		if path == "" {
			path = p.Workspace
		}
		d := e.decidePath(policy.ActRead, path, e.Cwd)
		if d.Answer == Deny {
			return d
		}
		// A pattern with a base of its own reaches beyond path.
		for _, pat := range a.Patterns {
			if filepath.IsAbs(pat) || strings.HasPrefix(pat, "~") || slices.Contains(strings.Split(pat, "/"), "..") {
				return Decision{Answer: Ask, Reason: fmt.Sprintf("%s's pattern %q reaches outside the directory searched", a.Tool, pat)}
			}
		}
		if a.Contents && d.Answer == Allow {
			// A search of a directory reads every file in it, ignored and
			// hidden ones too when its glob names them: the protected
			// secrets among them are not decided one by one.
			if fi, err := os.Stat(expandHome(path, p.Home)); err == nil && fi.IsDir() {
				return Decision{Answer: Ask, Reason: a.Tool + " over a directory reads files the policy may protect (.env, keys), which rein cannot decide one by one"}
			}
		}
		return d
	case Fetch:
		target, why := fetchTarget(a.Tool, a.URL)
		if why != "" {
			return Denied(why)
		}
		return fromVerdict(p.CheckNet(target))
	case WebSearch:
		// The search goes to the agent's provider, named by a pseudo-host
		// that a [net] rule can allow.
		return fromVerdict(p.CheckNet("web-search"))
	case StopTask:
		// A [tool] rule that names it still decides.
		if v := p.CheckTool(a.Tool); v.Rule != nil {
			return fromVerdict(v)
		}
		return Decision{Answer: Allow, Reason: a.Tool + " " + a.Why}
	case CallTool:
		return fromVerdict(p.CheckTool(a.Tool))
	}
	return Denied(fmt.Sprintf("%s: an action rein does not know (%q)", a.Tool, a.Kind))
}

// Finish is what every decision of a call goes through last: a project
// that is (or holds) the user's home asks for everything, and opaque
// shell code is denied where the agent's own shell would run it.
func (e *Engine) Finish(d Decision) Decision {
	p := e.Policy
	if home := p.Home; d.Answer == Allow && (p.Workspace == "/" || home == p.Workspace || strings.HasPrefix(home, p.Workspace+"/")) {
		// The whole home directory as a workspace would make every dot
		// file writable and readable: nothing is allowed without asking.
		d = Decision{Answer: Ask, Reason: fmt.Sprintf("the project %s is (or holds) your home directory, so rein asks for everything: %s", p.Workspace, d.Reason), Verdict: d.Verdict, Opaque: d.Opaque}
	}
	if d.Opaque != nil && d.Answer != Deny && !e.Confined {
		// Opaque code is run only where rein's sandbox confines it.
		d = Decision{Answer: Deny, Reason: "opaque shell code, which rein runs only confined, and this hook runs with --no-confine: " + d.Reason, Verdict: d.Verdict, Opaque: d.Opaque}
	}
	return d
}

// Confiner runs a command line the engine decided confined: the agent's
// shell runs the command it returns in the line's place.
type Confiner interface {
	// Foreground is line without the & that ends it, when its plan is
	// one command run in the background.
	Foreground(line string) (string, bool)
	// Line is the command that runs line confined, from the directory it
	// was decided from: asked says the agent's user approved it; timeout
	// bounds it (0: the policy's own; background: the ceiling).
	Line(line string, asked bool, timeout time.Duration, background bool) string
}

// Call is one tool call of an agent, as its adapter read it.
type Call interface {
	// Session is the agent's session id; Tool the tool's name; Input the
	// tool's input, as JSON; Cwd the directory the call runs from.
	Session() string
	Tool() string
	Input() json.RawMessage
	Cwd() string
}

// Adapter is one agent's side of the hook: how its calls are read and
// decided as actions, and how the answer is written back. The command
// line registers each adapter (rein hook NAME) by one entry.
type Adapter interface {
	// Name is the agent's name on the command line (claude-code); Agent
	// its name in reasons (Claude Code).
	Name() string
	Agent() string
	// ProjectEnv is the variable the agent sets to the project's
	// directory for its hook, or "".
	ProjectEnv() string
	// OwnConfig are the agent's configuration paths in the workspace ws
	// and the home directory home, which the agent never writes.
	OwnConfig(ws, home string) []string
	// Parse reads one call; anything malformed is an error.
	Parse(data []byte) (Call, error)
	// Decide decides the call's actions with e (the stricter answer
	// wins).
	Decide(e *Engine, c Call) Decision
	// Confine rewrites an allowed or asked call whose commands run
	// through rein: UpdatedInput is the input the agent runs instead. A
	// denial is left as it is.
	Confine(c Call, d Decision, x Confiner) Decision
	// Encode writes the decision as the agent reads it.
	Encode(d Decision) ([]byte, error)
}

// decideRun decides a command line a tool runs in the agent's shell.
func (e *Engine) decideRun(cmd string) Decision {
	p, confined := e.Policy, e.Confined
	if len(cmd) > maxCommandBytes || strings.Count(cmd, "|")+strings.Count(cmd, ";")+strings.Count(cmd, "&") > maxSeparators {
		return Denied(fmt.Sprintf("a command over %d KiB or %d separators is not decided", maxCommandBytes>>10, maxSeparators))
	}
	dir := e.dir()
	// Unconfined, the agent's own shell runs the line: only what holds
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
func (e *Engine) decidePath(act policy.Act, path, cwd string) Decision {
	p, ws := e.Policy, e.Workspace
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
		lexical := e.decidePath(act, filepath.Clean(raw), "")
		// Not filepath.Dir, which would clean the .. away.
		i := strings.LastIndexByte(raw, '/')
		if real, err := filepath.EvalSymlinks(raw[:i]); err == nil {
			physical := e.decidePath(act, filepath.Join(real, raw[i+1:]), "")
			return Stricter(lexical, physical)
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
		if why := e.ownFiles(resolved); why != "" {
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

// ownFiles says why path is one a foreign agent must not write besides
// the policy's protected set, or "": git's files, and the agent's own
// configuration, which could remove the hook or add servers and hooks of
// its own.
func (e *Engine) ownFiles(path string) string {
	// A .git file or directory the agent writes is a repository git obeys
	// (its config runs commands: core.fsmonitor, hooks).
	if slices.Contains(strings.Split(path, "/"), ".git") {
		return fmt.Sprintf("write of %s: git's own files are written by git, not by the agent", path)
	}
	for _, p := range e.OwnConfig {
		if path == p || strings.HasPrefix(path, p+"/") {
			return fmt.Sprintf("write of %s: %s's own configuration (which could remove this hook) is not written by the agent", path, e.agent())
		}
	}
	return ""
}

var strength = map[Answer]int{Allow: 0, Ask: 1, Deny: 2}

// Stricter is the stricter of two decisions (deny, then ask, then allow);
// a tie is a's.
func Stricter(a, b Decision) Decision {
	if strength[b.Answer] > strength[a.Answer] {
		return b
	}
	return a
}

// fetchTarget is the net target of a fetched URL: its host, normalised as
// a browser would (lower case, no trailing dot, IDNA), with the URL's port,
// or 443 when it names none (Claude Code upgrades http to https), written
// as the egress proxy writes targets ("host:port", "[v6]:port"). An IP
// literal that is not a public address, or a numeric host form, is
// refused.
func fetchTarget(tool, raw string) (string, string) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Sprintf("%s of %q, which is not a URL with a host", tool, raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Sprintf("%s of a %q URL: only http and https are decided", tool, u.Scheme)
	}
	port := "443"
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Sprintf("%s of %q, whose port is not a port", tool, raw)
		}
		port = strconv.Itoa(n)
	}
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if _, err := netip.ParseAddr(name); err != nil {
		// A name as a browser sends it: IDNA to ASCII first.
		ascii, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", fmt.Sprintf("%s of host %q, which is not a valid name", tool, name)
		}
		name = ascii
	}
	// Then the egress proxy's own rule of what a host is.
	host, addr, why := netname.Host(name)
	switch {
	case why != "":
		return "", fmt.Sprintf("%s of host %q: %s", tool, host, why)
	case addr.IsValid() && (!addr.IsGlobalUnicast() || addr.IsPrivate()):
		return "", fmt.Sprintf("%s of %s, which is not a public address", tool, addr)
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
