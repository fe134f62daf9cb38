package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
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
}

func newExecCmd(sf *scopeFlags) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- PROGRAM ARG...",
		Short: "Decide an argv with the policy, then run it in the sandbox",
		Long: `Decide PROGRAM ARG... (used verbatim) with the policy; a denial prints
the rule and layer and exits 11 without running anything; an ask goes to
the terminal, or is denied when there is none (--approve all|none for
scripts). Then run it in the sandbox; the exit status is the program's.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			line, err := shell.FromArgv(args)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			return runDecided(cmd, sf, &rf, line, strings.Join(args, " "))
		},
	}
	rf.register(cmd)
	return cmd
}

func newShellCmd(sf *scopeFlags) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "shell [flags] 'LINE'",
		Short: "Parse and decide a command line, then run it in the sandbox (never a shell)",
		Long: `Parse LINE with rein's grammar (exit 12 naming the refused construct),
decide every stage with the policy (exit 11 naming the rule and layer),
ask the terminal when the policy asks (--approve all|none for scripts),
then run the plan in the sandbox without a shell; the exit status is the
line's.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			line, err := shell.Parser{Home: bwrap.SandboxHome}.Parse(args[0])
			var ref *shell.Refusal
			if errors.As(err, &ref) {
				printRefusal(cmd.ErrOrStderr(), args[0], ref)
				return &exitError{code: exitRefuse}
			}
			return runDecided(cmd, sf, &rf, line, args[0])
		},
	}
	rf.register(cmd)
	return cmd
}

func (rf *runFlags) register(cmd *cobra.Command) {
	rf.commonFlags.register(cmd)
	f := cmd.Flags()
	f.StringVar(&rf.dir, "dir", "", "the directory the line is decided from and starts in, inside the workspace (default: the current directory when it is inside the workspace, else the workspace)")
	f.StringVar(&rf.approve, "approve", "", "answer for asked actions without a terminal: all or none (default: ask the terminal, or deny without one)")
	f.DurationVar(&rf.timeout, "timeout", 0, "kill the whole process tree after this long (default: the policy's sandbox.timeout)")
	f.StringVar(&rf.rung, "rung", "", "the sandbox rung: auto, bwrap, landlock or none (default: the policy's sandbox.rung)")
	f.BoolVar(&rf.asJSON, "json", false, "print the decision and the result as one object instead of streaming")
	rf.limits.register(f)
	rf.net.register(f, "")
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

// runDecided is the life of a line from the command line: policy, approver,
// check again, sandbox.
func runDecided(cmd *cobra.Command, sf *scopeFlags, rf *runFlags, line *shell.Line, text string) error {
	rf.extraRules = rf.net.rules()
	rf.networkFlag = rf.net.network
	p, err := rf.load(sf)
	if err != nil {
		return err
	}
	approver, err := chooseApprover(rf.approve, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	timeout := rf.timeout
	if timeout == 0 {
		timeout = p.Sandbox.Timeout
	}
	if timeout > p.Sandbox.MaxTimeout {
		return &exitError{exitSandbox, fmt.Sprintf("timeout %s is above the policy's %s ceiling (sandbox.max_timeout)", timeout, p.Sandbox.MaxTimeout)}
	}
	limits, err := rf.limits.limits(p.Limits, p.Settings)
	if err != nil {
		return err
	}
	dir, err := startDir(rf.dir, p.Workspace)
	if err != nil {
		return err
	}
	prof := sandbox.Profile{
		Workspace: p.Workspace, Dir: dir, ReadOnly: p.ReadOnly || !policy.ForMode(p.Mode).WorkspaceWrite,
		Timeout: timeout, Rung: p.Sandbox.Rung, Env: runEnv(os.Environ(), p), Limits: limits,
		HostReadPaths: p.Sandbox.ReadPaths, HostCaches: tool.HostCaches(os.Environ(), p), Hidden: tool.Hidden(p),
	}
	if rf.rung != "" {
		prof.Rung = rf.rung
	}
	rf.net.profile(&prof, p, approver, cmd.ErrOrStderr(), rf.asJSON)
	// The policy decides the programs the sandbox's PATH finds, which are
	// the ones that run.
	sandbox.ResolvePrograms(line, prof)
	from := p.Workspace
	if dir != "" {
		from = dir
	}
	check := func() *policy.Verdict { return p.CheckIn(line, from) }
	v := policy.Resolve(ctx, approver, check(), check)
	if v.Decision != policy.Allow {
		if rf.asJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"decision": v.Decision.String(), "reason": v.Reason, "stages": v.Stages}, exitDeny)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: not run: %s: %s\n", v.Decision, policy.Printable(v.Reason))
		return &exitError{code: exitDeny}
	}
	res, err := runSandboxed(cmd, ctx, line, prof, rf.asJSON)
	if err != nil {
		return err
	}
	if rf.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"decision": "allow", "reason": v.Reason, "stages": v.Stages, "result": res}); err != nil {
			return err
		}
	} else if res.Reason != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: %s: %s\n", res.Status, res.Reason)
	}
	if code := exitOf(res); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// chooseApprover picks who answers asked actions: the flag, else the
// terminal when stdin is one, else nobody (so an ask is a deny).
func chooseApprover(flag string, prompt io.Writer) (policy.Approver, error) {
	switch flag {
	case "all":
		return policy.AllowAll{}, nil
	case "none":
		return policy.DenyAll{}, nil
	case "":
		if _, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err == nil {
			return policy.Terminal{In: os.Stdin, Out: prompt}, nil
		}
		return nil, nil
	}
	return nil, &exitError{exitUsage, fmt.Sprintf("--approve %q: use all or none", flag)}
}

// runEnv is the environment a decided line runs with, as the router
// builds it.
func runEnv(env []string, p *policy.Policy) []string {
	return tool.Env(env, p)
}
