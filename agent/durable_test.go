package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// scriptModel answers from its turns by the number of the model's turns
// in the transcript.
type scriptModel struct {
	turns [][]ToolCall
}

func (m *scriptModel) Name() string  { return "script" }
func (m *scriptModel) Model() string { return "script-1" }
func (m *scriptModel) Stream(_ context.Context, req Request) (*Response, error) {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == RoleAssistant {
			n++
		}
	}
	usage := Usage{Input: int64(100_000 + n), Output: int64(1000 + n)}
	if n >= len(m.turns) || len(m.turns[n]) == 0 {
		return &Response{Text: fmt.Sprintf("done (%d)", n), Finish: FinishStop, Usage: usage}, nil
	}
	return &Response{Text: fmt.Sprintf("turn %d", n), ToolCalls: m.turns[n], Finish: FinishToolCalls, Usage: usage}, nil
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the durable runs' tests run commands in the sandbox: %v", err)
	}
}

func decide(t *testing.T, path, run, request, answer string) error {
	t.Helper()
	s, err := sqlite.Open(path, trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Decide(context.Background(), trace.ApprovalDecision{RunID: run, Request: request, Answer: answer, Note: "checked by hand", By: "test"})
}

// approvalRun drives a run whose first call the policy asks about, with
// the Defer approver; extra are rules added to the policy.
func approvalRun(t *testing.T, ws string, store *sqlite.Store, resume string, extra ...policy.Rule) (Outcome, error) {
	t.Helper()
	mode := policy.ModeAuto
	rules := append([]policy.Rule{{Act: policy.ActExec, Effect: policy.Ask, Pattern: "touch approved.txt"}}, extra...)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Provider: &scriptModel{turns: [][]ToolCall{{call("", "shell", `{"line":"touch approved.txt"}`)}}},
		Tool: tool.Config{Policy: p, Store: store, Approver: Defer{}, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
	if resume != "" {
		return Resume(context.Background(), resume, o)
	}
	return Run(context.Background(), Contract{Goal: "touch it", Workspace: ws}, o)
}

// TestDeferredApproval: an ask deferred ends the run awaiting_approval
// with a request, the action kept as shown; a resumption before the
// answer waits again; the answer yes runs the call, no refuses it; a
// second answer is refused; a deny rule added before the resumption wins
// over a yes.
func TestDeferredApproval(t *testing.T) {
	requireSandbox(t)
	for _, tc := range []struct {
		name, answer string
		deny         bool
		file         bool
		told         string
	}{
		{"yes", "yes", false, true, "shell: ok"},
		{"no", "no", false, false, "shell: denied: rejected by the approver: request"},
		{"overtaken", "yes", true, false, "shell: denied: stage 0 (touch approved.txt): denied by deny rule \"touch *\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
			store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			out, err := approvalRun(t, ws, store, "")
			if err != nil || out.Kind != AwaitingApproval || out.Waiting == nil || out.Kind.ExitCode() != 6 {
				t.Fatalf("the run: %+v %v", out, err)
			}
			req := out.Waiting.Request
			if want := "shell {\"line\":\"touch approved.txt\"}\n  stage 0: touch approved.txt\n"; !strings.HasPrefix(out.Waiting.Shown, want) {
				t.Errorf("shown %q, want it to begin %q", out.Waiting.Shown, want)
			}
			reqs, _ := store.ApprovalRequests(context.Background(), out.Run)
			if len(reqs) != 1 || reqs[0].Request != req || reqs[0].Shown != out.Waiting.Shown || reqs[0].Tool != "shell" {
				t.Errorf("the requests kept: %+v", reqs)
			}
			runs, _ := store.DurableRuns(context.Background())
			if len(runs) != 1 || runs[0].Status != "awaiting_approval" || runs[0].Waiting != req || runs[0].Driven {
				t.Errorf("listed as %+v", runs)
			}
			// No answer yet: it waits again, for the same request.
			again, err := approvalRun(t, ws, store, out.Run)
			if err != nil || again.Kind != AwaitingApproval || again.Waiting.Request != req {
				t.Fatalf("resumed before the answer: %+v %v", again, err)
			}
			if err := decide(t, store.Path(), out.Run, req, tc.answer); err != nil {
				t.Fatal(err)
			}
			var answered *sqlite.AnsweredError
			if err := decide(t, store.Path(), out.Run, req, "no"); !errors.As(err, &answered) || answered.First.Answer != tc.answer {
				t.Errorf("a second answer: %v", err)
			}
			if err := decide(t, store.Path(), out.Run, "r00000000", "yes"); err == nil || !strings.Contains(err.Error(), "has no request r00000000") {
				t.Errorf("an answer to no request: %v", err)
			}
			var extra []policy.Rule
			if tc.deny {
				extra = append(extra, policy.Rule{Act: policy.ActExec, Effect: policy.Deny, Pattern: "touch *"})
			}
			final, err := approvalRun(t, ws, store, out.Run, extra...)
			if err != nil || final.Kind != Finished {
				t.Fatalf("resumed after the answer: %+v %v", final, err)
			}
			if _, err := os.Stat(filepath.Join(ws, "approved.txt")); (err == nil) != tc.file {
				t.Errorf("approved.txt exists: %v, want %v", err == nil, tc.file)
			}
			steps, _ := store.Steps(context.Background(), out.Run)
			if len(steps) != 1 || !strings.HasPrefix(steps[0].Observation, tc.told) {
				t.Errorf("the call's step: %+v, want it to begin %q", steps, tc.told)
			}
		})
	}
}

// TestCheckpointFormat: a checkpoint is written with this rein's format
// number and read back whole (a large message by address); one of a
// newer format is refused, with its reason.
func TestCheckpointFormat(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	out, err := approvalRun(t, ws, store, "")
	if err != nil || out.Kind != AwaitingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	ctx := context.Background()
	cp, err := store.LastCheckpoint(ctx, out.Run)
	if err != nil || cp.Format != CheckpointFormat || cp.Status != "awaiting_approval" {
		t.Fatalf("the checkpoint: %+v %v", cp, err)
	}
	blobs, _ := store.Blobs(ctx, out.Run)
	s, _, _, _, err := decode(cp, blobs)
	if err != nil || s.Waiting == nil || s.Waiting.Request != out.Waiting.Request || len(s.Pending) != 1 || s.Contract.Goal != "touch it" {
		t.Fatalf("read back: %+v %v", s, err)
	}
	// A large message is kept once, by address, and read back whole.
	big := strings.Repeat("x", 3*blobMin)
	d := &driver{state: &State{Transcript: []Message{{Role: RoleUser, Text: big}, {Role: RoleUser, Text: big}}}, blobs: map[string]bool{}, newBlobs: map[string]string{}}
	enc, err := d.encode()
	if err != nil || strings.Contains(enc, big) || len(d.newBlobs) != 1 {
		t.Fatalf("the large message is inline, or kept twice: %d bytes, %d blobs", len(enc), len(d.newBlobs))
	}
	back, _, _, _, err := decode(&trace.Checkpoint{Format: CheckpointFormat, State: enc}, d.newBlobs)
	if err != nil || len(back.Transcript) != 2 || back.Transcript[1].Text != big {
		t.Fatalf("read back: %v", err)
	}
	// A newer rein's checkpoint.
	lease, err := store.AcquireLease(ctx, out.Run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	newer := *cp
	newer.Seq, newer.Format = cp.Seq+1, CheckpointFormat+1
	if err := store.Commit(ctx, lease, time.Minute, newer); err != nil {
		t.Fatal(err)
	}
	store.ReleaseLease(ctx, lease)
	_, err = approvalRun(t, ws, store, out.Run)
	var fe *FormatError
	want := fmt.Sprintf("checkpoint is of format %d, newer than this rein reads (%d)", CheckpointFormat+1, CheckpointFormat)
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
		t.Errorf("a newer checkpoint: %v, want %q", err, want)
	}
}
