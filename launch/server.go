//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/mcpserver"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"golang.org/x/time/rate"
)

// server answers the session's hook and MCP connections on a unix
// socket bound into its HOME: every decision is made, and every call
// runs, on the host, under the session's run.
type server struct {
	session *Session
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

func (ss *Session) serve(ctx context.Context, runID string, store trace.Store, path string, record func(netproxy.Event)) (*server, error) {
	ws, hosts, red, lim := ss.Workspace, ss.Hosts, ss.Redactor, ss.Limits
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
	// Anything in the session can be this server's client, so an ask is
	// never put to the client (it could answer itself): it is refused,
	// naming why. A command's network is the policy's, and never more
	// than the session's own hosts.
	srv, err := mcpserver.New(mcpserver.Config{Registry: reg, Surface: tool.SurfaceCoding, Approver: sessionApprover{}, Run: func() (tool.Config, error) {
		po := ss.Files
		po.Workspace = ws
		p, err := policy.Load(po)
		if err != nil {
			return tool.Config{}, err
		}
		prof := sandbox.Profile{Limits: lim, Network: sandbox.NetworkOff}
		if p.Sandbox.Network != string(sandbox.NetworkOff) && policy.ForMode(p.Mode).Network && len(hosts) > 0 {
			prof.Network = sandbox.NetworkProxy
			prof.Egress = &cappedEgress{session: &Egress{Hosts: hosts}, policy: tool.Egress(p, sessionApprover{}, nil), record: record}
		}
		return tool.Config{Policy: p, Store: store, Redactor: red, RunID: runID, Profile: prof}, nil
	}})
	if err != nil {
		l.Close()
		return nil, err
	}
	specs, _ := reg.Surface(tool.SurfaceCoding)
	s := &server{session: ss, agent: ss.Agent.Hook(), l: l, mcp: srv, tools: map[string]bool{}, slots: make(chan struct{}, maxConns),
		calls: rate.NewLimiter(hookRate, 2*hookRate)}
	for _, spec := range specs {
		if name := ss.Agent.ToolName(spec.Name); name != "" {
			s.tools[name] = true
		}
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
				s.serve(ctx, c, runID, store)
			}()
		}
	}()
	return s, nil
}

// maxConns bounds the connections of a session served at once.
const maxConns = 16

// traceDefault bounds what a session records in the trace
// ([limits] session_trace).
const traceDefault = 64 << 20

// hookRate bounds the hook calls a session makes a second (twice as
// many at once).
const hookRate = 25

// sessionApprover answers the asks of a launched session's MCP calls: no.
// Whatever is in the session could answer an elicitation, and no person
// outside it is asked.
type sessionApprover struct{}

func (sessionApprover) Approve(context.Context, *policy.Verdict) (policy.Approval, error) {
	return policy.Approval{Answer: policy.Reject, Reason: "in a launched session rein's MCP calls are never approved from inside the session: only what the policy allows runs (add an allow rule, or use the agent's own shell tool, whose asks it puts to you)"}, nil
}

// cappedEgress decides a connection of a command rein mcp runs for the
// session: the session's hosts bound it, then the policy decides.
type cappedEgress struct {
	session *Egress
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
func (s *server) serve(ctx context.Context, c net.Conn, runID string, store trace.Store) {
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
		if s.agent == nil {
			// An agent without rein's hook (Codex) makes no hook calls.
			return
		}
		c.SetDeadline(time.Now().Add(hook.Timeout + 5*time.Second))
		if !s.calls.Allow() {
			// Anything in the session can call; an agent makes a call
			// or a few per tool use.
			hook.Send(c, s.agent, hook.Denied(fmt.Sprintf("more than %d hook calls a second from the session: refused", hookRate)))
			return
		}
		hook.Send(c, s.agent, s.decide(c, runID, store))
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
func (s *server) decide(c net.Conn, runID string, store trace.Store) hook.Decision {
	data, err := hook.ReadInput(c)
	if err != nil {
		return hook.Denied(err.Error())
	}
	return hook.Bounded(hook.Timeout, func() hook.Decision {
		return hook.Respond(s.agent, data, hook.Options{Workspace: s.session.Workspace, Policy: s.session.Files, Pre: s.reinTool,
			Record: func(p *policy.Policy, c hook.Call, d hook.Decision) error {
				_, err := store.AppendAll(context.Background(), hook.Records(runID, c, d)...)
				return err
			}})
	})
}

// reinTool lets the session's calls to rein's own MCP server through the
// hook, each one of its tools by name: that server decides each call
// itself, under the same policy.
func (s *server) reinTool(c hook.Call) (hook.Decision, bool) {
	if s.tools[c.Tool()] {
		return hook.Decision{Answer: hook.Allow, Reason: "rein's own MCP server decides this call itself, under the same policy"}, true
	}
	return hook.Decision{}, false
}

func (s *server) close() {
	s.once.Do(func() {
		s.l.Close()
		s.mcp.Close()
		s.wg.Wait()
	})
}
