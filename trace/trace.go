// Package trace owns the record of what rein did: runs, the steps of a run
// (each tool call and its observation), every policy refusal and approver
// decision with its rule and layer, background handles and every byte read
// from them, sandbox events, every write as a diff, an audit of
// metadata, and what makes an agent run durable: its checkpoints
// (committed with a step's records in one transaction), their large parts
// by content address, the decisions a run waits for, and the lease of its
// one driver (a generation every commit is fenced by). A Store keeps them,
// and a Durable store also the durable runs' parts; the library sees a
// store only through these interfaces. Every record is linked in a hash
// chain keyed with the user's Key (HMAC-SHA256, Link), so that an edited
// or deleted row is detected even when whoever changed it linked the
// chain again, and a Head kept elsewhere detects the newest rows removed.
// Every text passes the Redactor before it is persisted.
//
// trace imports nothing of rein, and no database: the SQLite store is
// package trace/sqlite, so that a program with a store of its own links
// no SQLite. Callers hand it plain records, and it must not learn how a
// decision was made or a command confined.
package trace

import (
	"context"
	"time"
)

// Run is one session of tool calls: a `rein tool` invocation, an MCP
// session.
type Run struct {
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
	Workspace string    `json:"workspace"`
	Surface   string    `json:"surface"`
	Mode      string    `json:"mode"`
	// Source says what started the run: "cli", "mcp", "hook".
	Source string `json:"source"`
	// PID is the process that ran it: a handle of a run whose process is
	// gone is orphaned.
	PID int `json:"pid"`
}

// RunEnd is how a run ended.
type RunEnd struct {
	RunID   string    `json:"run_id"`
	EndedAt time.Time `json:"ended_at"`
	Status  string    `json:"status"`
}

