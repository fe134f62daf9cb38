package policy

import (
	"strings"
	"testing"
)

// TestCheckNetShapes: a rule's wildcards stay within the part of the
// target they stand for; path rules decide only plain HTTP and keep
// tunnels from going around them; IPv6 literals match.
func TestCheckNetShapes(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, `[net]
allow = ["*.npmjs.org", "api.example.com", "files.example.com:80/v2/*", "[2606:4700::1]:443", "*:8443"]
deny = ["api.example.com:80/admin*", "2001:db8::1", "Evil.Example", "2001:DB8:0:0::2", "::ffff:1.2.3.4", "dotted.example.", "[2001:DB8::3]:8443"]
ask = ["ask.example.com:80/private/*"]
presets = ["npm"]
`)
	p := f.load(ModeAuto)
	cases := []struct {
		target string
		want   Decision
		reason string
	}{
		// A wildcard never reaches into the path or across the port.
		{"evil.com:80/x.npmjs.org", Ask, ""},
		{"evil.com:8080/x.npmjs.org:443", Ask, ""},
		{"evil.com:80/?q=.npmjs.org", Ask, ""},
		{"registry.npmjs.org:443", Allow, ""},
		{"a.npmjs.org:80/anything", Allow, ""},
		{"evil.com:8443", Allow, ""},
		{"evil.com:443/:8443", Ask, ""},
		// Path rules decide plain HTTP by path only.
		{"files.example.com:80/v2/pkg", Allow, ""},
		{"files.example.com:80/v3/pkg", Ask, ""},
		{"files.example.com:80", Ask, ""},
		{"x.com:80/files.example.com:80/v2/a", Ask, ""},
		// Hosts compare without case, an allow's path byte for byte,
		// and a deny's or an ask's path in any letters.
		{"FILES.Example.COM:80/v2/pkg", Allow, ""},
		{"files.example.com:80/V2/pkg", Ask, ""},
		{"api.example.com:80/ADMIN/users", Deny, ""},
		{"ask.example.com:80/Private/x", Ask, "ask rule"},
		// A deny or ask rule with a path refuses tunnels to its host.
		{"api.example.com:80/admin/users", Deny, ""},
		{"api.example.com:80/public", Allow, ""},
		{"api.example.com:80", Deny, "get around"},
		{"api.example.com:443", Allow, ""},
		{"ask.example.com:80", Deny, "get around"},
		{"ask.example.com:80/private/x", Ask, ""},
		// IPv6 literals, with and without a port in the rule; case.
		{"[2606:4700::1]:443", Allow, ""},
		{"[2606:4700::1]:80", Ask, ""},
		{"[2001:db8::1]:443", Deny, ""},
		{"[2001:db8::1]:80/x", Deny, ""},
		{"evil.example:443", Deny, ""},
		// Patterns are read as the proxy writes targets.
		{"[2001:db8::2]:443", Deny, ""},
		{"1.2.3.4:443", Deny, ""},
		{"dotted.example:443", Deny, ""},
		{"[2001:db8::3]:8443", Deny, ""},
		// The preset's hosts, by host and port only.
		{"evil.com:443/registry.npmjs.org:443", Ask, ""},
	}
	for _, c := range cases {
		v := p.CheckNet(c.target)
		if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: %s (%s), want %s %q", c.target, v.Decision, v.Reason, c.want, c.reason)
		}
	}
}

func FuzzCheckNet(f *testing.F) {
	for _, s := range []string{"a.npmjs.org:443", "evil.com:80/x.npmjs.org", "[::1]:80/a", "x:1:2/y", "/", ""} {
		f.Add(s)
	}
	dir := f.TempDir()
	p, err := Load(Options{Workspace: dir, Home: dir, NoFiles: true, Rules: []Rule{
		{Act: ActNet, Effect: Allow, Pattern: "*.npmjs.org"},
		{Act: ActNet, Effect: Deny, Pattern: "api.example.com:80/admin*"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		v := p.CheckNet(target)
		// Whatever the path says, an allow by the wildcard needs the host
		// itself to end in .npmjs.org.
		if v.Decision == Allow {
			nt := splitNetTarget(target)
			if !strings.HasSuffix(nt.name, ".npmjs.org") {
				t.Fatalf("%q allowed for host %q: %s", target, nt.name, v.Reason)
			}
		}
	})
}

// TestNetRuleExamples: a net rule's examples are checked with the matcher
// that decides connections.
func TestNetRuleExamples(t *testing.T) {
	dir := t.TempDir()
	load := func(r Rule) error {
		_, err := Load(Options{Workspace: dir, Home: dir, NoFiles: true, Rules: []Rule{r}})
		return err
	}
	if err := load(Rule{Act: ActNet, Effect: Allow, Pattern: "*.npmjs.org", Match: []string{"registry.npmjs.org:443"},
		NotMatch: []string{"evil.com:80/x.npmjs.org"}}); err != nil {
		t.Errorf("examples read as connections failed: %v", err)
	}
	if err := load(Rule{Act: ActNet, Effect: Allow, Pattern: "*.npmjs.org", Match: []string{"evil.com:80/x.npmjs.org"}}); err == nil {
		t.Error("an example that the rule does not decide passed")
	}
}
