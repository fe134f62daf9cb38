//go:build unix

package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reinhq/rein/launch/gateway"
	"github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/limits"
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
	ExitUsage   = 2   // a bad argument
	ExitBudget  = 120 // the session reached its token or cost budget (--max-tokens, --max-cost)
	ExitBundle  = 121 // the launch bundle failed its verification
	ExitCreds   = 122 // the environment holds credentials
	ExitRefused = 123 // an argument that would skip rein's hook, or a program rein cannot confine
	ExitTimeout = 124 // the session's timeout ended it
	ExitSandbox = 125 // the sandbox could not run
)

// Error is a session refused or failed before its program ran, with the
// exit status rein launch ends with.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// spentGrace is how long a session whose budget was reached has to end
// on its own, once its agent has been refused, before it is killed.
const spentGrace = 5 * time.Second

// stopGrace is how long a stopped session's program has, after the signal
// is passed on, before its whole tree is killed.
const stopGrace = 10 * time.Second

// Session is one launched session: an agent's (or a program's) whole run
// inside rein's bwrap sandbox, with its private HOME, the egress held to
// its hosts, its hook and rein mcp served on the host, and one run in the
// trace.
type Session struct {
	// Agent is the agent launched; nil runs Program as it is, with no
	// bundle, hook or MCP server.
	Agent Agent
	// Policy is the workspace's policy as the session starts; Files
	// names its files, which the hook and rein mcp load again at each
	// call.
	Policy *policy.Policy
	Files  policy.Options
	// Workspace is the project, writable in the session; Dir the
	// directory the program starts in ("": the workspace).
	Workspace, Dir string
	// Program is the program's real path, and Args its arguments.
	Program string
	Args    []string
	// Keys are the variables of the model's credential: an agent's
	// gateway sends the first that is set to its model, the session gets
	// a placeholder, and Run unsets them in this process's environment; a
	// program gets them as they are. Pass are the
	// others passed into the session's environment.
	Keys, Pass []string
	// Model is the agent's model, which the session reaches through the
	// gateway alone; Budget bounds its calls. Hosts are the other hosts
	// the session may reach (--allow-host).
	Model   Model
	Budget  Budget
	Hosts   []Host
	Timeout time.Duration
	Limits  limits.Limits
	// Exe is rein's binary, and Key the user's trace key: the bundle is
	// written with both and verified against both. Bundle, when set, is
	// a bundle written before, verified before the session starts.
	Exe    string
	Key    *trace.Key
	Bundle string
	// Store records the session; Redactor redacts what rein mcp
	// returns.
	Store    trace.Store
	Redactor *trace.Redactor
	// Stdin, Stdout and Stderr are the program's streams; Log gets rein's
	// own lines.
	Stdin, Stdout, Stderr *os.File
	Log                   io.Writer
}

// Result is how a session ended: the exit status rein launch ends with
// (the program's own, or 124 for the timeout, 125 for the sandbox, 128+N
// for a signal N passed on), its run, and the configuration it left for
// the host's tools, if any.
type Result struct {
	Code   int
	RunID  string
	Config *workspace.ConfigReport
}