// Step is one tool call and its observation.
type Step struct {
	ID       int64  `json:"id"`
	RunID    string `json:"run_id"`
	Index    int    `json:"index"`
	Tool     string `json:"tool"`
	Args     string `json:"args"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	ResultID string `json:"result_id,omitempty"`
	// Observation is what the model was shown: the envelope.
	Observation string    `json:"observation"`
	StartedAt   time.Time `json:"started_at"`
	DurationMS  float64   `json:"duration_ms"`
}

// PolicyEvent is a refusal, or an approver's answer, with its attribution.
type PolicyEvent struct {
	ID     int64  `json:"id"`
	RunID  string `json:"run_id"`
	StepID int64  `json:"step_id"`
	// Kind is "refusal" (the policy, the grammar or a gate said no) or
	// "approval" (the approver answered an ask).
	Kind     string    `json:"kind"`
	Decision string    `json:"decision"`
	Rule     string    `json:"rule,omitempty"`
	Layer    string    `json:"layer,omitempty"`
	File     string    `json:"file,omitempty"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// Handle is a background process started by shell_start.
type Handle struct {
	ID        int64     `json:"id"`
	RunID     string    `json:"run_id"`
	StepID    int64     `json:"step_id"`
	Handle    string    `json:"handle"`
	Line      string    `json:"line"`
	Rung      string    `json:"rung"`
	Capture   string    `json:"capture"`
	StartedAt time.Time `json:"started_at"`
}

// HandleOutput is what one poll read from a handle: the bytes shown, from
// offset Offset of the capture, after Skipped bytes that were not shown.
type HandleOutput struct {
	ID      int64     `json:"id"`
	RunID   string    `json:"run_id"`
	Handle  string    `json:"handle"`
	Offset  int64     `json:"offset"`
	Skipped int64     `json:"skipped"`
	Data    string    `json:"data"`
	At      time.Time `json:"at"`
}

// SandboxEvent is something the execution layer did: the rung taken, a
// preflight, poisoning, the limits applied, a handle's end.
type SandboxEvent struct {
	ID     int64  `json:"id"`
	RunID  string `json:"run_id"`
	StepID int64  `json:"step_id"`
	Kind   string `json:"kind"`
	// Detail is a JSON object.
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// KindConfigChanged is the sandbox event, of no step, that records the
// configuration a run or a launched session made or changed in its
// workspace (workspace.ConfigReport, as JSON).
const KindConfigChanged = "config_changed"

// Edit is one write, as a diff.
type Edit struct {
	ID     int64     `json:"id"`
	RunID  string    `json:"run_id"`
	StepID int64     `json:"step_id"`
	Path   string    `json:"path"`
	Diff   string    `json:"diff"`
	At     time.Time `json:"at"`
}

// Audit is metadata only: who ran what, where, never content.
type Audit struct {
	ID    int64  `json:"id"`
	RunID string `json:"run_id"`
	Kind  string `json:"kind"`
	// Meta is a JSON object.
	Meta string    `json:"meta"`
	At   time.Time `json:"at"`
}

// ProviderCall is one attempt of a model call of an agent run, with the
// whole request and response (or the failure), so that the run can be
// replayed.
type ProviderCall struct {
	ID         int64   `json:"id"`
	RunID      string  `json:"run_id"`
	Step       int     `json:"step"`
	Attempt    int     `json:"attempt"`
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Input      int64   `json:"input_tokens"`
	Output     int64   `json:"output_tokens"`
	CacheRead  int64   `json:"cache_read_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	LatencyMS  float64 `json:"latency_ms"`
	FirstMS    float64 `json:"first_token_ms"`
	Finish     string  `json:"finish"`
	// Failure is the failure's class, "" for a response.
	Failure string `json:"failure"`
	// Request and Response are JSON; Response is "" after a failure, and
	// Error says what failed.
	Request  string    `json:"request"`
	Response string    `json:"response"`
	Error    string    `json:"error"`
	At       time.Time `json:"at"`
	// Purpose is "summary" for a call that folded steps into a summary
	// (Summary), "" for a step's call.
	Purpose string `json:"purpose,omitempty"`
}

// StepTime is where one step of an agent run spent its time and its
// tokens: the model's call (in all, and to its first token), the tool
// calls, and rein's own part (deciding, journalling, committing: the
// step's wall time less the other two), with the input tokens the step's
// call sent and the part of them read from the provider's prompt cache
// (CacheRead over Input is the step's cache-hit share).
type StepTime struct {
	ID         int64     `json:"id"`
	RunID      string    `json:"run_id"`
	Step       int       `json:"step"`
	ModelMS    float64   `json:"model_ms"`
	FirstMS    float64   `json:"first_token_ms"`
	ToolsMS    float64   `json:"tools_ms"`
	ReinMS     float64   `json:"rein_ms"`
	Input      int64     `json:"input_tokens"`
	CacheRead  int64     `json:"cache_read_tokens"`
	CacheWrite int64     `json:"cache_write_tokens"`
	At         time.Time `json:"at"`
}

// Summary is a fold of an agent run's oldest steps into one summary the
// model wrote: the steps it covers (FirstStep to LastStep), the messages
// it replaced, its text and size, what its call cost, and the step it was
// made before; Request is the operator's request it answered (rein run
// fold), if one did.
type Summary struct {
	ID        int64     `json:"id"`
	RunID     string    `json:"run_id"`
	Step      int       `json:"step"`
	FirstStep int       `json:"first_step"`
	LastStep  int       `json:"last_step"`
	Messages  int       `json:"messages"`
	Chars     int       `json:"chars"`
	Input     int64     `json:"input_tokens"`
	Output    int64     `json:"output_tokens"`
	Request   string    `json:"request,omitempty"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
}

// GateAttempt is one run of an agent run's gate.
type GateAttempt struct {
	ID       int64  `json:"id"`
	RunID    string `json:"run_id"`
	Step     int    `json:"step"`
	Line     string `json:"line"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	// Tampered is a JSON list of the protected paths changed.
	Tampered   string    `json:"tampered"`
	ResultID   string    `json:"result_id"`
	DurationMS float64   `json:"duration_ms"`
	At         time.Time `json:"at"`
	// Evidence is what the attempt was judged by ("go test -json", or
	// "exit status" when its runner reported nothing rein can read), and
	// Tests the runner's counts as JSON (run, passed, failed, skipped,
	// not_run); both empty in a trace written before rein read them.
	Evidence string `json:"evidence,omitempty"`
	Tests    string `json:"tests,omitempty"`
}

// ConversationTurn is one turn of a conversation (a chain of agent runs
// over one transcript, one run a turn): turn N is the run whose final
// transcript ends it. Turn 0 is the conversation itself, with no run:
// where it branched from (From, at its turn FromTurn; "" for a new
// conversation) and how its runs are configured (Config, JSON). A turn
// is appended once (the store refuses a second row for the same
// conversation and turn): two senders cannot both extend one head.
type ConversationTurn struct {
	ID       int64     `json:"id"`
	Conv     string    `json:"conv"`
	Turn     int       `json:"turn"`
	RunID    string    `json:"run_id"`
	From     string    `json:"from_conv"`
	FromTurn int       `json:"from_turn"`
	Config   string    `json:"config"`
	At       time.Time `json:"at"`
}

// Record is one of the record types above.
type Record interface {
	table() string
}

func (Run) table() string              { return "runs" }
func (RunEnd) table() string           { return "run_ends" }
func (Step) table() string             { return "steps" }
func (PolicyEvent) table() string      { return "policy_events" }
func (Handle) table() string           { return "process_handles" }
func (HandleOutput) table() string     { return "handle_output" }
func (SandboxEvent) table() string     { return "sandbox_events" }
func (Edit) table() string             { return "edits" }
func (Audit) table() string            { return "audit" }
func (ProviderCall) table() string     { return "provider_calls" }
func (GateAttempt) table() string      { return "gate_attempts" }
func (Summary) table() string          { return "summaries" }
func (StepTime) table() string         { return "step_times" }
func (ConversationTurn) table() string { return "conversation_turns" }

// RunSummary is a run as listed.
type RunSummary struct {
	Run
	EndedAt  *time.Time `json:"ended_at,omitempty"`
	Status   string     `json:"status,omitempty"`
	Steps    int        `json:"steps"`
	Refusals int        `json:"refusals"`
	Handles  int        `json:"handles"`
}

// Table names the kind of a record, the same in every store: the SQLite
// store keeps it in the table of that name and hashes it into the record's
// Link.
func Table(r Record) string { return r.table() }

// Store is what the router and the agent need of a trace: appending
// records, reading back the steps and handles of a run they resume and the
// model calls and gate attempts of one they replay, and closing it. Every
// method is safe for concurrent use. The SQLite store (package
// trace/sqlite) is one, safe also for several processes on one file; an
// embedder with a store of their own implements this and links no SQLite.
type Store interface {
	// Append appends r and returns its id.
	Append(ctx context.Context, r Record) (int64, error)
	// AppendAll appends records in one transaction; a record after a Step
	// whose StepID is zero gets the step's id.
	AppendAll(ctx context.Context, recs ...Record) ([]int64, error)
	// Steps lists a run's steps in order.
	Steps(ctx context.Context, runID string) ([]Step, error)
	// Handles lists a run's background handles.
	Handles(ctx context.Context, runID string) ([]Handle, error)
	// ProviderCalls lists an agent run's model calls, every attempt.
	ProviderCalls(ctx context.Context, runID string) ([]ProviderCall, error)
	// GateAttempts lists an agent run's gate attempts.
	GateAttempts(ctx context.Context, runID string) ([]GateAttempt, error)
	Close() error
}
