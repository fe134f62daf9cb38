package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
	"github.com/reinhq/rein/web"
)

func newPolicySuggestCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf     commonFlags
		tf     traceFlag
		last   int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "suggest [flags] [RUN...]",
		Short: "Draft allow rules from the asks the trace shows approved, to review and paste",
		Long: `Read the trace's asks that were approved, and the refusals that repeated
(the same operation refused at least twice), decide each again with the
policy as it is now, and print the narrowest [exec], [net] and [tool]
allow rules that would have let them through, as TOML with the runs and
steps each came from. Nothing is written: review the rules and paste
them into a policy file.

A rule is drafted only when it matches the action alone and, added to
the policy, turns its ask into an allow; what is shell-complex or
dangerous is listed as "no rule can allow this", and what the policy
denies (a deny rule, a hard deny, the protected set) is listed, never
drafted around.

With no RUN, every run of the workspace's trace is read (--last N: the
newest N).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			store, err := tf.open(p.Workspace, nil)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx := context.Background()
			runs := args
			if len(runs) == 0 {
				if runs, err = workspaceRuns(ctx, store, p.Workspace, last); err != nil {
					return err
				}
			}
			var cands []policy.Candidate
			var other []string
			for _, run := range runs {
				c, o, err := traceCandidates(ctx, store, p, run)
				if err != nil {
					return err
				}
				cands, other = append(cands, c...), append(other, o...)
			}
			s := p.Suggest(cands)
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Runs        []string           `json:"runs"`
					Suggestions policy.Suggestions `json:"suggestions"`
					NotDrafted  []string           `json:"not_drafted"`
				}{nonNilStrings(runs), nonNilDrafts(s), nonNilStrings(other)}, exitOK)
			}
			printSuggestions(out, store.Path(), runs, s, other)
			return nil
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	cmd.Flags().IntVar(&last, "last", 0, "with no RUN, read only the newest N runs of the workspace (default: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the drafts as one JSON object")
	return cmd
}

// workspaceRuns are the runs of the trace made in ws, oldest first: a
// trace shared by several workspaces (REIN_TRACE) holds runs another
// workspace's policy decided.
func workspaceRuns(ctx context.Context, s *sqlstore.Store, ws string, last int) ([]string, error) {
	rs, err := s.Runs(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		if r.Workspace != "" && r.Workspace != ws {
			continue
		}
		if last > 0 && len(out) == last {
			break
		}
		out = append(out, r.ID)
	}
	// Oldest first, so the drafts come in the order they were asked.
	slices.Reverse(out)
	return out, nil
}

// traceCandidates reads one run's steps and policy events into the
// candidates Suggest drafts from, and names the approved or refused steps
// it drafts nothing for (file tools, whose [read] and [write] rules it
// does not draft; a plain HTTP request approved through the egress
// proxy, whose approval was of one path).
func traceCandidates(ctx context.Context, s *sqlstore.Store, p *policy.Policy, run string) ([]policy.Candidate, []string, error) {
	steps, err := s.Steps(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	events, err := s.PolicyEvents(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	sandboxEvents, err := s.SandboxEvents(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	egress := egressByStep(sandboxEvents)
	if len(steps) == 0 && len(events) == 0 {
		return nil, nil, &exitError{exitUsage, fmt.Sprintf("no run %s in %s: rein trace runs lists them", run, s.Path())}
	}
	byID := map[int64]trace.Step{}
	for _, st := range steps {
		byID[st.ID] = st
	}
	var out []policy.Candidate
	var other []string
	seen := map[string]bool{}
	for _, e := range events {
		st, ok := byID[e.StepID]
		if !ok {
			continue
		}
		if e.Kind == "net" {
			// A connection through the egress proxy.
			n := netEvent(e, egress[e.StepID])
			if n.why == "" {
				continue
			}
			// One candidate per step, answer and target: a command's
			// connections to one host are one habit.
			key := fmt.Sprintf("%s\x00net\x00%s\x00%d", n.why, n.target, st.ID)
			if seen[key] {
				continue
			}
			seen[key] = true
			if n.notDrafted != "" {
				other = append(other, fmt.Sprintf("net %s (%s in run %s step %d): %s", n.target, n.why, run, st.Index, n.notDrafted))
				continue
			}
			out = append(out, policy.Candidate{Act: policy.ActNet, Target: n.target, Approved: n.why == "approved", Tool: "net", Written: n.target,
				From: []policy.Origin{{Run: run, Step: st.Index, Why: n.why}}})
			continue
		}
		why, approved := eventWhy(e)
		if why == "" {
			continue
		}
		from := []policy.Origin{{Run: run, Step: st.Index, Why: why}}
		// One candidate per step and answer: a web call's hops, each
		// approved, are one call.
		key := fmt.Sprintf("%s\x00%d", why, st.ID)
		if seen[key] {
			continue
		}
		seen[key] = true
		c, ok := stepCandidate(p, st)
		if !ok {
			other = append(other, fmt.Sprintf("%s %s (%s in run %s step %d): suggest drafts exec, net and tool rules only", st.Tool, st.Args, why, run, st.Index))
			continue
		}
		c.Approved, c.From = approved, from
		out = append(out, c)
	}
	return out, other, nil
}

// eventWhy says what a policy event of a step's call (not a net event:
// netEvent reads those) tells of its step: "approved" (a person, or the
// approver in their place, approved an ask), "refused", "asked" (Claude
// Code's hook asked, and rein never sees the answer), or "" for an event
// that is neither.
func eventWhy(e trace.PolicyEvent) (string, bool) {
	switch {
	case e.Kind == "approval" && e.Decision == "allow":
		return "approved", true
	case e.Kind == "refusal" && e.Decision == "deny":
		return "refused", false
	case e.Kind == "decision" && e.Decision == "ask":
		return "asked", false
	}
	return "", false
}

// egressEvent is the "egress" sandbox event of a connection through the
// egress proxy: the netproxy.Event itself, as tool.EgressRecords records
// it beside the connection's net policy event, at the same time.
type egressEvent struct {
	at   time.Time
	ev   netproxy.Event
	used bool
}

// egressByStep reads a run's egress sandbox events by step.
func egressByStep(events []trace.SandboxEvent) map[int64][]*egressEvent {
	out := map[int64][]*egressEvent{}
	for _, e := range events {
		if e.Kind != "egress" {
			continue
		}
		var ev netproxy.Event
		if json.Unmarshal([]byte(e.Detail), &ev) != nil {
			continue
		}
		out[e.StepID] = append(out[e.StepID], &egressEvent{at: e.At, ev: ev})
	}
	return out
}

// netCandidate is what a net policy event tells: why is "approved",
// "refused" or "" (nothing to draft from: a connection a rule allowed, or
// one the proxy refused without asking the policy); notDrafted says why
// an approval or refusal is not drafted from.
type netCandidate struct {
	target, why, notDrafted string
}

// netEvent reads a net policy event by the egress event recorded with it
// (the netproxy.Event: its verdict, target and proxy refusal each on their
// own), or, when the trace holds none, by its reason, "PROTO TARGET:
// REASON", only where that can be read without doubt.
func netEvent(e trace.PolicyEvent, egress []*egressEvent) netCandidate {
	for _, g := range egress {
		ev := g.ev
		if g.used || !g.at.Equal(e.At) || !strings.HasPrefix(e.Reason, ev.Proto+" "+ev.Target+": ") {
			continue
		}
		g.used = true
		switch {
		case ev.Refused == "" && ev.Verdict.Allow && strings.HasPrefix(ev.Verdict.Reason, "approved: "):
			if ev.Proto == netproxy.ProtoHTTP || ev.Path != "" {
				// Approved was one path of the host; a [net] rule for the
				// host:port would allow every path.
				return netCandidate{target: ev.Target, why: "approved",
					notDrafted: "a plain HTTP request was approved for its path alone, and a [net] rule for its host:port would allow every path: write a rule yourself if you mean the host"}
			}
			return netCandidate{target: ev.Target, why: "approved"}
		case ev.Refused != "" && !ev.Verdict.Allow && (ev.Verdict.Reason != "" || ev.Verdict.Rule != "" || ev.Verdict.Layer != ""):
			// The policy decided it: the proxy asks it only about a
			// well-formed host and port, and records its verdict.
			return netCandidate{target: ev.Target, why: "refused"}
		}
		// Allowed by a rule, or refused by the proxy itself (a malformed
		// request, an address it never connects to, too many
		// connections): no rule would change that.
		return netCandidate{}
	}
	return netEventByReason(e)
}

// netEventByReason reads a net policy event with no egress event beside
// it by its reason, "PROTO TARGET: REASON" (tool.EgressRecords). Only a
// tunnel's target (CONNECT, SOCKS5) is read: it is host:port, which cannot
// hold ": ", so where it ends is certain; a plain HTTP request's holds its
// decoded path, which can hold ": approved: " itself. A refusal counts
// only when the policy decided it (a rule or layer, or the approver's
// refusal), not the proxy on its own.
func netEventByReason(e trace.PolicyEvent) netCandidate {
	proto, rest, _ := strings.Cut(e.Reason, " ")
	if proto != netproxy.ProtoConnect && proto != netproxy.ProtoSOCKS5 {
		return netCandidate{}
	}
	target, reason, ok := strings.Cut(rest, ": ")
	if !ok || !isHostPort(target) {
		return netCandidate{}
	}
	switch e.Decision {
	case "allow":
		// policy.Resolve's reason for an approved ask.
		if strings.HasPrefix(reason, "approved: ") {
			return netCandidate{target: target, why: "approved"}
		}
	case "deny":
		// policy.Resolve's reasons for a refused ask; a deny rule's
		// refusal carries its rule.
		for _, prefix := range []string{"rejected by the approver", "asked, and no approver is configured", "the approver deferred", "the approver failed: "} {
			if strings.HasPrefix(reason, prefix) {
				return netCandidate{target: target, why: "refused"}
			}
		}
		if e.Rule != "" || e.Layer != "" {
			return netCandidate{target: target, why: "refused"}
		}
	}
	return netCandidate{}
}

// isHostPort reports whether s is host:port or [v6]:port, a port from 1
// to 65535 as the proxy writes it, and no path.
func isHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, "/ ") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == port
}

// stepCandidate is what a step asked for, as the current policy decides
// it: a command line or argv (rein's shell and exec tools, Claude Code's
// Bash), a URL of the web tool, a tool of an MCP server.
func stepCandidate(p *policy.Policy, st trace.Step) (policy.Candidate, bool) {
	var args struct {
		Line    string   `json:"line"`
		Argv    []string `json:"argv"`
		URL     string   `json:"url"`
		Command string   `json:"command"`
	}
	_ = json.Unmarshal([]byte(st.Args), &args)
	plan := func(text string) (policy.Candidate, bool) {
		lp := p.LineParser(p.Workspace)
		lp.Home = p.SandboxHome
		l, err := lp.Plan(text)
		if err != nil {
			return policy.Candidate{}, false
		}
		return lineCandidate(p, l, st.Tool, text), true
	}
	switch {
	case (st.Tool == "shell" || st.Tool == "shell_start") && args.Line != "":
		return plan(args.Line)
	case st.Tool == "Bash" && args.Command != "":
		return plan(args.Command)
	case st.Tool == "exec" && len(args.Argv) > 0:
		l, err := shell.FromArgv(args.Argv)
		if err != nil {
			return policy.Candidate{}, false
		}
		return lineCandidate(p, l, st.Tool, quoteArgv(args.Argv)), true
	case st.Tool == "fetch_url" && args.URL != "":
		u, err := url.Parse(args.URL)
		if err != nil {
			return policy.Candidate{}, false
		}
		target, err := web.Target(u)
		if err != nil {
			return policy.Candidate{}, false
		}
		return policy.Candidate{Act: policy.ActNet, Target: target, Web: true, Tool: st.Tool, Written: target}, true
	case strings.HasPrefix(st.Tool, "mcp__"):
		return policy.Candidate{Act: policy.ActTool, Target: st.Tool, Tool: st.Tool, Written: st.Tool}, true
	}
	return policy.Candidate{}, false
}

// lineCandidate is an exec candidate, its programs found as rein shell
// and rein policy check find them.
func lineCandidate(p *policy.Policy, l *shell.Line, tool, written string) policy.Candidate {
	sandbox.ResolvePrograms(l, sandbox.Profile{Workspace: p.Workspace, Env: runEnv(os.Environ(), p), HostReadPaths: p.Sandbox.ReadPaths})
	return policy.Candidate{Act: policy.ActExec, Line: l, Dir: p.Workspace, Tool: tool, Written: written}
}

func printSuggestions(w io.Writer, trace string, runs []string, s policy.Suggestions, other []string) {
	fmt.Fprintf(w, "# rein policy suggest: from %d run(s) of %s\n", len(runs), policy.Printable(trace))
	body := s.TOML()
	if !strings.Contains(body, "allow = [") {
		fmt.Fprintln(w, "# No rule to suggest: nothing approved or refused again is asked now that a rule could allow.")
	} else {
		fmt.Fprintln(w, "# Review each rule, then paste what you want into a policy file")
		fmt.Fprintln(w, "# (~/.config/rein/policy.toml); nothing was written.")
	}
	if body != "" {
		fmt.Fprintf(w, "\n%s", body)
	}
	if len(other) > 0 {
		fmt.Fprintln(w, "\n# Not drafted:")
		for _, o := range other {
			fmt.Fprintf(w, "#   %s\n", policy.Printable(o))
		}
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilDrafts(s policy.Suggestions) policy.Suggestions {
	if s == nil {
		return policy.Suggestions{}
	}
	return s
}
