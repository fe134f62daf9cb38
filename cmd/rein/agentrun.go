package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

func newRunCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf                        commonFlags
		tf                        traceFlag
		verify                    string
		protect                   []string
		pc                        agent.ProviderChoice
		maxSteps, responseMax     int
		contextTokens             int
		maxTokens                 int64
		maxTime                   time.Duration
		maxCost                   float64
		approve                   string
		replay                    string
		outputSchema              string
		asJSON, plan, commit, web bool
		tmp                       temporalFlags
	)
	cmd := &cobra.Command{
		Use:   "run [flags] GOAL",
		Short: "Give a model a goal in the workspace and drive it until the gate passes, a budget ends or a person is needed",
		Long: `Run the agent: the model works on GOAL in the workspace through rein's
tools, every call decided by the policy and every command confined by the
sandbox, step by step, until the gate (--verify, a line of rein's grammar)
passes when the model says it is done, or a budget runs out. --protect
globs (the gate's own files) can be neither written nor deleted, and are
checked before each gate attempt. The --verify line is allowed by that
flag as written (a deny rule, or a class no allow rule lifts, still
refuses it, and then the run does not start).

The provider is --provider (a preset: anthropic, openai, openrouter, groq,
together, deepseek, mistral, gemini, ollama, vllm, llamacpp, lmstudio)
with --model; with none, anthropic when
ANTHROPIC_API_KEY is set, else openai when OPENAI_API_KEY is, else ollama
when it answers. The key comes from the preset's variable or
--api-key-env, never from a file.

Every run is durable: each step is committed with a checkpoint to the
trace, so that a run whose process died goes on with rein run resume RUN,
and rein runs lists the runs and their state.

Exit status: 0 succeeded or finished (no gate), 1 gate_failed, 3
budget_exhausted, 4 stalled, 5 refused_repeatedly, 6 awaiting_approval,
awaiting_recovery or awaiting_plan (rein approve, then rein run resume)
or awaiting_answer (rein answer, then rein run resume), 7
provider_failed, 8 invalid_answer (--output-schema), 130 cancelled, 2 a
run that could not start.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The policy files' [run] section, under the flags.
			pre, err := cf.load(sf)
			if err != nil {
				return err
			}
			if verify == "" {
				verify = pre.Run.Verify
			}
			protect = append(slices.Clone(pre.Run.Protect), protect...)
			flags := cmd.Flags()
			if !flags.Changed("max-steps") {
				maxSteps = pre.Run.MaxSteps
			}
			if !flags.Changed("max-tokens") {
				maxTokens = pre.Run.MaxTokens
			}
			if !flags.Changed("max-time") {
				maxTime = pre.Run.MaxTime
			}
			if !flags.Changed("response-max-tokens") {
				responseMax = pre.Run.ResponseMaxTokens
			}
			if !flags.Changed("context-tokens") {
				contextTokens = pre.Run.ContextTokens
			}
			if !flags.Changed("max-cost") {
				maxCost = pre.Run.MaxCost
			}
			pc, prices := providerFrom(pc, pre.Providers)
			var schema json.RawMessage
			if outputSchema != "" {
				data, err := os.ReadFile(outputSchema)
				if err == nil {
					_, err = agent.CompileSchema(data)
				}
				if err != nil {
					return &exitError{exitUsage, fmt.Sprintf("--output-schema %s: %v", outputSchema, err)}
				}
				var compact bytes.Buffer
				json.Compact(&compact, data)
				schema = compact.Bytes()
			}
			var gate *agent.Gate
			if verify != "" {
				line, err := shell.Parse(verify)
				if err != nil {
					return &exitError{exitUsage, fmt.Sprintf("verify %q: %v", verify, err)}
				}
				gate = &agent.Gate{Line: verify}
				cf.extraRules = append(cf.extraRules, gateRules(line)...)
			}
			cf.verification = protect
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			gateRetries := p.Run.GateRetries
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			getenv := os.Getenv
			if tmp.on() {
				// The workers choose the provider again and read its key
				// from their own environment: none is needed here.
				switch {
				case replay != "":
					return &exitError{exitUsage, "--replay runs in this process: it does not go with --temporal"}
				case pc.Name == "":
					return &exitError{exitUsage, "rein run --temporal needs --provider (or a [[provider]] entry): the workers read its key from their environment"}
				case !flags.Changed("approve"):
					approve = "defer"
				case approve == "terminal":
					return &exitError{exitUsage, "--approve terminal: a run on Temporal has no terminal; use defer (rein approve --temporal answers), all or none"}
				}
				getenv = func(k string) string { return "(held by the workers)" }
			}
			var provider agent.Provider
			var preset agent.Preset
			if replay == "" {
				if provider, preset, err = agent.ChooseProvider(ctx, pc, getenv); err != nil {
					return &exitError{exitUsage, err.Error()}
				}
				if err := agent.CheckProviderHost(p, preset.BaseURL); err != nil {
					return &exitError{exitUsage, err.Error()}
				}
			}
			approver, err := runApprover(approve, cmd)
			if err != nil {
				return err
			}
			var extra []string
			if preset.KeyEnv != "" && !tmp.on() {
				extra = append(extra, os.Getenv(preset.KeyEnv))
			}
			store, red, err := tf.openFor(p, extra...)
			if err != nil {
				return err
			}
			defer store.Close()
			if replay != "" {
				calls, err := store.ProviderCalls(ctx, replay)
				if err != nil || len(calls) == 0 {
					return &exitError{exitUsage, fmt.Sprintf("--replay %s: no model calls of that run in %s", replay, store.Path())}
				}
				provider = agent.ReplayTree(calls, store.ProviderCalls)
			}
			c := agent.Contract{Goal: args[0], Workspace: p.Workspace, Verify: gate, Protect: protect,
				Budget: agent.Budget{Steps: maxSteps, Tokens: maxTokens, WallClock: maxTime, Cost: maxCost}, Prices: prices,
				ResponseMaxTokens: responseMax, ContextTokens: contextTokens, GateRetries: gateRetries, Recovery: p.Run.Recovery, OutputSchema: schema, PlanGate: plan, Commit: commit, Web: web || p.Run.Web,
				Config: &agent.RunConfig{Provider: pc.Name, Model: pc.Model, BaseURL: pc.BaseURL, KeyEnv: pc.KeyEnv, Family: string(pc.Family),
					Mode: p.Mode.String(), Network: p.Sandbox.Network, Allow: cf.allow, Ask: cf.ask, Deny: cf.deny, ReadPaths: cf.readPaths, Approve: approve}}
			if replay == "" {
				// The provider as chosen, the preset's defaults filled in.
				c.Config.Provider, c.Config.BaseURL, c.Config.KeyEnv = preset.Name, cmp.Or(pc.BaseURL, preset.BaseURL), cmp.Or(pc.KeyEnv, preset.KeyEnv)
				c.Config.Family = cmp.Or(string(pc.Family), string(preset.Family))
			}
			out := cmd.OutOrStdout()
			c.Children = childLimits(p)
			o := agentOptions(provider, p, approver, store, red, out, asJSON)
			o.PolicyFor = worktreePolicy(cf, *sf, p)
			if tmp.on() {
				return runOnTemporal(ctx, &tmp, &tf, store, c, o.Observer, out, red, asJSON)
			}
			res, err := agent.Run(ctx, c, o)
			defer exportRun(cmd.ErrOrStderr(), p, store, red, res.Run)
			return outcomeExit(out, res, err, red, asJSON)
		},
	}
	tmp.register(cmd, true)
	cmd.AddCommand(newRunResumeCmd(sf), newRunFoldCmd(sf), newRunCancelCmd(sf))
	cf.register(cmd)
	tf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&verify, "verify", "", "the gate: a line of rein's grammar that must pass for the run to succeed, such as 'go test ./...'")
	f.StringArrayVar(&protect, "protect", nil, "a glob of files the run may not change, such as '**/*_test.go' (repeatable)")
	f.StringVar(&pc.Name, "provider", "", "the provider preset (default: chosen from the keys set, else ollama)")
	f.StringVar(&pc.Model, "model", "", "the model")
	f.StringVar(&pc.BaseURL, "base-url", "", "the provider's base URL, over the preset's")
	f.StringVar(&pc.KeyEnv, "api-key-env", "", "the variable the key is read from, over the preset's")
	f.IntVar(&maxSteps, "max-steps", 0, "the step budget (default 100)")
	f.Int64Var(&maxTokens, "max-tokens", 0, "the token budget, input and output (default 2,000,000)")
	f.DurationVar(&maxTime, "max-time", 0, "the wall-clock budget (default 30m)")
	f.IntVar(&responseMax, "response-max-tokens", 0, "the cap on one response (default 16,384)")
	f.IntVar(&contextTokens, "context-tokens", 0, "the model's window: past 70% of it, the oldest steps are folded into a summary the model writes (default 128,000; at least 1,024)")
	f.Float64Var(&maxCost, "max-cost", 0, "the cost budget, by the prices of the provider's [[provider]] entry (default: none)")
	f.StringVar(&outputSchema, "output-schema", "", "a JSON Schema file the model's final answer must match: one that does not is sent back once, then the run ends invalid_answer (exit 8); the outcome's answer carries the JSON")
	f.StringVar(&replay, "replay", "", "answer the model calls from the recorded ones of this run (the same contract must be given), failing on the first request that differs")
	f.StringVar(&approve, "approve", "terminal", "who answers asked actions, the model's questions and its plan: terminal (denied, unanswered, without one), defer (the run ends awaiting_approval, awaiting_answer or awaiting_plan; rein approve or rein answer answers, rein run resume goes on), all (plans approved, questions unanswered) or none")
	f.BoolVar(&asJSON, "json", false, "print the outcome as one JSON object instead of a line per step")
	f.BoolVar(&commit, "commit", false, "when the run succeeds, commit what it changed on a new branch rein/<run id> whose parent is the commit it started from (the branch the workspace is on does not move; the run's changes stay in the working tree)")
	f.BoolVar(&web, "web", false, "give the model the web tools: fetch_url, and search_internet when [web] search_url is set; each host is decided by the net rules (also [run] web = true)")
	f.BoolVar(&plan, "plan", false, "gate the run on a plan: the model proposes one (propose_plan) before it may write or run anything, and --approve's answerer approves it, sends it back with a note, or cancels the run (defer: the run ends awaiting_plan; rein approve --yes|--no|--revise answers)")
	return cmd
}

// providerFrom fills what the flags leave unsaid from the [[provider]]
// entry of that name, or, with no --provider, from the first entry, and
// gives that entry's prices.
func providerFrom(pc agent.ProviderChoice, entries []policy.ProviderSetting) (agent.ProviderChoice, agent.Prices) {
	var prices agent.Prices
	for _, e := range entries {
		if pc.Name != "" && e.Name != pc.Name {
			continue
		}
		pc.Name = e.Name
		for _, f := range []struct {
			dst *string
			v   string
		}{{&pc.Model, e.Model}, {&pc.BaseURL, e.BaseURL}, {&pc.KeyEnv, e.APIKeyEnv}} {
			if *f.dst == "" {
				*f.dst = f.v
			}
		}
		if pc.Family == "" {
			pc.Family = agent.Family(e.Family)
		}
		prices = agent.Prices{Input: e.PriceInput, Output: e.PriceOutput, CacheRead: e.PriceCacheRead, CacheWrite: e.PriceCacheWrite}
		break
	}
	return pc, prices
}

// gateRules allow each stage of the gate's line as written: naming it with
// --verify is the grant. Deny rules and the classes no allow rule lifts
// still refuse it.
func gateRules(line *shell.Line) []policy.Rule {
	var out []policy.Rule
	for _, st := range line.Stages() {
		if st.Kind != shell.Command {
			continue
		}
		text := strings.Join(st.Argv, " ")
		if strings.ContainsAny(text, "*?[]{}\\") {
			continue // not a literal pattern; the policy's own rules decide it
		}
		out = append(out, policy.Rule{Act: policy.ActExec, Effect: policy.Allow, Pattern: text})
	}
	return out
}

// printEvent prints one line of a run's progress.
func printEvent(w io.Writer, e agent.Event, redact func(string) string) {
	pr := func(s string) string { return policy.Printable(redact(s)) }
	switch e.Kind {
	case agent.EventToolCall:
		target := e.Target
		if len(target) > 60 {
			target = target[:57] + "..."
		}
		fmt.Fprintf(w, "step %-3d %-13s %-60s %-12s tokens %d\n", e.Step, e.Tool, pr(target), e.Status, e.Tokens.Input+e.Tokens.Output)
	case agent.EventGateAttempt:
		what := "gate"
		if e.Step == 0 {
			what = "gate baseline"
		}
		fmt.Fprintf(w, "step %-3d %-13s %-60s %-12s tokens %d\n", e.Step, what, pr(e.Target), e.Status, e.Tokens.Input+e.Tokens.Output)
	case agent.EventRetry:
		fmt.Fprintf(w, "step %-3d %-13s %s\n", e.Step, "retry", pr(e.Reason))
	case agent.EventCompacted:
		fmt.Fprintf(w, "step %-3d %-13s %s\n", e.Step, "compacted", pr(e.Reason))
	case agent.EventFinished:
		o := e.Outcome
		fmt.Fprintf(w, "%s: %s\n  run %s, %d steps, %d input and %d output tokens, %s, %s, rung %s\n", o.Kind, pr(o.Reason), o.Run, o.Steps, o.Tokens.Input, o.Tokens.Output,
			cacheShare(o.Tokens), costText(o.Cost), orNone(string(o.Rung)))
		if g := o.Gate; g != nil && g.Evidence != "" {
			tests := ""
			if g.Tests != nil {
				data, _ := json.Marshal(g.Tests)
				tests = string(data)
			}
			fmt.Fprintf(w, "  gate tests: %s\n", gateTests(g.Evidence, tests))
		}
		if o.Config != nil {
			fmt.Fprintln(w, "  "+configLine(*o.Config, redact))
		}
		if cm := o.Commit; cm != nil && cm.Hash != "" {
			fmt.Fprintf(w, "  committed %d paths on %s: %s\n", len(cm.Paths), cm.Branch, cm.Hash)
		} else if cm != nil {
			fmt.Fprintf(w, "  not committed: %s\n", pr(cm.Error))
		}
	}
}

// configLine tells of the configuration a run or a session made or
// changed: the count and the paths reported.
func configLine(r agent.ConfigReport, redact func(string) string) string {
	if r.Count == 0 {
		return "changed configuration your tools may read: none found, but the workspace has more entries than rein looked at, so some may be missed: review it before your tools run"
	}
	paths := make([]string, len(r.Paths))
	for i, p := range r.Paths {
		paths[i] = policy.Printable(redact(p))
	}
	more := ""
	if n := r.Count - len(r.Paths); n > 0 {
		more = fmt.Sprintf(", and %d more", n)
	}
	if r.Truncated {
		more += " (the workspace has more entries than rein looked at)"
	}
	return fmt.Sprintf("changed configuration your tools may read (%d file(s); review before your tools run): %s%s", r.Count, strings.Join(paths, ", "), more)
}

func orNone(s string) string {
	if s == "" {
		return "none (no command ran)"
	}
	return s
}

// agentOptions are the options rein run and rein run resume drive a run
// with: the router under the policy, its commands' environment built from
// it, each step printed as it happens unless the outcome is to be JSON.
// childLimits are the run tree's limits the policy's [run] sets, over the
// agent's defaults; nil when it sets none.
func childLimits(p *policy.Policy) *agent.ChildLimits {
	r := p.Run
	if r.ChildDepth == nil && r.ChildConcurrency == nil && r.Children == nil {
		return nil
	}
	l := agent.ChildLimits{Depth: agent.DefaultChildDepth, Concurrency: agent.DefaultChildConcurrency, Total: agent.DefaultChildren}
	for _, v := range []struct {
		set *int
		dst *int
	}{{r.ChildDepth, &l.Depth}, {r.ChildConcurrency, &l.Concurrency}, {r.Children, &l.Total}} {
		if v.set != nil {
			*v.dst = *v.set
		}
	}
	return &l
}

// worktreePolicy loads the policy of a child run's worktree as p was
// loaded: the same org, user and project files (the workspace's project
// file, not the worktree's copy of it), flags, mode and network.
func worktreePolicy(cf commonFlags, sf scopeFlags, p *policy.Policy) func(string) (*policy.Policy, error) {
	project, untrusted := os.DevNull, ""
	for _, s := range p.Sources {
		if s.Layer != policy.LayerProject {
			continue
		}
		switch s.State {
		case "absent":
		case "untrusted":
			untrusted = s.Path
		default:
			project = s.Path
		}
	}
	if sf.project != "" {
		project = sf.project
	}
	cf.mode, cf.networkFlag = p.Mode.String(), p.Sandbox.Network
	return func(dir string) (*policy.Policy, error) {
		if untrusted != "" {
			return nil, fmt.Errorf("the project policy %s is not trusted: a worktree's policy would not be loaded as the run's was", untrusted)
		}
		c, s := cf, sf
		c.workspace, s.project = dir, project
		return c.load(&s)
	}
}

func agentOptions(provider agent.Provider, p *policy.Policy, approver policy.Approver, store *sqlstore.Store, red *trace.Redactor, out io.Writer, asJSON bool) agent.Options {
	o := agent.Options{
		Provider:  provider,
		Responder: responderFor(approver),
		Tool: tool.Config{Policy: p, Approver: approver, Store: store, Redactor: red, Source: "run", WebSearchURL: p.WebSearchURL,
			Profile: sandbox.Profile{Env: tool.Env(os.Environ(), p)}},
	}
	if !asJSON {
		o.Observer = stepPrinter(out, red)
	}
	return o
}

// stepPrinter prints a run's events as its step lines, a child run's
// indented under its parent's.
func stepPrinter(out io.Writer, red *trace.Redactor) func(agent.Event) {
	var mu sync.Mutex
	return func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		i := strings.IndexByte(e.Run, '.')
		if i < 0 {
			printEvent(out, e, red.Redact)
			return
		}
		// A child run's (its id is its parent's, a dot, its step and
		// index): its lines indented under the parent's, named.
		var b strings.Builder
		printEvent(&b, e, red.Redact)
		for line := range strings.Lines(b.String()) {
			fmt.Fprintf(out, "  child %s | %s", e.Run[i+1:], line)
		}
	}
}

// cacheShare is the share of the input tokens read from the provider's
// prompt cache, as the summary line says it.
func cacheShare(u agent.Usage) string {
	if u.Input <= 0 {
		return "no input"
	}
	return fmt.Sprintf("%.0f%% of the input from the prompt cache", 100*float64(u.CacheRead)/float64(u.Input))
}

// costText is a run's cost, derived from its tokens and the provider's
// prices.
func costText(c float64) string {
	if c <= 0 {
		return "cost unknown (no prices for the provider)"
	}
	return fmt.Sprintf("cost $%.4f", c)
}

// responderFor is who answers the model's questions and plans, chosen by
// --approve as the approver is: the terminal, an operator later (defer),
// --approve all (plans approved, no answers), or no one (none).
func responderFor(a policy.Approver) agent.Responder {
	switch a := a.(type) {
	case agent.Defer:
		return agent.Defer{}
	case policy.AllowAll:
		return agent.ApprovePlans{}
	case policy.Terminal:
		return agent.TerminalResponder{In: a.In, Out: a.Out}
	}
	return nil
}

// outcomeExit prints a run's outcome (as JSON when asked) and gives its
// exit status.
func outcomeExit(out io.Writer, res agent.Outcome, err error, red *trace.Redactor, asJSON bool) error {
	if err != nil {
		return &exitError{exitUsage, red.Redact(strings.TrimPrefix(err.Error(), "agent: "))}
	}
	// A provider's error can quote what it was sent: the outcome is
	// printed through the same chokepoint as everything else.
	res.Reason = red.Redact(res.Reason)
	if a := string(res.Answer); a != "" {
		// The answer too: redacted where it stays JSON, else withheld.
		if r := red.Redact(a); r != a {
			res.Answer = json.RawMessage(`"[rein: the answer held a secret and is withheld; rein trace show has it redacted]"`)
			if json.Valid([]byte(r)) {
				res.Answer = json.RawMessage(r)
			}
		}
	}
	if asJSON {
		return writeJSON(out, res, res.Kind.ExitCode())
	}
	if code := res.Kind.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}
