package policy

import (
	"fmt"
	"strings"
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

// CheckNet decides a network target: "host", "host:port", or for plain
// HTTP "host:port/path". A target no rule names is asked (denied in safe
// mode); the egress proxy applies the answer.
func (p *Policy) CheckNet(target string) *Verdict {
	host, _, _ := strings.Cut(target, "/")
	name, _, _ := strings.Cut(host, ":")
	forms := []string{target, host, name}
	if r := p.rules[ActNet][Deny].matchString(forms...); r != nil {
		return ruleVerdict(Deny, r)
	}
	if r := p.rules[ActNet][Ask].matchString(forms...); r != nil {
		return p.askVerdict(r)
	}
	if !ForMode(p.Mode).Network {
		return &Verdict{Decision: Deny, Reason: fmt.Sprintf("%s mode has no network", p.Mode)}
	}
	if r := p.rules[ActNet][Allow].matchString(forms...); r != nil {
		return ruleVerdict(Allow, r)
	}
	for _, name := range p.NetPresets {
		for _, h := range netPresets[name] {
			if w := compileWildcard(h); w.match(host) || w.match(target) {
				return &Verdict{Decision: Allow, Reason: fmt.Sprintf("in the %s preset", name),
					Rule: &Attribution{Rule: "preset " + name, Act: ActNet, Effect: Allow, Layer: LayerBuiltin}}
			}
		}
	}
	return p.orDenyInSafe(&Verdict{Decision: Ask, Reason: "no net rule names " + target})
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
