package tool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/files"
	"github.com/reinhq/rein/limits"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/workspace"
)

// Config is what a router runs with.
type Config struct {
	// Policy decides every call; it is required.
	Policy *policy.Policy
	// WebSearchURL is search_internet's backend, a SearxNG-compatible
	// JSON API (policy.Policy.WebSearchURL); "" for none.
	WebSearchURL string
	// Approver answers what the policy asks; nil denies every ask, naming
	// that no approver is configured.
	Approver policy.Approver
	// NetApprover, when set, answers the network asks of commands in
	// Approver's place: a command approved by a person (a Claude Code
	// prompt) does not approve the connections it makes.
	NetApprover policy.Approver
	// Surface is the tool set this run sees; "" is "coding".
	Surface string
	// Store records the run; nil records nothing. Results keeps whole
	// results for read_result; nil is a store of the run's own under
	// rein's state directory, removed when the run closes.
	Store   trace.Store
	Results *Results
	// Redactor is the chokepoint for everything printed and stored. Nil
	// is a redactor of the policy's declared secrets ([env] secrets) and
	// the environment's secret-named variables, as rein's commands build.
	Redactor *trace.Redactor
	// Profile is the template of every command's execution profile: the
	// router sets the workspace, read-only and the timeout per call. Its
	// Limits are bounded by the policy's [limits]: a limit the profile
	// leaves zero, or sets higher than the policy, is the policy's.
	Profile sandbox.Profile
	// PreviewChars bounds what the model sees of a result; zero is
	// DefaultPreviewChars.
	PreviewChars int
	// Source says what runs the router ("cli", "mcp", "agent"), for the
	// trace; "" records none.
	Source string
	// RunID, when set, records the router's calls under a run that
	// already exists in Store and that its owner ends (a launched
	// session, whose hook decisions and MCP calls are one run); empty
	// starts a run of the router's own, ended by Close.
	RunID string
	// ID, when set (and RunID and Resume are not), is the id the router's
	// own run takes (an agent's child run, named by its parent's call);
	// empty draws one.
	ID string
	// Resume, when set, is the id of a run of Store that this router
	// continues (an agent run resumed after its process ended): no new
	// run is recorded but its resumption, calls and handles are numbered
	// on from those recorded, and the handles of the process before are
	// orphaned, never re-attached.
	Resume string
	// Carried is, with Resume, what the run's router knew in the process
	// before (Router.Carried, as the run kept it): the refusals counted
	// towards the repeated-refusal stop, and why the sandbox is down.
	Carried *Carried
	// KeepResults keeps the router's own result store past Close: a run
	// that can go on in another process (a durable agent run) reads its
	// results again there, and its owner removes them with RemoveResults
	// once the run has its final outcome. The store is named by the run's
	// id, so that the run's next router finds it.
	KeepResults bool
	// Cold starts each command's sandbox afresh and keeps none warm
	// behind it (sandbox.Pool): a router for one call (rein exec, rein
	// shell) has no next command to start one for.
	Cold bool
	// Hold, when set, is asked before each call of a tool that is not
	// read-only (a run's gate aside): an attribution it returns denies
	// the call by that rule. An agent run's plan gate is one.
	Hold func(ctx context.Context, name string) *policy.Attribution
}

// Carried is what a router knows of its run that the trace does not say
// and a run driven on in another process needs: the refusals counted
// towards the repeated-refusal stop, and why the sandbox is down, if it
// is.
type Carried struct {
	Refusals    map[string]int `json:"refusals,omitempty"`
	SandboxDown string         `json:"sandbox_down,omitempty"`
	// Branches are the branches the run made with git_branch, which
	// git_merge may merge.
	Branches []string `json:"branches,omitempty"`
}

// Carried is what the router knows of its run for the run's next
// process (Config.Carried).
func (r *Router) Carried() Carried {
	r.mu.Lock()
	down := r.sandboxDown
	r.mu.Unlock()
	r.mu.Lock()
	branches := slices.Sorted(maps.Keys(r.branches))
	r.mu.Unlock()
	return Carried{Refusals: r.repeats.Counts(), SandboxDown: down, Branches: branches}
}

