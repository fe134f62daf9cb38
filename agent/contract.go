package agent

import (
	"time"

	"github.com/reinhq/rein/agent/loop"
)

// The loop's types, kept under their names here so that code written
// against agent compiles as it did: the step function and its data live
// in agent/loop, which any driver imports.
type (
	Contract      = loop.Contract
	RunConfig     = loop.RunConfig
	Gate          = loop.Gate
	Budget        = loop.Budget
	Prices        = loop.Prices
	Kind          = loop.Kind
	Outcome       = loop.Outcome
	ConfigReport  = loop.ConfigReport
	GateStatus    = loop.GateStatus
	GateTests     = loop.GateTests
	GateAttempt   = loop.GateAttempt
	Role          = loop.Role
	Message       = loop.Message
	ToolCall      = loop.ToolCall
	Finish        = loop.Finish
	Usage         = loop.Usage
	Response      = loop.Response
	FailureClass  = loop.FailureClass
	State         = loop.State
	Effect        = loop.Effect
	CallModel     = loop.CallModel
	RunTools      = loop.RunTools
	RunGate       = loop.RunGate
	AwaitDecision = loop.AwaitDecision
	Waiting       = loop.Waiting
	Wait          = loop.Wait
	End           = loop.End
	ToolResult    = loop.ToolResult
	// ConversationRef is a conversation and one of its turns.
	ConversationRef = loop.ConversationRef
	// ChildLimits bound a run tree; ChildRef is what a child run is to
	// its parent; Spent is what a run's children spent.
	ChildLimits = loop.ChildLimits
	ChildRef    = loop.ChildRef
	Spent       = loop.Spent
)

// The recovery choices of a contract.
const (
	RecoverTell = loop.RecoverTell
	RecoverWait = loop.RecoverWait
)

// The defaults of the contract.
const (
	DefaultSteps             = loop.DefaultSteps
	DefaultTokens            = loop.DefaultTokens
	DefaultWallClock         = loop.DefaultWallClock
	DefaultResponseMaxTokens = loop.DefaultResponseMaxTokens
	DefaultGateRetries       = loop.DefaultGateRetries
	DefaultContextTokens     = loop.DefaultContextTokens
	// The limits of a run tree (ChildLimits).
	DefaultChildDepth       = loop.DefaultChildDepth
	DefaultChildConcurrency = loop.DefaultChildConcurrency
	DefaultChildren         = loop.DefaultChildren
	// maxGuidanceBytes bounds what one guidance file adds to the prompt.
	maxGuidanceBytes = 32 << 10
)

// The outcomes of the spec.
const (
	Succeeded         = loop.Succeeded
	Finished          = loop.Finished
	GateFailed        = loop.GateFailed
	Cancelled         = loop.Cancelled
	RefusedRepeatedly = loop.RefusedRepeatedly
	Stalled           = loop.Stalled
	BudgetExhausted   = loop.BudgetExhausted
	ProviderFailed    = loop.ProviderFailed
	InvalidAnswer     = loop.InvalidAnswer
	AwaitingApproval  = loop.AwaitingApproval
	AwaitingRecovery  = loop.AwaitingRecovery
)

// The gate statuses, and the evidence an attempt was judged by.
const (
	GatePassed         = loop.GatePassed
	GateFailedSt       = loop.GateFailedSt
	GateErrored        = loop.GateErrored
	GateTampered       = loop.GateTampered
	GateTestsNotRun    = loop.GateTestsNotRun
	EvidenceExitStatus = loop.EvidenceExitStatus
	EvidenceGoTestJSON = loop.EvidenceGoTestJSON
)

// The roles and the finish reasons.
const (
	RoleUser        = loop.RoleUser
	RoleAssistant   = loop.RoleAssistant
	RoleTool        = loop.RoleTool
	FinishStop      = loop.FinishStop
	FinishToolCalls = loop.FinishToolCalls
	FinishLength    = loop.FinishLength
	FinishOther     = loop.FinishOther
)

// The failure classes of the spec.
const (
	FailTransport       = loop.FailTransport
	FailTimeout         = loop.FailTimeout
	FailRateLimited     = loop.FailRateLimited
	FailOverloaded      = loop.FailOverloaded
	FailServer          = loop.FailServer
	FailMalformed       = loop.FailMalformed
	FailContextOverflow = loop.FailContextOverflow
	FailAuth            = loop.FailAuth
	FailRequest         = loop.FailRequest
)

// NewState starts a run's state for contract c (already defaulted) at
// now, with the goal as the first message, as loop.New does.
func NewState(c Contract, now time.Time) *State {
	return loop.New(loop.Start{Contract: c, StartedAt: now}, now)
}
