package policy

import (
	"path/filepath"
	"strings"
	"testing"
)

// act is one thing asked, as a test writes it: a line, a web or egress
// target, a tool name.
type act struct {
	act    Act
	text   string
	web    bool
	refuse bool // refused rather than approved
}

func (f *fixture) candidate(p *Policy, a act, step int) Candidate {
	f.t.Helper()
	why := "approved"
	if a.refuse {
		why = "refused"
	}
	c := Candidate{Act: a.act, Target: a.text, Web: a.web, Approved: !a.refuse, Tool: string(a.act), Written: a.text,
		From: []Origin{{Run: "r1", Step: step, Why: why}}}
	if a.act == ActExec {
		l, err := p.LineParser(f.ws).Plan(a.text)
		if err != nil {
			f.t.Fatalf("Plan(%q): %v", a.text, err)
		}
		c.Line, c.Target = l, ""
	}
	return c
}

// decideAct decides a as the run did.
func (f *fixture) decideAct(p *Policy, a act) *Verdict {
	f.t.Helper()
	switch a.act {
	case ActExec:
		l, err := p.LineParser(f.ws).Plan(a.text)
		if err != nil {
			f.t.Fatalf("Plan(%q): %v", a.text, err)
		}
		return p.Check(l)
	case ActNet:
		if a.web {
			return p.CheckWeb(a.text)
		}
		return p.CheckNet(a.text)
	}
	return p.CheckTool(a.text)
}

