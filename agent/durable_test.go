package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// killChildEnv, when set, makes the test binary a driver of one scripted
// run (see TestMain): the kill matrix's child, killed with SIGKILL at a
// boundary.
const killChildEnv = "REIN_AGENT_TEST_CHILD"

// childConfig is what a child drives.
type childConfig struct {
	WS, Store, Calls, Cache string
	// Resume is the run to resume; "" starts one.
	Resume string
	// KillAt is the boundary (counting from 1) the child dies at; 0 none.
	KillAt int
	// Recovery is the contract's recovery.
	Recovery string
}

// childReport is what a child that was not killed prints.
type childReport struct {
	Outcome    Outcome  `json:"outcome"`
	Boundaries []string `json:"boundaries"`
	Err        string   `json:"err,omitempty"`
}

// scriptTurns is the kill matrix's run: reads, writes, commands that
// append to log.txt, two reads at once, a background handle, a claim of
// done the gate fails, then one it passes.
var scriptTurns = [][]ToolCall{
	{call("", "write_file", `{"path":"notes.txt","content":"alpha\n"}`)},
	{call("", "read_file", `{"path":"notes.txt"}`)},
	{call("", "shell", `{"line":"echo one >> log.txt"}`)},
	{call("", "read_file", `{"path":"notes.txt","limit":1}`), call("", "read_file", `{"path":"log.txt"}`)},
	{call("", "edit_file", `{"path":"notes.txt","old":"alpha","new":"beta"}`)},
	{call("", "shell_start", `{"line":"sleep 30"}`)},
	{call("", "shell", `{"line":"echo two >> log.txt"}`)},
	{call("", "write_file", `{"path":"data/a.txt","content":"a\n"}`)},
	{call("", "list_dir", `{"path":"data"}`)},
	{call("", "write_file", `{"path":"data/b.txt","content":"` + strings.Repeat("b", 2000) + `"}`)},
	{call("", "read_file", `{"path":"data/b.txt"}`)},
	{call("", "delete_file", `{"path":"data/a.txt"}`)},
	{},
	{call("", "write_file", `{"path":"done.txt","content":"ok\n"}`)},
	{call("", "shell", `{"line":"echo three >> log.txt"}`)},
	{call("", "read_file", `{"path":"log.txt"}`)},
	{call("", "edit_file", `{"path":"notes.txt","old":"beta","new":"gamma"}`)},
	{call("", "read_file", `{"path":"notes.txt"}`)},
	{},
}

// scriptModel answers from scriptTurns by the number of the model's
// turns in the transcript, so that a resumed run gets the answers the run
// that was never killed got; each call it answers is a line of the calls
// file, the count of what a provider would charge.
type scriptModel struct {
	turns [][]ToolCall
	calls string
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
	if m.calls != "" {
		f, err := os.OpenFile(m.calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "turn %d\n", n)
		f.Close()
	}
	usage := Usage{Input: int64(100 + n), Output: int64(10 + n)}
	if n >= len(m.turns) || len(m.turns[n]) == 0 {
		return &Response{Text: fmt.Sprintf("done (%d)", n), Finish: FinishStop, Usage: usage}, nil
	}
	return &Response{Text: fmt.Sprintf("turn %d", n), ToolCalls: m.turns[n], Finish: FinishToolCalls, Usage: usage}, nil
}

// scriptContract is the kill matrix's contract: its gate passes once
// done.txt is there.
func scriptContract(ws, recovery string) Contract {
	return Contract{Goal: "write the notes", Workspace: ws, Verify: &Gate{Line: "cat done.txt"}, Recovery: recovery, Budget: Budget{Steps: 40}}
}

func scriptOptions(ws, calls string, store *trace.SQLite) (Options, error) {
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(filepath.Dir(ws), "home"), NoFiles: true, Mode: &mode})
	if err != nil {
		return Options{}, err
	}
	return Options{Provider: &scriptModel{turns: scriptTurns, calls: calls},
		Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}, nil
}

