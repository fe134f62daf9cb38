package otlp

import (
	"strings"

	"github.com/reinhq/rein/trace"
)

// The names and rules a span carries are metadata, exported without
// Options.Content; but some of them are text the model (or a launched
// agent) chose: the name of a tool it invented, the model a launched
// agent asked for, the arguments a builtin rule quotes ("hard deny: rm
// of /secret-data (a top-level directory)"). Without Content each leaves
// only in a form that cannot carry what the run saw; with it, whole and
// redacted, like the rest of the content.

// unknown stands for a name that is not exported.
const unknown = "unknown"

// maxIdent bounds a name exported without content: longer ones are not
// names but a payload.
const maxIdent = 128

// ident is s when it is a name, of at most maxIdent bytes of ASCII
// letters, digits, "_", "-", ".", ":" and the bytes of extra; else
// unknown. The charset leaves out spaces and punctuation, so that a
// sentence or a blob of JSON cannot pass for a name.
func ident(s, extra string) string {
	if s == "" {
		return ""
	}
	if len(s) > maxIdent {
		return unknown
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.', c == ':':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return unknown
		}
	}
	return s
}

// toolName is the name a tool call's span carries. Without content it is
// the tool's name only when rein ran a tool of that name, and only when
// the name is an identifier (an MCP tool's mcp__server__tool is one):
// the router records a call to a tool its surface does not have, with
// the name exactly as the model wrote it, as a step of status not_found
// whose reason is the registry's "no tool NAME in the SURFACE surface".
func toolName(st trace.Step, content func(string) string) string {
	if content != nil {
		return content(st.Tool)
	}
	if unknownTool(st) {
		return unknown
	}
	return ident(st.Tool, "")
}

// unknownTool says whether the step is a call to a tool the run did not
// have: the router's refusal of it (tool.Registry's lookup).
func unknownTool(st trace.Step) bool {
	return st.Status == "not_found" && (strings.HasPrefix(st.Reason, "no tool ") || strings.HasPrefix(st.Reason, "no surface "))
}

// ruleText is the rule a refusal or an answer names. A rule of a policy
// file (org, user, project), of the command line, of a run's protect
// globs, of the plan gate, or a launched session's host is the person's
// (or rein's) own text, not the run's, and is exported as it is. A
// builtin rule's text can quote the command it refused ("hard deny: dd
// writes onto the device /dev/sda"): without content only its part before
// the first ":" leaves ("hard deny"), which is the kind of rule and holds
// nothing of the run; so does a rule of a layer rein does not know here.
// package policy's TestBuiltinRuleTexts holds every builtin rule to that
// form.
func ruleText(ev trace.PolicyEvent, content func(string) string) string {
	if content != nil {
		return content(ev.Rule)
	}
	switch ev.Layer {
	case "org", "user", "project", "flags", "verification", "plan-gate", "launch":
		return ev.Rule
	}
	head, _, _ := strings.Cut(ev.Rule, ":")
	return strings.TrimSpace(head)
}

// modelNames are the model, the provider and the finish reason a model
// call's span carries. rein's own runs name the model and provider the
// user configured. A launched session's gateway records the model the
// foreign agent asked for, which a model or a repository can choose:
// without content it is exported only when the provider answered the call
// (an invented model's call fails) and it is a name (with "/" allowed,
// as in "anthropic/claude-sonnet-4"); the provider and the finish reason
// only when they are names.
func modelNames(source string, c trace.ProviderCall, content func(string) string) (model, provider, finish string) {
	model, provider, finish = c.Model, c.Provider, c.Finish
	switch {
	case content != nil:
		return content(model), content(provider), content(finish)
	case source != "launch":
		return model, provider, finish
	}
	model = ident(model, "/")
	if c.Failure != "" && model != "" {
		model = unknown
	}
	return model, ident(provider, ""), ident(finish, "")
}