// Envelope is what the model is shown of a result: a bounded preview with
// the elided size stated, and the id to read the rest.
type Envelope struct {
	Tool     string       `json:"tool"`
	Status   Status       `json:"status"`
	Reason   string       `json:"reason,omitempty"`
	Rule     string       `json:"rule,omitempty"`
	Layer    string       `json:"layer,omitempty"`
	File     string       `json:"file,omitempty"`
	ExitCode *int         `json:"exit_code,omitempty"`
	Rung     sandbox.Rung `json:"rung,omitempty"`
	LimitHit string       `json:"limit_hit,omitempty"`
	Preview  string       `json:"preview"`
	// Chars is the whole result's length, ElidedChars what the preview
	// leaves out; ResultID reads the whole of it with read_result.
	Chars       int    `json:"chars"`
	ElidedChars int    `json:"elided_chars"`
	ResultID    string `json:"result_id,omitempty"`
	result      *Result
	redactor    *trace.Redactor
	once        sync.Once
}

// Result is the whole result, for callers that are not a model (rein
// tool --json). Its structured data holds text too (a command's streams, a
// file's content, a diff), so it goes through the same chokepoint, as
// JSON, the first time it is asked for, and is dropped if it does not come
// back whole.
func (e *Envelope) Result() *Result {
	e.once.Do(func() {
		res := e.result
		if res.Data == nil {
			return
		}
		var v any
		if data, err := json.Marshal(res.Data); err == nil && json.Unmarshal([]byte(e.redactor.Redact(string(data))), &v) == nil {
			res.Data = v
		} else {
			res.Data = nil
		}
	})
	return e.result
}

// Text is the envelope as a model reads it.
func (e *Envelope) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Tool, e.Status)
	if e.ExitCode != nil {
		fmt.Fprintf(&b, " (exit %d)", *e.ExitCode)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	b.WriteString("\n")
	// The note on what is left out comes first: a client that shows only
	// the start of a long result (Claude Code saves one past its limit and
	// shows its first 2 KB) still shows how to read the rest.
	if e.ElidedChars > 0 {
		fmt.Fprintf(&b, "[%d of %d characters elided; read_result {\"id\": %q, \"offset\": 0} reads the whole result]\n", e.ElidedChars, e.Chars, e.ResultID)
	}
	b.WriteString(e.Preview)
	return b.String()
}

// Event is what observers see of each call.
type Event struct {
	Step     trace.Step
	Envelope *Envelope
}

// Router takes every call of one run through its life.
type Router struct {
	reg   *Registry
	cfg   Config
	runID string
	files *files.Tools
	ws    *workspace.Workspace

	mu          sync.Mutex
	index       int
	stopped     string          // why the run was stopped, if it was
	sandboxDown string          // why the sandbox is down in this run
	branches    map[string]bool // made by git_branch in this run
	repeats     policy.RepeatTracker
	observers   []func(Event)
	handles     *handleTable
	closed      bool
	ownResults  bool // the result store is the run's own, removed at its end
	// pool keeps the next command's sandbox started and confined before
	// the command arrives (sandbox.Pool), until the run ends.
	pool *sandbox.Pool
	// spools are the emptied spool directories of ended commands, for
	// the next ones; removed at Close.
	spools []string
}

