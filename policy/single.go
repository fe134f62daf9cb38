package policy

import (
	"fmt"
)

// CheckPath decides one access to a path named by a file tool, resolved
// from the workspace root.
func (p *Policy) CheckPath(access Act, path string) *Verdict {
	if !access.isPath() {
		return &Verdict{Decision: Deny, Reason: fmt.Sprintf("%q is not a path act", access)}
	}
	pv := p.decidePath(path, p.Workspace, access)
	return &Verdict{Decision: pv.Decision, Reason: pv.Reason, Rule: pv.Rule, Paths: []PathVerdict{pv}}
}

// CheckNet decides a network target: "host:port" for a connection (a
// CONNECT tunnel, SOCKS5), or "host:port/path" for a plain HTTP request;
// a rule may also name a host alone. A rule without a path decides by the
// host (its wildcards never reach into a path); a rule with a path decides
// only plain HTTP requests, by host and path. A target no rule names is
// asked (denied in safe mode); the egress proxy applies the answer.
func (p *Policy) CheckNet(target string) *Verdict {
	t := splitNetTarget(target)
	if r := p.rules[ActNet][Deny].matchNet(t); r != nil {
		return ruleVerdict(Deny, r)
	}
	if t.path == "" {
		// Deny and ask rules with a path hold only where the proxy sees
		// each request: a tunnel to their host would get around them.
		for _, d := range []Decision{Deny, Ask} {
			if r := p.rules[ActNet][d].pathRuleFor(t); r != nil {
				v := ruleVerdict(Deny, r)
				v.Reason = "a connection to " + target + " would get around " + r.attribution().String() +
					", which decides plain HTTP requests by path: only those reach this host"
				return v
			}
		}
	}
	if r := p.rules[ActNet][Ask].matchNet(t); r != nil {
		return p.askVerdict(r)
	}
	if !ForMode(p.Mode).Network {
		return &Verdict{Decision: Deny, Reason: fmt.Sprintf("%s mode has no network", p.Mode)}
	}
	if r := p.rules[ActNet][Allow].matchNet(t); r != nil {
		return ruleVerdict(Allow, r)
	}
	for _, name := range p.NetPresets {
		for _, h := range netPresets[name] {
			if splitNetPattern(h).matchHost(t) {
				return &Verdict{Decision: Allow, Reason: fmt.Sprintf("in the %s preset", name),
					Rule: &Attribution{Rule: "preset " + name, Act: ActNet, Effect: Allow, Layer: LayerBuiltin}}
			}
		}
	}
	return p.orDenyInSafe(&Verdict{Decision: Ask, Reason: "no net rule names " + target})
}

// CheckWeb decides a URL the web tools (fetch_url, search_internet)
// reach from rein's own process, target being host:port/path: by the net
// rules as CheckNet decides a connection, with the path the request
// names whatever its scheme (rein sees each request, so path rules hold
// for https too), except that a host an allow rule (or a preset) names is
// reached in safe mode too, whose commands have no network. No mode
// lets a host nothing names through unasked: a URL can carry data out.
func (p *Policy) CheckWeb(target string) *Verdict {
	t := splitNetTarget(target)
	if r := p.rules[ActNet][Deny].matchNet(t); r != nil {
		return ruleVerdict(Deny, r)
	}
	if r := p.rules[ActNet][Ask].matchNet(t); r != nil {
		return p.askVerdict(r)
	}
	if r := p.rules[ActNet][Allow].matchNet(t); r != nil {
		return ruleVerdict(Allow, r)
	}
	for _, name := range p.NetPresets {
		for _, h := range netPresets[name] {
			if splitNetPattern(h).matchHost(t) {
				return &Verdict{Decision: Allow, Reason: fmt.Sprintf("in the %s preset", name),
					Rule: &Attribution{Rule: "preset " + name, Act: ActNet, Effect: Allow, Layer: LayerBuiltin}}
			}
		}
	}
	if p.Mode == ModeSafe {
		return &Verdict{Decision: Deny, Reason: "no net rule names " + target + " (safe mode: the web tools reach only what an allow rule names)"}
	}
	return &Verdict{Decision: Ask, Reason: "no net rule names " + target + " (a URL can carry data out: every mode asks)"}
}

// CheckTool decides a call of a named tool.
func (p *Policy) CheckTool(name string) *Verdict {
	if r := p.rules[ActTool][Deny].matchString(name); r != nil {
		return ruleVerdict(Deny, r)
	}
	if r := p.rules[ActTool][Ask].matchString(name); r != nil {
		return p.askVerdict(r)
	}
	if r := p.rules[ActTool][Allow].matchString(name); r != nil {
		return ruleVerdict(Allow, r)
	}
	return p.orDenyInSafe(&Verdict{Decision: Ask, Reason: "no tool rule names " + name})
}

func ruleVerdict(d Decision, r *Rule) *Verdict {
	a := r.attribution()
	verb := map[Decision]string{Allow: "allowed", Ask: "asked", Deny: "denied"}[d]
	return &Verdict{Decision: d, Rule: a, Reason: verb + " by " + a.String()}
}

func (p *Policy) askVerdict(r *Rule) *Verdict {
	return p.orDenyInSafe(ruleVerdict(Ask, r))
}

func (p *Policy) orDenyInSafe(v *Verdict) *Verdict {
	if p.Mode == ModeSafe && v.Decision == Ask {
		v.Decision = Deny
		v.Reason += " (safe mode denies what other modes ask)"
	}
	return v
}
