package tool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/trace"
)

// maxEgressRecords bounds the connections one call keeps for the trace;
// the rest are counted.
const maxEgressRecords = 10_000

// Egress is the egress policy of a run in network proxy: each target is
// decided by p's net rules (CheckNet), an ask goes to approver (nil denies
// it), and every connection, as it ends, goes to record (which may be
// nil).
//
// A connection may reach a loopback, private, link-local or reserved
// address only when an allow rule names its host exactly (no wildcard, no
// preset): an approval or a wildcard grants the name, never what it
// resolves to.
func Egress(p *policy.Policy, approver policy.Approver, record func(netproxy.Event)) netproxy.Policy {
	return &egressPolicy{p: p, approver: approver, record: record}
}

type egressPolicy struct {
	p        *policy.Policy
	approver policy.Approver
	record   func(netproxy.Event)
}

func (e *egressPolicy) Decide(ctx context.Context, r netproxy.Request) netproxy.Verdict {
	check := func() *policy.Verdict { return e.p.CheckNet(r.Target) }
	first := check()
	v := policy.Resolve(ctx, e.approver, first, check)
	out := netproxy.Verdict{Allow: v.Decision == policy.Allow, Reason: v.Reason}
	if a := v.Rule; a != nil {
		out.Rule, out.Layer, out.File = a.Rule, a.Layer.String(), a.File
		out.ByName = out.Allow && first.Decision == policy.Allow && a.Effect == policy.Allow &&
			!strings.HasPrefix(a.Rule, "preset ") && !strings.ContainsAny(a.Rule, "*?")
	}
	return out
}

func (e *egressPolicy) Record(ev netproxy.Event) {
	if e.record != nil {
		e.record(ev)
	}
}

// egressLog keeps one call's connections for the trace, and shows each
// to observe (Live.Egress) as it ends.
type egressLog struct {
	mu      sync.Mutex
	events  []netproxy.Event
	dropped int
	observe func(netproxy.Event)
}

func (l *egressLog) add(ev netproxy.Event) {
	if l.observe != nil {
		l.observe(ev)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) < maxEgressRecords {
		l.events = append(l.events, ev)
	} else {
		l.dropped++
	}
}

// take returns what was kept since the last take, as trace records: a
// policy event per connection (kind "net") and a sandbox event with its
// addresses and bytes (kind "egress").
func (l *egressLog) take(runID string) []trace.Record {
	l.mu.Lock()
	events, dropped := l.events, l.dropped
	l.events, l.dropped = nil, 0
	l.mu.Unlock()
	var out []trace.Record
	for _, ev := range events {
		out = append(out, EgressRecords(runID, ev)...)
	}
	if dropped > 0 {
		out = append(out, trace.SandboxEvent{RunID: runID, Kind: "egress_dropped",
			Detail: mustJSON(map[string]int{"connections": dropped}), At: time.Now()})
	}
	return out
}

// EgressRecords are the trace records of one connection through the
// egress proxy: a policy event (kind "net") with its decision, rule and
// reason, and a sandbox event (kind "egress") with its addresses and bytes.
func EgressRecords(runID string, ev netproxy.Event) []trace.Record {
	decision, reason := "allow", ev.Verdict.Reason
	if ev.Refused != "" {
		decision, reason = "deny", ev.Refused
	}
	return []trace.Record{
		trace.PolicyEvent{RunID: runID, Kind: "net", Decision: decision, Rule: ev.Verdict.Rule, Layer: ev.Verdict.Layer,
			File: ev.Verdict.File, Reason: fmt.Sprintf("%s %s: %s", ev.Proto, ev.Target, reason), At: ev.Time},
		trace.SandboxEvent{RunID: runID, Kind: "egress", Detail: mustJSON(ev), At: ev.Time},
	}
}
