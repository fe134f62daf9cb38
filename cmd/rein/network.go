package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/pflag"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/tool"
)

// netFlags are the network flags of rein sandbox, exec and shell.
type netFlags struct {
	network    string
	allowHosts []string
}

func (n *netFlags) register(f *pflag.FlagSet, def string) {
	f.StringVar(&n.network, "network", def, "network mode: off (nothing reachable), proxy (only the hosts the net rules and --allow-host grant, through rein's egress proxy) or full (user-mode networking; bwrap rung only)")
	f.StringArrayVar(&n.allowHosts, "allow-host", nil, "add a net allow rule to the flags layer: host, host:port, *.domain or host:port/path-prefix (repeatable)")
}

// rules are the flags layer's net rules.
func (n *netFlags) rules() []policy.Rule {
	var out []policy.Rule
	for _, h := range n.allowHosts {
		out = append(out, policy.Rule{Act: policy.ActNet, Effect: policy.Allow, Pattern: h})
	}
	return out
}

// profile sets p's network from the policy: the mode, and in proxy mode
// the egress policy, with asks going to approver and each refusal printed
// to stderr as it happens (unless quiet).
func (n *netFlags) profile(p *sandbox.Profile, pol *policy.Policy, approver policy.Approver, stderr io.Writer, quiet bool) {
	p.Network = sandbox.Network(pol.Sandbox.Network)
	if !policy.ForMode(pol.Mode).Network {
		p.Network = sandbox.NetworkOff
	}
	if p.Network != sandbox.NetworkProxy {
		return
	}
	var mu sync.Mutex
	p.Egress = tool.Egress(pol, approver, func(ev netproxy.Event) {
		if ev.Refused == "" || quiet {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "rein: egress refused: %s %s: %s\n", ev.Proto, policy.Printable(ev.Target), policy.Printable(ev.Refused))
	})
}

// allowHostsOnly is the approver of rein sandbox, which has no policy: a
// host no --allow-host names is refused.
type allowHostsOnly struct{}

func (allowHostsOnly) Approve(context.Context, *policy.Verdict) (policy.Approval, error) {
	return policy.Approval{Answer: policy.Reject, Reason: "rein sandbox reaches only the hosts --allow-host names"}, nil
}
