package policy

import (
	"fmt"
	"maps"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/shell"
)

// This file drafts allow rules from what a trace holds (rein policy
// suggest): the narrowest [exec], [net] and [tool] rule that would have
// let an approved ask, or a refusal the run met again and again, through
// without asking. A draft is only ever an exact literal: a rule that would
// allow more than the action itself is not drafted, and what no allow
// rule can lift (a deny, a hard deny, the class floor) is reported, never
// drafted around.

// MinRepeatedRefusals is how often the same operation must have been
// refused before Suggest drafts a rule for it: one refusal may be a
// mistake of the agent's, two are a habit worth a rule.
const MinRepeatedRefusals = 2

// Candidate is one action of a trace that a rule might have allowed.
type Candidate struct {
	// Act is ActExec, ActNet or ActTool.
	Act Act
	// Line is an exec candidate's plan, parsed as the run parsed it (with
	// the policy's LineParser, its programs resolved as the sandbox finds
	// them); Dir is where it starts (the workspace when empty).
	Line *shell.Line
	Dir  string
	// Target is a net candidate's host:port (or host:port/path), or a tool
	// candidate's name. A net target without a port is reported, never
	// drafted: a [net] rule without one allows every port of the host.
	Target string
	// Web says the net target was reached by rein's web tools, decided by
	// CheckWeb, rather than by a command through the egress proxy
	// (CheckNet).
	Web bool
	// Approved says a person approved the ask. A candidate that was not
	// approved (refused, or asked where rein never sees the answer) counts
	// only when the same operation, told apart as the repeated-refusal
	// stop tells them (Tool and Written, spacing, quoting, a leading ./
	// and trailing slashes set aside), comes MinRepeatedRefusals times.
	Approved bool
	// Tool is the tool the run called; Written the target as the call
	// wrote it (the line, the URL, the name).
	Tool, Written string
	// From is where the trace holds it.
	From []Origin
}

// Origin is a step of a run of the trace.
type Origin struct {
	Run  string `json:"run"`
	Step int    `json:"step"`
	// Why is what happened there: "approved", "refused", "asked".
	Why string `json:"why,omitempty"`
}

func (o Origin) String() string { return fmt.Sprintf("run %s step %d", o.Run, o.Step) }

// Outcome is what Suggest made of one thing asked.
type Outcome int

// The outcomes. Only Drafted carries a rule.
const (
	// Drafted: the rule allows the action, checked by deciding it again
	// with the rule added.
	Drafted Outcome = iota
	// NoRuleCanAllow: the action is shell-complex or dangerous, a floor
	// allow rules cannot lift.
	NoRuleCanAllow
	// NotStatable: the action cannot be written as a pattern that matches
	// it alone (an argument with * ? or a space, a program without
	// arguments, which a rule naming it would allow with any, a program
	// named relative to a directory the line changes, a net target
	// without a port).
	NotStatable
	// NotLifted: an allow rule for the action does not change its
	// decision (an ask rule, a path outside the workspace, a variable the
	// line sets), so none is drafted.
	NotLifted
	// StillDenied: the current policy denies the action (a deny rule, a
	// hard deny, the protected set, the mode): nothing is drafted.
	StillDenied
	// AlreadyAllowed: the current policy allows it already.
	AlreadyAllowed
)

var outcomeNames = [...]string{"drafted", "no rule can allow this", "cannot be stated as a rule", "an allow rule does not lift it", "denied by the current policy", "already allowed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "invalid"
}

// MarshalText writes the outcome's name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Draft is what Suggest made of one thing asked: the allow rule that
// would have let it through, or why there is none.
type Draft struct {
	Act     Act     `json:"act"`
	Outcome Outcome `json:"outcome"`
	// Pattern is the drafted allow rule's pattern; "" unless Drafted.
	Pattern string `json:"pattern,omitempty"`
	// Subject is what was asked: a stage's words as a line writes them,
	// a net target, a tool name.
	Subject string `json:"subject"`
	// Reason is the current policy's reason for its decision.
	Reason string   `json:"reason"`
	From   []Origin `json:"from"`
}

// Suggestions are the drafts of a set of candidates, in the order their
// first candidate came, identical ones merged.
type Suggestions []Draft