// NewRouter starts a run: it opens the workspace and records the run.
func NewRouter(reg *Registry, cfg Config) (*Router, error) {
	if cfg.Policy == nil {
		return nil, fmt.Errorf("tool: a router needs a policy")
	}
	if h := cfg.Policy.SandboxHome; h != bwrap.SandboxHome {
		// A line's ~ is the sandbox's HOME; a policy that decides it as
		// another directory would decide paths the plan does not touch.
		return nil, fmt.Errorf("tool: the policy decides the sandbox's HOME as %q, but the sandbox's HOME is %q: load it with policy.Options{SandboxHome: %q} (the default), not OnHost", h, bwrap.SandboxHome, bwrap.SandboxHome)
	}
	if cfg.Surface == "" {
		cfg.Surface = "coding"
	}
	if _, err := reg.Surface(cfg.Surface); err != nil {
		return nil, err
	}
	if cfg.PreviewChars <= 0 {
		cfg.PreviewChars = DefaultPreviewChars
	}
	if cfg.Redactor == nil {
		cfg.Redactor = trace.NewRedactor(trace.SecretValues(os.Environ(), cfg.Policy.EnvSecrets...)...)
	}
	cfg.Profile.Limits = boundLimits(cfg.Profile.Limits, cfg.Policy.Limits)
	ws, err := workspace.Open(cfg.Policy.Workspace)
	if err != nil {
		return nil, fmt.Errorf("tool: opening the workspace: %w", err)
	}
	var b [8]byte
	rand.Read(b[:])
	r := &Router{reg: reg, cfg: cfg, ws: ws, runID: time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:4])}
	if cfg.RunID != "" {
		r.runID = cfg.RunID
	} else if cfg.ID != "" && cfg.Resume == "" {
		r.runID = cfg.ID
	}
	r.repeats.Limit = cfg.Policy.RepeatedRefusals
	if cfg.Carried != nil {
		r.repeats.Restore(cfg.Carried.Refusals)
		r.sandboxDown = cfg.Carried.SandboxDown
		for _, b := range cfg.Carried.Branches {
			r.noteBranch(b)
		}
	}
	r.files = &files.Tools{WS: ws}
	r.handles = newHandleTable(r)
	r.pool = sandbox.NewPool()
	if cfg.Resume != "" {
		if err := r.resume(cfg.Resume); err != nil {
			ws.Close()
			return nil, err
		}
	}
	// The results of a run of the router's own are named by its id (a
	// resumed run's is the run's); those of a router under a run of
	// another's owner, by a name of the router's own.
	resultsDir := r.runID
	if cfg.RunID != "" {
		resultsDir = cfg.RunID + "-" + hex.EncodeToString(b[4:])
	}
	if cfg.Results == nil {
		dir, err := sandbox.StateDir("results")
		if err != nil {
			return nil, err
		}
		cfg.Results = &Results{Dir: filepath.Join(dir, resultsDir), Limit: cfg.Policy.ResultsPerRun}
		r.cfg.Results = cfg.Results
		r.ownResults = true
	}
	if cfg.Store != nil && cfg.RunID == "" && cfg.Resume == "" {
		if _, err := cfg.Store.Append(context.Background(), trace.Run{ID: r.runID, StartedAt: time.Now(), Workspace: cfg.Policy.Workspace,
			Surface: cfg.Surface, Mode: cfg.Policy.Mode.String(), Source: cfg.Source, PID: os.Getpid()}); err != nil {
			return nil, fmt.Errorf("tool: recording the run: %w", err)
		}
		host, _ := os.Hostname()
		cfg.Store.Append(context.Background(), trace.Audit{RunID: r.runID, Kind: "run_start", At: time.Now(),
			Meta: mustJSON(map[string]any{"pid": os.Getpid(), "uid": os.Getuid(), "host": host, "surface": cfg.Surface, "mode": cfg.Policy.Mode.String(), "source": cfg.Source})})
	}
	return r, nil
}

// resume continues run id of the store: its calls and handles are
// numbered on from the ones recorded, and its resumption is recorded.
func (r *Router) resume(id string) error {
	ctx := context.Background()
	if r.cfg.Store == nil {
		return fmt.Errorf("tool: resuming run %s needs the store it was recorded in", id)
	}
	steps, err := r.cfg.Store.Steps(ctx, id)
	if err != nil {
		return fmt.Errorf("tool: resuming run %s: %w", id, err)
	}
	hs, err := r.cfg.Store.Handles(ctx, id)
	if err != nil {
		return fmt.Errorf("tool: resuming run %s: %w", id, err)
	}
	r.runID, r.index, r.handles.n = id, len(steps), len(hs)
	host, _ := os.Hostname()
	if _, err := r.cfg.Store.Append(ctx, trace.Audit{RunID: id, Kind: "run_resume", At: time.Now(),
		Meta: mustJSON(map[string]any{"pid": os.Getpid(), "uid": os.Getuid(), "host": host, "surface": r.cfg.Surface, "mode": r.cfg.Policy.Mode.String(), "calls": len(steps)})}); err != nil {
		return fmt.Errorf("tool: recording the resumption of run %s: %w", id, err)
	}
	return nil
}

// boundLimits is l with the policy's limits as ceilings: each limit the
// policy sets holds unless l sets a lower one.
func boundLimits(l sandbox.Limits, p policy.Limits) sandbox.Limits {
	return limits.Within(l, p)
}

// RunID is the run's id in the trace.
func (r *Router) RunID() string { return r.runID }

