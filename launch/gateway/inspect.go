package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// inspect says why a request would make the provider itself reach a host
// the policy does not allow, or "". What it knows is a list of what is
// safe: a tool of a kind it does not know, or a place a URL can hide that
// it does not read, is refused, not passed.
func (g *Gateway) inspect(ctx context.Context, api string, req map[string]any) string {
	switch {
	case g.c.Family == Messages:
		return g.inspectMessages(ctx, req)
	case api == "/responses" || api == "/responses/input_tokens":
		return g.inspectResponses(ctx, req)
	case api == "/chat/completions":
		return g.inspectChat(ctx, req)
	}
	return ""
}

// messagesClientTools are the Messages API tool types the client runs
// itself (a tool with no type is the client's own too); the prefixes are
// the versioned names (bash_20250124).
var messagesClientTools = []string{"custom", "bash_", "text_editor_", "computer_", "memory_", "tool_search_tool_"}

// messagesKeys are the request fields the gateway knows: anything else
// at the top level could ask the provider for something it does not read.
var messagesKeys = setOf("model", "messages", "system", "max_tokens", "metadata", "stop_sequences", "stream", "temperature",
	"top_k", "top_p", "tools", "tool_choice", "thinking", "mcp_servers", "service_tier", "container", "context_management",
	"output_format", "output_config", "betas", "speed", "inference_geo")

func (g *Gateway) inspectMessages(ctx context.Context, req map[string]any) string {
	if why := known(req, messagesKeys); why != "" {
		return why
	}
	for _, s := range list(req["mcp_servers"]) {
		m, _ := s.(map[string]any)
		u, _ := m["url"].(string)
		if why := g.hostOf(ctx, "an MCP server the provider would connect to", u); why != "" {
			return why
		}
	}
	for _, t := range list(req["tools"]) {
		m, _ := t.(map[string]any)
		typ, _ := m["type"].(string)
		switch {
		case typ == "" || hasPrefix(typ, messagesClientTools):
		case strings.HasPrefix(typ, "web_search_") || strings.HasPrefix(typ, "web_fetch_"):
			if why := g.domains(ctx, typ, m["allowed_domains"]); why != "" {
				return why
			}
		default:
			return fmt.Sprintf("the server tool %q runs at the provider, which rein does not decide", typ)
		}
	}
	if why := g.blocks(ctx, req["system"]); why != "" {
		return why
	}
	return g.blocks(ctx, req["messages"])
}

// blocks checks content blocks, at any depth (a tool result's, a
// document's content source's): a source the provider would fetch by URL
// must be allowed, and a source of a type rein does not know is refused.
// The input of a tool call is the model's own words, and not read.
func (g *Gateway) blocks(ctx context.Context, v any) string {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if why := g.blocks(ctx, e); why != "" {
				return why
			}
		}
	case map[string]any:
		typ, _ := x["type"].(string)
		if src, ok := x["source"].(map[string]any); ok {
			switch st, _ := src["type"].(string); st {
			case "base64", "text", "content", "file", "url":
			default:
				return fmt.Sprintf("a content source of type %q is not one rein knows to be safe", clip(st))
			}
		}
		if typ == "url" {
			u, _ := x["url"].(string)
			if why := g.hostOf(ctx, "a URL the provider would fetch", u); why != "" {
				return why
			}
		}
		for k, e := range x {
			if k == "input" && strings.HasSuffix(typ, "tool_use") {
				continue
			}
			if why := g.blocks(ctx, e); why != "" {
				return why
			}
		}
	}
	return ""
}

// responsesClientTools are the Responses API tool types the client runs,
// each with the fields it may have: a field rein does not know (a hosted
// shell's environment) is refused.
var responsesClientTools = map[string]map[string]bool{
	"function":    setOf("type", "name", "description", "parameters", "strict", "defer_loading"),
	"custom":      setOf("type", "name", "description", "format", "defer_loading"),
	"local_shell": setOf("type"),
	"shell":       setOf("type"),
	"apply_patch": setOf("type"),
}