// Suggest decides each candidate again with p, the policy as it is now,
// and drafts the narrowest allow rule for what it asks about. It writes
// nothing: the rules are for a person to review and paste.
func (p *Policy) Suggest(cands []Candidate) Suggestions {
	var out Suggestions
	index := map[string]int{}
	add := func(d Draft) {
		key := fmt.Sprintf("%s\x00%d\x00%s\x00%s", d.Act, d.Outcome, d.Pattern, d.Subject)
		if d.Outcome == Drafted {
			key = fmt.Sprintf("%s\x00%d\x00%s", d.Act, d.Outcome, d.Pattern)
		}
		if i, ok := index[key]; ok {
			for _, o := range d.From {
				if !slices.Contains(out[i].From, o) {
					out[i].From = append(out[i].From, o)
				}
			}
			return
		}
		index[key] = len(out)
		out = append(out, d)
	}
	for _, c := range repeated(cands) {
		for _, d := range p.draft(c) {
			d.From = slices.Clone(c.From)
			add(d)
		}
	}
	// No draft may change a decision that denies: an allow rule is
	// weaker than every deny, but this is what the person is told, so it
	// is checked, not assumed.
	for i, d := range out {
		if d.Outcome != Drafted {
			continue
		}
		q := p.withAllow(d.Act, d.Pattern)
		for _, c := range cands {
			if p.decide(c) == Deny && q.decide(c) != Deny {
				out[i].Outcome, out[i].Pattern = NotLifted, ""
				out[i].Reason = "the rule would change a denial, so it is not drafted"
			}
		}
	}
	return out
}

// repeated keeps the approved candidates and, of the others, those whose
// operation came at least MinRepeatedRefusals times. Each is kept as it
// was written: the refusals of touch out and touch ./out are one
// operation, but a rule for one does not allow the other, so each gets
// its own.
func repeated(cands []Candidate) []Candidate {
	key := func(c Candidate) string { return c.Tool + "\x00" + normalizeTarget(c.Written) }
	count := map[string]int{}
	for _, c := range cands {
		if !c.Approved {
			count[key(c)]++
		}
	}
	var out []Candidate
	for _, c := range cands {
		if c.Approved || count[key(c)] >= MinRepeatedRefusals {
			out = append(out, c)
		}
	}
	return out
}

// decide is the current decision on a candidate.
func (p *Policy) decide(c Candidate) Decision {
	switch c.Act {
	case ActExec:
		if c.Line == nil {
			return Deny
		}
		return p.CheckIn(c.Line, p.dirOf(c)).Decision
	case ActNet:
		if c.Web {
			return p.CheckWeb(c.Target).Decision
		}
		return p.CheckNet(c.Target).Decision
	case ActTool:
		return p.CheckTool(c.Target).Decision
	}
	return Deny
}

func (p *Policy) dirOf(c Candidate) string {
	if c.Dir != "" {
		return c.Dir
	}
	return p.Workspace
}

// draft makes the drafts of one candidate.
func (p *Policy) draft(c Candidate) []Draft {
	switch c.Act {
	case ActExec:
		return p.draftExec(c)
	case ActNet:
		v := p.checkTarget(c)
		// The host and port asked for, never a wider host or any port:
		// a path is left out, since a rule for one page of a host would
		// be asked again on the next (see docs/policy.md).
		pattern, why := hostPortPattern(c.Target)
		return []Draft{p.settle(Draft{Act: ActNet, Subject: c.Target, Pattern: pattern, Reason: v.Reason}, v, c, why)}
	case ActTool:
		v := p.checkTarget(c)
		return []Draft{p.settle(Draft{Act: ActTool, Subject: c.Target, Pattern: c.Target, Reason: v.Reason}, v, c, notLiteral(c.Target))}
	}
	return []Draft{{Act: c.Act, Subject: c.Target, Outcome: NotLifted, Reason: fmt.Sprintf("suggest drafts exec, net and tool rules, not %s rules", c.Act)}}
}

func (p *Policy) checkTarget(c Candidate) *Verdict {
	switch {
	case c.Act == ActTool:
		return p.CheckTool(c.Target)
	case c.Web:
		return p.CheckWeb(c.Target)
	}
	return p.CheckNet(c.Target)
}

// settle finishes a net or tool draft whose pattern is set: the verdict
// decides whether a rule is needed at all, the pattern must be one that
// matches the target alone (why says why it is not, or is ""), and the
// rule must turn the ask into an allow.
func (p *Policy) settle(d Draft, v *Verdict, c Candidate, why string) Draft {
	switch v.Decision {
	case Deny:
		d.Outcome, d.Pattern = StillDenied, ""
		return d
	case Allow:
		d.Outcome, d.Pattern = AlreadyAllowed, ""
		return d
	}
	if why != "" {
		d.Outcome, d.Pattern, d.Reason = NotStatable, "", why
		return d
	}
	if after := p.withAllow(d.Act, d.Pattern).checkTarget(c); after.Decision != Allow {
		d.Outcome, d.Pattern, d.Reason = NotLifted, "", after.Reason
	}
	return d
}