// Sandbox says which sandbox rung this run's commands take here, after
// the sandbox's own preflight, and the network mode they get; or why no
// rung can run them.
func (r *Router) Sandbox(ctx context.Context) (rung sandbox.Rung, network sandbox.Network, err error) {
	c := &Call{Router: r, ctx: ctx}
	prof := c.profile(r.cfg.Policy.Sandbox.Timeout, &egressLog{})
	rung, _, err = sandbox.ChooseRung(ctx, prof)
	return rung, prof.Network, err
}

// KillHandles kills every background handle of the run that is still
// running and waits for it to end; later calls may start new ones. An
// agent's gate runs with nothing of the run's running beside it.
func (r *Router) KillHandles() { r.handles.killLive() }

// Stopped says why the run was stopped (the same refusal repeated, the
// trace down), or "" while it goes on.
func (r *Router) Stopped() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// Observe adds an observer of every call.
func (r *Router) Observe(f func(Event)) {
	r.mu.Lock()
	r.observers = append(r.observers, f)
	r.mu.Unlock()
}

// Specs are the tools this run's surface sees.
func (r *Router) Specs() []*Spec {
	s, _ := r.reg.Surface(r.cfg.Surface)
	return s
}

// Close ends the run however it ended: every live handle is killed, and
// the end is recorded.
func (r *Router) Close(status string) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	left := r.handles.killAll(r.runID)
	r.pool.Close()
	r.mu.Lock()
	spools := r.spools
	r.spools = nil
	r.mu.Unlock()
	for _, d := range spools {
		os.RemoveAll(d)
	}
	if r.ownResults && !r.cfg.KeepResults {
		os.RemoveAll(r.cfg.Results.Dir)
	}
	if r.cfg.Store != nil {
		recs := left
		if r.cfg.RunID == "" {
			recs = append(recs, trace.RunEnd{RunID: r.runID, EndedAt: time.Now(), Status: status},
				trace.Audit{RunID: r.runID, Kind: "run_end", Meta: mustJSON(map[string]any{"status": status, "calls": r.index}), At: time.Now()})
		}
		r.cfg.Store.AppendAll(context.Background(), recs...)
	}
}

// ConfigReport is what the net under the host configuration table found
// (workspace.ChangedConfig).
type ConfigReport = workspace.ConfigReport

// ConfigChanged is the net under the protected set's table of the host's
// configuration: every dotted file of the workspace made or changed since
// the time given, which a tool on the host may read (a hook manager, an
// editor, an agent no table names yet). When there is any (or the walk
// stopped short), it is recorded in the trace as a config_changed event of
// the run and returned; else nil.
func (r *Router) ConfigChanged(ctx context.Context, since time.Time) *ConfigReport {
	rep := workspace.ChangedConfig(r.cfg.Policy.Workspace, since)
	if rep.Count == 0 && !rep.Truncated {
		return nil
	}
	if r.cfg.Store != nil {
		detail, _ := json.Marshal(rep)
		r.cfg.Store.Append(ctx, trace.SandboxEvent{RunID: r.runID, Kind: trace.KindConfigChanged, Detail: string(detail), At: time.Now()})
	}
	return &rep
}

// RemoveResults removes the router's own result store (one kept past
// Close with KeepResults), once its run has its final outcome.
func (r *Router) RemoveResults() {
	if r.ownResults {
		os.RemoveAll(r.cfg.Results.Dir)
	}
}

// Call is one call on its way through the router, as a tool sees it.
type Call struct {
	Router *Router
	Spec   *Spec
	StepID int64
	ctx    context.Context
}