// TestSuggest: each suggestion is the exact rule text; pasted into the
// user's policy file, it allows what was approved, and its neighbours
// (the same program with other arguments, other hosts and ports, other
// tools) are still asked. What no rule can lift is listed, never drafted.
func TestSuggest(t *testing.T) {
	exe := func(s string) act { return act{act: ActExec, text: s} }
	web := func(s string) act { return act{act: ActNet, text: s, web: true} }
	tool := func(s string) act { return act{act: ActTool, text: s} }
	cases := []struct {
		name       string
		asked      []act
		toml       string
		allowed    []act
		neighbours []act
	}{
		{
			name:       "a build command",
			asked:      []act{exe("go test ./pkg")},
			toml:       "[exec]\nallow = [\n  \"go test ./pkg\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{exe("go test ./pkg"), exe("go  test  './pkg'")},
			neighbours: []act{exe("go test ./other"), exe("go test ./pkg -run X"), exe("go build ./pkg"), exe("go test"), exe("go test ./pkg/...")},
		},
		{
			name:       "a web host",
			asked:      []act{web("docs.example.com:443/guide")},
			toml:       "[net]\nallow = [\n  \"docs.example.com:443\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{web("docs.example.com:443/guide"), web("docs.example.com:443/other")},
			neighbours: []act{web("example.com:443/guide"), web("docs.example.com:8443/guide"), web("evil.docs.example.com:443/guide"), web("docs.example.org:443/guide")},
		},
		{
			name:       "an egress host",
			asked:      []act{{act: ActNet, text: "proxy.example.net:443"}},
			toml:       "[net]\nallow = [\n  \"proxy.example.net:443\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{{act: ActNet, text: "proxy.example.net:443"}},
			neighbours: []act{{act: ActNet, text: "proxy.example.net:80"}, {act: ActNet, text: "example.net:443"}},
		},
		{
			// What the egress proxy records of a request it refused before
			// asking the policy (CONNECT evil.example HTTP/1.1): a rule
			// without a port would allow every port of the host.
			name: "egress targets without a port",
			asked: []act{
				{act: ActNet, text: "evil.example"},
				{act: ActNet, text: "1.2.3.4", refuse: true},
				{act: ActNet, text: "1.2.3.4", refuse: true},
				{act: ActNet, text: "::1"},
			},
			toml: "# Cannot be stated as a rule:\n" +
				"#   net evil.example\n#     \"evil.example\" names no port (host:port, [v6]:port): a [net] rule without one would allow every port of the host\n#     (approved in run r1 step 0)\n" +
				"#   net 1.2.3.4\n#     \"1.2.3.4\" names no port (host:port, [v6]:port): a [net] rule without one would allow every port of the host\n#     (refused in run r1 step 1, refused in run r1 step 2)\n" +
				"#   net ::1\n#     \"::1\" names no port (host:port, [v6]:port): a [net] rule without one would allow every port of the host\n#     (approved in run r1 step 3)\n",
			neighbours: []act{{act: ActNet, text: "evil.example:22"}, {act: ActNet, text: "evil.example:443"}, {act: ActNet, text: "1.2.3.4:22"}, {act: ActNet, text: "[::1]:22"}},
		},
		{
			name:       "an IPv6 egress host and port",
			asked:      []act{{act: ActNet, text: "[::1]:8080"}},
			toml:       "[net]\nallow = [\n  \"[::1]:8080\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{{act: ActNet, text: "[::1]:8080"}},
			neighbours: []act{{act: ActNet, text: "[::1]:8081"}, {act: ActNet, text: "[::2]:8080"}, {act: ActNet, text: "[::1]:80"}},
		},
		{
			name:       "an MCP tool",
			asked:      []act{tool("mcp__github__create_issue")},
			toml:       "[tool]\nallow = [\n  \"mcp__github__create_issue\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{tool("mcp__github__create_issue")},
			neighbours: []act{tool("mcp__github__delete_repo"), tool("mcp__github__create_issue_comment"), tool("mcp__gitlab__create_issue")},
		},
		{
			name:       "one stage of two already allowed",
			asked:      []act{exe("git status && touch made")},
			toml:       "[exec]\nallow = [\n  \"touch made\",  # approved in run r1 step 0\n]\n",
			allowed:    []act{exe("git status && touch made"), exe("touch made")},
			neighbours: []act{exe("touch other"), exe("touch made other"), exe("git status && touch other")},
		},
		{
			name:       "dangerous",
			asked:      []act{exe("rm -rf build")},
			toml:       "# No rule can allow this:\n#   exec rm -rf build\n#     dangerous (rm -r deletes recursively): no allow rule can lift it\n#     (approved in run r1 step 0)\n",
			neighbours: []act{exe("rm -rf build")},
		},
		{
			name:       "shell-complex",
			asked:      []act{exe("bash -c 'x'")},
			toml:       "# No rule can allow this:\n#   exec bash -c x\n#     shell-complex (bash -c runs a command string): no allow rule can lift it\n#     (approved in run r1 step 0)\n",
			neighbours: []act{exe("bash -c 'x'")},
		},
		{
			name:  "a hard deny",
			asked: []act{exe("rm -rf /"), {act: ActExec, text: "rm -rf /", refuse: true}, {act: ActExec, text: "rm  -rf  /", refuse: true}},
			toml:  "# Denied by the current policy:\n#   exec rm -rf /\n#     stage 0 (rm -rf /): hard deny: rm of / (the root)\n#     (approved in run r1 step 0, refused in run r1 step 1, refused in run r1 step 2)\n",
		},
		{
			name:       "a wildcard in an argument",
			asked:      []act{exe("touch 'a*b'")},
			toml:       "# Cannot be stated as a rule:\n#   exec touch 'a*b'\n#     \"a*b\" holds * or ?, which a pattern reads as a wildcard and has no escape for\n#     (approved in run r1 step 0)\n",
			neighbours: []act{exe("touch 'a*b'"), exe("touch ab")},
		},
		{
			name:       "a program alone",
			asked:      []act{exe("make")},
			toml:       "# Cannot be stated as a rule:\n#   exec make\n#     a rule naming only make would allow it with any arguments (a pattern is also tested against the program's name alone)\n#     (approved in run r1 step 0)\n",
			neighbours: []act{exe("make"), exe("make deploy")},
		},
		{
			name: "a refusal repeated, one not",
			asked: []act{
				{act: ActExec, text: "mkdir out", refuse: true},
				{act: ActExec, text: "mkdir  ./out/", refuse: true},
				{act: ActExec, text: "mkdir once", refuse: true},
			},
			toml:       "[exec]\nallow = [\n  \"mkdir out\",  # refused in run r1 step 0\n  \"mkdir ./out/\",  # refused in run r1 step 1\n]\n",
			allowed:    []act{exe("mkdir out"), exe("mkdir ./out/")},
			neighbours: []act{exe("mkdir once"), exe("mkdir -p out"), exe("mkdir out2")},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.load(ModeAsk)
			var cands []Candidate
			for i, a := range c.asked {
				cands = append(cands, f.candidate(p, a, i))
			}
			got := p.Suggest(cands).TOML()
			if got != c.toml {
				t.Fatalf("suggested:\n%s\nwant:\n%s", got, c.toml)
			}
			// Pasted into the user's policy file.
			f.write(f.user, got)
			q, err := Load(f.options())
			if err != nil {
				t.Fatalf("the suggestion does not load: %v\n%s", err, got)
			}
			for _, a := range c.allowed {
				if v := f.decideAct(q, a); v.Decision != Allow {
					t.Errorf("%s %q: %s (%s), want allow", a.act, a.text, v.Decision, v.Reason)
				}
			}
			for _, a := range c.neighbours {
				if v := f.decideAct(q, a); v.Decision != Ask {
					t.Errorf("neighbour %s %q: %s (%s), want ask", a.act, a.text, v.Decision, v.Reason)
				}
			}
		})
	}
}