// responsesKeys are the Responses request fields the gateway knows
// (background, which outlives the session, and prompt, a stored template
// that can carry hosted tools, are not among them).
var responsesKeys = setOf("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "store",
	"stream", "stream_options", "include", "prompt_cache_key", "prompt_cache_retention", "text", "service_tier", "metadata",
	"max_output_tokens", "max_tool_calls", "previous_response_id", "truncation", "user", "temperature", "top_p", "top_logprobs",
	"safety_identifier", "conversation", "client_metadata")

func (g *Gateway) inspectResponses(ctx context.Context, req map[string]any) string {
	if why := known(req, responsesKeys); why != "" {
		return why
	}
	if why := g.responsesTools(ctx, req["tools"], 0); why != "" {
		return why
	}
	return g.parts(ctx, req["input"])
}

// responsesTools checks a Responses request's tools, and the tools of a
// namespace among them (MCP tools, as Codex groups them).
func (g *Gateway) responsesTools(ctx context.Context, tools any, depth int) string {
	for _, t := range list(tools) {
		m, _ := t.(map[string]any)
		typ, _ := m["type"].(string)
		fields, client := responsesClientTools[typ]
		switch {
		case client:
			if why := known(m, fields); why != "" {
				return fmt.Sprintf("a %s tool: %s", typ, why)
			}
		case typ == "namespace" && depth == 0:
			if why := known(m, setOf("type", "name", "description", "tools")); why != "" {
				return "a namespace tool: " + why
			}
			if why := g.responsesTools(ctx, m["tools"], depth+1); why != "" {
				return why
			}
		case typ == "mcp":
			if _, ok := m["connector_id"]; ok {
				return "an MCP connector runs at the provider, which rein does not decide"
			}
			u, _ := m["server_url"].(string)
			if why := g.hostOf(ctx, "an MCP server the provider would connect to", u); why != "" {
				return why
			}
		case typ == "web_search" || typ == "web_search_preview" || strings.HasPrefix(typ, "web_search_"):
			filters, _ := m["filters"].(map[string]any)
			if why := g.domains(ctx, typ, filters["allowed_domains"]); why != "" {
				return why
			}
		default:
			return fmt.Sprintf("the hosted tool %q runs at the provider, which rein does not decide", typ)
		}
	}
	return ""
}

// parts checks the input of a Responses or Chat Completions request, at
// any depth: an image or a file the provider would fetch by URL must be
// allowed (a data: URL is the bytes themselves).
func (g *Gateway) parts(ctx context.Context, v any) string {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if why := g.parts(ctx, e); why != "" {
				return why
			}
		}
	case map[string]any:
		for k, e := range x {
			if k == "image_url" || k == "file_url" {
				u, _ := e.(string)
				if m, ok := e.(map[string]any); ok {
					u, _ = m["url"].(string)
				}
				if u != "" && !strings.HasPrefix(u, "data:") {
					if why := g.hostOf(ctx, "a URL the provider would fetch", u); why != "" {
						return why
					}
				}
			}
			if why := g.parts(ctx, e); why != "" {
				return why
			}
		}
	}
	return ""
}

// chatKeys are the Chat Completions request fields the gateway knows.
var chatKeys = setOf("model", "messages", "tools", "tool_choice", "stream", "stream_options", "temperature", "top_p", "max_tokens",
	"max_completion_tokens", "n", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
	"response_format", "seed", "user", "parallel_tool_calls", "reasoning_effort", "metadata", "store", "service_tier",
	"modalities", "prediction", "verbosity", "prompt_cache_key", "safety_identifier", "functions", "function_call", "audio")

