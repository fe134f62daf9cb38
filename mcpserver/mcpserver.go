// Package mcpserver serves one surface of rein's tools to any MCP client
// (github.com/modelcontextprotocol/go-sdk), over stdio or streamable HTTP.
// Each MCP session is one run of the router, recorded in the trace; its
// background handles die with it. An ask goes to the client through the
// protocol's elicitation; a client that cannot answer gets a denial naming
// the setting to change, never a silent allow.
//
// mcpserver imports tool and what tool returns; nothing of rein imports
// it but cmd/rein.
package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
)

// Config is what the server serves.
type Config struct {
	Registry *tool.Registry
	Surface  string
	// Run returns the router configuration of a new session's run; the
	// server sets its Surface, Source and Approver.
	Run func() (tool.Config, error)
	// Approver answers asks; nil puts them to the client.
	Approver policy.Approver
	// Version is reported to clients.
	Version string
}

// Server is an MCP server whose sessions are runs. The SDK's server is
// kept inside, not embedded: its tools are the surface's, each through
// the router, and a tool added to it directly would bypass the policy.
type Server struct {
	srv *mcp.Server
	cfg Config

	mu     sync.Mutex
	runs   map[*mcp.ServerSession]*tool.Router
	chains map[*mcp.ServerSession]map[string]*chain
}

// New makes the server and registers the surface's tools.
func New(cfg Config) (*Server, error) {
	specs, err := cfg.Registry.Surface(cfg.Surface)
	if err != nil {
		return nil, err
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, runs: map[*mcp.ServerSession]*tool.Router{}, chains: map[*mcp.ServerSession]map[string]*chain{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "rein", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "rein runs these tools under a policy and a sandbox. A refusal names the rule and layer that decided it: asking again does not change it.",
	})
	for _, spec := range specs {
		destructive := !spec.ReadOnly
		s.srv.AddTool(&mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: spec.Schema, OutputSchema: outputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: spec.ReadOnly, DestructiveHint: &destructive}}, s.handler(spec.Name))
	}
	return s, nil
}

// Run serves one session over t (mcp.StdioTransport, say) until the
// client ends it or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// MCP is the SDK's server, for what takes one: its streamable HTTP
// handler, a session connected over a socket. Add nothing to it: what it
// serves is the surface, through the router.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Close ends every session's run.
func (s *Server) Close() {
	s.mu.Lock()
	runs := s.runs
	s.runs = map[*mcp.ServerSession]*tool.Router{}
	s.mu.Unlock()
	for _, r := range runs {
		r.Close("server closed")
	}
}

// run returns the session's run, starting it on its first call; it ends
// when the session does, and its handles with it.
func (s *Server) run(ss *mcp.ServerSession) (*tool.Router, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[ss]; ok {
		return r, nil
	}
	cfg, err := s.cfg.Run()
	if err != nil {
		return nil, err
	}
	cfg.Surface, cfg.Source, cfg.Approver = s.cfg.Surface, "mcp", s.cfg.Approver
	if cfg.PreviewChars <= 0 {
		// What a client shows inline: Claude Code keeps a result past
		// about 50 KB in a file and shows the model its first 2 KB, and
		// the structured content, which it shows, escapes the text again.
		cfg.PreviewChars = PreviewChars
	}
	if cfg.Approver == nil {
		cfg.Approver = &clientApprover{ss: ss}
	}
	r, err := tool.NewRouter(s.cfg.Registry, cfg)
	if err != nil {
		return nil, err
	}
	s.runs[ss] = r
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.runs, ss)
		delete(s.chains, ss)
		s.mu.Unlock()
		r.Close("session ended")
	}()
	return r, nil
}

func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r, err := s.run(req.Session)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "rein: the run could not start: " + err.Error()}}}, nil
		}
		var args json.RawMessage
		var responses mcp.InputResponseMap
		var state string
		if req.Params != nil {
			args, responses, state = req.Params.Arguments, req.Params.InputResponses, req.Params.RequestState
		}
		st := &callState{tool: name, chain: s.chain(req.Session, state, name, args)}
		// Only answers to questions rein asked in this call's chain count:
		// one sent unasked, or for other arguments, is ignored.
		st.chain.mu.Lock()
		for id, resp := range responses {
			if h, ok := st.chain.pending[id]; ok {
				delete(st.chain.pending, id)
				er, _ := resp.(*mcp.ElicitResult)
				approved := false
				if er != nil && er.Action == "accept" {
					approved, _ = er.Content["approve"].(bool)
				}
				st.chain.answers[h] = approved
			}
		}
		st.chain.mu.Unlock()
		env := r.Call(context.WithValue(ctx, stateKey{}, st), name, args)
		if st.asked != nil {
			// The question goes to the client as an input request; the SDK
			// sends it as the protocol version wants (in the result, or as
			// an elicitation for older clients) and the call comes back
			// with the answer and the chain's state.
			token := s.keep(req.Session, st.chain)
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{st.askedID: question(name, args, st.asked)}, RequestState: token}, nil
		}
		s.drop(req.Session, state)
		// Some clients (Claude Code) give the model only the structured
		// content when there is one, so it carries the text the model
		// reads too: the output, the handle to poll, the result id to
		// page through.
		text := env.Text()
		structured := &structuredContent{Status: string(env.Status), Text: text, Chars: env.Chars, ElidedChars: env.ElidedChars,
			ExitCode: env.ExitCode, Reason: env.Reason, Rule: env.Rule, Layer: env.Layer, File: env.File,
			ResultID: env.ResultID, Rung: string(env.Rung), LimitHit: env.LimitHit}
		return &mcp.CallToolResult{
			IsError:           env.Status != tool.OK,
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: structured,
		}, nil
	}
}

