package loop

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Contract is what a run is asked to do, as plain data, stored with the
// run.
type Contract struct {
	// Goal is what to do, in words.
	Goal string `json:"goal"`
	// Workspace is the root the run works in.
	Workspace string `json:"workspace"`
	// Verify is the gate; nil is none, and a run without one is never a
	// success (it ends finished).
	Verify *Gate `json:"verify,omitempty"`
	// Protect are globs the run may not change (the gate's own files,
	// such as **/*_test.go), relative to the workspace.
	Protect []string `json:"protect,omitempty"`
	Budget  Budget   `json:"budget"`
	// ResponseMaxTokens caps one model response; zero is 16,384.
	ResponseMaxTokens int `json:"response_max_tokens,omitempty"`
	// GateRetries is how many failed claims of done end the run
	// gate_failed; zero is 3.
	GateRetries int `json:"gate_retries,omitempty"`
	// Instructions are the repository guidance files read into the
	// system block; nil is AGENTS.md.
	Instructions []string `json:"instructions,omitempty"`
	// Prices are the provider's, for the cost budget and the outcome.
	Prices Prices `json:"prices,omitempty"`
	// ContextTokens is the model's window; zero is 128,000, and less than
	// MinContextTokens is refused. When the transcript passes 70% of it,
	// the oldest steps are folded into a summary the model writes (or,
	// where that fails, the oldest observations are set aside).
	ContextTokens int `json:"context_tokens,omitempty"`
	// Recovery says what a resumed run does with a call that was running
	// when its driver died and that is not safe to repeat (a command, a
	// write, an MCP call): RecoverTell (the default) tells the model it
	// was interrupted and shows it the workspace's change since; RecoverWait
	// ends the run awaiting_recovery for an operator's decision.
	Recovery string `json:"recovery,omitempty"`
	// OutputSchema, when set, is a JSON Schema the model's final answer
	// must match: an answer that does not is sent back once with what is
	// wrong, then ends the run invalid_answer. Where a gate also decides,
	// the gate's outcome comes first.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// PlanGate says the model must propose a plan (PlanTool) and have it
	// approved before it may write or run anything: until then the
	// plan-gate layer denies every call of a tool that is not read-only.
	PlanGate bool `json:"plan_gate,omitempty"`
	// Web puts the web tools on the run's surface: fetch_url, and
	// search_internet when a search backend is configured. Each host is
	// decided by the policy's net rules.
	Web bool `json:"web,omitempty"`
	// Commit says a run that succeeds commits what it changed on a branch
	// of its own, rein/<run id>, whose parent is the commit it started
	// from; the branch the workspace is on does not move.
	Commit bool `json:"commit,omitempty"`
	// Config is how the run was started, kept with it (in its checkpoint,
	// under the trace's keyed chain) so that a resumption keeps it: a
	// resumption may narrow it, never widen it. It never holds a key.
	Config *RunConfig `json:"config,omitempty"`
	// Conversation names the conversation and the turn the run is (one
	// run a turn, its transcript going on from the turn before), or nil
	// for a run of its own.
	Conversation *ConversationRef `json:"conversation,omitempty"`
	// Children are the limits of the run's tree of child runs
	// (spawn_agent); nil is the defaults (ChildLimits). A child run has
	// its parent's.
	Children *ChildLimits `json:"children,omitempty"`
	// Child, for a child run, is what it is to its parent; nil for a root.
	Child *ChildRef `json:"child,omitempty"`
}

// ConversationRef is a conversation and one of its turns.
type ConversationRef struct {
	ID   string `json:"id"`
	Turn int    `json:"turn"`
}

// RunConfig is what a run was started with besides its contract: its
// provider (the key's variable, never the key), the mode it ran in, the
// rules its command line added, and who answered its asks.
type RunConfig struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	KeyEnv   string `json:"key_env,omitempty"`
	Family   string `json:"family,omitempty"`
	// Mode and Network are the run's effective mode and network, the
	// policy files' and the flags' together.
	Mode    string `json:"mode,omitempty"`
	Network string `json:"network,omitempty"`
	// Allow, Ask and Deny are the exec rules of the command line's flags
	// layer; ReadPaths its --read-path directories.
	Allow     []string `json:"allow,omitempty"`
	Ask       []string `json:"ask,omitempty"`
	Deny      []string `json:"deny,omitempty"`
	ReadPaths []string `json:"read_paths,omitempty"`
	// Approve is who answered asks: terminal, defer, all or none.
	Approve string `json:"approve,omitempty"`
}

// The recovery choices of a contract.
const (
	RecoverTell = "tell"
	RecoverWait = "wait"
)

// Gate is the command whose passing ends a run succeeded: a line of
// rein's grammar, with the exit status it must end with.
type Gate struct {
	Line       string        `json:"line"`
	ExpectExit int           `json:"expect_exit"`
	Timeout    time.Duration `json:"timeout,omitempty"`
}

// Budget bounds a run.
type Budget struct {
	Steps     int           `json:"steps"`
	Tokens    int64         `json:"tokens"`
	WallClock time.Duration `json:"wall_clock"`
	// Cost, when set, bounds what the tokens cost by Prices (zero: no
	// cost budget).
	Cost float64 `json:"cost,omitempty"`
}

