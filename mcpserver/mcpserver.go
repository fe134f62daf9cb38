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
		if req.Params != nil {
			args = req.Params.Arguments
		}
		env := r.Call(ctx, name, args)
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
const NoElicitation = "the MCP client cannot answer rein's question (it does not support elicitation during a tool call): start rein mcp with --approve all or --approve none, or add an allow rule for this action to the policy"

// clientApprover puts an ask to the MCP client through elicitation.
type clientApprover struct{ ss *mcp.ServerSession }

// Approve asks the client; anything but an explicit approval rejects.
func (a *clientApprover) Approve(ctx context.Context, v *policy.Verdict) (policy.Approval, error) {
	if p := a.ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation}, nil
	}
	res, err := a.ss.Elicit(ctx, &mcp.ElicitParams{
		Message: fmt.Sprintf("rein asks before running this: %s\nApprove it?", policy.Printable(v.Reason)),
		RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"approve": map[string]any{"type": "boolean", "description": "true to run it"}},
			"required":   []string{"approve"}},
	})
	if err != nil {
		// Newer protocol versions forbid a request from inside a tool
		// call; the answer is the same as for a client that cannot ask.
		return policy.Approval{Answer: policy.Reject, Reason: NoElicitation + " (" + err.Error() + ")"}, nil
	}
	if res.Action == "accept" {
		if ok, _ := res.Content["approve"].(bool); ok {
			return policy.Approval{Answer: policy.Approve, Reason: "approved by the MCP client's user"}, nil
		}
	}
	return policy.Approval{Answer: policy.Reject, Reason: "the MCP client's user answered " + res.Action}, nil
}
