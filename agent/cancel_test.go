package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// blockingModel answers its first call with a tool call when first is
// set, and blocks every other until its context ends, counting calls and
// the ones that ended by their context.
type blockingModel struct {
	first     []ToolCall
	calls     atomic.Int32
	cancelled atomic.Int32
	started   chan struct{}
}

func (m *blockingModel) Name() string  { return "blocking" }
func (m *blockingModel) Model() string { return "b-1" }
func (m *blockingModel) Stream(ctx context.Context, _ Request) (*Response, error) {
	n := m.calls.Add(1)
	if n == 1 && m.first != nil {
		return &Response{Text: "running", ToolCalls: m.first, Finish: FinishToolCalls, Usage: Usage{Input: 10, Output: 1}}, nil
	}
	close(m.started)
	<-ctx.Done()
	m.cancelled.Add(1)
	return nil, ctx.Err()
}

// TestCancelRequest: a cancel recorded in the trace by another process
// (rein run cancel) stops a running run at its driver, within a second
// of being asked: a command in flight (sleep 60.25) is killed, its process gone, and a model
// call in flight is cancelled, with no model call after it; the run ends
// cancelled naming the request, which the trace answers yes; a cancel
// asked of a run that waits is taken when it is resumed.
func TestCancelRequest(t *testing.T) {
	requireSandbox(t)
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	for _, during := range []string{"command", "model"} {
		t.Run(during, func(t *testing.T) {
			ws := t.TempDir()
			store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			mode := policy.ModeAuto
			p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
			if err != nil {
				t.Fatal(err)
			}
			m := &blockingModel{started: make(chan struct{})}
			if during == "command" {
				m.first = []ToolCall{call("c1", "shell", `{"line":"sleep 60.25","timeout":"120s"}`)}
			}
			var runID atomic.Value
			running := make(chan struct{}, 8)
			o := Options{Provider: m, Observer: func(e Event) {
				if e.Run != "" {
					runID.Store(e.Run)
				}
				if e.Kind == EventToolCall || e.Kind == EventStarted {
					select {
					case running <- struct{}{}:
					default:
					}
				}
			}, Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
			done := make(chan Outcome, 1)
			go func() {
				out, _ := Run(context.Background(), Contract{Goal: "wait", Workspace: ws}, o)
				done <- out
			}()
			if during == "model" {
				<-m.started
			} else {
				<-running
				time.Sleep(500 * time.Millisecond) // the command is under way
			}
			run, _ := runID.Load().(string)
			if run == "" {
				t.Fatal("no run id seen")
			}
			asked := time.Now()
			if _, err := store.Append(context.Background(), trace.ApprovalRequest{RunID: run, Request: "x1", Kind: CancelRequest, Shown: "cancel the run, asked by the test", At: asked}); err != nil {
				t.Fatal(err)
			}
			var out Outcome
			select {
			case out = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the run did not stop")
			}
			took := time.Since(asked)
			if out.Kind != Cancelled || !strings.Contains(out.Reason, "the run was cancelled by request x1 (cancel the run, asked by the test)") {
				t.Fatalf("%+v", out)
			}
			if took > 5*time.Second {
				t.Errorf("the cancel took %s", took)
			}
			// The command case made one call (the shell call), the model
			// case one (cancelled in flight): none after the cancel.
			if during == "model" && m.cancelled.Load() != 1 {
				t.Errorf("the model call in flight was not cancelled")
			}
			if m.calls.Load() != 1 {
				t.Errorf("%d model calls, want 1: one was made after the cancel", m.calls.Load())
			}
			if d, _ := store.Decision(context.Background(), run, "x1"); d == nil || d.Answer != "yes" || d.By != "rein" {
				t.Errorf("the request's decision: %+v", d)
			}
			if left := testenv.ProcessesWith("sleep 60.25"); len(left) > 0 {
				t.Errorf("the command outlived the cancel: %v", left)
			}
			t.Logf("cancelled %s after the request", took.Round(time.Millisecond))
		})
	}
}

// TestCancelAwaiting: a cancel asked of a run that waits for a person is
// taken when the run is resumed: it ends cancelled at once, with no model
// call.
func TestCancelAwaiting(t *testing.T) {
	requireSandbox(t)
	ask := call("", QuestionTool, `{"question":"Which file?"}`)
	r := newPersonRun(t, Contract{Goal: "write the file"}, Defer{}, []ToolCall{ask})
	out := r.drive("")
	if out.Kind != AwaitingAnswer {
		t.Fatalf("%+v", out)
	}
	calls := len(r.model.reqs)
	if _, err := r.store.Append(context.Background(), trace.ApprovalRequest{RunID: out.Run, Request: "x2", Kind: CancelRequest, Shown: "cancel the run, asked by op", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	got := r.drive(out.Run)
	if got.Kind != Cancelled || !strings.Contains(got.Reason, "cancelled by request x2") || len(r.model.reqs) != calls {
		t.Fatalf("%+v (%d model calls, %d before)", got, len(r.model.reqs), calls)
	}
}