// structuredContent is a result's structured content, as outputSchema declares
// it: a struct rather than a map, which encoding/json writes without
// sorting keys or boxing each value.
type structuredContent struct {
	Status      string `json:"status"`
	Text        string `json:"text"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Rule        string `json:"rule,omitempty"`
	Layer       string `json:"layer,omitempty"`
	File        string `json:"file,omitempty"`
	ResultID    string `json:"result_id,omitempty"`
	Rung        string `json:"rung,omitempty"`
	LimitHit    string `json:"limit_hit,omitempty"`
	Chars       int    `json:"chars"`
	ElidedChars int    `json:"elided_chars"`
}

// PreviewChars is how much of a result an MCP client's model sees inline
// (head and tail), unless the configuration says otherwise; the rest is
// read with read_result.
const PreviewChars = 16_000

// outputSchema declares the structured content of every tool's result.
// text is what the model reads: the result as the text content has it.
var outputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "status": {"type": "string", "description": "ok, denied, cancelled, invalid_path, not_found, timeout, failed or unavailable"},
    "text": {"type": "string", "description": "the result as the model reads it: the output or content (head and tail when long), the handle to poll, and how to read the rest with read_result"},
    "exit_code": {"type": "integer", "description": "a command's exit status"},
    "reason": {"type": "string", "description": "why the call was refused or failed"},
    "rule": {"type": "string", "description": "the policy rule that decided a refusal"},
    "layer": {"type": "string", "description": "the policy layer of that rule"},
    "file": {"type": "string", "description": "the policy file of that rule"},
    "result_id": {"type": "string", "description": "the id read_result pages through"},
    "rung": {"type": "string", "description": "the sandbox rung a command ran on"},
    "limit_hit": {"type": "string", "description": "the resource limit a command reached"},
    "chars": {"type": "integer", "description": "the whole result's length in characters"},
    "elided_chars": {"type": "integer", "description": "the characters the text leaves out"}
  },
  "required": ["status", "text", "chars", "elided_chars"]
}`)

// NoElicitation is the answer when the client cannot be asked.
const NoElicitation = "the MCP client cannot answer rein's question (it does not support elicitation): start rein mcp with --approve all or --approve none, or add an allow rule for this action to the policy"

// chain is one tool call across its retries while rein waits for answers:
// the questions outstanding (input request id to the question's hash) and
// the answers given, bound to the tool and its arguments.
type chain struct {
	mu         sync.Mutex
	tool, args string
	pending    map[string]string
	answers    map[string]bool
}

// maxChains bounds the chains a session keeps waiting for answers.
const maxChains = 64

// chain returns the chain the call continues (its request state names it,
// for the same tool and arguments), or a new one.
func (s *Server) chain(ss *mcp.ServerSession, state, tool string, args json.RawMessage) *chain {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chains[ss][state]; ok && state != "" && c.tool == tool && c.args == string(args) {
		return c
	}
	return &chain{tool: tool, args: string(args), pending: map[string]string{}, answers: map[string]bool{}}
}

// keep stores a chain that waits for an answer and returns its state
// token, which only rein can have made.
func (s *Server) keep(ss *mcp.ServerSession, c *chain) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.chains[ss]
	if m == nil {
		m = map[string]*chain{}
		s.chains[ss] = m
	}
	for k := range m {
		if len(m) < maxChains {
			break
		}
		delete(m, k)
	}
	token := randomID()
	m[token] = c
	return token
}

// drop forgets a finished chain.
func (s *Server) drop(ss *mcp.ServerSession, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.chains[ss], state)
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// callState is what one tool call carries between the router and the
// handler: its chain, and the question still to ask.
type callState struct {
	tool    string
	chain   *chain
	asked   *policy.Verdict
	askedID string
}

type stateKey struct{}

// questionHash identifies a question within a chain: its verdict, the
// paths and stages it decided included, so that two asks under one rule
// are two questions.
func questionHash(v *policy.Verdict) string {
	detail, _ := json.Marshal(struct {
		Reason string
		Paths  []policy.PathVerdict
		Stages []policy.StageVerdict
	}{v.Reason, v.Paths, v.Stages})
	h := sha256.Sum256(detail)
	return hex.EncodeToString(h[:])
}

// question is what the client's user is asked: the tool, its arguments
// and the policy's reason.
func question(tool string, args json.RawMessage, v *policy.Verdict) *mcp.ElicitParams {
	a := string(args)
	if len(a) > 1000 {
		a = a[:1000] + "…"
	}
	return &mcp.ElicitParams{
		Message: fmt.Sprintf("rein asks before running %s %s:\n%s\nApprove it?", tool, policy.Printable(a), policy.Printable(v.Reason)),
		RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"approve": map[string]any{"type": "boolean", "description": "true to run it"}},
			"required":   []string{"approve"}},
	}
}

// clientApprover puts an ask to the MCP client, through the protocol's
// input requests.
type clientApprover struct{ ss *mcp.ServerSession }

// Approve answers each question from the answer the client gave to it in
// this call's chain, and otherwise asks it; anything but an explicit
// approval rejects.
func (a *clientApprover) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	if p := a.ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation}, nil
	}
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil || st.chain == nil {
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation}, nil
	}
	h := questionHash(v)
	st.chain.mu.Lock()
	defer st.chain.mu.Unlock()
	if approved, ok := st.chain.answers[h]; ok {
		if approved {
			return policy.Approval{Answer: policy.Approve, Reason: "approved by the MCP client's user"}, nil
		}
		return policy.Approval{Answer: policy.Reject, Reason: "the MCP client's user did not approve it"}, nil
	}
	st.asked, st.askedID = v, randomID()
	st.chain.pending[st.askedID] = h
	tool.AwaitingAnswer(ctx)
	return policy.Approval{}, tool.ErrAwaitingAnswer
}
