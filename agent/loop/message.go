package loop

import (
	"math"
	"time"
)

// Role is who speaks a message.
type Role string

// The roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the transcript. An assistant message may carry
// tool calls; a tool message answers one, by its id.
type Message struct {
	Role      Role       `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one call a response asks for. Args is the arguments' text
// as the model wrote it, which may not be JSON.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// Finish says why a response ended.
type Finish string

// The finish reasons.
const (
	FinishStop      Finish = "stop"
	FinishToolCalls Finish = "tool_calls"
	// FinishLength: cut at the response cap; its unfinished tool calls
	// are never run.
	FinishLength Finish = "length"
	FinishOther  Finish = "other"
)

// Usage counts a response's tokens.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Add is u and v counted together, without wrapping.
func (u Usage) Add(v Usage) Usage {
	return Usage{Sat(u.Input, v.Input), Sat(u.Output, v.Output), Sat(u.CacheRead, v.CacheRead), Sat(u.CacheWrite, v.CacheWrite)}
}

// Sat adds two counts without wrapping.
func Sat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Response is a whole response.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls"`
	Finish    Finish     `json:"finish"`
	Usage     Usage      `json:"usage"`
	// FirstToken is how long the first byte of the stream took.
	FirstToken time.Duration `json:"-"`
}

// FailureClass sorts a provider's failures by what the loop does about
// them.
type FailureClass string

// The failure classes of the spec.
const (
	FailTransport       FailureClass = "transport"
	FailTimeout         FailureClass = "timeout"
	FailRateLimited     FailureClass = "rate_limited"
	FailOverloaded      FailureClass = "overloaded"
	FailServer          FailureClass = "server"
	FailMalformed       FailureClass = "malformed"
	FailContextOverflow FailureClass = "context_overflow"
	FailAuth            FailureClass = "auth"
	FailRequest         FailureClass = "request"
)

// Retried reports whether the loop tries a failure of the class again.
func (c FailureClass) Retried() bool {
	switch c {
	case FailTransport, FailTimeout, FailRateLimited, FailOverloaded, FailServer:
		return true
	}
	return false
}
