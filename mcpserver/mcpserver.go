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

// Server is an MCP server whose sessions are runs.
type Server struct {
	*mcp.Server
	cfg Config

	mu   sync.Mutex
	runs map[*mcp.ServerSession]*tool.Router
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
	s := &Server{cfg: cfg, runs: map[*mcp.ServerSession]*tool.Router{}}
	s.Server = mcp.NewServer(&mcp.Implementation{Name: "rein", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "rein runs these tools under a policy and a sandbox. A refusal names the rule and layer that decided it: asking again does not change it.",
	})
	for _, spec := range specs {
		destructive := !spec.ReadOnly
		s.AddTool(&mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: spec.Schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: spec.ReadOnly, DestructiveHint: &destructive}}, s.handler(spec.Name))
	}
	return s, nil
}

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
		st := &callState{}
		if req.Params != nil {
			args, st.responses = req.Params.Arguments, req.Params.InputResponses
		}
		env := r.Call(context.WithValue(ctx, stateKey{}, st), name, args)
		if st.asked != nil {
			// The question goes to the client as an input request; the SDK
			// sends it as the protocol version wants (in the result, or as
			// an elicitation for older clients) and the call comes back
			// with the answer.
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalID: question(st.asked)}}, nil
		}
		structured := map[string]any{"status": env.Status, "chars": env.Chars, "elided_chars": env.ElidedChars}
		for k, v := range map[string]string{"reason": env.Reason, "rule": env.Rule, "layer": env.Layer, "file": env.File,
			"result_id": env.ResultID, "rung": env.Rung, "limit_hit": env.LimitHit} {
			if v != "" {
				structured[k] = v
			}
		}
		if env.ExitCode != nil {
			structured["exit_code"] = *env.ExitCode
		}
		return &mcp.CallToolResult{
			IsError:           env.Status != tool.OK,
			Content:           []mcp.Content{&mcp.TextContent{Text: env.Text()}},
			StructuredContent: structured,
		}, nil
	}
}

// NoElicitation is the answer when the client cannot be asked.
const NoElicitation = "the MCP client cannot answer rein's question (it does not support elicitation): start rein mcp with --approve all or --approve none, or add an allow rule for this action to the policy"

// approvalID names rein's question among a call's input requests.
const approvalID = "rein-approve"

// callState is what one tool call carries between the router and the
// handler: the client's answers, and the question still to ask.
type callState struct {
	responses mcp.InputResponseMap
	asked     *policy.Verdict
}

type stateKey struct{}

func question(v *policy.Verdict) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: fmt.Sprintf("rein asks before running this: %s\nApprove it?", policy.Printable(v.Reason)),
		RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"approve": map[string]any{"type": "boolean", "description": "true to run it"}},
			"required":   []string{"approve"}},
	}
}

// clientApprover puts an ask to the MCP client, through the protocol's
// input requests.
type clientApprover struct{ ss *mcp.ServerSession }

// Approve answers from the client's response when the call carries one,
// and otherwise asks for it; anything but an explicit approval rejects.
func (a *clientApprover) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	if p := a.ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation}, nil
	}
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil {
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation}, nil
	}
	resp, ok := st.responses[approvalID]
	if !ok {
		st.asked = v
		tool.AwaitingAnswer(ctx)
		return policy.Approval{}, tool.ErrAwaitingAnswer
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return policy.Approval{Answer: policy.Reject, Reason: "the MCP client answered with something other than an elicitation result"}, nil
	}
	if res.Action == "accept" {
		if ok, _ := res.Content["approve"].(bool); ok {
			return policy.Approval{Answer: policy.Approve, Reason: "approved by the MCP client's user"}, nil
		}
	}
	return policy.Approval{Answer: policy.Reject, Reason: "the MCP client's user answered " + res.Action}, nil
}
