package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/claudecode"
	"github.com/reinhq/rein/hook/pi"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
)

// hookTimeout bounds one hook answer; past it the answer is deny.
const hookTimeout = hook.Timeout

// hookAgent is one agent rein hook answers for: the adapter that reads
// and writes its wire format, the subcommand's help, and how rein hook
// install prints (settings "") or installs into its settings what runs
// rein for every tool call of it.
type hookAgent struct {
	adapter     hook.Adapter
	short, long string
	install     func(exe, settings string, out io.Writer) error
}

// hookAgents are the agents rein hook answers for, one entry each.
var hookAgents = []hookAgent{
	{pi.Adapter{}, "Pi's gate: read a tool call from rein's Pi extension on stdin, answer allow, deny or ask",
		`Read one Pi tool call as rein's extension for Pi sends it (rein hook install
--agent pi prints the extension) and print rein's answer: allow, deny or
ask, with a reason naming the rule and layer. bash goes through rein's
grammar and policy, and an allowed line is rewritten to run through rein
shell, in rein's sandbox; read, write and edit through the path rules, the
protected set and the workspace, read in every spelling Pi's read may
open; grep, find and ls as searches; any other tool through the tool
rules. Malformed input, an internal error or a timeout answers deny. Every
decision is recorded in the trace.`, installPi},
	{claudecode.Adapter{}, "Claude Code's PreToolUse hook: read the call on stdin, answer allow, deny or ask",
		`Read Claude Code's PreToolUse JSON on stdin and print its hook output
JSON: permissionDecision allow, deny or ask, with a reason naming the rule
and layer. Bash goes through rein's grammar and policy; Read, Write, Edit,
MultiEdit, NotebookEdit, Glob and Grep through the path rules and the
workspace; WebFetch and WebSearch through the net rules; MCP tools and any
other through the tool rules. Malformed input, an internal error or a
timeout answers deny. Every decision is recorded in the trace.`, installClaudeCode},
}