// hostPortPattern is the [net] pattern that names target's host and port
// and nothing wider, or why there is none. A pattern without a port
// matches the host on every port (matchHost), so a target that names no
// port (evil.example, 1.2.3.4, ::1: what the egress proxy records of a
// request it refused before asking the policy) gets no rule.
func hostPortPattern(target string) (string, string) {
	hp := splitNetTarget(target).hostport
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" {
		return "", fmt.Sprintf("%q names no port (host:port, [v6]:port): a [net] rule without one would allow every port of the host", hp)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Sprintf("%q is not a port from 1 to 65535, so no rule for this host and port can be written", port)
	}
	if why := notLiteral(hp); why != "" {
		return "", why
	}
	// The matcher is asked rather than trusted to read the pattern as
	// this function does: the rule must name this host:port and no other
	// port of the host.
	other := "1"
	if port == other {
		other = "2"
	}
	np := splitNetPattern(hp)
	if !np.matchHost(splitNetTarget(hp)) || np.matchHost(splitNetTarget(net.JoinHostPort(host, other))) {
		return "", fmt.Sprintf("a [net] rule %q would not name port %s of the host alone", hp, port)
	}
	return hp, ""
}

// draftExec drafts a rule for each asked stage of an asked line.
func (p *Policy) draftExec(c Candidate) []Draft {
	if c.Line == nil {
		return nil
	}
	dir := p.dirOf(c)
	// A program named by a relative path is the file that path names from
	// where the stage runs, but an exec rule matches the words as written
	// wherever they run: once the line has moved away from the workspace's
	// root (a cd stage before, or a start elsewhere), a rule for the words
	// would allow the file they name from the root too, which nobody
	// approved.
	moved := filepath.Clean(dir) != filepath.Clean(p.Workspace)
	v := p.CheckIn(c.Line, dir)
	switch v.Decision {
	case Deny:
		return []Draft{{Act: ActExec, Outcome: StillDenied, Subject: lineText(c.Line), Reason: v.Reason}}
	case Allow:
		return []Draft{{Act: ActExec, Outcome: AlreadyAllowed, Subject: lineText(c.Line), Reason: v.Reason}}
	}
	var out []Draft
	for i, st := range stagesOf(c.Line) {
		if i >= len(v.Stages) {
			break
		}
		sv := v.Stages[i]
		// A cd moves every later stage, whichever pipeline or connector
		// it is in: CheckIn decides them from each directory they may
		// start in.
		movedHere := moved
		moved = moved || st.Kind == shell.Cd
		if sv.Decision != Ask {
			continue
		}
		d := Draft{Act: ActExec, Subject: quoteWords(sv.Argv), Reason: sv.Reason}
		switch {
		case v.Opaque != nil || sv.Class >= ShellComplex:
			d.Outcome = NoRuleCanAllow
			out = append(out, d)
			continue
		case st.Kind == shell.Cd:
			d.Outcome = NotLifted
			out = append(out, d)
			continue
		}
		pattern, why := p.execPattern(st, dir, movedHere)
		if why != "" {
			d.Outcome, d.Reason = NotStatable, why
			out = append(out, d)
			continue
		}
		d.Pattern = pattern
		after := p.withAllow(ActExec, pattern).CheckIn(c.Line, dir)
		if i < len(after.Stages) && after.Stages[i].Decision != Allow {
			d.Outcome, d.Pattern, d.Reason = NotLifted, "", after.Stages[i].Reason
		}
		out = append(out, d)
	}
	return out
}