// Run runs the session to its end.
func (s *Session) Run(ctx context.Context) (Result, error) {
	var res Result
	pol, ws, prog, argv, hosts, store, exe, key, stderr := s.Policy, s.Workspace, s.Program, s.Args, s.Hosts, s.Store, s.Exe, s.Key, s.Log
	kind := "program"
	if s.Agent != nil {
		kind = s.Agent.Name()
	}
	var b [6]byte
	rand.Read(b[:])
	runID := "launch-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	res.RunID = runID
	state, err := sandbox.StateDir("launch")
	if err != nil {
		return res, &Error{ExitSandbox, err.Error()}
	}
	sweep(state)
	dir, err := os.MkdirTemp(state, fmt.Sprintf("%d-", os.Getpid()))
	if err != nil {
		return res, &Error{ExitSandbox, "making the session's directory: " + err.Error()}
	}
	defer os.RemoveAll(dir)
	home := map[string]string{}
	var realKey, keyHeader, keyVar, ph string
	if s.Agent != nil {
		if realKey, keyHeader, keyVar = modelKey(s.Model.Family, s.Keys); realKey == "" {
			return res, &Error{ExitUsage, fmt.Sprintf("rein launch %s: no model key: set %s (or name the variable with --key-env); rein's gateway sends it to the model, and the session gets a placeholder", s.Agent.Name(), strings.Join(s.Keys, " or "))}
		}
		// The key is the gateway's alone: gone from this process's
		// environment, so that nothing rein runs for the session (a
		// command of rein mcp's, whose policy may pass variables on)
		// can be given it.
		for _, k := range s.Keys {
			os.Unsetenv(k)
		}
		// The gateway is the session's only way to a model: its host is
		// not one the egress reaches, whatever --allow-host says.
		if mh, err := URLHost("the model's base URL", s.Model.Base); err == nil {
			for _, h := range hosts {
				if h.Name == mh.Name {
					return res, &Error{ExitUsage, fmt.Sprintf("rein launch: --allow-host %s is the model's host: the session reaches its model only through rein's gateway, which holds the key", h)}
				}
			}
		}
		ph = placeholder()
		bundle := s.Bundle
		if bundle == "" {
			bundle = filepath.Join(dir, "bundle")
			if err := NewBundle(s.Agent, pol, ws, prog, s.Model, hosts).Write(bundle, exe, key); err != nil {
				return res, &Error{ExitBundle, "rein launch: writing the bundle: " + err.Error()}
			}
		} else if bundle, err = filepath.Abs(bundle); err != nil {
			return res, &Error{ExitUsage, "--bundle: " + err.Error()}
		}
		m, err := Verify(s.Agent, bundle, exe, key)
		if err == nil && (m.Workspace != ws || m.Program != prog) {
			err = fmt.Errorf("it was written for %s in %s, not %s in %s", m.Program, m.Workspace, prog, ws)
		}
		if err != nil {
			return res, &Error{ExitBundle, fmt.Sprintf("rein launch: the bundle %s is refused: %v", bundle, err)}
		}
		data, err := os.ReadFile(filepath.Join(bundle, "prompt.md"))
		if err != nil {
			return res, &Error{ExitBundle, "rein launch: the bundle's prompt: " + err.Error()}
		}
		pre, files := s.Agent.Start(bwrap.SandboxHome+"/"+BundleAt, bundle, string(data))
		argv = append(pre, argv...)
		home = files
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	host, _ := os.Hostname()
	if _, err := store.AppendAll(ctx,
		trace.Run{ID: runID, StartedAt: time.Now(), Workspace: ws, Surface: kind, Mode: pol.Mode.String(), Source: "launch", PID: os.Getpid()},
		trace.Audit{RunID: runID, Kind: "launch_start", At: time.Now(), Meta: toJSON(map[string]any{
			"program": prog, "args": argv, "hosts": Strings(hosts), "pid": os.Getpid(), "host": host, "bundle": home[BundleAt],
			"model": s.Model.Base, "key_var": keyVar, "max_tokens": s.Budget.Tokens, "max_cost": s.Budget.Cost})},
	); err != nil {
		return res, &Error{ExitSandbox, "recording the session: " + err.Error()}
	}
	// What the session can make rein record (its hook calls, its
	// connections, rein mcp's calls) is bounded; past the bound it is
	// refused, and that is recorded once.
	bounded := &trace.Bounded{Store: store, Limit: pol.SessionTrace, OnFull: func() {
		store.Append(context.Background(), trace.Audit{RunID: runID, Kind: "session_trace_full", At: time.Now(),
			Meta: toJSON(map[string]int64{"limit": pol.SessionTrace})})
	}}
	if bounded.Limit == 0 {
		bounded.Limit = traceDefault
	}
	status := "ended"
	var gw *gateway.Gateway
	defer func() {
		meta := map[string]any{"status": status}
		if gw != nil {
			tokens, cost, unpriced := gw.Totals()
			meta["tokens"], meta["cost_usd"], meta["unpriced_models"] = tokens, cost, unpriced
		}
		store.AppendAll(context.Background(), trace.RunEnd{RunID: runID, EndedAt: time.Now(), Status: status},
			trace.Audit{RunID: runID, Kind: "launch_end", At: time.Now(), Meta: toJSON(meta)})
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
	var services []sandbox.Service
	spent := make(chan string, 1)
	if s.Agent != nil {
		// A unix socket's path is short: not below rein's state
		// directory, which may be deep, but in a directory of its own
		// (0700) in /tmp, which no sandbox sees (each has its own).
		sockDir, err := os.MkdirTemp("/tmp", fmt.Sprintf("rein-launch-%d-", os.Getpid()))
		if err != nil {
			return res, &Error{ExitSandbox, "making the session's socket: " + err.Error()}
		}
		defer os.RemoveAll(sockDir)
		srv, err := s.serve(ctx, runID, bounded, filepath.Join(sockDir, relay.SocketName), recordEgress)
		if err != nil {
			return res, &Error{ExitSandbox, "rein launch: serving the session's hook and MCP: " + err.Error()}
		}
		defer srv.close()
		closeServer = srv.close
		home[relay.SocketAt] = sockDir
		var svc sandbox.Service
		if gw, svc, err = s.startGateway(ctx, runID, bounded, realKey, keyHeader, ph, func(why string) {
			select {
			case spent <- why:
			default:
			}
		}); err != nil {
			return res, &Error{ExitUsage, "rein launch: the model gateway: " + err.Error()}
		}
		services = append(services, svc)
	}

	// The agent reads the placeholder where it would read the key: the
	// variable the key came from, if it is one of the agent's own.
	agentVar := keyVar
	if s.Agent != nil && !slices.Contains(s.Agent.KeyVars(), keyVar) {
		agentVar = s.Agent.KeyVars()[0]
	}
	env := Env(os.Environ(), s.Keys, s.Pass, s.Agent, s.Model, agentVar, ph)
	p := sandbox.Profile{Workspace: ws, Rung: sandbox.RungBwrap, Timeout: s.Timeout, Env: env, Hidden: tool.Hidden(pol),
		HostCaches: tool.HostCaches(os.Environ(), pol)}
	if s.Dir != "" && (s.Dir == ws || strings.HasPrefix(s.Dir, ws+"/")) {
		p.Dir = s.Dir
	}
	dirs := []string{filepath.Dir(prog)}
	if s.Agent != nil {
		dirs = s.Agent.ProgramDirs(prog)
	}
	for _, d := range dirs {
		if SystemPath(d) || d == ws || strings.HasPrefix(d, ws+"/") {
			continue
		}
		if err := VetProgramDir(pol, ws, d); err != nil {
			return res, &Error{ExitRefused, fmt.Sprintf("rein launch: %s cannot be shown to the session: %v; install it in a directory of its own", prog, err)}
		}
		p.HostReadPaths = append(p.HostReadPaths, d)
	}
	p.Limits = s.Limits
	if len(hosts) > 0 {
		p.Network = sandbox.NetworkProxy
		p.Egress = &Egress{Hosts: hosts, OnEvent: recordEgress}
	}
	sigs := make(chan os.Signal, 8)
	passed := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	p.Session = &sandbox.Session{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, Signals: passed, HomeFiles: home, Services: services}
	line, err := shell.FromArgv(append([]string{prog}, argv...))
	if err != nil {
		return res, &Error{ExitUsage, err.Error()}
	}
	started := time.Now()
	h, err := sandbox.Start(ctx, line, p, nil, nil)
	if err != nil {
		status = "refused: " + err.Error()
		return res, &Error{ExitSandbox, "rein launch: " + err.Error()}
	}
	var stopped syscall.Signal
	go func() {
		// A budget reached: the agent is answered with the refusal, which
		// it shows its user, and has a moment to end on its own.
		select {
		case <-spent:
			time.AfterFunc(spentGrace, h.Kill)
		case <-h.Done():
		}
	}()
	go func() {
		for sig := range sigs {
			passed <- sig
			if s, _ := sig.(syscall.Signal); s != syscall.SIGWINCH && stopped == 0 {
				stopped = s
				time.AfterFunc(stopGrace, h.Kill)
			}
		}
	}()
	r := h.Wait()
	// Nothing records a connection after this: the proxy is closed, and
	// with the server the MCP sessions and their commands.
	closeServer()
	refused.Wait()
	store.Append(context.Background(), trace.SandboxEvent{RunID: runID, Kind: "session", Detail: toJSON(r), At: time.Now()})
	if refusedN > 0 {
		fmt.Fprintf(stderr, "rein launch: %d connection(s) refused (rein trace show %s)\n", refusedN, runID)
	}
	if bounded.Full() {
		fmt.Fprintf(stderr, "rein launch: the session's trace reached its bound of %d MiB ([limits] session_trace); what it could not record was refused\n", bounded.Limit>>20)
	}
	// The net under the protected set's table: whatever configuration
	// the session left for the host's tools is named.
	if c := workspace.ChangedConfig(ws, started); c.Count > 0 || c.Truncated {
		detail, _ := json.Marshal(c)
		store.Append(context.Background(), trace.SandboxEvent{RunID: runID, Kind: trace.KindConfigChanged, Detail: string(detail), At: time.Now()})
		res.Config = &c
	}
	code := r.ExitCode
	switch {
	case gw != nil && gw.Spent() != "":
		code, status = ExitBudget, "budget: "+gw.Spent()
		fmt.Fprintf(stderr, "rein launch: %s; the session was ended\n", gw.Spent())
	case stopped != 0:
		code, status = 128+int(stopped), "stopped by "+stopped.String()
	case r.Status == sandbox.Timeout:
		code, status = ExitTimeout, "timeout"
		fmt.Fprintf(stderr, "rein launch: the session reached its %s timeout\n", s.Timeout)
	case r.Status == sandbox.Unavailable && code == 0:
		code, status = ExitSandbox, "unavailable: "+r.Reason
		fmt.Fprintf(stderr, "rein launch: %s\n", r.Reason)
	default:
		if code == 0 && r.Status != sandbox.OK {
			code = ExitSandbox
			fmt.Fprintf(stderr, "rein launch: %s: %s\n", r.Status, r.Reason)
		}
		status = fmt.Sprintf("exit %d", code)
	}
	if gw != nil && s.Budget.Cost > 0 {
		if _, _, unpriced := gw.Totals(); len(unpriced) > 0 {
			fmt.Fprintf(stderr, "rein launch: no price for %s ([[provider.price]] in your policy): their calls counted against --max-tokens only, not --max-cost\n", strings.Join(unpriced, ", "))
		}
	}
	res.Code = code
	return res, nil
}

// sweep removes what sessions of a rein that died left behind
// (rein's state below state, the socket directories in /tmp): each
// directory is named after its rein's pid.
func sweep(state string) {
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

// toJSON is v as JSON text, for the trace.
func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(data)
}
