package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Provider is a model behind one streaming call: it takes the whole
// prompt of a step and returns the model's whole response once the stream
// has ended. It never retries; the loop does, so that the budget and the
// trace see every attempt.
type Provider interface {
	// Name names the provider ("openai", "ollama", ...) and Model the
	// model it calls.
	Name() string
	Model() string
	Stream(ctx context.Context, req Request) (*Response, error)
}

// Request is one step's prompt.
type Request struct {
	System string `json:"system"`
	// SystemTail is the part of the system block that changes in a run
	// (the approved plan, the todo list), after System: a provider that
	// caches prompts keeps its breakpoint before it, so that a change to
	// the list does not cost the cache of everything after System.
	SystemTail string    `json:"system_tail,omitempty"`
	Messages   []Message `json:"messages"`
	Tools      []ToolDef `json:"tools"`
	MaxTokens  int       `json:"max_tokens"`
}

// SystemText is the whole system block: System, then SystemTail.
func (r Request) SystemText() string { return r.System + r.SystemTail }

// ToolDef is a tool as the model is told of it.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// maxCount bounds one token count a server reports: a count past it, or
// below zero, is a server's error, and taken at the bound (so a budget
// still ends the run rather than wrapping around or going unspent).
const maxCount = 1 << 40

// count is a reported token count, kept within [0, maxCount].
func count(n int64) int64 { return min(max(n, 0), maxCount) }

// maxResponseBytes bounds what one response may stream before it is cut
// as at the cap: many times the cap's tokens, so that an honest response
// never meets it and a hostile one cannot fill memory.
func maxResponseBytes(maxTokens int) int {
	if maxTokens <= 0 {
		maxTokens = DefaultResponseMaxTokens
	}
	return max(maxTokens*4*16, 1<<20)
}

// ProviderError is a failed call, classed.
type ProviderError struct {
	Class FailureClass
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is what the server asked the client to wait, or zero.
	RetryAfter time.Duration
	Err        error
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider: %s (HTTP %d): %v", e.Class, e.Status, e.Err)
	}
	return fmt.Sprintf("provider: %s: %v", e.Class, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// classOf is the class of an error a provider returned; one that is not a
// ProviderError is a transport failure, or a timeout when a deadline
// ended it.
func classOf(err error) (FailureClass, time.Duration) {
	var pe *ProviderError
	switch {
	case errors.As(err, &pe):
		return pe.Class, pe.RetryAfter
	case errors.Is(err, context.DeadlineExceeded):
		return FailTimeout, 0
	}
	return FailTransport, 0
}

// classOfStatus classes an HTTP status as the vendors use them.
func classOfStatus(status int) FailureClass {
	switch {
	case status == 401 || status == 403:
		return FailAuth
	case status == 408:
		return FailTimeout
	case status == 429:
		return FailRateLimited
	case status == 529 || status == 503:
		return FailOverloaded
	case status >= 500:
		return FailServer
	}
	return FailRequest
}

// httpFailure is a failure the server answered with a status: classed by
// it, with what the server asked the client to wait.
func httpFailure(status int, message string, resp *http.Response) *ProviderError {
	if message == "" {
		message = http.StatusText(status)
	}
	pe := &ProviderError{Class: classOfStatus(status), Status: status, Err: errors.New(message)}
	if resp != nil {
		pe.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return pe
}

// transportFailure classes a failure with no answer: the caller's own
// cancellation as it is, a deadline as a timeout, anything else as the
// transport's.
func transportFailure(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ProviderError{Class: FailTimeout, Err: err}
	case errors.Is(err, context.Canceled):
		return err
	}
	return &ProviderError{Class: FailTransport, Err: err}
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var secs float64
	if _, err := fmt.Sscanf(v, "%g", &secs); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// DefaultIdleTimeout is how long a stream may send nothing before the call
// is ended as a timeout (and retried): a server that stops mid-response.
const DefaultIdleTimeout = 2 * time.Minute

// errIdle is the cause of a call ended for want of bytes.
var errIdle = errors.New("the stream sent nothing for too long")

// idleWatch is ctx ended when touch is not called for d, with a stop to
// release it.
func idleWatch(ctx context.Context, d time.Duration) (context.Context, func(), func()) {
	if d <= 0 {
		d = DefaultIdleTimeout
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(errIdle) })
	return ctx, func() { t.Reset(d) }, func() { t.Stop(); cancel(nil) }
}

// idleError is err, or the timeout it stands for when the watch ended
// the call.
func idleError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errIdle) {
		return &ProviderError{Class: FailTimeout, Err: errIdle}
	}
	return err
}

// eventStream is a vendor SDK's stream of server-sent events (both SDKs'
// ssestream.Stream).
type eventStream[T any] interface {
	Next() bool
	Current() T
	Err() error
	Close() error
}

// readStream reads one call's stream to its end, the rule every wire
// family shares: the stream opened under a watch that ends it when it
// sends nothing for idle; the bytes each event adds (size) counted against
// the response's bound (maxResponseBytes of maxTokens), a stream that
// passes the bound stopped at once (cut), before the event that passed it
// is taken; every other event handed to take, whose error ends the call;
// the time to the first event kept; an error of the stream classed by
// classify, or a timeout when the watch ended it.
func readStream[T any](ctx context.Context, idle time.Duration, maxTokens int, open func(context.Context) eventStream[T], classify func(error) error,
	size func(T) int, take func(T) error) (first time.Duration, cut bool, err error) {
	start := time.Now()
	ctx, touch, stop := idleWatch(ctx, idle)
	defer stop()
	stream := open(ctx)
	defer stream.Close()
	limit, n := maxResponseBytes(maxTokens), 0
	for stream.Next() {
		touch()
		if first == 0 {
			first = time.Since(start)
		}
		ev := stream.Current()
		if n += size(ev); n > limit {
			return first, true, nil
		}
		if err := take(ev); err != nil {
			return first, false, err
		}
	}
	if err := stream.Err(); err != nil {
		return first, false, idleError(ctx, classify(err))
	}
	return first, false, nil
}