func (g *Gateway) inspectChat(ctx context.Context, req map[string]any) string {
	if why := known(req, chatKeys); why != "" {
		return why
	}
	if _, ok := req["web_search_options"]; ok {
		return "web search runs at the provider, which rein does not decide"
	}
	for _, t := range list(req["tools"]) {
		m, _ := t.(map[string]any)
		if typ, _ := m["type"].(string); typ != "function" && typ != "custom" {
			return fmt.Sprintf("the tool type %q is not one rein knows to be safe", typ)
		}
	}
	return g.parts(ctx, req["messages"])
}

// domains decides a provider's web tool: only with a list of domains,
// each of which the policy allows.
func (g *Gateway) domains(ctx context.Context, typ string, v any) string {
	ds := list(v)
	if len(ds) == 0 {
		return fmt.Sprintf("the provider's tool %q would reach any host: rein passes it only with allowed_domains the policy's net rules allow", typ)
	}
	for _, d := range ds {
		s, _ := d.(string)
		// The provider reaches the domain's subdomains too: the rules
		// must allow them as well.
		for _, h := range []string{s, "any-subdomain." + s} {
			if why := g.hostOf(ctx, "a domain of "+typ, "https://"+h); why != "" {
				return why
			}
		}
	}
	return ""
}

// hostOf decides the host of raw, a URL the provider would reach.
func (g *Gateway) hostOf(ctx context.Context, what, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Sprintf("%s, %q, is not an http(s) URL", what, raw)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return fmt.Sprintf("%s, %q, has a bad port", what, raw)
		}
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if g.c.Host == nil {
		return fmt.Sprintf("%s, %s, is not allowed: no net rule decides it", what, host)
	}
	if ok, why := g.c.Host(ctx, host, uint16(port)); !ok {
		return fmt.Sprintf("%s, %s:%d, is not allowed by the policy's net rules: %s", what, host, port, why)
	}
	return ""
}

// known says why a request holds a field outside keys, or "".
func known(req map[string]any, keys map[string]bool) string {
	for k := range req {
		if !keys[k] {
			return fmt.Sprintf("the request's field %q is not one rein knows to be safe to forward", k)
		}
	}
	return ""
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || (strings.HasSuffix(p, "_") && strings.HasPrefix(s, p)) {
			return true
		}
	}
	return false
}

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// maxDepth bounds a request body's nesting, and maxTokens its JSON
// tokens (what decoding it costs rein's memory grows with them).
const (
	maxDepth  = 128
	maxTokens = 1 << 20
)

// strict says why body is not one JSON object the gateway and the
// provider read alike: a key twice in one object (which parsers resolve
// differently: the gateway would check one and the provider act on the
// other), nesting past maxDepth, or anything after the object.
func strict(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		keys map[string]bool // nil for an array
		key  bool            // an object's next token is a key
	}
	var stack []*frame
	values := 0
	for n := 0; ; n++ {
		if n > maxTokens {
			return fmt.Sprintf("the request's body holds more than %d JSON tokens", maxTokens)
		}
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "the request's body is not JSON: " + err.Error()
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].key {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
			} else {
				k, _ := tok.(string)
				if stack[n-1].keys[k] {
					return fmt.Sprintf("the request's body holds the key %q twice in one object", k)
				}
				stack[n-1].keys[k] = true
				stack[n-1].key = false
				continue
			}
		} else {
			switch tok {
			case json.Delim('{'), json.Delim('['):
				if len(stack) >= maxDepth {
					return fmt.Sprintf("the request's body nests deeper than %d", maxDepth)
				}
				f := &frame{}
				if tok == json.Delim('{') {
					f.keys, f.key = map[string]bool{}, true
				}
				stack = append(stack, f)
				continue
			case json.Delim(']'):
				stack = stack[:len(stack)-1]
			}
		}
		// A value ended: the enclosing object's next token is a key.
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].key = true
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return "the request's body holds more than one JSON value"
			}
		}
	}
	if len(stack) != 0 || values != 1 {
		return "the request's body is not one whole JSON value"
	}
	return ""
}
