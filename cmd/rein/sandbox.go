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
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
)

// exitSandbox is the status when the sandbox could not run the command at
// all (as 125 is for container runtimes).
const exitSandbox = 125

func newSandboxCmd() *cobra.Command {
	var (
		workspace string
		readOnly  bool
		timeout   time.Duration
		rung      string
		asJSON    bool
		readPaths []string
		lf        limitFlags
		nf        netFlags
	)
	cmd := &cobra.Command{
		Use:   "sandbox [flags] -- PROGRAM ARG...",
		Short: "Run a program confined, with no policy (the execution layer alone)",
		Long: `Run PROGRAM with its arguments, used verbatim, in the sandbox: the
workspace at its own path, system directories read-only, a private HOME
and /tmp, no network (unless --network says otherwise), no host
processes, the whole tree killed at the timeout. No policy file is
consulted: this confines any program, as one would wrap an MCP server.
With --network proxy, only the hosts --allow-host names are reachable.

The exit status is the program's; 124 after a timeout; 125 when the
sandbox could not run it, or when the program succeeded but rein had to
put back what it planted for the host to obey (the reason is printed).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if workspace == "" {
				wd, err := os.Getwd()
				if err != nil {
					return &exitError{exitUsage, "cannot find the current directory; pass --workspace"}
				}
				workspace = wd
			}
			ws, err := filepath.Abs(workspace)
			if err == nil {
				ws, err = filepath.EvalSymlinks(ws)
			}
			if err != nil {
				return &exitError{exitUsage, fmt.Sprintf("--workspace %s: %v", workspace, err)}
			}
			line, err := shell.FromArgv(args)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			limits, err := lf.limits(policy.Limits{}, nil)
			if err != nil {
				return err
			}
			// No policy file: the network mode, hosts and read paths are
			// the flags', vetted by the builtin layer, whose protected set
			// also keeps the host caches that may be exposed.
			mode := policy.ModeAuto
			pol, err := policy.Load(policy.Options{Workspace: ws, NoFiles: true, Mode: &mode, Rules: nf.rules(), Network: nf.network, ReadPaths: readPaths})
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			p := sandbox.Profile{Workspace: ws, ReadOnly: readOnly, Timeout: timeout, Rung: sandbox.Rung(rung), Env: sandboxEnv(os.Environ()), Limits: limits,
				HostReadPaths: pol.Sandbox.ReadPaths, HostCaches: tool.HostCaches(os.Environ(), pol), Hidden: tool.Hidden(pol)}
			if nf.network != string(sandbox.NetworkOff) || len(nf.allowHosts) > 0 {
				nf.profile(&p, pol, allowHostsOnly{}, cmd.ErrOrStderr(), asJSON)
			}
			res, err := runSandboxed(cmd, ctx, line, p, asJSON)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else if res.Reason != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "rein: %s: %s\n", res.Status, res.Reason)
			}
			if code := exitOf(res); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workspace, "workspace", "", "workspace root, mounted read-write at its own path (default: the current directory)")
	f.BoolVar(&readOnly, "read-only", false, "mount the workspace read-only")
	f.DurationVar(&timeout, "timeout", sandbox.DefaultTimeout, "kill the whole process tree after this long (at most 10m)")
	f.StringVar(&rung, "rung", "auto", "auto (the strongest that runs here), bwrap, landlock, or none (unconfined, only by name)")
	f.BoolVar(&asJSON, "json", false, "print the result object instead of streaming the output")
	f.StringArrayVar(&readPaths, "read-path", nil, "let the program read this host directory at its own path (repeatable; never a protected path)")
	lf.register(f)
	nf.register(f, "off")
	return cmd
}

// exitOf is a run's exit status: the program's, or exitSandbox when the
// program succeeded but the run did not (rein put back what it planted
// in the workspace for the host to obey, say).
func exitOf(res *sandbox.Result) int {
	if res.ExitCode == 0 && res.Status != sandbox.OK {
		return exitSandbox
	}
	return res.ExitCode
}

// unconfinedWarning is printed before a command runs on the none rung.
const unconfinedWarning = "rein: warning: running unconfined (rung none): no filesystem, network or process confinement; only the timeout and the tree kill apply"

// runSandboxed runs line under p, streaming its output live unless asJSON,
// where the full streams are spooled to a result directory instead and
// the result names the files.
func runSandboxed(cmd *cobra.Command, ctx context.Context, line *shell.Line, p sandbox.Profile, asJSON bool) (*sandbox.Result, error) {
	stderr := cmd.ErrOrStderr()
	if p.Rung == sandbox.RungNone {
		fmt.Fprintln(stderr, unconfinedWarning)
	}
	var stdout io.Writer = cmd.OutOrStdout()
	if asJSON {
		stdout, stderr = nil, nil
		dir, err := resultDir()
		if err != nil {
			return nil, &exitError{exitSandbox, "making the result directory: " + err.Error()}
		}
		p.SpoolDir = dir
	}
	res, err := sandbox.Run(ctx, line, p, stdout, stderr)
	var se *sandbox.Error
	if errors.As(err, &se) {
		return nil, &exitError{exitSandbox, se.Error()}
	}
	if err != nil {
		return nil, &exitError{exitSandbox, err.Error()}
	}
	if !asJSON && res.RungNote != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: ran on the %s rung, the strongest that runs here (%s)\n", res.Rung, res.RungNote)
	}
	if !asJSON && res.Poisoned != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "rein: warning: %s\n", res.Poisoned)
	}
	return res, nil
}

// resultDir makes a directory for one run's full output under rein's
// cache, and removes those older than a day.
func resultDir() (string, error) {
	base := filepath.Join(sandbox.CacheDir(), "results")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	if old, err := os.ReadDir(base); err == nil {
		for _, e := range old {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		}
	}
	return os.MkdirTemp(base, time.Now().UTC().Format("20060102T150405-"))
}

// sandboxEnv keeps only what a confined program needs of the caller's
// environment: the locale, the terminal type and PATH (which the sandbox
// keeps to the directories its view exposes). Everything else,
// credentials above all, stays outside.
func sandboxEnv(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if k == "LANG" || k == "TERM" || k == "PATH" || strings.HasPrefix(k, "LC_") {
			out = append(out, e)
		}
	}
	return out
}