// TestSuggestNotLifted: an allow rule that would not change the decision
// (an ask rule, a path outside the workspace) is not drafted, and a
// suggestion never turns a denial into anything else.
func TestSuggestNotLifted(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk, exec(Ask, "touch asked*"), exec(Deny, "touch denied*"))
	var cands []Candidate
	for i, line := range []string{"touch asked", "cat /etc/hostname", "touch denied"} {
		cands = append(cands, f.candidate(p, act{act: ActExec, text: line}, i))
	}
	s := p.Suggest(cands)
	want := []Outcome{NotLifted, NotLifted, StillDenied}
	if len(s) != len(want) {
		t.Fatalf("suggestions %+v", s)
	}
	for i, d := range s {
		if d.Outcome != want[i] || d.Pattern != "" {
			t.Errorf("%s: %s %q (%s), want %s", d.Subject, d.Outcome, d.Pattern, d.Reason, want[i])
		}
	}
}

// TestSuggestAlreadyAllowed: what the policy allows now needs no rule.
func TestSuggestAlreadyAllowed(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk, exec(Allow, "touch made"))
	l, err := p.LineParser(f.ws).Plan("touch made")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Suggest([]Candidate{{Act: ActExec, Line: l, Approved: true, From: []Origin{{Run: "r", Step: 0}}}})
	if len(s) != 1 || s[0].Outcome != AlreadyAllowed || s.TOML() != "" {
		t.Fatalf("%+v\n%s", s, s.TOML())
	}
}

// TestSuggestNetOnePort: whatever a net target looks like, a drafted rule
// allows its host on its port alone, and a target that names no port gets
// none (a [net] rule without a port allows every port of the host).
func TestSuggestNetOnePort(t *testing.T) {
	cases := []struct {
		target  string
		drafted string // "" when no rule may be drafted
	}{
		{"evil.example", ""},
		{"EVIL.example", ""},
		{"evil.example.", ""},
		{"1.2.3.4", ""},
		{"::1", ""},
		{"[::1]", ""},
		{"::ffff:1.2.3.4", ""},
		{"evil.example:", ""},
		{":443", ""},
		{"evil.example:0", ""},
		{"evil.example:65536", ""},
		{"evil.example:022", ""},
		{"evil.example:+22", ""},
		{"evil.example:http", ""},
		{"a:b:22", ""},
		{"*.example:443", ""},
		{"evil.example/x:443", ""},
		{"evil.example:443", "evil.example:443"},
		{"EVIL.example:443/path", "evil.example:443"},
		{"1.2.3.4:22", "1.2.3.4:22"},
		{"[::1]:22", "[::1]:22"},
		{"[2001:db8::1]:443/x", "[2001:db8::1]:443"},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			f := newFixture(t)
			p := f.load(ModeAsk)
			var cands []Candidate
			for _, web := range []bool{false, true} {
				cands = append(cands, Candidate{Act: ActNet, Target: c.target, Web: web, Approved: true, From: []Origin{{Run: "r", Step: 0}}})
			}
			s := p.Suggest(cands)
			var drafted []string
			for _, d := range s {
				if d.Outcome == Drafted {
					drafted = append(drafted, d.Pattern)
				}
			}
			switch {
			case c.drafted == "" && len(drafted) > 0:
				t.Fatalf("drafted %q for %q, which names no single port", drafted, c.target)
			case c.drafted != "" && (len(drafted) != 1 || drafted[0] != c.drafted):
				t.Fatalf("drafted %q for %q, want [%q]\n%s", drafted, c.target, c.drafted, s.TOML())
			case c.drafted == "":
				return
			}
			// Pasted, the rule allows the host on that port and on no
			// other, through the egress proxy or the web tools.
			f.write(f.user, s.TOML())
			q, err := Load(f.options())
			if err != nil {
				t.Fatalf("the suggestion does not load: %v\n%s", err, s.TOML())
			}
			if v := q.CheckNet(c.target); v.Decision != Allow {
				t.Errorf("CheckNet(%q) with the rule: %s (%s), want allow", c.target, v.Decision, v.Reason)
			}
			host := strings.TrimSuffix(c.drafted[:strings.LastIndexByte(c.drafted, ':')], "]")
			host = strings.TrimPrefix(host, "[")
			for _, port := range []string{"1", "22", "80", "8443", "65535"} {
				other := host + ":" + port
				if strings.Contains(host, ":") {
					other = "[" + host + "]:" + port
				}
				if other == c.drafted {
					continue
				}
				for _, v := range []*Verdict{q.CheckNet(other), q.CheckWeb(other + "/")} {
					if v.Decision == Allow {
						t.Errorf("%s is allowed by the rule drafted for %q: %s", other, c.target, v.Reason)
					}
				}
			}
		})
	}
}