// Call takes one call through its life and returns what the model sees.
func (r *Router) Call(ctx context.Context, name string, args json.RawMessage) *Envelope {
	start := time.Now()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	ctx = context.WithValue(ctx, awaitingKey{}, new(atomic.Bool))
	res, spec := r.call(ctx, name, args)
	env := r.envelope(name, res)
	r.mu.Lock()
	idx := r.index
	r.index++
	observers := slices.Clone(r.observers)
	r.mu.Unlock()
	step := trace.Step{RunID: r.runID, Index: idx, Tool: name, Args: string(args), Status: string(res.Status), Reason: res.Reason,
		ResultID: env.ResultID, Observation: env.Text(), StartedAt: start, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if r.cfg.Store != nil {
		ids, err := r.cfg.Store.AppendAll(context.WithoutCancel(ctx), append([]trace.Record{step}, r.records(spec, res)...)...)
		if err == nil {
			step.ID = ids[0]
		} else {
			// Nothing more runs unrecorded: the trace is down, and the run
			// stops.
			why := "the trace could not record a call: " + err.Error()
			r.mu.Lock()
			if r.stopped == "" {
				r.stopped = why
			}
			r.mu.Unlock()
			env.Preview += "\n[rein: " + why + "; the run is stopped]"
		}
	}
	for _, f := range observers {
		f(Event{Step: step, Envelope: env})
	}
	return env
}

func (r *Router) call(ctx context.Context, name string, args json.RawMessage) (res *Result, spec *Spec) {
	// A tool that panics fails its call and stops the run, rather than
	// taking the process (and the put-back of protected files) with it.
	defer func() {
		if p := recover(); p != nil {
			why := fmt.Sprintf("%s panicked: %v", name, p)
			r.mu.Lock()
			if r.stopped == "" {
				r.stopped = why
			}
			r.mu.Unlock()
			res = &Result{Status: Failed, Reason: why}
		}
	}()
	return r.callTool(ctx, name, args)
}

func (r *Router) callTool(ctx context.Context, name string, args json.RawMessage) (*Result, *Spec) {
	spec, err := r.reg.lookup(r.cfg.Surface, name)
	if err != nil {
		return &Result{Status: NotFound, Reason: err.Error()}, nil
	}
	if err := spec.validate(args); err != nil {
		return &Result{Status: Denied, Reason: "the arguments do not match the schema: " + err.Error()}, spec
	}
	// Hard gates.
	r.mu.Lock()
	stopped, down, closed := r.stopped, r.sandboxDown, r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return &Result{Status: Cancelled, Reason: "the run has ended"}, spec
	case stopped != "":
		return &Result{Status: Denied, Reason: "the run was stopped: " + stopped}, spec
	case !slices.Contains(spec.Modes, r.cfg.Policy.Mode):
		return &Result{Status: Denied, Reason: fmt.Sprintf("%s does not run in %s mode", name, r.cfg.Policy.Mode)}, spec
	case !spec.ReadOnly && down != "" && name != "shell_kill":
		return &Result{Status: Denied, Reason: "the sandbox is down in this run, so no more writes are made: " + down}, spec
	}
	if v := r.cfg.Policy.CheckTool(name); v.Decision == policy.Deny {
		res := &Result{Status: Denied, Reason: v.Reason, Rule: v.Rule}
		res.note("refusal", v)
		return r.refused(ctx, name, args, res), spec
	}
	if _, gate := ctx.Value(gateGrantKey{}).(string); r.cfg.Hold != nil && !spec.ReadOnly && !gate {
		if a := r.cfg.Hold(ctx, name); a != nil {
			v := &policy.Verdict{Decision: policy.Deny, Reason: fmt.Sprintf("%s is held by the %s layer: %s", name, a.Layer, a.Rule), Rule: a}
			res := &Result{Status: Denied, Reason: v.Reason, Rule: a}
			res.note("refusal", v)
			return r.refused(ctx, name, args, res), spec
		}
	}
	res := spec.run(ctx, &Call{Router: r, Spec: spec, ctx: ctx}, args)
	if res.Status == Denied {
		res = r.refused(ctx, name, args, res)
	}
	return res, spec
}

// refused counts a refusal; the same one coming back too often stops the
// run.
// ErrAwaitingAnswer is what an approver returns when it has put the
// question to someone who answers in a later call (an MCP client's input
// request). It marks the call (see AwaitingAnswer): that refusal is
// provisional and does not count towards the repeated-refusal stop.
var ErrAwaitingAnswer = errors.New("rein is awaiting the client's answer")

type awaitingKey struct{}

// AwaitingAnswer marks the call whose context ctx is as refused only
// until an answer comes; an approver calls it with ErrAwaitingAnswer.
func AwaitingAnswer(ctx context.Context) {
	if a, ok := ctx.Value(awaitingKey{}).(*atomic.Bool); ok {
		a.Store(true)
	}
}

