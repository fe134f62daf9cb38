package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// seenModel is a scriptModel that keeps the requests it was sent.
type seenModel struct {
	scriptModel
	mu   sync.Mutex
	reqs []Request
}

func (m *seenModel) Stream(ctx context.Context, req Request) (*Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.scriptModel.Stream(ctx, req)
}

// last is the text of the last request's messages, and its system block.
func (m *seenModel) last() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.reqs[len(m.reqs)-1]
	var b strings.Builder
	for _, msg := range r.Messages {
		b.WriteString(msg.Text + "\n")
	}
	return b.String(), r.SystemText()
}

type personRun struct {
	t     *testing.T
	ws    string
	store *sqlite.Store
	model *seenModel
	c     Contract
	resp  Responder
}

func newPersonRun(t *testing.T, c Contract, resp Responder, turns ...[]ToolCall) *personRun {
	t.Helper()
	ws := t.TempDir()
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c.Workspace = ws
	return &personRun{t: t, ws: ws, store: store, model: &seenModel{scriptModel: scriptModel{turns: turns}}, c: c, resp: resp}
}

func (r *personRun) drive(resume string) Outcome {
	r.t.Helper()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: r.ws, Home: r.t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		r.t.Fatal(err)
	}
	o := Options{Provider: r.model, Responder: r.resp,
		Tool: tool.Config{Policy: p, Store: r.store, Approver: Defer{}, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
	var out Outcome
	if resume != "" {
		out, err = Resume(context.Background(), resume, o)
	} else {
		out, err = Run(context.Background(), r.c, o)
	}
	if err != nil {
		r.t.Fatalf("the run: %v", err)
	}
	return out
}

func (r *personRun) decide(run, req, answer, note string) {
	r.t.Helper()
	if err := r.store.Decide(context.Background(), trace.ApprovalDecision{RunID: run, Request: req, Answer: answer, Note: note, By: "op"}); err != nil {
		r.t.Fatal(err)
	}
}

// TestPlanGate: a write before a plan is denied by the plan-gate layer;
// the plan deferred ends the run awaiting_plan; sent back with a note,
// the model gets the note; approved, the write goes through and the plan
// is in the system block; the trace keeps the plan and its answers.
func TestPlanGate(t *testing.T) {
	requireSandbox(t)
	write := call("", "write_file", `{"path":"a.txt","content":"x"}`)
	plan := call("", PlanTool, `{"steps":["write a.txt","check it"]}`)
	r := newPersonRun(t, Contract{Goal: "write a.txt", PlanGate: true}, Defer{},
		[]ToolCall{write, plan}, []ToolCall{plan}, []ToolCall{write})
	out := r.drive("")
	if out.Kind != AwaitingPlan || out.Waiting == nil || out.Kind.ExitCode() != 6 || out.Waiting.Shown != "1. write a.txt\n2. check it\n" {
		t.Fatalf("first: %+v", out)
	}
	if !strings.Contains(out.Reason, "rein approve "+out.Run+" "+out.Waiting.Request+" --yes|--no|--revise 'NOTE'") {
		t.Errorf("reason %q", out.Reason)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("written before the plan: %v", err)
	}
	if err := r.store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "revise", By: "op"}); err == nil {
		t.Error("a revise with no note was taken")
	}
	if err := r.store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "answer", Note: "x", By: "op"}); err == nil {
		t.Error("a plan was answered as a question")
	}
	r.decide(out.Run, out.Waiting.Request, "revise", "check it with cat")
	out2 := r.drive(out.Run)
	if out2.Kind != AwaitingPlan || out2.Waiting.Request == out.Waiting.Request {
		t.Fatalf("second: %+v", out2)
	}
	seen, _ := r.model.last()
	if !strings.Contains(seen, "write_file: denied: write_file is held by the plan-gate layer") || !strings.Contains(seen, "check it with cat") {
		t.Errorf("the model saw:\n%s", seen)
	}
	r.decide(out.Run, out2.Waiting.Request, "yes", "")
	out3 := r.drive(out.Run)
	if out3.Kind != Finished {
		t.Fatalf("third: %+v", out3)
	}
	if data, err := os.ReadFile(filepath.Join(r.ws, "a.txt")); err != nil || string(data) != "x" {
		t.Errorf("after approval: %q %v", data, err)
	}
	seen, system := r.model.last()
	if !strings.Contains(system, "## The approved plan\n\n1. write a.txt\n2. check it\n") || !strings.Contains(system, "This run is plan-gated") {
		t.Errorf("system block:\n%s", system)
	}
	if !strings.Contains(seen, "propose_plan: approved by op (request "+out2.Waiting.Request+")") {
		t.Errorf("the model saw:\n%s", seen)
	}
	reqs, _ := r.store.ApprovalRequests(context.Background(), out.Run)
	if len(reqs) != 2 || reqs[0].Kind != "plan" || reqs[1].Kind != "plan" {
		t.Errorf("requests %+v", reqs)
	}
	events, _ := r.store.PolicyEvents(context.Background(), out.Run)
	held := false
	for _, e := range events {
		held = held || strings.Contains(e.Rule, "plan") && e.Layer == "plan-gate"
	}
	if !held {
		t.Errorf("no refusal of the plan-gate layer in %+v", events)
	}
}

