package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// ChatConfig says where a Chat Completions provider sends its requests.
type ChatConfig struct {
	// Name is the preset's or the configuration's name.
	Name string
	// BaseURL is the API's root, ending in /v1 for most servers.
	BaseURL string
	// APIKey is the key's value (read from the variable the configuration
	// names, never from a file); empty sends none.
	APIKey string
	Model  string
	// HTTPClient, when set, carries the requests (tests, a proxy).
	HTTPClient *http.Client
	// IdleTimeout ends a call whose stream sends nothing for this long;
	// zero is DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// chatProvider is the OpenAI Chat Completions wire family, through the
// vendor's SDK, which serves every compatible server by base URL.
type chatProvider struct {
	configured
	client openai.Client
}

// configured is what every provider knows of itself: its configuration,
// whose name and model it reports.
type configured struct{ cfg ChatConfig }

func (c configured) Name() string  { return c.cfg.Name }
func (c configured) Model() string { return c.cfg.Model }

// NewChat makes a Chat Completions provider. The SDK's own retries are
// off: the loop retries, so that the budget and the trace see every
// attempt.
func NewChat(cfg ChatConfig) Provider {
	return &chatProvider{configured{cfg}, openAIClient(cfg)}
}

// openAIClient is OpenAI's SDK client for both of its families: the base
// URL and key the configuration's, never the environment's (the SDK would
// read OPENAI_API_KEY, and a provider without a key sends none, not
// another provider's), and the SDK's own retries off.
func openAIClient(cfg ChatConfig) openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithMaxRetries(0), option.WithAPIKey(cfg.APIKey)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return openai.NewClient(opts...)
}

func (c *chatProvider) Stream(ctx context.Context, req Request) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: err}
	}
	var acc openai.ChatCompletionAccumulator
	resp := &Response{}
	first, cut, err := readStream(ctx, c.cfg.IdleTimeout, req.MaxTokens,
		func(ctx context.Context) eventStream[openai.ChatCompletionChunk] {
			return c.client.Chat.Completions.NewStreaming(ctx, params)
		}, classify,
		func(chunk openai.ChatCompletionChunk) int {
			n := 0
			for _, ch := range chunk.Choices {
				n += len(ch.Delta.Content)
				for _, tc := range ch.Delta.ToolCalls {
					n += len(tc.Function.Arguments)
				}
			}
			return n
		},
		func(chunk openai.ChatCompletionChunk) error { acc.AddChunk(chunk); return nil })
	resp.FirstToken = first
	if err != nil {
		return nil, err
	}
	if cut {
		r := cutResponse(acc.Choices, maxResponseBytes(req.MaxTokens))
		r.FirstToken = first
		return r, nil
	}
	if len(acc.Choices) == 0 {
		return nil, &ProviderError{Class: FailMalformed, Err: errors.New("the stream ended with no choice")}
	}
	ch := acc.Choices[0]
	if ch.FinishReason == "" {
		// The connection ended mid-response: no finish reason came.
		return nil, &ProviderError{Class: FailTransport, Err: errors.New("the stream ended before the response did")}
	}
	resp.Text = ch.Message.Content
	for _, tc := range ch.Message.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	switch ch.FinishReason {
	case "stop":
		resp.Finish = FinishStop
	case "tool_calls", "function_call":
		resp.Finish = FinishToolCalls
	case "length":
		resp.Finish = FinishLength
	default:
		resp.Finish = FinishOther
	}
	resp.Usage = Usage{Input: count(acc.Usage.PromptTokens), Output: count(acc.Usage.CompletionTokens),
		CacheRead: count(acc.Usage.PromptTokensDetails.CachedTokens)}
	return resp, nil
}

// cutResponse is a response stopped at the byte bound: the text so far,
// its tool calls dropped, as one cut at the cap.
func cutResponse(choices []openai.ChatCompletionChoice, limit int) *Response {
	r := &Response{Finish: FinishLength}
	if len(choices) > 0 {
		r.Text = choices[0].Message.Content
		if len(r.Text) > limit {
			r.Text = r.Text[:limit]
		}
	}
	return r
}

func (c *chatProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         c.cfg.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if sys := req.SystemText(); sys != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(sys))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Text, m.ToolCallID))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Args},
				}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("a message of role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return p, fmt.Errorf("tool %s: its schema: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: schema,
		}))
	}
	return p, nil
}

// classify turns the SDK's error into a classed one.
func classify(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		pe := httpFailure(apiErr.StatusCode, apiErr.Message, apiErr.Response)
		if apiErr.Code == "context_length_exceeded" {
			pe.Class = FailContextOverflow
		}
		return pe
	}
	return transportFailure(err)
}
