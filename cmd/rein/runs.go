package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// newRunResumeCmd is rein run resume: a durable run driven on from its
// last checkpoint.
func newRunResumeCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf      commonFlags
		tf      traceFlag
		pc      agent.ProviderChoice
		approve string
		asJSON  bool
		tmp     temporalFlags
	)
	cmd := &cobra.Command{
		Use:   "resume [flags] RUN",
		Short: "Drive a run on from its last checkpoint: after its process died, or once the decision it waits for is recorded",
		Long: `Resume the agent run RUN of the workspace's trace from its last
checkpoint. The steps it committed are not repeated and nothing is
charged twice. The policy is loaded again and decides every call from
here (the gate is checked against it again); the run's background
handles are orphaned. A call that was running when the process died runs
again when it only reads; any other is not repeated: the model is told it
was interrupted and shown the workspace's change since it started, or,
with [run] recovery = "wait", the run waits for an operator
(awaiting_recovery). A run waiting for a decision goes on once rein
approve has recorded it; an approved action runs only if the policy,
checked again, still asks (a deny added since wins).

One driver per run: while another process drives RUN, resume is refused,
naming its pid and host; a dead driver's run is taken over at once.

The run keeps the configuration it was started with, recorded with it
under the trace's keyed chain: its provider, model, base URL and key
variable (never the key), its mode and network (the policy files widened
since do not widen it), the --allow, --ask, --deny and --read-path of its
command line, and its approver (a run started with --approve none or all
keeps it; otherwise asks are deferred). A flag may narrow it (--mode
safe, another --deny or --ask, --approve none); one that would widen it is
refused, naming it. --provider and the other provider flags choose
another endpoint.

Exit status: as rein run's; 6 when the run waits for a decision again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runID := args[0]
			pre, store, red, err := loadWithTrace(&cf, sf, &tf)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			if err := runInTrace(ctx, store, runID, pre.Workspace); err != nil {
				return err
			}
			st, err := agent.LoadState(ctx, store, runID)
			if err != nil {
				return &exitError{exitUsage, strings.TrimPrefix(err.Error(), "agent: ")}
			}
			c := st.Contract
			if c.Workspace != pre.Workspace {
				return &exitError{exitUsage, fmt.Sprintf("run %s works in %s, not %s: resume it with --workspace %s", runID, c.Workspace, pre.Workspace, c.Workspace)}
			}
			if tmp.on() {
				return followAgain(ctx, cmd, &tmp, &tf, store, pre.Workspace, st, red, asJSON)
			}
			calls, err := store.ProviderCalls(ctx, runID)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			provider, p, approver, red, err := runnerFor(ctx, cmd, sf, &cf, pc, approve, c, calls, red)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			o := agentOptions(provider, p, approver, store, red, out, asJSON)
			o.PolicyFor = worktreePolicy(cf, *sf, p)
			res, err := agent.Resume(ctx, runID, o)
			defer exportRun(cmd.ErrOrStderr(), p, store, red, res.Run)
			return outcomeExit(out, res, err, red, asJSON)
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&pc.Name, "provider", "", "the provider preset (default: the run's)")
	f.StringVar(&pc.Model, "model", "", "the model (default: the run's)")
	f.StringVar(&pc.BaseURL, "base-url", "", "the provider's base URL, over the preset's")
	f.StringVar(&pc.KeyEnv, "api-key-env", "", "the variable the key is read from, over the preset's")
	f.StringVar(&approve, "approve", "defer", "who answers asked actions: defer (an operator, with rein approve), terminal, all or none")
	f.BoolVar(&asJSON, "json", false, "print the outcome as one JSON object instead of a line per step")
	tmp.register(cmd, false)
	return cmd
}

// runnerFor is what drives a run under contract c again (rein run resume,
// rein chat send): the policy loaded again with c's gate and protect
// globs and the configuration c was started with (a flag may narrow it,
// never widen it), the provider (the flags', else the configuration's,
// else that of the last of calls), the approver, and the redactor with
// the provider's key.
func runnerFor(ctx context.Context, cmd *cobra.Command, sf *scopeFlags, cf *commonFlags, pc agent.ProviderChoice, approve string, c agent.Contract,
	calls []trace.ProviderCall, red *trace.Redactor) (agent.Provider, *policy.Policy, policy.Approver, *trace.Redactor, error) {
	// The policy again, with the run's gate and protect globs as
	// the run began with them.
	if c.Verify != nil {
		line, err := shell.Parse(c.Verify.Line)
		if err != nil {
			return nil, nil, nil, nil, &exitError{exitUsage, fmt.Sprintf("the run's gate %q: %v", c.Verify.Line, err)}
		}
		cf.extraRules = append(cf.extraRules, gateRules(line)...)
	}
	cf.verification = c.Protect
	if rc := c.Config; rc != nil {
		if err := keepRunConfig(rc, cf, &pc, &approve, cmd.Flags().Changed("approve")); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	p, err := cf.load(sf)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if rc := c.Config; rc != nil {
		// The policy files may have been widened since: the run
		// keeps the mode and network it began with at most.
		reload := false
		if rank(modeRank, p.Mode.String()) > rank(modeRank, rc.Mode) {
			cf.mode, reload = rc.Mode, true
		}
		if rank(networkRank, p.Sandbox.Network) > rank(networkRank, rc.Network) {
			cf.networkFlag, reload = rc.Network, true
		}
		if reload {
			if p, err = cf.load(sf); err != nil {
				return nil, nil, nil, nil, err
			}
		}
	}
	if pc.Name == "" && len(calls) > 0 {
		last := calls[len(calls)-1]
		pc.Name = last.Provider
		if pc.Model == "" {
			pc.Model = last.Model
		}
	}
	pc, _ = providerFrom(pc, p.Providers)
	provider, preset, err := agent.ChooseProvider(ctx, pc, os.Getenv)
	if err != nil {
		return nil, nil, nil, nil, &exitError{exitUsage, err.Error()}
	}
	if err := agent.CheckProviderHost(p, preset.BaseURL); err != nil {
		return nil, nil, nil, nil, &exitError{exitUsage, err.Error()}
	}
	if preset.KeyEnv != "" {
		red = trace.NewRedactor(append(trace.SecretValues(os.Environ(), p.EnvSecrets...), os.Getenv(preset.KeyEnv))...)
	}
	approver, err := runApprover(approve, cmd)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return provider, p, approver, red, nil
}

// The orders of what a flag may widen: a later entry grants more.
var (
	modeRank    = []string{"safe", "ask", "auto"}
	networkRank = []string{"off", "proxy", "full"}
	approveRank = map[string]int{"none": 0, "terminal": 1, "defer": 1, "all": 2}
)

// rank is v's place in order; an unknown value ranks above all, so that it
// is never taken for a narrowing.
func rank(order []string, v string) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}

// keepRunConfig makes the flags of rein run resume the run's own
// configuration as it was started: its provider, mode, rules, read paths
// and approver, each unless a flag says otherwise. A flag may narrow the
// run (a stricter mode, another deny or ask rule, an approver that grants
// less); one that would widen it is refused, naming it.
func keepRunConfig(rc *agent.RunConfig, cf *commonFlags, pc *agent.ProviderChoice, approve *string, approveGiven bool) error {
	widen := func(flag, why string) error {
		return &exitError{exitUsage, fmt.Sprintf("%s would widen what the run was started with (%s): a resumption may narrow the run, never widen it; start a new run instead", flag, why)}
	}
	if cf.mode == "" {
		cf.mode = rc.Mode
	} else if rank(modeRank, cf.mode) > rank(modeRank, rc.Mode) {
		return widen("--mode "+cf.mode, "mode "+rc.Mode)
	}
	for _, a := range cf.allow {
		if !slices.Contains(rc.Allow, a) {
			return widen("--allow "+a, "no such allow rule")
		}
	}
	for _, r := range cf.readPaths {
		if !slices.Contains(rc.ReadPaths, r) {
			return widen("--read-path "+r, "no such read path")
		}
	}
	cf.allow, cf.readPaths = rc.Allow, rc.ReadPaths
	cf.ask = append(slices.Clone(rc.Ask), cf.ask...)
	cf.deny = append(slices.Clone(rc.Deny), cf.deny...)
	if pc.Name == "" {
		pc.Name, pc.Family = rc.Provider, agent.Family(rc.Family)
		pc.Model = cmp.Or(pc.Model, rc.Model)
		pc.BaseURL = cmp.Or(pc.BaseURL, rc.BaseURL)
		pc.KeyEnv = cmp.Or(pc.KeyEnv, rc.KeyEnv)
	}
	switch {
	case !approveGiven && (rc.Approve == "none" || rc.Approve == "all"):
		*approve = rc.Approve
	case approveGiven && approveRank[*approve] > approveRank[rc.Approve] && rc.Approve != "":
		return widen("--approve "+*approve, "--approve "+rc.Approve)
	}
	return nil
}

// runApprover is the approver of rein run's --approve: terminal (denied
// without one), all, none, or defer (the run waits for rein approve).
func runApprover(flag string, cmd *cobra.Command) (policy.Approver, error) {
	switch flag {
	case "defer":
		return agent.Defer{}, nil
	case "terminal":
		flag = ""
	case "", "all", "none":
	default:
		return nil, &exitError{exitUsage, fmt.Sprintf("--approve %q: use terminal, defer, all or none", flag)}
	}
	return chooseApprover(flag, cmd.ErrOrStderr())
}

// newRunCancelCmd is rein run cancel: an operator's request that a run
// stop, from any process.
func newRunCancelCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf  commonFlags
		tf  traceFlag
		tmp temporalFlags
	)
	cmd := &cobra.Command{
		Use:   "cancel [flags] RUN",
		Short: "Cancel a run: its driver stops it within a second, its model call and command in flight cancelled",
		Long: `Record a request that RUN be cancelled. The process driving it looks for
one every quarter of a second and, finding it, cancels the model call or
the command in flight (the command's whole process tree ends) and ends
the run cancelled (exit 130), naming the request. A run that waits for a
person (awaiting_*) ends cancelled when it is resumed. The request and
when it was taken are in the trace (rein trace show RUN).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return operatorRequest(cmd, sf, &cf, &tf, &tmp, args[0], agent.CancelRequest, "x", "cancel the run",
				"run %s is cancelled by its driver within a second, or when it is resumed (request %s)\n")
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	tmp.register(cmd, false)
	return cmd
}

// newRunFoldCmd is rein run fold: an operator's request that a run fold
// its oldest steps into a summary.
func newRunFoldCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf commonFlags
		tf traceFlag
	)
	cmd := &cobra.Command{
		Use:   "fold [flags] RUN",
		Short: "Ask a run to fold its oldest steps into a summary the model writes, before its next model step",
		Long: `Record a request that RUN fold its oldest steps (all but the goal and
the last turns, as much as one summarising call's view holds) into one
summary the model writes. The run takes it at its next step boundary,
before its next model call: at once when a process drives it, or when it
is resumed. The request and its answer are in the trace (rein trace show
RUN): answered yes with the steps folded, or no when there was nothing to
fold.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return operatorRequest(cmd, sf, &cf, &tf, nil, args[0], "fold", "f", "fold the oldest steps into a summary",
				"run %s folds its oldest steps before its next model step (request %s)\n")
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	return cmd
}

// operatorRequest records an operator's request of kind to run (rein run
// fold, rein run cancel), its id the prefix and random hex, shown as what
// is asked and by whom, and prints done with the run and the id. A run
// that has ended, or is no agent run, is refused; while one of that kind
// is not yet taken, it says so and records none.
func operatorRequest(cmd *cobra.Command, sf *scopeFlags, cf *commonFlags, tf *traceFlag, tmp *temporalFlags, run, kind, prefix, what, done string) error {
	p, store, _, err := loadWithTrace(cf, sf, tf)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := cmd.Context()
	if err := runInTrace(ctx, store, run, p.Workspace); err != nil {
		return err
	}
	cp, err := store.LastCheckpoint(ctx, run)
	if err != nil {
		return &exitError{exitUsage, err.Error()}
	}
	if cp == nil || !strings.HasPrefix(cp.Status, "awaiting_") && cp.Status != "running" {
		status := "no checkpoint: it is not an agent run"
		if cp != nil {
			status = "it has ended " + cp.Status
		}
		return &exitError{exitUsage, fmt.Sprintf("run %s cannot take a %s: %s", run, kind, status)}
	}
	reqs, err := store.ApprovalRequests(ctx, run)
	if err != nil {
		return &exitError{exitUsage, err.Error()}
	}
	for _, r := range reqs {
		if d, _ := store.Decision(ctx, run, r.Request); r.Kind == kind && d == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "run %s has a %s asked already (request %s), not yet taken\n", run, kind, r.Request)
			return wake(ctx, tmp, tf, store, p.Workspace, run, r.Request, kind)
		}
	}
	var b [4]byte
	rand.Read(b[:])
	id := prefix + hex.EncodeToString(b[:])
	if _, err := store.Append(ctx, trace.ApprovalRequest{RunID: run, Request: id, Kind: kind, Shown: what + ", asked by " + operator(), At: time.Now()}); err != nil {
		return &exitError{exitUsage, err.Error()}
	}
	fmt.Fprintf(cmd.OutOrStdout(), done, run, id)
	return wake(ctx, tmp, tf, store, p.Workspace, run, id, kind)
}

// wake tells a run's workflow (--temporal) of an operator's request: one
// that waits for a decision, costing no worker, is opened again and
// takes it.
func wake(ctx context.Context, tmp *temporalFlags, tf *traceFlag, store *sqlstore.Store, workspace, run, request, kind string) error {
	if !tmp.on() {
		return nil
	}
	return tmp.tell(ctx, tf, store, workspace, run, request, kind)
}

// operator is who runs this command: the user at this host.
func operator() string {
	by := "pid " + fmt.Sprint(os.Getpid())
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	if host, err := os.Hostname(); err == nil {
		by += "@" + host
	}
	return by
}

// newApproveCmd is rein approve: an operator's answer to what a run
// waits for.
func newApproveCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf           commonFlags
		tf           traceFlag
		tmp          temporalFlags
		yes, no      bool
		note, revise string
	)
	cmd := &cobra.Command{
		Use:   "approve [flags] RUN REQUEST --yes|--no|--revise NOTE",
		Short: "Answer a request a run waits for (a deferred ask, an interrupted call, a plan); rein run resume acts on it",
		Long: `Record the answer to REQUEST of RUN (rein runs lists what each run waits
on): for a deferred ask, --yes approves the action as it was shown and
--no rejects it; for a call interrupted by the death of rein's process,
--yes makes it again and --no tells the model it was interrupted; for the
model's plan (rein run --plan), --yes approves it, --no cancels the run
and --revise NOTE sends it back with the note. A question the model asked
is answered with rein answer. The first answer stands: a second is
refused. Nothing runs until rein run resume RUN, which checks the policy
again before it acts on a yes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			answer := ""
			n := 0
			for _, c := range []struct {
				on bool
				a  string
			}{{yes, "yes"}, {no, "no"}, {cmd.Flags().Changed("revise"), "revise"}} {
				if c.on {
					answer, n = c.a, n+1
				}
			}
			if n != 1 {
				return &exitError{exitUsage, "give one of --yes, --no and --revise NOTE"}
			}
			if answer == "revise" {
				if strings.TrimSpace(revise) == "" {
					return &exitError{exitUsage, "--revise needs the note the model gets"}
				}
				note = revise
			}
			return decide(cmd, sf, &cf, &tf, &tmp, trace.ApprovalDecision{RunID: args[0], Request: args[1], Answer: answer, Note: note})
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	tmp.register(cmd, false)
	f := cmd.Flags()
	f.BoolVar(&yes, "yes", false, "approve (or, for an interrupted call, make it again)")
	f.BoolVar(&no, "no", false, "reject (for an interrupted call, tell the model; for a plan, cancel the run)")
	f.StringVar(&revise, "revise", "", "for a plan: send it back with this note, which the model gets")
	f.StringVar(&note, "note", "", "a note kept with the answer and shown to the model")
	return cmd
}