func newHookCmd(sf *scopeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Decide another agent's own tool calls with rein's policy",
	}
	for _, ag := range hookAgents {
		var workspaceFlag string
		var noConfine bool
		var tf traceFlag
		a := ag.adapter
		sub := &cobra.Command{
			Use:   a.Name(),
			Short: ag.short,
			Long:  ag.long,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				d := hook.Bounded(hookTimeout, func() hook.Decision {
					return decideHook(cmd, a, sf, workspaceFlag, &tf, !noConfine)
				})
				return hook.Send(cmd.OutOrStdout(), a, d)
			},
		}
		project := "the input's cwd"
		if env := a.ProjectEnv(); env != "" {
			project = "$" + env + ", else the input's cwd"
		}
		sub.Flags().StringVar(&workspaceFlag, "workspace", "", "the project (default: "+project+")")
		sub.Flags().BoolVar(&noConfine, "no-confine", false, "decide commands only, and let the agent run an allowed command unconfined in its own shell (by default it runs through rein shell, in rein's sandbox)")
		tf.register(sub)
		cmd.AddCommand(sub)
	}
	var settings, agentName string
	install := &cobra.Command{
		Use:   "install [--agent claude-code|pi] [--settings FILE]",
		Short: "Print, or install into the agent's settings, what runs rein's hook for every tool call of Claude Code (or Pi)",
		Long: `For claude-code (the default): print the PreToolUse hook entry that runs
rein hook claude-code for every tool, or merge it into a settings.json.

For pi: print rein's extension for Pi (plain JavaScript, which runs rein
hook pi on every tool call and blocks the call on anything but rein's
allow); with --settings FILE (Pi's settings.json, for example
~/.pi/agent/settings.json), write it beside that file as rein/gate.js and
add its path to the file's "extensions", keeping everything else.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			var names []string
			for _, a := range hookAgents {
				if a.adapter.Name() == agentName {
					return a.install(exe, settings, cmd.OutOrStdout())
				}
				names = append(names, a.adapter.Name())
			}
			return &exitError{exitUsage, fmt.Sprintf("--agent %q: one of %s", agentName, strings.Join(names, ", "))}
		},
	}
	install.Flags().StringVar(&settings, "settings", "", "install into this settings.json (Claude Code's, for example .claude/settings.json; Pi's, for example ~/.pi/agent/settings.json), keeping everything else in it")
	install.Flags().StringVar(&agentName, "agent", "claude-code", "the agent: claude-code or pi")
	cmd.AddCommand(install)
	return cmd
}

// decideHook reads the input, loads the project's policy, decides and
// records the decision.
func decideHook(cmd *cobra.Command, a hook.Adapter, sf *scopeFlags, wsFlag string, tf *traceFlag, confine bool) hook.Decision {
	data, err := hook.ReadInput(cmd.InOrStdin())
	if err != nil {
		return hook.Denied(err.Error())
	}
	o := hook.Options{Workspace: wsFlag, Policy: policy.Options{OrgFile: sf.org, UserFile: sf.user, ProjectFile: sf.project}, Confined: confine,
		Record: func(p *policy.Policy, c hook.Call, d hook.Decision) error { return recordHook(a, p, tf, c, d) }}
	if confine {
		o.Confiner = func(p *policy.Policy, dir string) (hook.Confiner, error) {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("rein cannot name its own binary to confine the command: %w", err)
			}
			return confiner{exe: exe, sf: sf, p: p, dir: dir}, nil
		}
	}
	return hook.Respond(a, data, o)
}

// confiner runs a line the hook decided through rein shell, in rein's
// sandbox, from the directory it was decided from.
type confiner struct {
	exe string
	sf  *scopeFlags
	p   *policy.Policy
	dir string
}

func (x confiner) Foreground(line string) (string, bool) { return foreground(x.p, line, x.dir) }

func (x confiner) Line(line string, asked bool, timeout time.Duration, background bool) string {
	return confinedLine(x.exe, x.sf, x.p, line, x.dir, asked, confinedTimeout(timeout, background))
}

// confinedTimeout is how long rein lets a confined command run: the
// agent's own timeout for the call, or for a command it runs in the
// background, which it does not time, rein's ceiling; both at most the
// ceiling. Zero leaves the policy's default.
func confinedTimeout(timeout time.Duration, background bool) time.Duration {
	if background {
		return sandbox.MaxTimeout
	}
	return min(timeout, sandbox.MaxTimeout)
}

// foreground is line without the & that ends it, when its plan is one
// command run in the background.
func foreground(p *policy.Policy, line, dir string) (string, bool) {
	plan, err := confinedParser(p, dir).Plan(line)
	if err != nil || !plan.Background || plan.BackgroundAt >= len(line) || line[plan.BackgroundAt] != '&' {
		return "", false
	}
	return line[:plan.BackgroundAt] + " " + line[plan.BackgroundAt+1:], true
}

// confinedParser is the parser of the plan a confined line runs as, from
// dir: the sandbox's HOME, globs over the workspace.
func confinedParser(p *policy.Policy, dir string) shell.Parser {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	parser := p.LineParser(dir)
	parser.Home = bwrap.SandboxHome
	return parser
}

// confinedLine is the command Claude Code's shell runs in place of line:
// rein shell, with the same policy files and mode the hook decided with,
// runs line in rein's sandbox from the directory it was decided from. A line the hook
// allowed refuses anything it would now ask about; one asked and approved
// in Claude Code lets those asks through (a deny still holds).
func confinedLine(exe string, sf *scopeFlags, p *policy.Policy, line, dir string, asked bool, timeout time.Duration) string {
	// An asked line was approved in Claude Code's prompt, which showed
	// the line: its own asks are approved, never the connections it
	// makes, which no one was shown (they are refused unless a net rule
	// allows the host).
	approve := "none"
	if asked {
		approve = "line"
	}
	// The directory the hook decided the line from, where Claude Code runs
	// it: a line approved for one directory must not run in another.
	words := []string{exe, "shell", "--workspace", p.Workspace, "--dir", dir, "--mode", p.Mode.String(), "--approve", approve}
	if timeout > 0 {
		words = append(words, "--timeout", timeout.String())
	}
	for _, f := range [][2]string{{"--org-policy", sf.org}, {"--user-policy", sf.user}, {"--project-policy", sf.project}} {
		if f[1] != "" {
			words = append(words, f[0], f[1])
		}
	}
	// The plan the sandbox will run, as this process parsed it: rein
	// shell runs that plan, and refuses if the line parses there to any
	// other (another HOME, other files, another rein).
	if plan, err := confinedParser(p, dir).Plan(line); err == nil {
		if data, err := json.Marshal(plan); err == nil {
			words = append(words, "--plan", string(data))
		}
	}
	words = append(words, "--", line)
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shell.Quote(w)
	}
	return strings.Join(quoted, " ")
}

var sessionChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// recordHook records the decision as a step of the agent's session's
// run.
func recordHook(a hook.Adapter, p *policy.Policy, tf *traceFlag, c hook.Call, d hook.Decision) error {
	store, _, err := tf.openFor(p)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	run := a.Name() + "-" + sessionChars.ReplaceAllString(c.Session(), "_")
	if runs, err := store.Steps(ctx, run); err == nil && len(runs) == 0 {
		// The session's first call starts its run; a second process
		// racing this one fails on the unique id, which is fine.
		store.Append(ctx, trace.Run{ID: run, StartedAt: time.Now(), Workspace: p.Workspace, Surface: a.Name(), Mode: p.Mode.String(), Source: "hook", PID: os.Getppid()})
	}
	_, err = store.AppendAll(ctx, hook.Records(run, c, d)...)
	return err
}

// mergeHook adds entry to the PreToolUse hooks of a settings file,
// keeping everything else; an entry running the same command is not
// added twice.
func mergeHook(path string, entry map[string]any, out io.Writer) error {
	settings, mode, err := readSettings(path)
	if err != nil {
		return err
	}
	hooks, ok := settings["hooks"].(map[string]any)
	if _, present := settings["hooks"]; present && !ok {
		return &exitError{exitUsage, fmt.Sprintf("%s: \"hooks\" is not an object", path)}
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	pre, ok := hooks["PreToolUse"].([]any)
	if _, present := hooks["PreToolUse"]; present && !ok {
		return &exitError{exitUsage, fmt.Sprintf("%s: \"hooks.PreToolUse\" is not an array", path)}
	}
	want := entry["hooks"].([]any)[0].(map[string]any)["command"]
	for _, e := range pre {
		if m, ok := e.(map[string]any); ok && (m["matcher"] == "*" || m["matcher"] == "" || m["matcher"] == nil) {
			if hs, ok := m["hooks"].([]any); ok {
				for _, h := range hs {
					if hm, ok := h.(map[string]any); ok && hm["command"] == want {
						fmt.Fprintf(out, "%s already runs %s for every tool\n", path, want)
						return nil
					}
				}
			}
		}
	}
	hooks["PreToolUse"] = append(pre, entry)
	settings["hooks"] = hooks
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n'), mode); err != nil {
		return err
	}
	fmt.Fprintf(out, "added to %s: rein decides every Claude Code tool call (%s)\n", path, want)
	return nil
}

// installClaudeCode prints the PreToolUse entry that runs rein hook
// claude-code for every tool, or merges it into the settings file.
func installClaudeCode(exe, settings string, out io.Writer) error {
	// Claude Code runs the command with a shell: the path is quoted.
	entry := map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": shell.Quote(exe) + " hook claude-code", "timeout": 30}}}
	if settings == "" {
		return writeJSON(out, map[string]any{"hooks": map[string]any{"PreToolUse": []any{entry}}}, 0)
	}
	return mergeHook(settings, entry, out)
}

// installPi prints rein's extension for Pi, or writes it beside Pi's
// settings file (rein/gate.js in its directory, replaced if there) and
// adds its path to the file's "extensions", keeping everything else; an
// entry already there is not added twice.
func installPi(exe, path string, out io.Writer) error {
	ext := pi.Extension([]string{exe, "hook", "pi"})
	if path == "" {
		_, err := io.WriteString(out, ext)
		return err
	}
	settings, mode, err := readSettings(path)
	if err != nil {
		return err
	}
	exts, ok := settings["extensions"].([]any)
	if _, present := settings["extensions"]; present && !ok {
		return &exitError{exitUsage, fmt.Sprintf("%s: \"extensions\" is not an array", path)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	gate := filepath.Join(filepath.Dir(abs), "rein", "gate.js")
	if err := os.MkdirAll(filepath.Dir(gate), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(gate, []byte(ext), 0o644); err != nil {
		return err
	}
	for _, e := range exts {
		if e == gate {
			fmt.Fprintf(out, "wrote %s; %s already loads it for every Pi session\n", gate, path)
			return nil
		}
	}
	settings["extensions"] = append(exts, gate)
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n'), mode); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s and added it to %s: rein decides every Pi tool call\n", gate, path)
	return nil
}

// writeFileAtomic writes data to path through a temporary file in its
// directory, renamed over it: a reader sees the old file or the new one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// readSettings reads an agent's settings file, a JSON object ({} when it
// does not exist yet), with the mode to write it back with; a link or a
// file that is not JSON is refused.
func readSettings(path string) (map[string]any, os.FileMode, error) {
	settings := map[string]any{}
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, 0, &exitError{exitUsage, fmt.Sprintf("%s is not a regular file (a link?): edit the file it names", path)}
		}
		mode = fi.Mode().Perm()
	}
	if data, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		if err := dec.Decode(&settings); err != nil {
			return nil, 0, &exitError{exitUsage, fmt.Sprintf("%s is not JSON: %v", path, err)}
		}
		if settings == nil {
			// The file says null.
			settings = map[string]any{}
		}
	} else if !os.IsNotExist(err) {
		return nil, 0, err
	}
	return settings, mode, nil
}
