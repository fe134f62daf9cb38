package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// runFlags are the flags of rein exec and rein shell.
type runFlags struct {
	commonFlags
	dir     string
	approve string
	timeout time.Duration
	rung    string
	asJSON  bool
	limits  limitFlags
	net     netFlags
	trace   traceFlag
	// decided is the plan another process decided for the line (rein
	// shell --plan, which Claude Code's hook writes): the line runs only
	// as that plan.
	decided *shell.Line
}

func newExecCmd(sf *scopeFlags) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- PROGRAM ARG...",
		Short: "Decide an argv with the policy, then run it in the sandbox",
		Long: `Decide PROGRAM ARG... (used verbatim) with the policy; a denial prints
the rule and layer and exits 11 without running anything; an ask goes to
the terminal, or is denied when there is none (--approve all|none for
scripts). Then run it in the sandbox; the exit status is the program's.
It is one call of the exec tool through rein's router, recorded as a run
in the trace; its output streams to the terminal, secrets redacted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := shell.FromArgv(args); err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			return runDecided(cmd, sf, &rf, "exec", tool.ExecArgs{Argv: args, Timeout: rf.timeoutArg()})
		},
	}
	rf.register(cmd)
	return cmd
}

func newShellCmd(sf *scopeFlags) *cobra.Command {
	var rf runFlags
	var planJSON string
	cmd := &cobra.Command{
		Use:   "shell [flags] 'LINE'",
		Short: "Parse and decide a command line, then run it in the sandbox (never a shell)",
		Long: `Parse LINE with rein's grammar (exit 12 naming the refused construct),
decide every stage with the policy (exit 11 naming the rule and layer),
ask the terminal when the policy asks (--approve all|none for scripts),
then run the plan in the sandbox without a shell; the exit status is the
line's. It is one call of the shell tool through rein's router, recorded
as a run in the trace; its output streams to the terminal, secrets
redacted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A line bash would reject is shown under the line, with a
			// caret at the construct; the router parses the line again,
			// alike. A line outside the grammar runs as opaque shell
			// code, which the policy asks about.
			plan, err := shell.Parser{Home: bwrap.SandboxHome}.Plan(args[0])
			var ref *shell.Refusal
			if errors.As(err, &ref) {
				printRefusal(cmd.ErrOrStderr(), args[0], ref)
				return &exitError{code: exitRefuse}
			}
			if err == nil && plan.Background {
				// The shell tool starts such a line as a handle, which
				// lives as long as the run: this process.
				return &exitError{exitUsage, "the line ends with &, which starts a background handle that would end with this rein shell: run the command without the &, in the background of your own shell if you like (rein shell -- 'CMD' &)"}
			}
			if planJSON != "" {
				var decided shell.Line
				dec := json.NewDecoder(strings.NewReader(planJSON))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&decided); err != nil || len(decided.Pipelines) == 0 {
					return &exitError{exitUsage, fmt.Sprintf("--plan is not a plan of rein's grammar: %v", err)}
				}
				rf.decided = &decided
			}
			return runDecided(cmd, sf, &rf, "shell", tool.ShellArgs{Line: args[0], Timeout: rf.timeoutArg()})
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&planJSON, "plan", "", "the plan (JSON) decided for LINE by another process, such as Claude Code's hook: LINE runs as that plan, and is refused if it parses here to any other")
	return cmd
}

func (rf *runFlags) register(cmd *cobra.Command) {
	rf.commonFlags.register(cmd)
	rf.trace.register(cmd)
	f := cmd.Flags()
	f.StringVar(&rf.dir, "dir", "", "the directory the line is decided from and starts in, inside the workspace (default: the current directory when it is inside the workspace, else the workspace)")
	f.StringVar(&rf.approve, "approve", "", "answer for asked actions without a terminal: all, none, or line (the line's own asks approved, its network asks refused) (default: ask the terminal, or deny without one)")
	f.DurationVar(&rf.timeout, "timeout", 0, "kill the whole process tree after this long (default: the policy's sandbox.timeout)")
	f.StringVar(&rf.rung, "rung", "", "the sandbox rung: auto, bwrap, landlock or none (default: the policy's sandbox.rung)")
	f.BoolVar(&rf.asJSON, "json", false, "print the decision and the result as one object instead of streaming")
	rf.limits.register(f)
	rf.net.register(f, "")
}