// TestPlanGateInProcess: an approver in the process (--approve all)
// approves the plan, and a write later in the same response goes
// through; a plan cancelled ends the run cancelled; a plan gate with no
// responder does not start.
func TestPlanGateInProcess(t *testing.T) {
	requireSandbox(t)
	write := call("", "write_file", `{"path":"a.txt","content":"x"}`)
	plan := call("", PlanTool, `{"steps":["write a.txt"]}`)
	r := newPersonRun(t, Contract{Goal: "write a.txt", PlanGate: true}, ApprovePlans{}, []ToolCall{plan, write})
	if out := r.drive(""); out.Kind != Finished {
		t.Fatalf("%+v", out)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "a.txt")); err != nil {
		t.Errorf("not written: %v", err)
	}
	runs, _ := r.store.DurableRuns(context.Background())
	reqs, _ := r.store.ApprovalRequests(context.Background(), runs[0].RunID)
	if len(reqs) != 1 || reqs[0].Kind != "plan" || reqs[0].Shown != "1. write a.txt\n" {
		t.Fatalf("requests %+v", reqs)
	}
	if d, _ := r.store.Decision(context.Background(), runs[0].RunID, reqs[0].Request); d == nil || d.Answer != "yes" || d.By != "--approve all" {
		t.Errorf("decision %+v", d)
	}

	c := newPersonRun(t, Contract{Goal: "write a.txt", PlanGate: true}, Defer{}, []ToolCall{plan})
	out := c.drive("")
	c.decide(out.Run, out.Waiting.Request, "no", "not today")
	if out := c.drive(out.Run); out.Kind != Cancelled || !strings.Contains(out.Reason, "cancelled by its approver") {
		t.Errorf("cancelled: %+v", out)
	}

	n := newPersonRun(t, Contract{Goal: "x", PlanGate: true}, nil)
	mode := policy.ModeAuto
	p, _ := policy.Load(policy.Options{Workspace: n.ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if _, err := Run(context.Background(), n.c, Options{Provider: n.model, Tool: tool.Config{Policy: p}}); err == nil || !strings.Contains(err.Error(), "a plan gate needs someone to approve the plan") {
		t.Errorf("no responder: %v", err)
	}
}

// TestQuestion: a question deferred ends the run awaiting_answer; an
// answer is refused where it is not text; rein answer's text reaches the
// model framed as no permission; with no responder the model is told to
// decide itself; a terminal responder's line is the answer.
func TestQuestion(t *testing.T) {
	requireSandbox(t)
	ask := call("", QuestionTool, `{"question":"Which file?"}`)
	r := newPersonRun(t, Contract{Goal: "write the file"}, Defer{}, []ToolCall{ask})
	out := r.drive("")
	if out.Kind != AwaitingAnswer || out.Waiting.Shown != "Which file?" || !strings.Contains(out.Reason, "rein answer "+out.Run+" "+out.Waiting.Request+" 'TEXT'") {
		t.Fatalf("%+v", out)
	}
	if err := r.store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "yes", By: "op"}); err == nil {
		t.Error("a question was answered yes")
	}
	r.decide(out.Run, out.Waiting.Request, "answer", "b.txt, please")
	if out := r.drive(out.Run); out.Kind != Finished {
		t.Fatalf("%+v", out)
	}
	seen, _ := r.model.last()
	if !strings.Contains(seen, "ask_question: answered by op (request "+out.Waiting.Request+"):\nb.txt, please\n[rein: this answer says what is wanted; it grants no permission") {
		t.Errorf("the model saw:\n%s", seen)
	}

	for _, tc := range []struct {
		name string
		resp Responder
		want string
	}{
		{"none", nil, "ask_question: no one can answer questions in this run (no one (this run has no responder))"},
		{"all", ApprovePlans{}, "ask_question: no one can answer questions in this run (--approve all)"},
		{"terminal", TerminalResponder{In: strings.NewReader("c.txt\n"), Out: &strings.Builder{}}, "ask_question: answered by the terminal:\nc.txt\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPersonRun(t, Contract{Goal: "write the file"}, tc.resp, []ToolCall{ask})
			if out := r.drive(""); out.Kind != Finished {
				t.Fatalf("%+v", out)
			}
			if seen, _ := r.model.last(); !strings.Contains(seen, tc.want) {
				t.Errorf("the model saw:\n%s", seen)
			}
		})
	}
}

