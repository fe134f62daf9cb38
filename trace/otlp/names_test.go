package otlp

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
)

// TestIdent: a name leaves without content only in the identifier
// charset and within its bound; an MCP tool's name is one.
func TestIdent(t *testing.T) {
	for _, c := range []struct{ in, extra, want string }{
		{"shell", "", "shell"},
		{"mcp__github__create_issue", "", "mcp__github__create_issue"},
		{"Bash", "", "Bash"},
		{"a.b-c:d_e9", "", "a.b-c:d_e9"},
		{"", "", ""},
		{strings.Repeat("a", maxIdent), "", strings.Repeat("a", maxIdent)},
		{strings.Repeat("a", maxIdent+1), "", unknown},
		{"my data: hunter2", "", unknown},
		{"caf\u00e9", "", unknown},
		{`{"x":1}`, "", unknown},
		{"a\nb", "", unknown},
		{"anthropic/claude-sonnet-4", "", unknown},
		{"anthropic/claude-sonnet-4", "/", "anthropic/claude-sonnet-4"},
	} {
		if got := ident(c.in, c.extra); got != c.want {
			t.Errorf("ident(%q, %q) = %q, want %q", c.in, c.extra, got, c.want)
		}
	}
}

// TestRuleText: without content a policy file's rule leaves as written
// and a builtin one (or one of a layer not known here) as its kind.
func TestRuleText(t *testing.T) {
	for _, c := range []struct{ rule, layer, want string }{
		{"git push *", "user", "git push *"},
		{"curl https://x.example:8443/*", "org", "curl https://x.example:8443/*"},
		{"rm -rf*", "project", "rm -rf*"},
		{"api.anthropic.com:443", "launch", "api.anthropic.com:443"},
		{"hard deny: rm of /EXFIL (a top-level directory)", "builtin", "hard deny"},
		{"hard deny: dd writes onto the device /dev/X", "builtin", "hard deny"},
		{"generated file (its header says so)", "builtin", "generated file (its header says so)"},
		{"something: new", "", "something"},
		{"something: new", "a-layer-of-tomorrow", "something"},
	} {
		if got := ruleText(trace.PolicyEvent{Rule: c.rule, Layer: c.layer}, nil); got != c.want {
			t.Errorf("ruleText(%q, %s) = %q, want %q", c.rule, c.layer, got, c.want)
		}
	}
}