// newAnswerCmd is rein answer: an operator's answer to the model's
// question.
func newAnswerCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf  commonFlags
		tf  traceFlag
		tmp temporalFlags
	)
	cmd := &cobra.Command{
		Use:   "answer [flags] RUN QUESTION TEXT",
		Short: "Answer a question the model of a run asked (the run ends awaiting_answer); rein run resume goes on",
		Long: `Record TEXT as the answer to the question QUESTION of RUN (a run of
rein run --approve defer that ended awaiting_answer; rein runs lists what
each run waits on). The model gets the text as what is wanted: it is never
permission, and changes no decision of the policy. The first answer
stands: a second is refused. The run goes on with rein run resume RUN.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[2]) == "" {
				return &exitError{exitUsage, "the answer is empty"}
			}
			return decide(cmd, sf, &cf, &tf, &tmp, trace.ApprovalDecision{RunID: args[0], Request: args[1], Answer: "answer", Note: args[2]})
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	tmp.register(cmd, false)
	return cmd
}

// decide records an operator's answer d (by the user at this host) in the
// trace of the workspace.
func decide(cmd *cobra.Command, sf *scopeFlags, cf *commonFlags, tf *traceFlag, tmp *temporalFlags, d trace.ApprovalDecision) error {
	p, store, red, err := loadWithTrace(cf, sf, tf)
	if err != nil {
		return err
	}
	defer store.Close()
	d.By = operator()
	if err := runInTrace(cmd.Context(), store, d.RunID, p.Workspace); err != nil {
		return err
	}
	d.At = time.Now()
	if err := store.Decide(cmd.Context(), d); err != nil {
		code := exitUsage
		var answered *sqlstore.AnsweredError
		if errors.As(err, &answered) {
			code = 1
		}
		return &exitError{code, red.Redact(strings.TrimPrefix(err.Error(), "trace: "))}
	}
	if tmp.on() {
		if err := tmp.tell(cmd.Context(), tf, store, p.Workspace, d.RunID, d.Request, d.Answer); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "request %s of run %s answered %s; its workflow goes on (rein run resume --temporal %s %s follows it)\n", d.Request, d.RunID, d.Answer, tmp.addr, d.RunID)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "request %s of run %s answered %s; the run goes on with: rein run resume %s\n", d.Request, d.RunID, d.Answer, d.RunID)
	return nil
}

// runInTrace refuses a run the trace opened does not hold: it is
// another workspace's, or in another trace.
func runInTrace(ctx context.Context, store *sqlstore.Store, runID, ws string) error {
	ok, err := store.HasRun(ctx, runID)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{exitUsage, fmt.Sprintf("run %s is not in this workspace's trace (%s, the trace of %s): it is another workspace's; pass that workspace with --workspace, or its trace with --trace (rein runs lists the runs of a trace)", runID, store.Path(), ws)}
	}
	return nil
}

// runState is a run as rein runs lists it.
type runState struct {
	sqlstore.DurableRun
	// State says what the run is doing, in a word or two; WaitsOn what
	// it waits for.
	State   string `json:"state"`
	WaitsOn string `json:"waits_on,omitempty"`
	// Todo is the model's todo list as the run's last checkpoint keeps
	// it.
	Todo []agent.TodoItem `json:"todo,omitempty"`
	// Parent is the run a child run was started by (spawn_agent), with
	// the parent's step; Depth its depth in the tree.
	Parent     string `json:"parent,omitempty"`
	ParentStep int    `json:"parent_step,omitempty"`
	Depth      int    `json:"depth,omitempty"`
	// Steps, Tokens and Cost are what the run spent itself, as its last
	// checkpoint says; Children what its children did.
	Steps    int          `json:"steps"`
	Tokens   agent.Usage  `json:"tokens"`
	Cost     float64      `json:"cost,omitempty"`
	Children *agent.Spent `json:"children,omitempty"`
	// ChildrenCost is what the children's tokens cost, by the run's
	// prices.
	ChildrenCost float64 `json:"children_cost,omitempty"`
}

// treeOrder puts each child run after its parent (and its earlier
// siblings), the roots in the order they came.
func treeOrder(runs []runState) []runState {
	kids := map[string][]runState{}
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.RunID] = true
	}
	var roots []runState
	for _, r := range runs {
		if r.Parent != "" && ids[r.Parent] {
			kids[r.Parent] = append(kids[r.Parent], r)
		} else {
			roots = append(roots, r)
		}
	}
	out := make([]runState, 0, len(runs))
	var walk func(r runState)
	walk = func(r runState) {
		out = append(out, r)
		cs := kids[r.RunID]
		slices.SortFunc(cs, func(a, b runState) int { return strings.Compare(a.RunID, b.RunID) })
		for _, c := range cs {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// newRunsCmd is rein runs: the durable runs of the workspace's trace and
// their state.
func newRunsCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf     commonFlags
		tf     traceFlag
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "runs [flags]",
		Short: "List the agent runs of the workspace's trace with their state and what they wait on",
		Long: `List the agent runs of the workspace's trace, newest first, each with
its state: running (and the pid and host that drive it), interrupted (its
process died; rein run resume goes on), awaiting_approval,
awaiting_recovery or awaiting_plan (and the request that waits for rein
approve), awaiting_answer (and the question that waits for rein answer),
or the outcome it ended with.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, store, red, err := loadWithTrace(&cf, sf, &tf)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx := cmd.Context()
			runs, err := store.DurableRuns(ctx)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			out := make([]runState, 0, len(runs))
			for _, r := range runs {
				s := runState{DurableRun: r, State: r.Status}
				switch {
				case r.Status == "running" && r.Driven:
					s.State = fmt.Sprintf("running (pid %d on %s)", r.Lease.PID, r.Lease.Host)
				case r.Status == "running":
					s.State = "interrupted (rein run resume " + r.RunID + ")"
				case r.Waiting != "":
					reqs, _ := store.ApprovalRequests(ctx, r.RunID)
					for _, q := range reqs {
						if q.Request == r.Waiting {
							first, _, _ := strings.Cut(q.Shown, "\n")
							s.WaitsOn = fmt.Sprintf("request %s: %s", q.Request, policy.Printable(red.Redact(first)))
						}
					}
					if d, _ := store.Decision(ctx, r.RunID, r.Waiting); d != nil {
						s.WaitsOn += fmt.Sprintf(" (answered %s; rein run resume %s)", d.Answer, r.RunID)
					}
				}
				if st, err := agent.LoadState(ctx, store, r.RunID); err == nil {
					s.Todo = st.Todo
					s.Steps, s.Tokens, s.Cost = st.Steps, st.Tokens, st.Contract.Prices.Cost(st.Tokens)
					if st.Children.Runs > 0 {
						c := st.Children
						s.Children = &c
						s.ChildrenCost = st.Contract.Prices.Cost(c.Tokens)
					}
					if ch := st.Contract.Child; ch != nil {
						s.Parent, s.ParentStep, s.Depth = ch.Parent, ch.Step, ch.Depth
					}
				}
				out = append(out, s)
			}
			out = treeOrder(out)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out, exitOK)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "RUN\tSTARTED\tSTATE\tSTEPS\tTOKENS\tTODO\tWAITS ON")
			for _, r := range out {
				todo := "-"
				if len(r.Todo) > 0 {
					done, all := loop.TodoCounts(r.Todo)
					todo = fmt.Sprintf("%d/%d done", done, all)
				}
				id := r.RunID
				if r.Parent != "" {
					// A child, under its parent, named by its step there.
					id = strings.Repeat("  ", r.Depth) + "└ " + strings.TrimPrefix(r.RunID, r.Parent) + fmt.Sprintf(" (step %d)", r.ParentStep)
				}
				steps, tokens := fmt.Sprint(r.Steps), fmt.Sprint(loop.Sat(r.Tokens.Input, r.Tokens.Output))
				if r.Cost > 0 {
					tokens += fmt.Sprintf(" ($%.4f)", r.Cost)
				}
				if c := r.Children; c != nil {
					steps += fmt.Sprintf(" +%d", c.Steps)
					tokens += fmt.Sprintf(" +%d", loop.Sat(c.Tokens.Input, c.Tokens.Output))
					if r.ChildrenCost > 0 {
						tokens += fmt.Sprintf(" ($%.4f)", r.ChildrenCost)
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.State, steps, tokens, todo, policy.Printable(r.WaitsOn))
			}
			return w.Flush()
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	return cmd
}

// loadWithTrace loads the policy the flags name and opens its workspace's
// trace, with the redactor of its secrets.
func loadWithTrace(cf *commonFlags, sf *scopeFlags, tf *traceFlag) (*policy.Policy, *sqlstore.Store, *trace.Redactor, error) {
	p, err := cf.load(sf)
	if err != nil {
		return nil, nil, nil, err
	}
	store, red, err := tf.openFor(p)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, store, red, nil
}
