package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reinhq/rein/agent/loop"
)

// messagesProvider is Anthropic's Messages wire family, through the
// vendor's SDK.
type messagesProvider struct {
	configured
	client anthropic.Client
}

// NewMessages makes an Anthropic Messages provider. The SDK's own
// retries are off, and the base URL and key are the configuration's,
// never the environment's (the SDK would read ANTHROPIC_BASE_URL).
func NewMessages(cfg ChatConfig) Provider {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithMaxRetries(0), option.WithAPIKey(cfg.APIKey)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &messagesProvider{configured{cfg}, anthropic.NewClient(opts...)}
}

func (m *messagesProvider) Stream(ctx context.Context, req Request) (*Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: err}
	}
	msg := anthropic.Message{}
	resp := &Response{}
	first, cut, err := readStream(ctx, m.cfg.IdleTimeout, req.MaxTokens,
		func(ctx context.Context) eventStream[anthropic.MessageStreamEventUnion] {
			return m.client.Messages.NewStreaming(ctx, params)
		}, classifyMessages,
		func(ev anthropic.MessageStreamEventUnion) int { return len(ev.Delta.Text) + len(ev.Delta.PartialJSON) },
		func(ev anthropic.MessageStreamEventUnion) error {
			if err := msg.Accumulate(ev); err != nil {
				return &ProviderError{Class: FailMalformed, Err: err}
			}
			return nil
		})
	resp.FirstToken = first
	if err != nil {
		return nil, err
	}
	if cut {
		// Stopped as at the cap: the text so far, no tool call.
		limit := maxResponseBytes(req.MaxTokens)
		for _, b := range msg.Content {
			if b.Type == "text" && len(resp.Text) < limit {
				resp.Text += b.Text
			}
		}
		resp.Text, resp.Finish = resp.Text[:min(len(resp.Text), limit)], FinishLength
		return resp, nil
	}
	if msg.StopReason == "" {
		return nil, &ProviderError{Class: FailTransport, Err: errors.New("the stream ended before the response did")}
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			resp.Text += b.Text
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	switch msg.StopReason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		resp.Finish = FinishStop
	case anthropic.StopReasonToolUse:
		resp.Finish = FinishToolCalls
	case anthropic.StopReasonMaxTokens:
		resp.Finish = FinishLength
	default:
		resp.Finish = FinishOther
	}
	u := msg.Usage
	in, read, write := count(u.InputTokens), count(u.CacheReadInputTokens), count(u.CacheCreationInputTokens)
	resp.Usage = Usage{Input: loop.Sat(loop.Sat(in, read), write), Output: count(u.OutputTokens), CacheRead: read, CacheWrite: write}
	return resp, nil
}

// params is the request in Messages' shape, with prompt-cache breakpoints
// (three of the four the API allows) at the end of the system block's
// fixed part, of the user message before the last, and of the transcript
// sent so far.
func (m *messagesProvider) params(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(m.cfg.Model), MaxTokens: int64(req.MaxTokens)}
	if p.MaxTokens <= 0 {
		p.MaxTokens = DefaultResponseMaxTokens
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	if req.SystemTail != "" {
		p.System = append(p.System, anthropic.TextBlockParam{Text: req.SystemTail})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case RoleUser:
			// Messages alternate: a note after tool results joins their
			// user message.
			if n := len(p.Messages); n > 0 && p.Messages[n-1].OfUser != nil {
				u := p.Messages[n-1].OfUser
				u.Content = append(u.Content, anthropic.NewTextBlock(msg.Text))
			} else {
				p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(msg.Text)))
			}
		case RoleTool:
			block := anthropic.NewToolResultBlock(msg.ToolCallID, msg.Text, false)
			// Consecutive results answer one assistant turn: one user
			// message holds them all.
			if n := len(p.Messages); n > 0 && isToolResults(p.Messages[n-1]) {
				u := p.Messages[n-1].OfUser
				u.Content = append(u.Content, block)
			} else {
				p.Messages = append(p.Messages, anthropic.NewUserMessage(block))
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Text))
			}
			for _, tc := range msg.ToolCalls {
				var input any = json.RawMessage(tc.Args)
				if !json.Valid([]byte(tc.Args)) {
					input = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no text)"))
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return p, fmt.Errorf("a message of role %q", msg.Role)
		}
	}
	// Breakpoints at the end of the transcript, and at the end of the
	// user message before the last (where the request before this one
	// ended, and wrote its cache): a step that adds more blocks than the
	// server looks back over still reads what the step before cached.
	users := 0
	for i := len(p.Messages) - 1; i >= 0 && users < 2; i-- {
		if i != len(p.Messages)-1 && p.Messages[i].OfUser == nil {
			continue
		}
		if p.Messages[i].OfUser != nil {
			users++
		}
		if content := messageContent(p.Messages[i]); len(content) > 0 {
			if cc := content[len(content)-1].GetCacheControl(); cc != nil {
				*cc = anthropic.NewCacheControlEphemeralParam()
			}
		}
	}
	for _, t := range req.Tools {
		var schema struct {
			Properties any      `json:"properties"`
			Required   []string `json:"required"`
		}
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return p, fmt.Errorf("tool %s: its schema: %w", t.Name, err)
		}
		tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required}, t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		p.Tools = append(p.Tools, tool)
	}
	return p, nil
}

// isToolResults reports whether m is a user message of tool results only.
func isToolResults(m anthropic.MessageParam) bool {
	if m.OfUser == nil || len(m.OfUser.Content) == 0 {
		return false
	}
	for _, b := range m.OfUser.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

func messageContent(m anthropic.MessageParam) []anthropic.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}

// classifyMessages turns the SDK's error into a classed one.
func classifyMessages(err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		pe := httpFailure(apiErr.StatusCode, apiErr.Message, apiErr.Response)
		// Anthropic says a prompt is past the window with a 400
		// invalid_request_error whose message begins so.
		if apiErr.StatusCode == 400 && strings.HasPrefix(apiErr.Message, "prompt is too long") {
			pe.Class = FailContextOverflow
		}
		// An error event inside a stream the server began with 200
		// (overloaded_error under load) is classed by its type, as
		// its status would have been.
		if apiErr.StatusCode < 300 {
			pe.Class = classOfErrorType(string(apiErr.Type()))
		}
		return pe
	}
	if strings.HasPrefix(err.Error(), "received error while streaming: ") {
		// An error event the SDK could not read: the server failed.
		return &ProviderError{Class: FailServer, Err: err}
	}
	return transportFailure(err)
}

// classOfErrorType classes the type of an error event of the Messages
// API, as the status it stands for would be.
func classOfErrorType(t string) FailureClass {
	switch t {
	case "overloaded_error":
		return FailOverloaded
	case "rate_limit_error":
		return FailRateLimited
	case "authentication_error", "permission_error":
		return FailAuth
	case "timeout_error":
		return FailTimeout
	case "invalid_request_error", "not_found_error", "request_too_large", "billing_error":
		return FailRequest
	}
	return FailServer
}