// TestSuggestRelativeProgramAfterCd: a program named by a relative path
// after the line changed directory is not the workspace's file of that
// name (cd /usr/bin && ./touch runs the system's touch), so no rule is
// drafted for its words: pasted, it would let the workspace's ./touch run
// unasked. A line that starts elsewhere is the same; a bare name, found on
// the PATH wherever the line is, is still drafted.
func TestSuggestRelativeProgramAfterCd(t *testing.T) {
	f := newFixture(t)
	// The workspace's own programs of those names, which nobody approved.
	f.write(filepath.Join(f.ws, "touch"), "#!/bin/sh\n")
	f.write(filepath.Join(f.ws, "bin", "touch"), "#!/bin/sh\n")
	made := filepath.Join(f.ws, "made")
	p := f.load(ModeAsk)
	lines := []struct {
		line, dir string
	}{
		{"cd /usr/bin && ./touch " + made, ""},
		{"cd /usr && bin/touch " + made, ""},
		{"cd /usr/bin; ./touch " + made, ""},
		{"cd /usr/bin || true && timeout 5 ./touch " + made, ""},
		{"cd src && ../touch made", ""},
		{"cd src && ./touch made", ""},
		{"./touch made", filepath.Join(f.ws, "src")},
		{"bin/touch " + made, "/usr"},
	}
	var cands []Candidate
	for i, l := range lines {
		c := f.candidate(p, act{act: ActExec, text: l.line}, i)
		if l.dir != "" {
			pl, err := p.LineParser(l.dir).Plan(l.line)
			if err != nil {
				t.Fatalf("Plan(%q): %v", l.line, err)
			}
			c.Line, c.Dir = pl, l.dir
		}
		cands = append(cands, c)
	}
	s := p.Suggest(cands)
	stated := map[int]bool{}
	for _, d := range s {
		if d.Outcome == Drafted && strings.Contains(d.Pattern, "touch") {
			t.Errorf("drafted %q (from %v), which would allow the workspace's own program", d.Pattern, d.From)
		}
		if d.Outcome == NotStatable && strings.Contains(d.Reason, "relative to a directory the line changes") {
			for _, o := range d.From {
				stated[o.Step] = true
			}
		}
	}
	for i, l := range lines {
		if !stated[i] {
			t.Errorf("%q (from %q): not reported as a program relative to a directory the line changes\n%s", l.line, l.dir, s.TOML())
		}
	}
	f.write(f.user, s.TOML())
	q, err := Load(f.options())
	if err != nil {
		t.Fatalf("the suggestion does not load: %v\n%s", err, s.TOML())
	}
	for _, line := range []string{"./touch " + made, "bin/touch " + made, "./touch made", "timeout 5 ./touch " + made} {
		if v := f.check(q, line); v.Decision != Ask {
			t.Errorf("%q with the suggestion pasted: %s (%s), want ask", line, v.Decision, v.Reason)
		}
	}

	// A bare name is the PATH's program wherever the line is.
	c := f.candidate(p, act{act: ActExec, text: "cd src && touch made"}, 0)
	got := p.Suggest([]Candidate{c}).TOML()
	if want := "[exec]\nallow = [\n  \"touch made\",  # approved in run r1 step 0\n]\n"; got != want {
		t.Errorf("cd src && touch made: suggested\n%s\nwant\n%s", got, want)
	}
}
