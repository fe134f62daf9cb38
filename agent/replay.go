package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/reinhq/rein/trace"
)

// replayProvider answers from a run's recorded model calls, in order, and
// fails on the first request that differs from the one recorded.
type replayProvider struct {
	name, model string
	mu          sync.Mutex
	calls       []trace.ProviderCall
	next        int
	prev        *Request
	// recorded is the run the calls are of; children reads the recorded
	// calls of another run of the same trace (a child's), or is nil.
	recorded string
	children func(ctx context.Context, run string) ([]trace.ProviderCall, error)
}

// ReplayTree is Replay for a run that may have started child runs
// (spawn_agent): each child of the run replayed answers from the calls
// recorded of the child that the recorded run's same call started, read
// with calls (trace.Store.ProviderCalls).
func ReplayTree(recorded []trace.ProviderCall, calls func(ctx context.Context, run string) ([]trace.ProviderCall, error)) Provider {
	p := Replay(recorded).(*replayProvider)
	p.children = calls
	if len(recorded) > 0 {
		p.recorded = recorded[0].RunID
	}
	return p
}

// childProvider is a provider that gives a child run one of its own.
type childProvider interface {
	forChild(ctx context.Context, parent, child string) (Provider, error)
}

// forChild is the replay of the child the recorded run started where the
// run replayed (parent) starts child.
func (r *replayProvider) forChild(ctx context.Context, parent, child string) (Provider, error) {
	if r.children == nil || r.recorded == "" || !strings.HasPrefix(child, parent+".") {
		return nil, fmt.Errorf("replay: no recording of the child runs of %s", parent)
	}
	id := r.recorded + strings.TrimPrefix(child, parent)
	calls, err := r.children(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("replay: the calls of the recorded child %s: %w", id, err)
	}
	return ReplayTree(calls, r.children), nil
}

// Replay is a provider that answers from the recorded calls of a run
// (trace.Store.ProviderCalls), in order: a recorded failure fails again, a
// recorded response is given again, and a request that is not the
// recorded one, byte for byte, fails the run with the first difference
// named.
func Replay(calls []trace.ProviderCall) Provider {
	p := &replayProvider{name: "replay", calls: calls}
	if len(calls) > 0 {
		p.name, p.model = calls[0].Provider, calls[0].Model
	}
	return p
}

func (r *replayProvider) Name() string  { return r.name }
func (r *replayProvider) Model() string { return r.model }

func (r *replayProvider) Stream(_ context.Context, req Request) (*Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next >= len(r.calls) {
		return nil, &ProviderError{Class: FailRequest, Err: fmt.Errorf("replay: the recording has %d calls, and the run makes more", len(r.calls))}
	}
	c := r.calls[r.next]
	r.next++
	var rec recordedRequest
	if err := json.Unmarshal([]byte(c.Request), &rec); err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: fmt.Errorf("replay: call %d's recorded request: %w", r.next, err)}
	}
	whole, err := rec.expand(r.prev)
	if err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: fmt.Errorf("replay: call %d: %w", r.next, err)}
	}
	r.prev = &whole
	recorded, _ := json.Marshal(whole)
	got, err := json.Marshal(req)
	if err != nil {
		return nil, &ProviderError{Class: FailRequest, Err: err}
	}
	// A run's id appears in what the model is shown (a handle, a result
	// id): each run has its own, so both sides name it alike.
	// So does a commit's hash (it holds the time it was made), which a
	// child in a worktree names.
	want, have := commitIDs.ReplaceAllString(runIDs.ReplaceAllString(string(recorded), "RUN"), "COMMIT"), commitIDs.ReplaceAllString(runIDs.ReplaceAllString(string(got), "RUN"), "COMMIT")
	if have != want {
		return nil, &ProviderError{Class: FailRequest, Err: fmt.Errorf("replay: call %d (step %d, attempt %d) differs from the recording: %s", r.next, c.Step, c.Attempt, firstDifference(want, have))}
	}
	if c.Failure != "" {
		return nil, &ProviderError{Class: FailureClass(c.Failure), Err: fmt.Errorf("replayed: %s", c.Error)}
	}
	// The ids and hashes the request names, as the run has them: the
	// recorded response names them as the recording did (a branch of a
	// child run, a commit to merge), and is given them as the run has
	// them.
	names := map[string]string{}
	for _, re := range []*regexp.Regexp{runIDs, commitIDs} {
		old, now := re.FindAllString(string(recorded), -1), re.FindAllString(string(got), -1)
		if len(old) == len(now) {
			for i := range old {
				names[old[i]] = now[i]
			}
		}
	}
	response := c.Response
	for _, re := range []*regexp.Regexp{runIDs, commitIDs} {
		response = re.ReplaceAllStringFunc(response, func(s string) string {
			if n, ok := names[s]; ok {
				return n
			}
			return s
		})
	}
	var resp Response
	if err := json.Unmarshal([]byte(response), &resp); err != nil {
		return nil, &ProviderError{Class: FailMalformed, Err: fmt.Errorf("replay: call %d's recorded response: %w", r.next, err)}
	}
	return &resp, nil
}

// runIDs match a run's id as the router makes them.
var runIDs = regexp.MustCompile(`\b\d{8}T\d{6}-[0-9a-f]{8}\b`)

// commitIDs are git's object names, SHA-1 and SHA-256.
var commitIDs = regexp.MustCompile(`\b[0-9a-f]{40}(?:[0-9a-f]{24})?\b`)

// firstDifference shows where two texts part, with a little of each.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	clip := func(s string) string {
		s = s[i:]
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		return s
	}
	return fmt.Sprintf("at byte %d the recording has %q, the run %q", i, clip(want), clip(got))
}

// CanonicalTrace is a run's trace with what differs from one run of the
// same contract to the next set aside (ids, times, durations, the run's
// id where it appears in a text, and a step's index, which read-only
// calls made at once take in the order they finish): its steps, model
// calls and gate attempts, as lines of JSON. A replay's equals the
// original's, and a durable run resumed after its process died equals
// the run that never died.
func CanonicalTrace(ctx context.Context, s trace.Store, runID string) (string, error) {
	steps, err := s.Steps(ctx, runID)
	if err != nil {
		return "", err
	}
	calls, err := s.ProviderCalls(ctx, runID)
	if err != nil {
		return "", err
	}
	gates, err := s.GateAttempts(ctx, runID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	put := func(kind string, v any) {
		data, _ := json.Marshal(v)
		b.WriteString(kind + " " + runIDs.ReplaceAllString(string(data), "RUN") + "\n")
	}
	for _, st := range steps {
		put("step", map[string]any{"tool": st.Tool, "args": st.Args, "status": st.Status, "reason": st.Reason, "observation": st.Observation})
	}
	for _, c := range calls {
		put("provider_call", map[string]any{"step": c.Step, "attempt": c.Attempt, "provider": c.Provider, "model": c.Model, "finish": c.Finish,
			"failure": c.Failure, "input": c.Input, "output": c.Output, "request": c.Request, "response": c.Response})
	}
	for _, g := range gates {
		put("gate_attempt", map[string]any{"step": g.Step, "line": g.Line, "status": g.Status, "exit_code": g.ExitCode, "tampered": g.Tampered,
			"evidence": g.Evidence, "tests": g.Tests})
	}
	return b.String(), nil
}