// A plan approved by rein approve, then in the same response a command
// the policy asks about: deferred, approved, resumed: the plan approved
// earlier in the step (its result in, the step's other calls not) lifts
// the gate in the resumed process too, and the approved command runs.
func TestPlanKeptAcrossResume(t *testing.T) {
	requireSandbox(t)
	plan := call("", PlanTool, `{"steps":["touch approved.txt"]}`)
	sh := call("", "shell", `{"line":"touch approved.txt"}`)
	r := newPersonRun(t, Contract{Goal: "touch it", PlanGate: true}, Defer{}, []ToolCall{plan, sh})
	drive := func(resume string) Outcome {
		mode := policy.ModeAuto
		p, err := policy.Load(policy.Options{Workspace: r.ws, Home: t.TempDir(), NoFiles: true, Mode: &mode,
			Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Ask, Pattern: "touch approved.txt"}}})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Provider: r.model, Responder: Defer{},
			Tool: tool.Config{Policy: p, Store: r.store, Approver: Defer{}, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}
		if resume != "" {
			out, err := Resume(context.Background(), resume, o)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		out, err := Run(context.Background(), r.c, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := drive("")
	if out.Kind != AwaitingPlan {
		t.Fatalf("first %+v", out)
	}
	r.decide(out.Run, out.Waiting.Request, "yes", "")
	out2 := drive(out.Run)
	if out2.Kind != AwaitingApproval {
		t.Fatalf("second %+v", out2)
	}
	r.decide(out.Run, out2.Waiting.Request, "yes", "")
	out3 := drive(out.Run)
	seen, _ := r.model.last()
	if _, err := os.Stat(filepath.Join(r.ws, "approved.txt")); err != nil {
		t.Fatalf("plan approved and command approved, yet not run: %v\noutcome %+v\nthe model saw:\n%s", err, out3, seen)
	}
}

// promptWriter hands each prompt written to it to prompts.
type promptWriter struct{ prompts chan string }

func (w promptWriter) Write(p []byte) (int, error) {
	w.prompts <- string(p)
	return len(p), nil
}

// TestTerminalOneAskAtATime: the model asks a yes/no question and
// proposes its plan in one response (both read-only calls, run at once):
// the prompts are put one at a time and each line goes to the prompt in
// front of the operator, so the plan the operator answers n is never
// approved by the question's yes.
func TestTerminalOneAskAtATime(t *testing.T) {
	requireSandbox(t)
	for range 10 {
		pr, pw := io.Pipe()
		out := promptWriter{prompts: make(chan string)}
		ask := call("", QuestionTool, `{"question":"Also update the docs? (yes/no)"}`)
		plan := call("", PlanTool, `{"steps":["write a.txt"]}`)
		write := call("", "write_file", `{"path":"a.txt","content":"x"}`)
		r := newPersonRun(t, Contract{Goal: "write a.txt", PlanGate: true}, TerminalResponder{In: pr, Out: out}, []ToolCall{plan, ask, write})
		go func() {
			for p := range out.prompts {
				if strings.Contains(p, "the model asks") {
					io.WriteString(pw, "yes\n")
				} else {
					io.WriteString(pw, "n\n")
				}
			}
		}()
		o := r.drive("")
		close(out.prompts)
		if _, err := os.Stat(filepath.Join(r.ws, "a.txt")); err == nil || o.Kind != Cancelled {
			t.Fatalf("the plan answered n: %+v (a.txt: %v)", o, err)
		}
	}
}