// Prices are what the user pays a provider, per million tokens: a table
// the user owns. A run's cost is derived from them and its tokens; it is
// never stored as a fact.
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Cost is what u costs at p. Cached input is priced at its own rate where
// one is set, else as input.
func (p Prices) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := u.Input - u.CacheRead - u.CacheWrite
	if plain < 0 {
		plain = u.Input
	}
	return (float64(plain)*p.Input + float64(u.CacheRead)*read + float64(u.CacheWrite)*write + float64(u.Output)*p.Output) / 1e6
}

// The defaults of the contract.
const (
	DefaultSteps             = 100
	DefaultTokens            = 2_000_000
	DefaultWallClock         = 30 * time.Minute
	DefaultResponseMaxTokens = 16_384
	DefaultGateRetries       = 3
	DefaultContextTokens     = 128_000
	MinContextTokens         = 1024
)

// WithDefaults fills what the contract leaves zero and refuses what
// cannot run, naming the field.
func (c Contract) WithDefaults() (Contract, error) {
	if c.Goal == "" {
		return c, fmt.Errorf("agent: contract: goal is empty")
	}
	if c.Workspace == "" {
		return c, fmt.Errorf("agent: contract: workspace is empty")
	}
	switch {
	case c.Budget.Steps < 0 || c.Budget.Tokens < 0 || c.Budget.WallClock < 0 || c.Budget.Cost < 0 || c.ResponseMaxTokens < 0 || c.GateRetries < 0 || c.ContextTokens < 0:
		return c, fmt.Errorf("agent: contract: a budget is negative")
	}
	if c.Budget.Steps == 0 {
		c.Budget.Steps = DefaultSteps
	}
	if c.Budget.Tokens == 0 {
		c.Budget.Tokens = DefaultTokens
	}
	if c.Budget.WallClock == 0 {
		c.Budget.WallClock = DefaultWallClock
	}
	if c.ResponseMaxTokens == 0 {
		c.ResponseMaxTokens = DefaultResponseMaxTokens
	}
	if c.GateRetries == 0 {
		c.GateRetries = DefaultGateRetries
	}
	if c.ContextTokens == 0 {
		c.ContextTokens = DefaultContextTokens
	}
	if c.ContextTokens < MinContextTokens {
		return c, fmt.Errorf("agent: contract: a context window of %d tokens is less than %d, which holds no step", c.ContextTokens, MinContextTokens)
	}
	if c.Instructions == nil {
		c.Instructions = []string{"AGENTS.md"}
	}
	for _, v := range []float64{c.Budget.Cost, c.Prices.Input, c.Prices.Output, c.Prices.CacheRead, c.Prices.CacheWrite} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return c, fmt.Errorf("agent: contract: a cost or a price is %v", v)
		}
	}
	if c.Budget.Cost > 0 && c.Prices == (Prices{}) {
		return c, fmt.Errorf("agent: contract: a cost budget needs the provider's prices")
	}
	switch c.Recovery {
	case "":
		c.Recovery = RecoverTell
	case RecoverTell, RecoverWait:
	default:
		return c, fmt.Errorf("agent: contract: recovery %q is neither %q nor %q", c.Recovery, RecoverTell, RecoverWait)
	}
	if c.Verify != nil && c.Verify.Line == "" {
		return c, fmt.Errorf("agent: contract: verify has no command")
	}
	if err := c.checkChild(); err != nil {
		return c, err
	}
	return c, nil
}

// Kind is how a run ended.
type Kind string

// The outcomes of the spec, with rein run's exit status.
const (
	Succeeded         Kind = "succeeded"
	Finished          Kind = "finished"
	GateFailed        Kind = "gate_failed"
	Cancelled         Kind = "cancelled"
	RefusedRepeatedly Kind = "refused_repeatedly"
	Stalled           Kind = "stalled"
	BudgetExhausted   Kind = "budget_exhausted"
	ProviderFailed    Kind = "provider_failed"
	// InvalidAnswer: the final answer did not match the contract's
	// output schema after it was sent back once.
	InvalidAnswer Kind = "invalid_answer"
	// AwaitingApproval and AwaitingRecovery end the process, not the run:
	// it waits for an operator's answer (rein approve), then resumes.
	AwaitingApproval Kind = "awaiting_approval"
	AwaitingRecovery Kind = "awaiting_recovery"
	// AwaitingAnswer and AwaitingPlan end the process too: the model's
	// question waits for rein answer, its plan for rein approve.
	AwaitingAnswer Kind = "awaiting_answer"
	AwaitingPlan   Kind = "awaiting_plan"
)