// timeoutArg is the tool's timeout argument: the flag's, or "" for the
// policy's sandbox.timeout.
func (rf *runFlags) timeoutArg() string {
	if rf.timeout == 0 {
		return ""
	}
	return rf.timeout.String()
}

// startDir is where a line is decided from and starts, an absolute path
// inside the workspace ("" for its root): flag when given (it must lie inside the
// workspace), else the current directory when it does, else the root.
func startDir(flag, ws string) (string, error) {
	d := flag
	if d == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", nil
		}
		d = wd
	}
	abs, err := filepath.Abs(d)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	rel, rerr := filepath.Rel(ws, abs)
	inside := err == nil && rerr == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	switch {
	case inside && rel == ".":
		return "", nil
	case inside:
		return abs, nil
	case flag != "":
		return "", &exitError{exitUsage, fmt.Sprintf("--dir %s is not a directory inside the workspace %s", flag, ws)}
	}
	return "", nil
}

// runDecided is the life of a line from the command line: one call of
// the exec or shell tool through a router, as every call has (policy,
// approver, sandbox, the policy's limits, redaction, the trace), its
// output streamed to the terminal as it is produced.
func runDecided(cmd *cobra.Command, sf *scopeFlags, rf *runFlags, name string, args any) error {
	// The command names its tool itself: the flags layer allows it, as a
	// [tool] allow rule would, so that safe mode's default deny of an
	// unnamed tool does not stop it; a [tool] deny of a file still does.
	rf.extraRules = append(rf.net.rules(), policy.Rule{Act: policy.ActTool, Effect: policy.Allow, Pattern: name})
	rf.networkFlag = rf.net.network
	p, err := rf.load(sf)
	if err != nil {
		return err
	}
	approver, err := chooseApprover(rf.approve, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	limits, err := rf.limits.limits(p.Limits, p.Settings)
	if err != nil {
		return err
	}
	dir, err := startDir(rf.dir, p.Workspace)
	if err != nil {
		return err
	}
	store, red, err := rf.trace.openFor(p)
	if err != nil {
		return err
	}
	defer store.Close()
	reg, err := tool.Builtin()
	if err != nil {
		return err
	}
	prof := sandbox.Profile{Dir: dir, Rung: sandbox.Rung(rf.rung), Limits: limits}
	var netApprover policy.Approver
	if rf.approve == "line" {
		// The line was approved where it was asked (a Claude Code
		// prompt); the connections it makes were not.
		netApprover = policy.Refuse{Reason: "the command was approved, not its network: a connection the policy asks for is refused (add a net allow rule for the host)"}
	}
	r, err := tool.NewRouter(reg, tool.Config{Policy: p, Approver: approver, NetApprover: netApprover, Store: store, Redactor: red,
		Profile: prof, Source: "cli", Cold: true})
	if err != nil {
		return &exitError{exitUsage, err.Error()}
	}
	stderr := cmd.ErrOrStderr()
	if rung := cmp.Or(rf.rung, p.Sandbox.Rung); rung == string(sandbox.RungNone) {
		fmt.Fprintln(stderr, unconfinedWarning)
	}
	var verdict *policy.Verdict
	live := tool.Live{Decided: func(v *policy.Verdict) { verdict = v }}
	if rf.asJSON {
		// The full streams are spooled to a result directory instead, and
		// the result names the files.
		d, err := resultDir()
		if err != nil {
			r.Close("failed")
			return &exitError{exitSandbox, "making the result directory: " + err.Error()}
		}
		live.SpoolDir = d
	} else {
		var mu sync.Mutex
		live.Stdout, live.Stderr = cmd.OutOrStdout(), stderr
		live.Egress = func(ev netproxy.Event) {
			if ev.Refused == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "rein: egress refused: %s %s: %s\n", ev.Proto, policy.Printable(red.Redact(ev.Target)), policy.Printable(red.Redact(ev.Refused)))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	if rf.decided != nil {
		ctx = tool.WithDecided(ctx, rf.decided)
	}
	raw, _ := json.Marshal(args)
	env := r.Call(tool.WithLive(ctx, live), name, raw)
	r.Close(cmp.Or(map[tool.Status]string{tool.OK: "ok"}[env.Status], string(env.Status)))
	defer exportRun(stderr, p, store, red, r.RunID())
	if verdict == nil && env.Status == tool.Denied && env.Rule != "" {
		// A [tool] deny rule refused the tool itself.
		verdict = &policy.Verdict{Decision: policy.Deny, Reason: env.Reason, Stages: []policy.StageVerdict{}}
	}
	switch {
	case verdict != nil && verdict.Decision != policy.Allow:
		if rf.asJSON {
			return writeRedactedJSON(cmd.OutOrStdout(), red, map[string]any{"decision": verdict.Decision.String(), "reason": verdict.Reason, "stages": verdict.Stages}, exitDeny)
		}
		fmt.Fprintf(stderr, "rein: not run: %s: %s\n", verdict.Decision, policy.Printable(red.Redact(verdict.Reason)))
		return &exitError{code: exitDeny}
	case env.ExitCode == nil && verdict == nil:
		// Refused before the policy was asked (a timeout above the
		// ceiling).
		return &exitError{exitSandbox, policy.Printable(env.Reason)}
	case env.ExitCode == nil:
		return &exitError{exitSandbox, fmt.Sprintf("sandbox: %s: %s", env.Status, policy.Printable(env.Reason))}
	}
	res := sandboxResult(env)
	if rf.asJSON {
		if err := writeRedactedJSON(cmd.OutOrStdout(), red, map[string]any{"decision": "allow", "reason": verdict.Reason, "stages": verdict.Stages, "result": res}, 0); err != nil {
			return err
		}
	} else {
		if res.RungNote != "" {
			fmt.Fprintf(stderr, "rein: ran on the %s rung, the strongest that runs here (%s)\n", res.Rung, res.RungNote)
		}
		if res.Poisoned != "" {
			fmt.Fprintf(stderr, "rein: warning: %s\n", res.Poisoned)
		}
		if res.Reason != "" {
			fmt.Fprintf(stderr, "rein: %s: %s\n", res.Status, res.Reason)
		}
	}
	if code := exitOf(res); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// sandboxResult is the sandbox's result of a command the router ran, as
// its envelope gives it (redacted); what the envelope alone says when the
// result did not come back whole.
func sandboxResult(env *tool.Envelope) *sandbox.Result {
	res := &sandbox.Result{Status: sandbox.Status(env.Status), ExitCode: *env.ExitCode, Reason: env.Reason, Rung: env.Rung, LimitHit: env.LimitHit}
	if data, err := json.Marshal(env.Result().Data); err == nil {
		var whole sandbox.Result
		if json.Unmarshal(data, &whole) == nil && whole.Status != "" {
			return &whole
		}
	}
	return res
}

// writeRedactedJSON is writeJSON through the redactor: the stages name
// the line's words, which may hold a secret.
func writeRedactedJSON(w io.Writer, red *trace.Redactor, v any, code int) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(red.Redact(string(data))), "", "  "); err != nil {
		return fmt.Errorf("printing the result: %w", err)
	}
	out.WriteByte('\n')
	if _, err := out.WriteTo(w); err != nil {
		return err
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// chooseApprover picks who answers asked actions: the flag, else the
// terminal when stdin is one, else nobody (so an ask is a deny).
func chooseApprover(flag string, prompt io.Writer) (policy.Approver, error) {
	switch flag {
	case "all", "line":
		return policy.AllowAll{}, nil
	case "none":
		return policy.DenyAll{}, nil
	case "":
		if isTerminal(os.Stdin) {
			return policy.Terminal{In: os.Stdin, Out: prompt}, nil
		}
		return nil, nil
	}
	return nil, &exitError{exitUsage, fmt.Sprintf("--approve %q: use all, line or none", flag)}
}

// runEnv is the environment a decided line runs with, as the router
// builds it.
func runEnv(env []string, p *policy.Policy) []string {
	return tool.Env(env, p)
}
