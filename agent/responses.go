package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// responsesProvider is OpenAI's Responses API wire family, through the
// vendor's SDK: stateless (store off, the whole transcript sent each
// step), as the other families are.
type responsesProvider struct {
	configured
	client openai.Client
}

// NewResponses makes an OpenAI Responses provider, the SDK's own retries
// off and its key the configuration's, never the environment's.
func NewResponses(cfg ChatConfig) Provider {
	return &responsesProvider{configured{cfg}, openAIClient(cfg)}
}

func (r *responsesProvider) Stream(ctx context.Context, req Request) (*Response, error) {
	params, err := r.params(req)
	if err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: err}
	}
	resp := &Response{}
	var final *responses.Response
	first, cut, err := readStream(ctx, r.cfg.IdleTimeout, req.MaxTokens,
		func(ctx context.Context) eventStream[responses.ResponseStreamEventUnion] {
			return r.client.Responses.NewStreaming(ctx, params)
		}, classify,
		func(ev responses.ResponseStreamEventUnion) int { return len(ev.Delta) },
		func(ev responses.ResponseStreamEventUnion) error {
			switch ev.Type {
			case "response.completed", "response.incomplete":
				final = &ev.Response
			case "response.failed":
				return &ProviderError{Class: FailServer, Err: fmt.Errorf("the response failed: %s", ev.Response.Error.Message)}
			case "error":
				return &ProviderError{Class: FailServer, Err: fmt.Errorf("the stream reported an error: %s", ev.Message)}
			}
			return nil
		})
	resp.FirstToken = first
	if err != nil {
		return nil, err
	}
	if cut {
		// Stopped as at the cap: no tool call of it is run.
		return &Response{Finish: FinishLength, FirstToken: first}, nil
	}
	if final == nil {
		return nil, &ProviderError{Class: FailTransport, Err: errors.New("the stream ended before the response did")}
	}
	for _, item := range final.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				if c.Type == "output_text" {
					resp.Text += c.Text
				}
			}
		case "function_call":
			var fc struct {
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(item.RawJSON()), &fc); err != nil {
				return nil, &ProviderError{Class: FailMalformed, Err: fmt.Errorf("a function call: %w", err)}
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: fc.CallID, Name: fc.Name, Args: fc.Arguments})
		}
	}
	switch {
	case final.Status == responses.ResponseStatusIncomplete && final.IncompleteDetails.Reason == "max_output_tokens":
		resp.Finish = FinishLength
	case final.Status == responses.ResponseStatusIncomplete:
		resp.Finish = FinishOther
	case len(resp.ToolCalls) > 0:
		resp.Finish = FinishToolCalls
	default:
		resp.Finish = FinishStop
	}
	u := final.Usage
	resp.Usage = Usage{Input: count(u.InputTokens), Output: count(u.OutputTokens), CacheRead: count(u.InputTokensDetails.CachedTokens)}
	return resp, nil
}

func (r *responsesProvider) params(req Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{Model: r.cfg.Model, Store: openai.Bool(false)}
	if sys := req.SystemText(); sys != "" {
		p.Instructions = openai.String(sys)
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = openai.Int(int64(req.MaxTokens))
	}
	var items responses.ResponseInputParam
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			items = append(items, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleUser))
		case RoleAssistant:
			if m.Text != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range m.ToolCalls {
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(tc.Args, tc.ID, tc.Name))
			}
		case RoleTool:
			item := responses.ResponseInputItemParamOfFunctionCallOutput(m.Text)
			item.OfFunctionCallOutput.CallID = openai.String(m.ToolCallID)
			items = append(items, item)
		default:
			return p, fmt.Errorf("a message of role %q", m.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return p, fmt.Errorf("tool %s: its schema: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: schema, Strict: openai.Bool(false),
		}})
	}
	return p, nil
}