func (r *Router) refused(ctx context.Context, name string, args json.RawMessage, res *Result) *Result {
	if a, ok := ctx.Value(awaitingKey{}).(*atomic.Bool); ok && a.Load() {
		return res
	}
	// The refusal is the rule that decided it where one did: its reason
	// names the path as the call spelled it (.git//config, ./.git/config).
	refusal := res.Reason
	if a := res.Rule; a != nil {
		refusal = fmt.Sprintf("%s rule %q (%s layer, %s:%d)", res.Status, a.Rule, a.Layer, a.File, a.Line)
	}
	if stop := r.repeats.Note(name, refusalTarget(args), refusal); stop != nil {
		r.mu.Lock()
		r.stopped = stop.Error()
		r.mu.Unlock()
		res.Reason = stop.Error()
	}
	return res
}

// refusalTarget is what a refused call was about, the same however its
// arguments were ordered or spaced, and whatever timeout it asked for.
func refusalTarget(args json.RawMessage) string {
	var v map[string]any
	if json.Unmarshal(args, &v) != nil {
		return string(args)
	}
	// The operation's target: a file tool's path, a command's line or
	// argv. What it would write there (an edit's old and new text, a
	// write's content) does not make the same refusal another: forty
	// different edits of one protected file are one refusal forty times.
	for _, k := range refusalTargetKeys {
		if t, ok := v[k]; ok {
			if s, ok := t.(string); ok {
				if k == "path" && s != "" {
					// .git//config, .git/./config and .git/hooks/../config
					// are one path.
					return path.Clean(s)
				}
				return s
			}
			data, _ := json.Marshal(t)
			return string(data)
		}
	}
	// A tool with no target of its own (apply_patch): its refusal names
	// what it refused.
	return ""
}

// refusalTargetKeys are the arguments that name what a tool acts on, in
// the order they are looked for.
var refusalTargetKeys = []string{"path", "line", "argv", "id", "handle"}

// envelope bounds the result for the model and keeps the whole of it.
func (r *Router) envelope(name string, res *Result) *Envelope {
	red := r.cfg.Redactor
	res.Output, res.Reason, res.Diff = red.Redact(res.Output), red.Redact(res.Reason), red.Redact(res.Diff)
	env := &Envelope{Tool: name, Status: res.Status, Reason: res.Reason, ExitCode: res.ExitCode, Rung: res.Rung, LimitHit: res.LimitHit, result: res, redactor: red}
	if res.Rule != nil {
		env.Rule, env.Layer, env.File = res.Rule.Rule, res.Rule.Layer.String(), res.Rule.File
	}
	env.Preview, env.ElidedChars = preview(res.Output, r.cfg.PreviewChars)
	env.Chars = len([]rune(res.Output))
	if env.ElidedChars > 0 && r.cfg.Results != nil {
		if id, err := r.cfg.Results.Put(res.Output); err == nil {
			env.ResultID = id
		} else {
			env.Preview += "\n[rein: the whole result could not be kept: " + err.Error() + "]"
		}
	}
	return env
}

// records are what the trace keeps of a call besides its step: the
// policy decisions, the sandbox's events, the edits, the handles and their
// output, and an audit entry; the store links them to the step.
func (r *Router) records(spec *Spec, res *Result) []trace.Record {
	var out []trace.Record
	now := time.Now()
	for _, e := range res.events {
		ev := trace.PolicyEvent{RunID: r.runID, Kind: e.kind, Decision: e.verdict.Decision.String(), Reason: e.verdict.Reason, At: now}
		if a := e.verdict.Rule; a != nil {
			ev.Rule, ev.Layer, ev.File = a.Rule, a.Layer.String(), a.File
		}
		out = append(out, ev)
	}
	if res.Status == Denied && len(res.events) == 0 {
		// A refusal by a gate or the grammar, with no policy verdict.
		out = append(out, trace.PolicyEvent{RunID: r.runID, Kind: "refusal", Decision: "deny", Reason: res.Reason, At: now})
	}
	if res.Rung != "" {
		detail, _ := json.Marshal(map[string]any{"rung": res.Rung, "limits": res.Limits, "limit_hit": res.LimitHit, "poisoned": res.Poisoned})
		out = append(out, trace.SandboxEvent{RunID: r.runID, Kind: "run", Detail: string(detail), At: now})
	}
	if res.Poisoned != "" {
		out = append(out, trace.SandboxEvent{RunID: r.runID, Kind: "poisoned", Detail: mustJSON(map[string]string{"reason": res.Poisoned}), At: now})
	}
	if res.Diff != "" {
		out = append(out, trace.Edit{RunID: r.runID, Path: strings.Join(res.Changed, ", "), Diff: res.Diff, At: now})
	}
	return append(out, res.records...)
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