// execPattern is the narrowest exec pattern that allows the stage: its
// words as allow rules see them (benign wrappers stripped, a program that
// is not the system's named by its file), or why none can be written.
// moved says the line has changed directory before the stage.
func (p *Policy) execPattern(st *shell.Stage, dir string, moved bool) (string, string) {
	if _, wrapped := chdirOf(st.Argv); wrapped {
		// env -C, sudo -D and the like move the program's directory too
		// (the class floor asks them today; this keeps a rule for them
		// narrow should that change).
		moved = true
	}
	for {
		in, ok := p.withEnvUnwrapped(st)
		if !ok {
			break
		}
		st = in
	}
	words := stripBenign(st.Argv)
	if len(words) == 0 {
		words = st.Argv
	}
	if len(words) == 0 {
		return "", "the stage runs nothing"
	}
	if moved {
		_, _, chain, _ := stripBenignChain(st.Argv)
		for _, level := range chain {
			if name := level[0]; strings.Contains(name, "/") && !path.IsAbs(name) {
				return "", fmt.Sprintf("the program %s is named relative to a directory the line changes: a rule for these words would allow whatever file %s names where another line runs them, the workspace's own included", name, name)
			}
		}
	}
	if local, _, _, named := p.chainOutside(st, []string{dir}); local {
		// Only the raw form is tested for a program that is not the
		// system's, so a single word names that file alone.
		words = named
	} else {
		words = append([]string{path.Base(words[0])}, words[1:]...)
		if len(words) == 1 {
			return "", fmt.Sprintf("a rule naming only %s would allow it with any arguments (a pattern is also tested against the program's name alone)", words[0])
		}
	}
	for _, w := range words {
		if why := notLiteral(w); why != "" {
			return "", why
		}
		if strings.Contains(w, " ") || w == "" {
			return "", fmt.Sprintf("the word %q would read as other words once a pattern joins the words with spaces", w)
		}
	}
	return strings.Join(words, " "), ""
}

// notLiteral says why s cannot be a pattern that matches s alone, or "".
func notLiteral(s string) string {
	switch {
	case s == "":
		return "an empty name"
	case strings.ContainsAny(s, "*?"):
		return fmt.Sprintf("%q holds * or ?, which a pattern reads as a wildcard and has no escape for", s)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Sprintf("%q holds bytes a policy file cannot write", Printable(s))
	}
	return ""
}

// stagesOf lists a line's stages in the order Check numbers them.
func stagesOf(l *shell.Line) []*shell.Stage {
	var out []*shell.Stage
	for _, pl := range l.Pipelines {
		out = append(out, pl.Stages...)
	}
	return out
}

// lineText is a line's stages as words, for a report: the same words
// spaced or quoted otherwise are the same line.
func lineText(l *shell.Line) string {
	return strings.Join(lineWords(l, func(st *shell.Stage) []string { return []string{quoteWords(stageWords(st))} }), " ")
}

func quoteWords(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shell.Quote(a)
	}
	return strings.Join(q, " ")
}

// withAllow is p with one more allow rule, as a user policy file pasted
// with it would hold it.
func (p *Policy) withAllow(act Act, pattern string) *Policy {
	q := *p
	q.rules = maps.Clone(p.rules)
	q.rules[act] = maps.Clone(p.rules[act])
	s := &ruleSet{}
	for _, r := range p.rules[act][Allow].rules {
		_ = s.add(r, p.Home, p.Workspace) // compiled once already
	}
	r := &Rule{Act: act, Effect: Allow, Pattern: pattern, Layer: LayerUser}
	_ = s.add(r, p.Home, p.Workspace) // exec, net and tool patterns always compile
	q.rules[act][Allow] = s
	q.Rules = append(slices.Clone(p.Rules), r)
	return &q
}

// TOML writes the suggestions as a policy file to review and paste: the
// drafted rules by act, each with the runs and steps it came from, and,
// commented, what no rule was drafted for and why.
func (s Suggestions) TOML() string {
	var b strings.Builder
	for _, act := range []Act{ActExec, ActNet, ActTool} {
		var rows []Draft
		for _, d := range s {
			if d.Act == act && d.Outcome == Drafted {
				rows = append(rows, d)
			}
		}
		if len(rows) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\nallow = [\n", act)
		for _, d := range rows {
			fmt.Fprintf(&b, "  %s,  # %s\n", tomlString(d.Pattern), origins(d.From))
		}
		b.WriteString("]\n")
	}
	for _, o := range []Outcome{NoRuleCanAllow, NotStatable, NotLifted, StillDenied} {
		var rows []Draft
		for _, d := range s {
			if d.Outcome == o {
				rows = append(rows, d)
			}
		}
		if len(rows) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# %s%s:\n", strings.ToUpper(o.String()[:1]), o.String()[1:])
		for _, d := range rows {
			fmt.Fprintf(&b, "#   %s %s\n#     %s\n#     (%s)\n", d.Act, Printable(d.Subject), Printable(d.Reason), origins(d.From))
		}
	}
	return b.String()
}

// origins names where a draft came from, the first few of them.
func origins(from []Origin) string {
	const shown = 5
	var parts []string
	for i, o := range from {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(from)-shown))
			break
		}
		s := o.String()
		if o.Why != "" {
			s = o.Why + " in " + s
		}
		parts = append(parts, Printable(s))
	}
	return strings.Join(parts, ", ")
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