// killChild drives the run of the configuration in the environment, and
// dies with SIGKILL at its KillAt-th boundary.
func killChild() int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(killChildEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.Setenv("REIN_CACHE_DIR", cfg.Cache)
	store, err := trace.Open(cfg.Store, trace.NewRedactor())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o, err := scriptOptions(cfg.WS, cfg.Calls, store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var rep childReport
	o.boundary = func(name string) {
		rep.Boundaries = append(rep.Boundaries, name)
		if len(rep.Boundaries) == cfg.KillAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	if cfg.Resume != "" {
		rep.Outcome, err = Resume(context.Background(), cfg.Resume, o)
	} else {
		rep.Outcome, err = Run(context.Background(), scriptContract(cfg.WS, cfg.Recovery), o)
	}
	if err != nil && !(errors.Is(err, ErrNotResumable) && rep.Outcome.Kind != "") {
		// A run killed after its last commit has ended: resuming it
		// says so, with its outcome.
		rep.Err = err.Error()
	}
	store.Close()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// kit is one run of the kill matrix: its workspace, store and calls file.
type kit struct {
	dir, ws, store, calls, cache string
}

func newKit(t *testing.T, root string) kit {
	t.Helper()
	dir, err := os.MkdirTemp(root, "k")
	if err != nil {
		t.Fatal(err)
	}
	k := kit{dir: dir, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "trace.db"), calls: filepath.Join(dir, "calls.log"), cache: filepath.Join(root, "cache")}
	for _, d := range []string{k.ws, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// child runs the test binary as a driver of k's run; killed says it died
// by SIGKILL.
func (k kit) child(resume string, killAt int, recovery string) (rep childReport, killed bool, err error) {
	cfg, _ := json.Marshal(childConfig{WS: k.ws, Store: k.store, Calls: k.calls, Cache: k.cache, Resume: resume, KillAt: killAt, Recovery: recovery})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+string(cfg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return rep, true, nil
		}
	}
	if err != nil {
		return rep, false, fmt.Errorf("%v: %s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return rep, false, fmt.Errorf("the child's report %q: %v (%s)", stdout.String(), err, stderr.String())
	}
	return rep, false, nil
}

// runID is the one run of k's store.
func (k kit) runID(t *testing.T) string {
	t.Helper()
	s, err := trace.Open(k.store, trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.DurableRuns(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("the store has %d durable runs (%v), want 1", len(runs), err)
	}
	return runs[0].RunID
}

// result is what a run left: its canonical trace with the resumption's
// own records set aside, every byte of its workspace, the provider calls
// made, and whether its trace verifies.
type result struct {
	canonical string
	files     map[string]string
	calls     int
}

func (k kit) result(t *testing.T, run string) result {
	t.Helper()
	s, err := trace.Open(k.store, trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(context.Background()); err != nil {
		t.Errorf("the trace does not verify: %v", err)
	}
	canon, err := CanonicalTrace(context.Background(), s, run)
	if err != nil {
		t.Fatal(err)
	}
	// Each run of the matrix has a workspace of its own.
	r := result{canonical: strings.ReplaceAll(canon, k.ws, "WS"), files: map[string]string{}}
	filepath.WalkDir(k.ws, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(k.ws, p)
			r.files[rel] = string(data)
		}
		return nil
	})
	data, _ := os.ReadFile(k.calls)
	r.calls = strings.Count(string(data), "\n")
	return r
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the durable runs' tests run commands in the sandbox: %v", err)
	}
}

// TestKillMatrix kills a scripted run of nineteen steps with SIGKILL at
// each of its effect boundaries in turn (before and after each model
// call, each tool call and each gate attempt, and between a read-only
// call's journal entry and its end), resumes it, and checks that every
// resumed run ends as the run never killed did: the same outcome, the
// same workspace bytes, the same canonical trace; no command ran twice
// (log.txt has each line once) and no model call was made twice.
func TestKillMatrix(t *testing.T) {
	requireSandbox(t)
	root := t.TempDir()
	base := newKit(t, root)
	rep, killed, err := base.child("", 0, "")
	if err != nil || killed {
		t.Fatalf("the run never killed: %v (killed %v)", err, killed)
	}
	if rep.Outcome.Kind != Succeeded || rep.Err != "" {
		t.Fatalf("the run never killed ended %+v (%s)", rep.Outcome, rep.Err)
	}
	want := base.result(t, rep.Outcome.Run)
	if want.files["log.txt"] != "one\ntwo\nthree\n" {
		t.Fatalf("log.txt = %q", want.files["log.txt"])
	}
	if want.calls != len(scriptTurns) {
		t.Fatalf("the run never killed made %d model calls, want %d", want.calls, len(scriptTurns))
	}
	// The boundaries killed at: every one but those inside a call that
	// may change the workspace (TestInterruptedCall covers them).
	var points []int
	for i, name := range rep.Boundaries {
		kind, id, _ := strings.Cut(name, " ")
		if (kind == "tool-started" || kind == "tool-ran") && !readOnlyAt(id) {
			continue
		}
		points = append(points, i+1)
	}
	if len(points) < 60 {
		t.Fatalf("only %d boundaries to kill at: %v", len(points), rep.Boundaries)
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, at := range points {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := rep.Boundaries[at-1]
			k := newKit(t, root)
			_, killed, err := k.child("", at, "")
			if err != nil || !killed {
				t.Errorf("killed at %s: the child was not killed (%v)", name, err)
				return
			}
			run := k.runID(t)
			got, killed, err := k.child(run, 0, "")
			if err != nil || killed || got.Err != "" {
				t.Errorf("killed at %s: the resumption failed: %v %s", name, err, got.Err)
				return
			}
			o, w := got.Outcome, rep.Outcome
			if o.Kind != w.Kind || o.Reason != w.Reason || o.Steps != w.Steps || o.Tokens != w.Tokens {
				t.Errorf("killed at %s: the resumed run ended %s (%s, %d steps, %+v), the run never killed %s (%s, %d steps, %+v)",
					name, o.Kind, o.Reason, o.Steps, o.Tokens, w.Kind, w.Reason, w.Steps, w.Tokens)
			}
			res := k.result(t, run)
			if res.canonical != want.canonical {
				t.Errorf("killed at %s: the canonical trace differs: %s", name, firstDifference(want.canonical, res.canonical))
			}
			if fmt.Sprint(res.files) != fmt.Sprint(want.files) {
				t.Errorf("killed at %s: the workspace is %q, want %q", name, res.files, want.files)
			}
			if res.calls != want.calls {
				t.Errorf("killed at %s: %d model calls were made, want %d: one was made twice", name, res.calls, want.calls)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d kills and resumptions in %s", len(points), time.Since(start).Round(time.Millisecond))
}

// readOnlyAt says whether the call of that id (call_STEP_INDEX) in the
// script is of a read-only tool.
func readOnlyAt(id string) bool {
	var step, idx int
	if _, err := fmt.Sscanf(id, "call_%d_%d", &step, &idx); err != nil || step < 1 || step > len(scriptTurns) {
		return false
	}
	switch scriptTurns[step-1][idx].Name {
	case "read_file", "list_dir", "find_files", "search_files", "read_result":
		return true
	}
	return false
}
