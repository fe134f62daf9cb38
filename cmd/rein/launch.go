//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/claudecode"
	"github.com/reinhq/rein/launch/codex"
	lpi "github.com/reinhq/rein/launch/pi"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
)

// The exit statuses of rein launch that are rein's own (launch's); any
// other is the program's.
const (
	exitLaunchBundle  = launch.ExitBundle
	exitLaunchCreds   = launch.ExitCreds
	exitLaunchRefused = launch.ExitRefused
	exitLaunchTimeout = launch.ExitTimeout
)

// defaultLaunchTimeout bounds a session unless --timeout says otherwise.
const defaultLaunchTimeout = 12 * time.Hour

func newLaunchCmd(sf *scopeFlags) *cobra.Command {
	var (
		lo  launchOptions
		tf  traceFlag
		cfg string
	)
	cmd := &cobra.Command{
		Use:   "launch [flags] AGENT [-- AGENT_ARGS...] | launch [flags] -- PROGRAM ARGS...",
		Short: "Run Claude Code, Pi or Codex (or any agent CLI) whole inside rein's sandbox, as a managed session",
		Long: `Run an agent's CLI inside rein's bwrap sandbox for a whole session: its own
pid namespace, the workspace writable (rein's protected paths read-only or
hidden), and a private HOME holding only rein's launch bundle. The session
reaches its model through rein's gateway alone, on its own loopback: the
agent gets a placeholder key, and rein's process sends each call to the
model's API with the real key, which never enters the session, records it
(tokens, cost, latency) and bounds the session (--max-tokens, --max-cost).
Nothing else is reachable but the hosts --allow-host names, through an
egress proxy. The session is refused when the environment holds other
credentials (naming them).

For claude-code, rein writes a launch bundle (prompt.md, settings.json with
rein's hook, mcp.json with rein mcp, policy.json, manifest.json with the
sha256 of each file and of rein's binary, keyed with rein's trace key),
verifies it, and starts Claude Code with it. For pi, the bundle holds
rein's extension for Pi and a models.json instead, and Pi starts with that
extension and nothing else loaded. For codex, the bundle holds Codex's
config.toml (its model provider the gateway, its own sandbox off inside
rein's, rein mcp as its MCP server). Every tool call Claude Code or Pi
makes is decided by rein's gate on the host; a gate that
crashes, hangs or is missing blocks the call. Flags that skip the gate are
refused. The session is one run in the trace: every decision, model call,
MCP call and connection under it.

Exit status: the program's own; 120 the session reached its budget; 121
the bundle failed its verification; 122 credentials in the environment;
123 a refused argument; 124 the session's timeout; 125 the sandbox could
not run; 127 the program was not found; 128+N stopped by signal N (SIGINT
and SIGTERM are passed on, and the whole tree is gone after).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case len(args) > 0 && launchAgent(args[0]) != nil && (dash == 1 || (dash == -1 && len(args) == 1)):
				lo.agent, lo.args = launchAgent(args[0]), args[1:]
			case dash == 0 && len(args) > 0:
				lo.args = args
			default:
				return &exitError{exitUsage, fmt.Sprintf("usage: rein launch [flags] AGENT [-- AGENT_ARGS...] (AGENT: %s), or rein launch [flags] -- PROGRAM ARGS...", strings.Join(launchAgentNames(), ", "))}
			}
			lo.sf, lo.tf, lo.writeOnly = sf, &tf, cfg
			return runLaunch(cmd, &lo)
		},
	}
	f := cmd.Flags()
	f.StringVar(&lo.workspace, "workspace", "", "the project, writable in the session (default: the current directory)")
	f.DurationVar(&lo.timeout, "timeout", defaultLaunchTimeout, "end the session, its whole tree, after this long (at most 24h)")
	// --NAME PATH for each agent, NAME its program's name (--claude, --pi).
	lo.programs = map[string]*string{}
	for _, a := range launchAgents {
		lo.programs[a.Name()] = f.String(a.Program(), "", fmt.Sprintf("%s's binary (default: %s on PATH)", a.Title(), a.Program()))
	}
	f.StringArrayVar(&lo.keyEnv, "key-env", nil, "a variable holding the model's key (repeatable; the first set is used): an agent's stays with rein's gateway, which sends it to the model, and the session gets a placeholder; a program gets it as it is (default: the agent's, e.g. ANTHROPIC_API_KEY)")
	f.Int64Var(&lo.maxTokens, "max-tokens", 0, "end the session once its model calls have used this many tokens (input, output and cache), refusing the next call (exit 120)")
	f.Float64Var(&lo.maxCost, "max-cost", 0, "end the session once its model calls cost this many dollars by the policy's prices ([[provider.price]]), refusing the next call (exit 120)")
	f.StringArrayVar(&lo.env, "env", nil, "pass this variable of the environment into the session (repeatable; never a credential)")
	f.StringArrayVar(&lo.allowHosts, "allow-host", nil, "let the session reach this host (host or host:port; repeatable) besides the model API's")
	f.StringVar(&lo.bundle, "bundle", "", "launch from this bundle, written earlier with --write-bundle, after verifying it")
	f.StringVar(&cfg, "write-bundle", "", "write the launch bundle into this new directory and stop (claude-code)")
	tf.register(cmd)
	return cmd
}

// launchOptions are a launch's flags and arguments.
type launchOptions struct {
	sf *scopeFlags
	tf *traceFlag
	// agent is the agent launched, or nil for a program.
	agent     launch.Agent
	args      []string
	workspace string
	timeout   time.Duration
	// programs are the --NAME PATH flags, by agent.
	programs   map[string]*string
	keyEnv     []string
	maxTokens  int64
	maxCost    float64
	env        []string
	allowHosts []string
	bundle     string
	writeOnly  string
}

// launchAgents are the agents rein launch runs, one entry each.
var launchAgents = []launch.Agent{claudecode.Agent{}, lpi.Agent{}, codex.Agent{}}

// launchAgent is the agent registered under name, or nil.
func launchAgent(name string) launch.Agent {
	for _, a := range launchAgents {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

func launchAgentNames() []string {
	var out []string
	for _, a := range launchAgents {
		out = append(out, a.Name())
	}
	return out
}

func runLaunch(cmd *cobra.Command, lo *launchOptions) error {
	stderr := cmd.ErrOrStderr()
	ws := lo.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return &exitError{exitUsage, "cannot find the current directory; pass --workspace"}
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return &exitError{exitUsage, fmt.Sprintf("--workspace %s: %v", lo.workspace, err)}
	}
	if lo.timeout <= 0 || lo.timeout > sandbox.MaxSessionTimeout {
		return &exitError{exitUsage, fmt.Sprintf("--timeout %s: give a duration above zero, at most %s", lo.timeout, sandbox.MaxSessionTimeout)}
	}
	pol, err := policy.Load(policy.Options{Workspace: ws, OrgFile: lo.sf.org, UserFile: lo.sf.user, ProjectFile: lo.sf.project})
	if err != nil {
		return &exitError{exitUsage, "the policy: " + err.Error()}
	}
	useTraceKey(pol)
	keys := lo.keyEnv
	if lo.agent != nil && len(keys) == 0 {
		keys = lo.agent.KeyVars()
	}
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &exitError{exitUsage, fmt.Sprintf("--key-env %q is not a variable name", k)}
		}
	}
	if creds := launch.CredentialVars(os.Environ(), keys); len(creds) > 0 {
		return &exitError{exitLaunchCreds, fmt.Sprintf("rein launch: the environment holds credentials the session could carry off: %s; unset them (env -u %s rein launch ...), or name the model's one with --key-env", strings.Join(creds, ", "), creds[0])}
	}
	for _, name := range lo.env {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return &exitError{exitUsage, fmt.Sprintf("--env %q is not a variable name", name)}
		case launch.Reserved(name, launchAgents...):
			return &exitError{exitLaunchRefused, fmt.Sprintf("rein launch: --env %s is refused: the session sets it itself, or it configures an agent (which could make it skip rein's hook or its settings)", name)}
		case launch.IsCredential(name):
			return &exitError{exitLaunchCreds, fmt.Sprintf("rein launch: --env %s looks like a credential; only the model's key goes in (--key-env)", name)}
		}
	}
	hosts, err := launchHosts(lo)
	if err != nil {
		return err
	}
	if lo.maxTokens < 0 || !(lo.maxCost >= 0) || math.IsInf(lo.maxCost, 0) {
		return &exitError{exitUsage, "--max-tokens and --max-cost are numbers of 0 (no bound) or more"}
	}
	if lo.agent == nil && (lo.maxTokens > 0 || lo.maxCost > 0) {
		return &exitError{exitUsage, "--max-tokens and --max-cost bound an agent's model calls, through its gateway: a program has none"}
	}
	var model launch.Model
	if lo.agent != nil {
		if model, err = lo.agent.Model(os.Getenv); err != nil {
			return &exitError{exitUsage, err.Error()}
		}
	}
	var prog string
	var argv []string
	if lo.agent != nil {
		if why := lo.agent.CheckArgs(lo.args); why != "" {
			return &exitError{exitLaunchRefused, "rein launch: " + why}
		}
		name := ""
		if p := lo.programs[lo.agent.Name()]; p != nil {
			name = *p
		}
		if name == "" {
			name = lo.agent.Program()
		}
		prog, err = launchProgram(name)
		argv = lo.args
	} else {
		prog, err = launchProgram(lo.args[0])
		argv = lo.args[1:]
	}
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return &exitError{exitSandbox, "rein cannot name its own binary: " + err.Error()}
	}

	store, red, err := lo.tf.openFor(pol)
	if err != nil {
		return err
	}
	defer store.Close()
	key, err := traceKey(store.Path(), ws)
	if err != nil {
		return &exitError{exitSandbox, "the trace key: " + err.Error()}
	}
	if lo.writeOnly != "" {
		if lo.agent == nil {
			return &exitError{exitUsage, "--write-bundle writes an agent's bundle: rein launch --write-bundle DIR AGENT"}
		}
		b := launch.NewBundle(lo.agent, pol, ws, prog, model, hosts)
		if err := b.Write(lo.writeOnly, exe, key); err != nil {
			return &exitError{exitLaunchBundle, "rein launch: writing the bundle: " + err.Error()}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", filepath.Join(lo.writeOnly, "manifest.json"))
		return nil
	}

	limits, err := sessionLimits(pol)
	if err != nil {
		// The session runs under the user's limits or not at all.
		return err
	}
	streams, done := sessionStreams(cmd)
	defer done()
	sess := &launch.Session{Agent: lo.agent, Policy: pol, Files: policy.Options{OrgFile: lo.sf.org, UserFile: lo.sf.user, ProjectFile: lo.sf.project},
		Workspace: ws, Program: prog, Args: argv, Keys: keys, Pass: lo.env, Model: model, Budget: launch.Budget{Tokens: lo.maxTokens, Cost: lo.maxCost},
		Hosts: hosts, Timeout: lo.timeout, Limits: limits,
		Exe: exe, Key: key, Bundle: lo.bundle, Store: store, Redactor: red, Stdin: streams[0], Stdout: streams[1], Stderr: streams[2], Log: stderr}
	if wd, err := os.Getwd(); err == nil {
		sess.Dir = wd
	}
	res, err := sess.Run(context.Background())
	done()
	defer exportRun(stderr, pol, store, red, res.RunID)
	var le *launch.Error
	if errors.As(err, &le) {
		return &exitError{le.Code, le.Msg}
	}
	if err != nil {
		return err
	}
	if res.Config != nil {
		fmt.Fprintf(stderr, "rein launch: %s\n", configLine(agent.ConfigReport(*res.Config), red.Redact))
	}
	if res.Code != 0 {
		return &exitError{code: res.Code}
	}
	return nil
}

// sessionStreams are the session's stdin, stdout and stderr: rein's own
// when they are files (a terminal stays a terminal), else pipes copied to
// the command's writers. done waits for the copies once the session ends.
func sessionStreams(cmd *cobra.Command) ([3]*os.File, func()) {
	var out [3]*os.File
	var wg sync.WaitGroup
	var closers []*os.File
	if f, ok := cmd.InOrStdin().(*os.File); ok {
		out[0] = f
	}
	for i, w := range []io.Writer{cmd.OutOrStdout(), cmd.ErrOrStderr()} {
		if f, ok := w.(*os.File); ok {
			out[i+1] = f
			continue
		}
		rd, wr, err := os.Pipe()
		if err != nil {
			continue
		}
		out[i+1] = wr
		closers = append(closers, wr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rd.Close()
			io.Copy(w, rd)
		}()
	}
	return out, func() {
		for _, f := range closers {
			f.Close()
		}
		closers = nil
		wg.Wait()
	}
}

// launchProgram is the program's real path: found on PATH, links
// resolved, a regular executable file.
func launchProgram(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", &exitError{127, fmt.Sprintf("rein launch: %s: %v", name, err)}
	}
	if path, err = filepath.Abs(path); err == nil {
		path, err = filepath.EvalSymlinks(path)
	}
	if err != nil {
		return "", &exitError{127, fmt.Sprintf("rein launch: %s: %v", name, err)}
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", &exitError{126, fmt.Sprintf("rein launch: %s is not an executable file", path)}
	}
	return path, nil
}

// launchHosts are the hosts the session may reach besides its model,
// which it reaches through the gateway alone: --allow-host's.
func launchHosts(lo *launchOptions) ([]launch.Host, error) {
	var out []launch.Host
	for _, a := range lo.allowHosts {
		h, err := launch.AllowHost(a)
		if err != nil {
			return nil, &exitError{exitUsage, err.Error()}
		}
		out = append(out, h)
	}
	return out, nil
}
