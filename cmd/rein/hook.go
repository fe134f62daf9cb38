package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/workspace"
)

// hookTimeout bounds one hook answer; past it the answer is deny.
const hookTimeout = hook.Timeout

// maxConfinedBytes bounds the command the hook rewrites a Bash call to:
// Claude Code runs it as one argument of its shell, and Linux takes no
// argument longer than 128 KiB.
const maxConfinedBytes = 120 << 10

// maxHookInput bounds what the hook reads of its input.
const maxHookInput = 8 << 20

func newHookCmd(sf *scopeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Decide another agent's own tool calls with rein's policy",
	}
	var workspaceFlag string
	var noConfine bool
	var tf traceFlag
	cc := &cobra.Command{
		Use:   "claude-code",
		Short: "Claude Code's PreToolUse hook: read the call on stdin, answer allow, deny or ask",
		Long: `Read Claude Code's PreToolUse JSON on stdin and print its hook output
JSON: permissionDecision allow, deny or ask, with a reason naming the rule
and layer. Bash goes through rein's grammar and policy; Read, Write, Edit,
MultiEdit, NotebookEdit, Glob and Grep through the path rules and the
workspace; WebFetch and WebSearch through the net rules; MCP tools and any
other through the tool rules. Malformed input, an internal error or a
timeout answers deny. Every decision is recorded in the trace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			var once bool
			answer := func(d hook.Decision) {
				if once {
					return
				}
				once = true
				json.NewEncoder(out).Encode(d.Output())
			}
			answer(hook.Bounded(hookTimeout, func() hook.Decision {
				return decideHook(cmd, sf, workspaceFlag, &tf, !noConfine)
			}))
			return nil
		},
	}
	cc.Flags().StringVar(&workspaceFlag, "workspace", "", "the project (default: $CLAUDE_PROJECT_DIR, else the input's cwd)")
	cc.Flags().BoolVar(&noConfine, "no-confine", false, "decide Bash only, and let Claude Code run an allowed command unconfined in its own shell (by default it runs through rein shell, in rein's sandbox)")
	tf.register(cc)
	var settings string
	install := &cobra.Command{
		Use:   "install [--settings FILE]",
		Short: "Print, or merge into a settings.json, the hook entry that runs rein for every Claude Code tool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			// Claude Code runs the command with a shell: the path is quoted.
			entry := map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": shell.Quote(exe) + " hook claude-code", "timeout": 30}}}
			if settings == "" {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"hooks": map[string]any{"PreToolUse": []any{entry}}}, 0)
			}
			return mergeHook(settings, entry, cmd.OutOrStdout())
		},
	}
	install.Flags().StringVar(&settings, "settings", "", "merge into this settings.json (for example .claude/settings.json), keeping everything else in it")
	cmd.AddCommand(cc, install)
	return cmd
}

// decideHook reads the input, loads the project's policy, decides and
// records the decision.
func decideHook(cmd *cobra.Command, sf *scopeFlags, wsFlag string, tf *traceFlag, confine bool) hook.Decision {
	data, err := readHookInput(cmd.InOrStdin())
	if err != nil {
		return hook.Denied(err.Error())
	}
	return decideHookInput(data, sf, wsFlag, confine, func(p *policy.Policy, in *hook.Input, d hook.Decision) error {
		return recordHook(p, tf, in, d)
	}, nil)
}

// readHookInput reads a hook's input, at most 8 MiB.
func readHookInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading the hook input: %w", err)
	}
	if len(data) > maxHookInput {
		return nil, fmt.Errorf("the hook input is larger than 8 MiB")
	}
	return data, nil
}

// decideHookInput decides one hook input under the project's policy, as
// it is when asked (an edit to a policy file holds from the next call),
// and records the decision with record; a decision that cannot be
// recorded is a denial. pre, when set, may decide a call first.
func decideHookInput(data []byte, sf *scopeFlags, wsFlag string, confine bool, record func(*policy.Policy, *hook.Input, hook.Decision) error,
	pre func(*hook.Input) (hook.Decision, bool)) hook.Decision {
	in, err := hook.Parse(data)
	if err != nil {
		return hook.Denied(err.Error())
	}
	ws := wsFlag
	if ws == "" {
		ws = os.Getenv("CLAUDE_PROJECT_DIR")
	}
	if ws == "" {
		ws = in.Cwd
	}
	if ws == "" || !filepath.IsAbs(ws) {
		return hook.Denied("no project directory: pass --workspace or run from Claude Code (CLAUDE_PROJECT_DIR)")
	}
	// Claude Code runs its tools on the host, where ~ is the user's HOME.
	o := policy.Options{Workspace: ws, OrgFile: sf.org, UserFile: sf.user, ProjectFile: sf.project, OnHost: true}
	p, err := policy.Load(o)
	if err != nil {
		return hook.Denied("the policy: " + err.Error())
	}
	if p.Mode == policy.ModeAuto {
		// Auto mode grants what rein's sandbox confines; Claude Code's own
		// tools run unconfined, so the hook decides them as ask mode does.
		ask := policy.ModeAsk
		o.Mode = &ask
		if p, err = policy.Load(o); err != nil {
			return hook.Denied("the policy: " + err.Error())
		}
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		return hook.Denied("the workspace: " + err.Error())
	}
	d, done := hook.Decision{}, false
	if pre != nil {
		d, done = pre(in)
	}
	if !done {
		if confine {
			d = hook.DecideConfined(p, w, in)
		} else {
			d = hook.Decide(p, w, in)
		}
	}
	if home := p.Home; d.Answer == hook.Allow && (p.Workspace == "/" || home == p.Workspace || strings.HasPrefix(home, p.Workspace+"/")) {
		// The whole home directory as a workspace would make every dot
		// file writable and readable: nothing is allowed without asking.
		d = hook.Decision{Answer: hook.Ask, Reason: fmt.Sprintf("the project %s is (or holds) your home directory, so rein asks for everything: %s", p.Workspace, d.Reason), Verdict: d.Verdict}
	}
	if d.Opaque != nil && d.Answer != hook.Deny && !confine {
		// Opaque code is run only where rein's sandbox confines it.
		d = hook.Decision{Answer: hook.Deny, Reason: "opaque shell code, which rein runs only confined, and this hook runs with --no-confine: " + d.Reason, Verdict: d.Verdict, Opaque: d.Opaque}
	}
	if confine {
		exe, err := os.Executable()
		if err != nil {
			return hook.Denied("rein cannot name its own binary to confine the command: " + err.Error())
		}
		dir := in.Cwd
		if dir == "" || !filepath.IsAbs(dir) {
			dir = p.Workspace
		}
		d = hook.Confine(in, d, func(line string, asked bool, input map[string]any) string {
			if fg, ok := foreground(p, line, dir); ok {
				// One command ended by &: Claude Code runs it in the
				// background (a task the model reads and stops by its
				// id), and rein shell runs the command in the
				// foreground of that task.
				line = fg
				input["run_in_background"] = true
			}
			return confinedLine(exe, sf, p, line, dir, asked, confinedTimeout(input))
		})
		for _, v := range d.UpdatedInput {
			if c, ok := v.(string); ok && len(c) > maxConfinedBytes {
				// Claude Code hands the command to its shell as one
				// argument, which the kernel bounds (128 KiB).
				d = hook.Denied(fmt.Sprintf("the command, with the plan rein decided for it, is %d bytes, more than the %d a shell can be given: write large files with the Write tool", len(c), maxConfinedBytes))
			}
		}
	}
	if err := record(p, in, d); err != nil {
		return hook.Denied("the trace could not record the decision: " + err.Error())
	}
	return d
}

// confinedTimeout is how long rein lets a confined command run: Claude
// Code's own timeout for the call (milliseconds), or for a command it runs
// in the background, which it does not time, rein's ceiling; both at most
// the ceiling. Zero leaves the policy's default.
func confinedTimeout(input map[string]any) time.Duration {
	if bg, _ := input["run_in_background"].(bool); bg {
		return sandbox.MaxTimeout
	}
	ms, ok := input["timeout"].(float64)
	if !ok || ms <= 0 {
		return 0
	}
	return min(time.Duration(ms)*time.Millisecond, sandbox.MaxTimeout)
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

// recordHook records the decision as a step of the Claude Code session's
// run.
func recordHook(p *policy.Policy, tf *traceFlag, in *hook.Input, d hook.Decision) error {
	store, _, err := tf.openFor(p)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	run := "claude-code-" + sessionChars.ReplaceAllString(in.SessionID, "_")
	if runs, err := store.Steps(ctx, run); err == nil && len(runs) == 0 {
		// The session's first call starts its run; a second process
		// racing this one fails on the unique id, which is fine.
		store.Append(ctx, trace.Run{ID: run, StartedAt: time.Now(), Workspace: p.Workspace, Surface: "claude-code", Mode: p.Mode.String(), Source: "hook", PID: os.Getppid()})
	}
	_, err = store.AppendAll(ctx, hookRecords(run, in, d)...)
	return err
}

// hookRecords are the trace records of one hook decision: a step and its
// policy event.
func hookRecords(run string, in *hook.Input, d hook.Decision) []trace.Record {
	reason := headOf(d.Reason, hookKeptBytes)
	step := trace.Step{RunID: run, Tool: headOf(in.ToolName, 256), Args: headOf(string(in.ToolInput), hookKeptBytes), Status: d.Answer, Reason: reason,
		Observation: reason, StartedAt: time.Now()}
	ev := trace.PolicyEvent{RunID: run, Kind: "refusal", Decision: d.Answer, Reason: reason, At: time.Now()}
	if d.Answer != hook.Deny {
		ev.Kind = "decision"
	}
	if d.Verdict != nil && d.Verdict.Rule != nil {
		ev.Rule, ev.Layer, ev.File = d.Verdict.Rule.Rule, d.Verdict.Rule.Layer.String(), d.Verdict.Rule.File
	}
	return []trace.Record{step, ev}
}

// hookKeptBytes is how much of a hook call's input (and of the reason of
// its decision) the trace keeps: the head, with the size and digest of the
// whole. The input can be megabytes (a Write's content), and anything in a
// launched session can send one.
const hookKeptBytes = 16 << 10

// headOf is s when it is at most n bytes, else its first n bytes (to a
// character's start) and a note of its size and SHA-256.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[rein: %d bytes in all, sha256 %s; the trace keeps the first %d]", len(s), hex.EncodeToString(sum[:]), cut)
}

// mergeHook adds entry to the PreToolUse hooks of a settings file,
// keeping everything else; an entry running the same command is not
// added twice.
func mergeHook(path string, entry map[string]any, out io.Writer) error {
	settings := map[string]any{}
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return &exitError{exitUsage, fmt.Sprintf("%s is not a regular file (a link?): edit the file it names", path)}
		}
		mode = fi.Mode().Perm()
	}
	if data, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		if err := dec.Decode(&settings); err != nil {
			return &exitError{exitUsage, fmt.Sprintf("%s is not JSON: %v", path, err)}
		}
	} else if !os.IsNotExist(err) {
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
	f, err := os.CreateTemp(filepath.Dir(path), ".settings-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
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
		return err
	}
	fmt.Fprintf(out, "added to %s: rein decides every Claude Code tool call (%s)\n", path, want)
	return nil
}