// Committed is the commit of a run's changes: its branch and hash and
// the paths it holds, or Error, why none was made.
type Committed struct {
	Branch string   `json:"branch,omitempty"`
	Hash   string   `json:"hash,omitempty"`
	Paths  []string `json:"paths,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// GitStart is the repository as a run with Contract.Commit began: the
// commit it started from, its object format, and the paths that differed
// from that commit then (each as "MODE HASH", "" for a path gone), which
// the run's commit leaves out unless the run changed them again.
type GitStart struct {
	Commit string            `json:"commit"`
	Format string            `json:"format"`
	Dirty  map[string]string `json:"dirty,omitempty"`
}

// ExitCode is the status rein run exits with for the outcome.
func (k Kind) ExitCode() int {
	switch k {
	case Succeeded, Finished:
		return 0
	case GateFailed:
		return 1
	case BudgetExhausted:
		return 3
	case Stalled:
		return 4
	case RefusedRepeatedly:
		return 5
	case AwaitingApproval, AwaitingRecovery, AwaitingAnswer, AwaitingPlan:
		return 6
	case ProviderFailed:
		return 7
	case InvalidAnswer:
		return 8
	case Cancelled:
		return 130
	}
	return 1
}

// Outcome is how a run ended, with what it spent.
type Outcome struct {
	Run    string `json:"run"`
	Kind   Kind   `json:"outcome"`
	Reason string `json:"reason"`
	Steps  int    `json:"steps"`
	Tokens Usage  `json:"tokens"`
	// Cost is what the tokens cost by the contract's prices (zero without
	// them).
	Cost float64 `json:"cost,omitempty"`
	// Gate is the last gate attempt, if there was one.
	Gate *GateAttempt `json:"gate,omitempty"`
	// Rung is the sandbox rung the run's commands ran on.
	Rung string `json:"rung,omitempty"`
	// Active is the time the run was driven (what the wall-clock budget
	// counts); Elapsed the time since it started, downtime between a
	// death and a resumption included.
	Active  time.Duration `json:"active_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Waiting is the decision an awaiting run waits for.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Answer is the model's final answer as JSON, when the contract has
	// an output schema and the answer matches it.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Config, when the run made or changed any, is the configuration
	// your tools may read that the run left in the workspace: files
	// whose name starts with "." or that lie in a directory whose name
	// does (not .git's, not the caches workspace.CacheNames has), and
	// the names of workspace.HostConfig.
	Config *ConfigReport `json:"config_changed,omitempty"`
	// Commit is the commit of the run's changes a succeeded run with
	// Contract.Commit made, or why it made none.
	Commit *Committed `json:"commit,omitempty"`
	// Children is what the run's child runs, and theirs, spent (counted
	// in its budget besides Steps and Tokens), when it had any.
	Children *Spent `json:"children,omitempty"`
}

// ConfigReport is the count and the first paths of the configuration a
// run made or changed (what workspace.ChangedConfig found).
type ConfigReport struct {
	Count int      `json:"count"`
	Paths []string `json:"paths"`
	// Truncated says the workspace had more entries than the walk looks
	// at: Count is a floor.
	Truncated bool `json:"truncated,omitempty"`
}

// GateStatus is how one gate attempt ended.
type GateStatus string

// The gate statuses.
const (
	GatePassed   GateStatus = "passed"
	GateFailedSt GateStatus = "failed"
	GateErrored  GateStatus = "errored"
	GateTampered GateStatus = "tampered"
	// GateTestsNotRun: the exit status passed, but a protected test that
	// ran in the baseline did not run and pass (skipped, missing, cut
	// short, or its file no longer compiled in).
	GateTestsNotRun GateStatus = "tests_not_run"
)

// The evidence an attempt was judged by.
const (
	// EvidenceExitStatus: the runner reported nothing rein can read, and
	// the attempt was judged by its exit status alone.
	EvidenceExitStatus = "exit status"
	// EvidenceGoTestJSON: go test's own report (-json, added by rein to a
	// go test gate it recognises).
	EvidenceGoTestJSON = "go test -json"
)

// GateTests is what the test runner reported of one attempt's tests:
// top-level tests, a subtest counting under its parent.
type GateTests struct {
	Run     int `json:"run"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// NotRun are the protected tests (import path and name) that ran in
	// the baseline and did not run and pass in this attempt.
	NotRun []string `json:"not_run"`
}

// GateAttempt is one run of the gate.
type GateAttempt struct {
	Status   GateStatus `json:"status"`
	ExitCode *int       `json:"exit_code,omitempty"`
	// Output is what the gate printed (bounded), for the model.
	Output string `json:"-"`
	// Tampered are the protected paths changed since the run began.
	Tampered   []string `json:"tampered,omitempty"`
	ResultID   string   `json:"result_id,omitempty"`
	DurationMS float64  `json:"duration_ms"`
	// Evidence is what the attempt was judged by: EvidenceGoTestJSON, or
	// EvidenceExitStatus when its runner reported nothing rein can read.
	Evidence string `json:"evidence,omitempty"`
	// Tests are the runner's counts, with Evidence other than the exit
	// status.
	Tests *GateTests `json:"tests,omitempty"`
	// Report is the baseline's report of each test (an evidence.Report,
	// as JSON), kept with the run's state so that every later attempt is
	// compared with it. The loop keeps it and never reads it.
	Report json.RawMessage `json:"report,omitempty"`
	// Declared are the tests the protected files declared as the run
	// began (evidence.Test values, as JSON), kept with the baseline.
	Declared json.RawMessage `json:"declared,omitempty"`
}
