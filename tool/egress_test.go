package tool

import (
	"context"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/netproxy"
)

// TestEgressByName: only an allow rule naming the host exactly grants it
// by name (which is what reaches a private address); a wildcard, a preset
// or an approval does not.
func TestEgressByName(t *testing.T) {
	dir := t.TempDir()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: dir, Home: dir, NoFiles: true, Mode: &mode, Rules: []policy.Rule{
		{Act: policy.ActNet, Effect: policy.Allow, Pattern: "registry.corp:443"},
		{Act: policy.ActNet, Effect: policy.Allow, Pattern: "*.corp"},
		{Act: policy.ActNet, Effect: policy.Allow, Pattern: "[::1]:8080"},
		{Act: policy.ActNet, Effect: policy.Allow, Pattern: "localhost"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	eg := Egress(p, policy.AllowAll{}, nil)
	for _, c := range []struct {
		target        string
		allow, byName bool
	}{
		{"registry.corp:443", true, true},
		{"other.corp:443", true, false},
		{"[::1]:8080", true, true},
		{"localhost:3000", true, true},
		{"approved.example:443", true, false}, // asked, approved
	} {
		v := eg.Decide(context.Background(), netproxy.Request{Target: c.target})
		if v.Allow != c.allow || v.ByName != c.byName {
			t.Errorf("%s: allow %v by name %v (%s)", c.target, v.Allow, v.ByName, v.Reason)
		}
	}
	if v := Egress(p, nil, nil).Decide(context.Background(), netproxy.Request{Target: "unnamed.example:443"}); v.Allow {
		t.Errorf("an ask with no approver was allowed: %s", v.Reason)
	}
}
