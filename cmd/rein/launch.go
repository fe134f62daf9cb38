//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/claudecode"
	"github.com/reinhq/rein/mcpserver"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/workspace"
)

// The exit statuses of rein launch that are rein's own; any other is the
// program's.
const (
	exitLaunchBundle  = 121 // the launch bundle failed its verification
	exitLaunchCreds   = 122 // the environment holds credentials
	exitLaunchRefused = 123 // an argument that would skip rein's hook, or a program rein cannot confine
	exitLaunchTimeout = 124 // the session's timeout ended it
)

// Where the session finds rein's files, below its private HOME.
const (
	// launchSocketAt, in the session's HOME, holds launchSocket: where the
	// relay inside looks for rein (sandbox.RelaySocket).
	launchSocketAt = ".rein/socket"
	launchSocket   = "rein.sock"
	// launchStopGrace is how long a stopped session's program has, after
	// the signal is passed on, before its whole tree is killed.
	launchStopGrace = 10 * time.Second
	// DefaultLaunchTimeout bounds a session unless --timeout says otherwise.
	defaultLaunchTimeout = 12 * time.Hour
)

func newLaunchCmd(sf *scopeFlags) *cobra.Command {
	var (
		lo  launchOptions
		tf  traceFlag
		cfg string
	)
	cmd := &cobra.Command{
		Use:   "launch [flags] AGENT [-- AGENT_ARGS...] | launch [flags] -- PROGRAM ARGS...",
		Short: "Run Claude Code (or any agent CLI) whole inside rein's sandbox, as a managed session",
		Long: `Run an agent's CLI inside rein's bwrap sandbox for a whole session: its own
pid namespace, the workspace writable (rein's protected paths read-only or
hidden), a private HOME holding only rein's launch bundle, and an egress
proxy that reaches only the model API's host; every other connection is
refused and recorded. The session is refused when the environment holds
credentials (naming them); only the model's key goes in.

For claude-code, rein writes a launch bundle (prompt.md, settings.json with
rein's hook, mcp.json with rein mcp, policy.json, manifest.json with the
sha256 of each file and of rein's binary, keyed with rein's trace key),
verifies it, and starts Claude Code with it. Every tool call is decided by
rein's hook on the host; a hook that crashes, hangs or is missing blocks
the call. Flags that skip hooks are refused. The session is one run in the
trace: every hook decision, MCP call and connection under it.

Exit status: the program's own; 121 the bundle failed its verification;
122 credentials in the environment; 123 a refused argument; 124 the
session's timeout; 125 the sandbox could not run; 127 the program was not
found; 128+N stopped by signal N (SIGINT and SIGTERM are passed on, and
the whole tree is gone after).`,
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
	f.StringVar(&lo.programPath, "claude", "", "the agent's binary (default: its name on PATH, claude for claude-code)")
	f.StringArrayVar(&lo.keyEnv, "key-env", nil, "a variable holding the program's model credential, passed into its environment only (repeatable; claude-code: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN)")
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
	agent       launch.Agent
	args        []string
	workspace   string
	timeout     time.Duration
	programPath string
	keyEnv      []string
	env         []string
	allowHosts  []string
	bundle      string
	writeOnly   string
}

// launchAgents are the agents rein launch runs, one entry each.
var launchAgents = []launch.Agent{claudecode.Agent{}}

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
	var prog string
	var argv []string
	if lo.agent != nil {
		if why := lo.agent.CheckArgs(lo.args); why != "" {
			return &exitError{exitLaunchRefused, "rein launch: " + why}
		}
		name := lo.programPath
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
	kind := "program"
	if lo.agent != nil {
		kind = lo.agent.Name()
	}
	if lo.writeOnly != "" {
		if lo.agent == nil {
			return &exitError{exitUsage, "--write-bundle writes an agent's bundle: rein launch --write-bundle DIR AGENT"}
		}
		b := launch.NewBundle(lo.agent, pol, ws, prog, hosts)
		if err := b.Write(lo.writeOnly, exe, key); err != nil {
			return &exitError{exitLaunchBundle, "rein launch: writing the bundle: " + err.Error()}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", filepath.Join(lo.writeOnly, "manifest.json"))
		return nil
	}

	var b [6]byte
	rand.Read(b[:])
	runID := "launch-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	state, err := sandbox.StateDir("launch")
	if err != nil {
		return &exitError{exitSandbox, err.Error()}
	}
	sweepLaunches(state)
	dir, err := os.MkdirTemp(state, fmt.Sprintf("%d-", os.Getpid()))
	if err != nil {
		return &exitError{exitSandbox, "making the session's directory: " + err.Error()}
	}
	defer os.RemoveAll(dir)
	home := map[string]string{}
	if lo.agent != nil {
		bundle := lo.bundle
		if bundle == "" {
			bundle = filepath.Join(dir, "bundle")
			if err := launch.NewBundle(lo.agent, pol, ws, prog, hosts).Write(bundle, exe, key); err != nil {
				return &exitError{exitLaunchBundle, "rein launch: writing the bundle: " + err.Error()}
			}
		} else if bundle, err = filepath.Abs(bundle); err != nil {
			return &exitError{exitUsage, "--bundle: " + err.Error()}
		}
		m, err := launch.Verify(lo.agent, bundle, exe, key)
		if err == nil && (m.Workspace != ws || m.Program != prog) {
			err = fmt.Errorf("it was written for %s in %s, not %s in %s", m.Program, m.Workspace, prog, ws)
		}
		if err != nil {
			return &exitError{exitLaunchBundle, fmt.Sprintf("rein launch: the bundle %s is refused: %v", bundle, err)}
		}
		data, err := os.ReadFile(filepath.Join(bundle, "prompt.md"))
		if err != nil {
			return &exitError{exitLaunchBundle, "rein launch: the bundle's prompt: " + err.Error()}
		}
		pre, files := lo.agent.Start(bwrap.SandboxHome+"/"+launch.BundleAt, bundle, string(data))
		argv = append(pre, argv...)
		home = files
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host, _ := os.Hostname()
	if _, err := store.AppendAll(ctx,
		trace.Run{ID: runID, StartedAt: time.Now(), Workspace: ws, Surface: kind, Mode: pol.Mode.String(), Source: "launch", PID: os.Getpid()},
		trace.Audit{RunID: runID, Kind: "launch_start", At: time.Now(), Meta: launchJSON(map[string]any{
			"program": prog, "args": argv, "hosts": launch.Strings(hosts), "pid": os.Getpid(), "host": host, "bundle": home[launch.BundleAt]})},
	); err != nil {
		return &exitError{exitSandbox, "recording the session: " + err.Error()}
	}
	// What the session can make rein record (its hook calls, its
	// connections, rein mcp's calls) is bounded; past the bound it is
	// refused, and that is recorded once.
	bounded := &trace.Bounded{Store: store, Limit: pol.SessionTrace, OnFull: func() {
		store.Append(context.Background(), trace.Audit{RunID: runID, Kind: "session_trace_full", At: time.Now(),
			Meta: launchJSON(map[string]int64{"limit": pol.SessionTrace})})
	}}
	if bounded.Limit == 0 {
		bounded.Limit = launchTraceDefault
	}
	status := "ended"
	defer func() {
		store.AppendAll(context.Background(), trace.RunEnd{RunID: runID, EndedAt: time.Now(), Status: status},
			trace.Audit{RunID: runID, Kind: "launch_end", At: time.Now(), Meta: launchJSON(map[string]string{"status": status})})
	}()

	var refused sync.WaitGroup
	var refusedN int
	var refusedMu sync.Mutex
	recordEgress := func(ev netproxy.Event) {
		refused.Add(1)
		defer refused.Done()
		if ev.Refused != "" {
			refusedMu.Lock()
			refusedN++
			refusedMu.Unlock()
		}
		bounded.AppendAll(context.Background(), tool.EgressRecords(runID, ev)...)
	}
	closeServer := func() {}
	if lo.agent != nil {
		// A unix socket's path is short: not below rein's state
		// directory, which may be deep, but in a directory of its own
		// (0700) in /tmp, which no sandbox sees (each has its own).
		sockDir, err := os.MkdirTemp("/tmp", fmt.Sprintf("rein-launch-%d-", os.Getpid()))
		if err != nil {
			return &exitError{exitSandbox, "making the session's socket: " + err.Error()}
		}
		defer os.RemoveAll(sockDir)
		srv, err := serveLaunch(ctx, lo, pol, ws, runID, bounded, red, filepath.Join(sockDir, launchSocket), hosts, recordEgress)
		if err != nil {
			return &exitError{exitSandbox, "rein launch: serving the session's hook and MCP: " + err.Error()}
		}
		defer srv.close()
		closeServer = srv.close
		home[launchSocketAt] = sockDir
	}

	env := launch.Env(os.Environ(), keys, lo.env, lo.agent)
	p := sandbox.Profile{Workspace: ws, Rung: sandbox.RungBwrap, Timeout: lo.timeout, Env: env, Hidden: tool.Hidden(pol),
		HostCaches: tool.HostCaches(os.Environ(), pol)}
	if wd, err := os.Getwd(); err == nil && (wd == ws || strings.HasPrefix(wd, ws+"/")) {
		p.Dir = wd
	}
	if d := filepath.Dir(prog); !launch.SystemPath(d) && d != ws && !strings.HasPrefix(d, ws+"/") {
		if err := launch.VetProgramDir(pol, ws, d); err != nil {
			return &exitError{exitLaunchRefused, fmt.Sprintf("rein launch: %s cannot be shown to the session: %v; install it in a directory of its own", prog, err)}
		}
		p.HostReadPaths = []string{d}
	}
	limits, err := sessionLimits(pol)
	if err != nil {
		// The session runs under the user's limits or not at all.
		return err
	}
	p.Limits = limits
	if len(hosts) > 0 {
		p.Network = sandbox.NetworkProxy
		p.Egress = &launch.Egress{Hosts: hosts, OnEvent: recordEgress}
	}
	sigs := make(chan os.Signal, 8)
	passed := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	streams, done := sessionStreams(cmd)
	p.Session = &sandbox.Session{Stdin: streams[0], Stdout: streams[1], Stderr: streams[2], Signals: passed, HomeFiles: home}
	line, err := shell.FromArgv(append([]string{prog}, argv...))
	if err != nil {
		done()
		return &exitError{exitUsage, err.Error()}
	}
	started := time.Now()
	h, err := sandbox.Start(ctx, line, p, nil, nil)
	if err != nil {
		done()
		status = "refused: " + err.Error()
		return &exitError{exitSandbox, "rein launch: " + err.Error()}
	}
	var stopped syscall.Signal
	go func() {
		for sig := range sigs {
			passed <- sig
			if s, _ := sig.(syscall.Signal); s != syscall.SIGWINCH && stopped == 0 {
				stopped = s
				time.AfterFunc(launchStopGrace, h.Kill)
			}
		}
	}()
	res := h.Wait()
	done()
	// Nothing records a connection after this: the proxy is closed, and
	// with the server the MCP sessions and their commands.
	closeServer()
	refused.Wait()
	store.Append(context.Background(), trace.SandboxEvent{RunID: runID, Kind: "session", Detail: launchJSON(res), At: time.Now()})
	if refusedN > 0 {
		fmt.Fprintf(stderr, "rein launch: %d connection(s) refused (rein trace show %s)\n", refusedN, runID)
	}
	if bounded.Full() {
		fmt.Fprintf(stderr, "rein launch: the session's trace reached its bound of %d MiB ([limits] session_trace); what it could not record was refused\n", bounded.Limit>>20)
	}
	// The net under the protected set's table: whatever configuration
	// the session left for the host's tools is named.
	if r := workspace.ChangedConfig(ws, started); r.Count > 0 || r.Truncated {
		detail, _ := json.Marshal(r)
		store.Append(context.Background(), trace.SandboxEvent{RunID: runID, Kind: trace.KindConfigChanged, Detail: string(detail), At: time.Now()})
		fmt.Fprintf(stderr, "rein launch: %s\n", configLine(agent.ConfigReport(r), red.Redact))
	}
	code := res.ExitCode
	switch {
	case stopped != 0:
		code, status = 128+int(stopped), "stopped by "+stopped.String()
	case res.Status == sandbox.Timeout:
		code, status = exitLaunchTimeout, "timeout"
		fmt.Fprintf(stderr, "rein launch: the session reached its %s timeout\n", lo.timeout)
	case res.Status == sandbox.Unavailable && code == 0:
		code, status = exitSandbox, "unavailable: "+res.Reason
		fmt.Fprintf(stderr, "rein launch: %s\n", res.Reason)
	default:
		if code == 0 && res.Status != sandbox.OK {
			code = exitSandbox
			fmt.Fprintf(stderr, "rein launch: %s: %s\n", res.Status, res.Reason)
		}
		status = fmt.Sprintf("exit %d", code)
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// sweepLaunches removes what sessions of a rein that died left behind
// (rein's state below state, the socket directories in /tmp): each
// directory is named after its rein's pid.
func sweepLaunches(state string) {
	for _, dir := range []struct{ base, prefix string }{{state, ""}, {"/tmp", "rein-launch-"}} {
		entries, _ := os.ReadDir(dir.base)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), dir.prefix)
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if !ok || !e.IsDir() || err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if fi, err := e.Info(); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				os.RemoveAll(filepath.Join(dir.base, e.Name()))
			}
		}
	}
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

// launchHosts are the hosts the session may reach: the agent's model API
// and --allow-host's.
func launchHosts(lo *launchOptions) ([]launch.Host, error) {
	var out []launch.Host
	if lo.agent != nil {
		hosts, err := lo.agent.ModelHosts(os.Getenv)
		if err != nil {
			return nil, &exitError{exitUsage, err.Error()}
		}
		out = append(out, hosts...)
	}
	for _, a := range lo.allowHosts {
		h, err := launch.AllowHost(a)
		if err != nil {
			return nil, &exitError{exitUsage, err.Error()}
		}
		out = append(out, h)
	}
	return out, nil
}

// launchServer answers the session's hook and MCP connections on a unix
// socket bound into its HOME: every decision is made, and every call
// runs, on the host, under the session's run.
type launchServer struct {
	// agent is the launched agent's hook adapter.
	agent hook.Adapter
	l     net.Listener
	mcp   *mcpserver.Server
	tools map[string]bool // rein mcp's tools, as the agent names them
	slots chan struct{}
	calls *rate.Limiter // the hook calls
	wg    sync.WaitGroup
	once  sync.Once
}

func serveLaunch(ctx context.Context, lo *launchOptions, pol *policy.Policy, ws, runID string, store trace.Store, red *trace.Redactor, path string,
	hosts []launch.Host, record func(netproxy.Event)) (*launchServer, error) {
	if len(path) > 100 {
		return nil, fmt.Errorf("the socket path %s is too long for a unix socket: set REIN_CACHE_DIR to a shorter directory", path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	reg, err := tool.Builtin()
	if err != nil {
		l.Close()
		return nil, err
	}
	limits, err := sessionLimits(pol)
	if err != nil {
		l.Close()
		return nil, err
	}
	// Anything in the session can be this server's client, so an ask is
	// never put to the client (it could answer itself): it is refused,
	// naming why. A command's network is the policy's, and never more
	// than the session's own hosts.
	srv, err := mcpserver.New(mcpserver.Config{Registry: reg, Surface: tool.SurfaceCoding, Approver: launchApprover{}, Run: func() (tool.Config, error) {
		p, err := policy.Load(policy.Options{Workspace: ws, OrgFile: lo.sf.org, UserFile: lo.sf.user, ProjectFile: lo.sf.project})
		if err != nil {
			return tool.Config{}, err
		}
		prof := sandbox.Profile{Limits: limits, Network: sandbox.NetworkOff}
		if p.Sandbox.Network != string(sandbox.NetworkOff) && policy.ForMode(p.Mode).Network && len(hosts) > 0 {
			prof.Network = sandbox.NetworkProxy
			prof.Egress = &cappedEgress{session: &launch.Egress{Hosts: hosts}, policy: tool.Egress(p, launchApprover{}, nil), record: record}
		}
		return tool.Config{Policy: p, Store: store, Redactor: red, RunID: runID, Profile: prof}, nil
	}})
	if err != nil {
		l.Close()
		return nil, err
	}
	specs, _ := reg.Surface(tool.SurfaceCoding)
	s := &launchServer{agent: lo.agent.Hook(), l: l, mcp: srv, tools: map[string]bool{}, slots: make(chan struct{}, launchConns),
		calls: rate.NewLimiter(launchHookRate, 2*launchHookRate)}
	for _, spec := range specs {
		s.tools[lo.agent.ToolName(spec.Name)] = true
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				if ne, ok := err.(net.Error); ok && !errors.Is(err, net.ErrClosed) && (ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				return
			}
			// A few connections at once: anything in the session can
			// connect, and each holds memory and a descriptor of rein's.
			select {
			case s.slots <- struct{}{}:
			default:
				c.Close()
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { <-s.slots }()
				defer c.Close()
				s.serve(ctx, c, lo, ws, runID, store)
			}()
		}
	}()
	return s, nil
}

// launchConns bounds the connections of a session served at once.
const launchConns = 16

// launchTraceDefault bounds what a session records in the trace
// ([limits] session_trace).
const launchTraceDefault = 64 << 20

// launchHookRate bounds the hook calls a session makes a second (twice as
// many at once).
const launchHookRate = 25

// launchApprover answers the asks of a launched session's MCP calls: no.
// Whatever is in the session could answer an elicitation, and no person
// outside it is asked.
type launchApprover struct{}

func (launchApprover) Approve(context.Context, *policy.Verdict) (policy.Approval, error) {
	return policy.Approval{Answer: policy.Reject, Reason: "in a launched session rein's MCP calls are never approved from inside the session: only what the policy allows runs (add an allow rule, or use the agent's own shell tool, whose asks it puts to you)"}, nil
}

// cappedEgress decides a connection of a command rein mcp runs for the
// session: the session's hosts bound it, then the policy decides.
type cappedEgress struct {
	session *launch.Egress
	policy  netproxy.Policy
	record  func(netproxy.Event)
}

func (e *cappedEgress) Decide(ctx context.Context, r netproxy.Request) netproxy.Verdict {
	if v := e.session.Decide(ctx, r); !v.Allow {
		return v
	}
	return e.policy.Decide(ctx, r)
}

func (e *cappedEgress) Record(ev netproxy.Event) { e.record(ev) }

// serve answers one connection: a first line naming the service, "hook"
// or "mcp", then its bytes.
func (s *launchServer) serve(ctx context.Context, c net.Conn, lo *launchOptions, ws, runID string, store trace.Store) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var name []byte
	var b [1]byte
	for len(name) < 16 {
		if n, err := c.Read(b[:]); n != 1 || err != nil {
			return
		}
		if b[0] == '\n' {
			break
		}
		name = append(name, b[0])
	}
	switch string(name) {
	case "hook":
		c.SetDeadline(time.Now().Add(hookTimeout + 5*time.Second))
		if !s.calls.Allow() {
			// Anything in the session can call; an agent makes a call
			// or a few per tool use.
			writeHookAnswer(c, s.agent, hook.Denied(fmt.Sprintf("more than %d hook calls a second from the session: refused", launchHookRate)))
			return
		}
		writeHookAnswer(c, s.agent, s.decide(c, lo, ws, runID, store))
	case "mcp":
		c.SetReadDeadline(time.Time{})
		ss, err := s.mcp.MCP().Connect(ctx, &mcp.IOTransport{Reader: c, Writer: c}, nil)
		if err != nil {
			return
		}
		ss.Wait()
	}
}

// decide is the hook's answer to one call of the session, made as rein
// hook makes it (Bash is not rewritten: the whole session is confined),
// bounded in time, and recorded under the session's run.
func (s *launchServer) decide(c net.Conn, lo *launchOptions, ws, runID string, store trace.Store) hook.Decision {
	data, err := readHookInput(c)
	if err != nil {
		return hook.Denied(err.Error())
	}
	return hook.Bounded(hookTimeout, func() hook.Decision {
		return decideHookInput(s.agent, data, lo.sf, ws, false, func(p *policy.Policy, c hook.Call, d hook.Decision) error {
			_, err := store.AppendAll(context.Background(), hookRecords(runID, c, d)...)
			return err
		}, s.reinTool)
	})
}

// reinTool lets the session's calls to rein's own MCP server through the
// hook, each one of its tools by name: that server decides each call
// itself, under the same policy.
func (s *launchServer) reinTool(c hook.Call) (hook.Decision, bool) {
	if s.tools[c.Tool()] {
		return hook.Decision{Answer: hook.Allow, Reason: "rein's own MCP server decides this call itself, under the same policy"}, true
	}
	return hook.Decision{}, false
}

func (s *launchServer) close() {
	s.once.Do(func() {
		s.l.Close()
		s.mcp.Close()
		s.wg.Wait()
	})
}

// launchJSON is v as JSON text, for the trace.
func launchJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(data)
}
