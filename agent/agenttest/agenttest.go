// Package agenttest is the conformance suite every driver of rein's agent
// loop passes: the in-process driver of agent.Run and agent.Resume, and
// any other written against agent/loop and agent's exported executors (a
// workflow engine's). It kills a scripted run of nineteen steps with
// SIGKILL at each of its effect boundaries (agent.Options.Boundary), in a
// child process, resumes it, and checks that every resumed run ends as the
// run never killed did; that a call that may have changed the workspace
// is never repeated silently; and that a run has one driver at a time.
//
// A package that runs the suite calls Child first in its TestMain (after
// sandbox.Main), with every driver it tests, and Run from a test.
//
// agenttest imports agent, the policy, the tool layer and the SQLite
// trace store; nothing of rein imports it but tests.
package agenttest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
	"github.com/reinhq/rein/trace/sqlstore"
)

// Driver is a driver under test: how it starts a run and how it resumes
// one, as agent.Run and agent.Resume do (a resumption of a run that has
// ended returns its outcome with an error wrapping agent.ErrNotResumable).
type Driver struct {
	// Name tells the drivers of one test binary apart.
	Name string
	// Every, above 1, kills a driver at every Every-th boundary of the
	// kill matrix's run only (and the last), for a driver whose
	// resumption is slow to come (a workflow engine's, which waits for a
	// dead worker's heartbeat to lapse).
	Every int
	// Store opens the trace store of a run of the suite, named by a path
	// the suite made for it (the same path, in any process, is the same
	// store); nil opens a SQLite file there.
	Store  func(path string) (*sqlstore.Store, error)
	Run    func(ctx context.Context, c agent.Contract, o agent.Options) (agent.Outcome, error)
	Resume func(ctx context.Context, runID string, o agent.Options) (agent.Outcome, error)
}

// open opens the store at path as d's runs do.
func (d Driver) open(path string) (*sqlstore.Store, error) {
	if d.Store != nil {
		return d.Store(path)
	}
	return sqlite.Open(path, trace.NewRedactor())
}

// Run runs every conformance test of the suite against d.
func Run(t *testing.T, d Driver) {
	t.Run("KillMatrix", func(t *testing.T) { KillMatrix(t, d) })
	t.Run("InterruptedCall", func(t *testing.T) { InterruptedCall(t, d) })
	t.Run("Lease", func(t *testing.T) { Lease(t, d) })
}

func call(name, args string) agent.ToolCall { return agent.ToolCall{Name: name, Args: args} }

// firstDifference shows where two canonical traces part.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-80, 0)
	return fmt.Sprintf("at byte %d: want %q, got %q", i, want[from:min(i+80, len(want))], got[from:min(i+80, len(got))])
}

// childEnv, when set, makes the test binary a driver of one scripted
// run (see TestMain): the kill matrix's child, killed with SIGKILL at a
// boundary.
const childEnv = "REIN_AGENTTEST_CHILD"

// childConfig is what a child drives.
type childConfig struct {
	// Driver names the driver under test.
	Driver                  string
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
	Outcome    agent.Outcome `json:"outcome"`
	Boundaries []string      `json:"boundaries"`
	Err        string        `json:"err,omitempty"`
}

// scriptTurns is the kill matrix's run: a todo list, a question no one
// answers and a plan approved (the run is plan-gated), reads, writes,
// commands that append to log.txt, two reads at once, a background handle, a claim of
// done the gate fails, then one it passes; the run's changes committed on
// its branch at the end.
var scriptTurns = [][]agent.ToolCall{
	{call("todo_write", `{"items":[{"text":"write the notes","state":"in_progress"},{"text":"log three lines","state":"pending"}]}`)},
	{call("ask_question", `{"question":"Which notes?"}`), call("propose_plan", `{"steps":["write the notes","log three lines"]}`)},
	{call("write_file", `{"path":"notes.txt","content":"alpha\n"}`)},
	{call("read_file", `{"path":"notes.txt"}`)},
	{call("shell", `{"line":"echo one >> log.txt"}`)},
	{call("read_file", `{"path":"notes.txt","limit":1}`), call("read_file", `{"path":"log.txt"}`)},
	{call("edit_file", `{"path":"notes.txt","old":"alpha","new":"beta"}`)},
	{call("shell_start", `{"line":"sleep 30"}`)},
	{call("shell", `{"line":"echo two >> log.txt"}`)},
	{call("write_file", `{"path":"data/a.txt","content":"a\n"}`)},
	{call("list_dir", `{"path":"data"}`)},
	{call("write_file", `{"path":"data/b.txt","content":"`+strings.Repeat("b", 2000)+`"}`)},
	{call("read_file", `{"path":"data/b.txt"}`)},
	{call("delete_file", `{"path":"data/a.txt"}`)},
	{},
	{call("write_file", `{"path":"done.txt","content":"ok\n"}`)},
	{call("shell", `{"line":"echo three >> log.txt"}`)},
	{call("read_file", `{"path":"log.txt"}`)},
	{call("edit_file", `{"path":"notes.txt","old":"beta","new":"gamma"}`)},
	{call("read_file", `{"path":"notes.txt"}`)},
	{},
	{},
}

// scriptSchema is the contract's output schema: the final answers before
// the last are not JSON, so the one the gate first passes is sent back.
const scriptSchema = `{"type":"object","required":["done"],"properties":{"done":{"type":"integer"}},"additionalProperties":false}`

// answerAt is the text of the script's turn n that calls no tool.
func answerAt(n int) string {
	if n >= len(scriptTurns)-1 {
		return fmt.Sprintf(`{"done": %d}`, n)
	}
	return fmt.Sprintf("done (%d)", n)
}

// scriptModel answers from scriptTurns by the number of the model's
// turns in the transcript, so that a resumed run gets the answers the run
// that was never killed got; each call it answers is a line of the calls
// file, the count of what a provider would charge.
type scriptModel struct {
	turns [][]agent.ToolCall
	calls string
}

func (m *scriptModel) Name() string  { return "script" }
func (m *scriptModel) Model() string { return "script-1" }
func (m *scriptModel) Stream(_ context.Context, req agent.Request) (*agent.Response, error) {
	n := Turn(req)
	summary := req.System == loop.SummaryInstruction
	if m.calls != "" {
		f, err := os.OpenFile(m.calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		if summary {
			fmt.Fprintf(f, "summary\n")
		} else {
			fmt.Fprintf(f, "turn %d\n", n)
		}
		f.Close()
	}
	if summary {
		if len(req.Tools) > 0 {
			return nil, fmt.Errorf("a summarising call offered %d tools", len(req.Tools))
		}
		return &agent.Response{Text: "notes.txt was written and read; log.txt has lines appended by echo.", Finish: agent.FinishStop, Usage: agent.Usage{Input: 2000, Output: 20}}, nil
	}
	// The todo list the first turn wrote is in the system block of every
	// later request, resumed or not.
	if list := "## Your todo list (todo_write replaces it)\n\n[~] write the notes\n[ ] log three lines\n"; (n > 0) != strings.HasSuffix(req.SystemText(), list) {
		return nil, fmt.Errorf("turn %d: the system block does not end with the todo list as it should: %q", n, req.SystemText()[max(0, len(req.SystemText())-200):])
	}
	if plan := "## The approved plan\n\n1. write the notes\n2. log three lines\n"; (n > 1) != strings.Contains(req.SystemText(), plan) {
		return nil, fmt.Errorf("turn %d: the system block does not hold the approved plan as it should", n)
	}
	usage := agent.Usage{Input: int64(100_000 + n), Output: int64(1000 + n)}
	if n >= len(m.turns) || len(m.turns[n]) == 0 {
		return &agent.Response{Text: answerAt(n), Finish: agent.FinishStop, Usage: usage}, nil
	}
	return &agent.Response{Text: fmt.Sprintf("turn %d", n), ToolCalls: m.turns[n], Finish: agent.FinishToolCalls, Usage: usage}, nil
}

// Turn is the model's turn a request asks for: the count of its turns
// in the transcript, the steps a summary folded among them, so that a
// scripted model answers a resumed run as it answered the run never
// killed.
func Turn(req agent.Request) int {
	n := 0
	for _, msg := range req.Messages {
		if sm := foldedSteps.FindStringSubmatch(msg.Text); sm != nil {
			// The steps a summary folded count as the model's turns.
			k, _ := strconv.Atoi(sm[1])
			n += k
		}
		if msg.Role == agent.RoleAssistant {
			n++
		}
	}
	return n
}

// foldedSteps reads the steps a summary's message says it folded.
var foldedSteps = regexp.MustCompile(`^\[rein: steps \d+ to (\d+) were folded`)

// scriptWindow is the kill matrix's context window: small enough that
// the run folds its oldest steps into a summary.
const scriptWindow = 6000

// scriptContract is the kill matrix's contract: its gate passes once
// done.txt is there.
func scriptContract(ws, recovery string) agent.Contract {
	return agent.Contract{Goal: "write the notes", Workspace: ws, Verify: &agent.Gate{Line: "cat done.txt"}, Recovery: recovery, Budget: agent.Budget{Steps: 40, Tokens: 10_000_000},
		ContextTokens: scriptWindow,
		OutputSchema:  json.RawMessage(scriptSchema), PlanGate: true, Commit: true}
}

func scriptOptions(ws, calls string, store trace.Durable) (agent.Options, error) {
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(filepath.Dir(ws), "home"), NoFiles: true, Mode: &mode})
	if err != nil {
		return agent.Options{}, err
	}
	return agent.Options{Provider: &scriptModel{turns: scriptTurns, calls: calls}, Responder: agent.ApprovePlans{},
		Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}, nil
}

// Script is the kill matrix's run, to drive in this process: its
// contract and options over a new workspace of t's (a git repository:
// the run commits), with d's trace store, which t closes.
func Script(t testing.TB, d Driver) (agent.Contract, agent.Options, *sqlstore.Store) {
	t.Helper()
	k := newKit(t, d, t.TempDir())
	t.Setenv("REIN_CACHE_DIR", k.cache)
	store, err := d.open(k.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o, err := scriptOptions(k.ws, k.calls, store)
	if err != nil {
		t.Fatal(err)
	}
	return scriptContract(k.ws, ""), o, store
}

// Child, called first by the TestMain of a package that runs the suite,
// makes the test binary the driver of one scripted run when the suite
// started it as one: it drives the run with the driver the suite names,
// dies with SIGKILL at the boundary the suite asks for, and returns the
// exit code for TestMain, with ok. Otherwise it returns ok false.
func Child(drivers ...Driver) (code int, ok bool) {
	env := os.Getenv(childEnv)
	if env == "" {
		return 0, false
	}
	return child(env, drivers), true
}

func child(env string, drivers []Driver) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var d *Driver
	for i := range drivers {
		if drivers[i].Name == cfg.Driver {
			d = &drivers[i]
		}
	}
	if d == nil {
		fmt.Fprintf(os.Stderr, "agenttest: no driver %q among those Child was given\n", cfg.Driver)
		return 2
	}
	os.Setenv("REIN_CACHE_DIR", cfg.Cache)
	store, err := d.open(cfg.Store)
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
	hold := os.Getenv("REIN_AGENT_TEST_HOLD") != ""
	o.Boundary = func(name string) {
		if hold && len(rep.Boundaries) == 0 {
			// Holding the run while another driver tries to take it.
			time.Sleep(1500 * time.Millisecond)
		}
		rep.Boundaries = append(rep.Boundaries, name)
		if len(rep.Boundaries) == cfg.KillAt {
			// os.Process.Kill is SIGKILL on Unix: no deferred function runs.
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill()
			}
			select {}
		}
	}
	if cfg.Resume != "" {
		rep.Outcome, err = d.Resume(context.Background(), cfg.Resume, o)
	} else {
		rep.Outcome, err = d.Run(context.Background(), scriptContract(cfg.WS, cfg.Recovery), o)
	}
	if err != nil && !(errors.Is(err, agent.ErrNotResumable) && rep.Outcome.Kind != "") {
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
	driver                       string
	d                            Driver
	dir, ws, store, calls, cache string
}

func newKit(t testing.TB, d Driver, root string) kit {
	t.Helper()
	dir, err := os.MkdirTemp(root, "k")
	if err != nil {
		t.Fatal(err)
	}
	k := kit{driver: d.Name, d: d, dir: dir, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "trace.db"), calls: filepath.Join(dir, "calls.log"), cache: filepath.Join(root, "cache")}
	for _, d := range []string{k.ws, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A repository, for the run's commit at the end (Contract.Commit).
	os.WriteFile(filepath.Join(k.ws, "README"), []byte("notes\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README"},
		{"-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "start"}} {
		if out, err := k.git(args...); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return k
}

// git runs git in k's workspace, with no configuration but the
// repository's.
func (k kit) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = k.ws
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// child runs the test binary as a driver of k's run; killed says it died
// by SIGKILL.
func (k kit) child(resume string, killAt int, recovery string) (rep childReport, killed bool, err error) {
	cfg, _ := json.Marshal(childConfig{Driver: k.driver, WS: k.ws, Store: k.store, Calls: k.calls, Cache: k.cache, Resume: resume, KillAt: killAt, Recovery: recovery})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
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
	s, err := k.d.open(k.store)
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
	summaries int
	// branches are the rein/ branches of the repository.
	branches []string
}

func (k kit) result(t *testing.T, run string) result {
	t.Helper()
	s, err := k.d.open(k.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Verify(context.Background()); err != nil {
		t.Errorf("the trace does not verify: %v", err)
	}
	canon, err := agent.CanonicalTrace(context.Background(), s, run)
	if err != nil {
		t.Fatal(err)
	}
	// Each run of the matrix has a workspace of its own.
	r := result{canonical: strings.ReplaceAll(canon, k.ws, "WS"), files: map[string]string{}}
	filepath.WalkDir(k.ws, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && p == filepath.Join(k.ws, ".git") {
			return fs.SkipDir
		}
		if err == nil && e.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(k.ws, p)
			r.files[rel] = string(data)
		}
		return nil
	})
	data, _ := os.ReadFile(k.calls)
	r.calls = strings.Count(string(data), "turn ")
	r.summaries = strings.Count(string(data), "summary\n")
	refs, err := k.git("for-each-ref", "--format=%(refname)", "refs/heads/rein/")
	if err != nil {
		t.Fatal(err)
	}
	r.branches = strings.Fields(refs)
	return r
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the durable runs' tests run commands in the sandbox: %v", err)
	}
}

// KillMatrix kills a scripted run of nineteen steps with SIGKILL at
// each of its effect boundaries in turn (before and after each model
// call, each tool call and each gate attempt, and between a read-only
// call's run and the commit of its end), resumes it, and checks that every
// resumed run ends as the run never killed did: the same outcome, the
// same workspace bytes, the same canonical trace; no command ran twice
// (log.txt has each line once) and no model call was made twice.
func KillMatrix(t *testing.T, d Driver) {
	requireSandbox(t)
	root := t.TempDir()
	base := newKit(t, d, root)
	rep, killed, err := base.child("", 0, "")
	if err != nil || killed {
		t.Fatalf("the run never killed: %v (killed %v)", err, killed)
	}
	if rep.Outcome.Kind != agent.Succeeded || rep.Err != "" || string(rep.Outcome.Answer) != fmt.Sprintf(`{"done":%d}`, len(scriptTurns)-1) {
		t.Fatalf("the run never killed ended %+v (%s)", rep.Outcome, rep.Err)
	}
	want := base.result(t, rep.Outcome.Run)
	if want.files["log.txt"] != "one\ntwo\nthree\n" {
		t.Fatalf("log.txt = %q", want.files["log.txt"])
	}
	if cm := rep.Outcome.Commit; cm == nil || cm.Error != "" || cm.Branch != "rein/"+rep.Outcome.Run || strings.Join(cm.Paths, " ") != "data/b.txt done.txt log.txt notes.txt" ||
		len(want.branches) != 1 {
		t.Fatalf("the run never killed committed %+v, branches %v", cm, want.branches)
	}
	if want.calls != len(scriptTurns) || want.summaries < 1 {
		t.Fatalf("the run never killed made %d model calls (want %d) and %d summarising calls (want one at least)", want.calls, len(scriptTurns), want.summaries)
	}
	t.Logf("the run never killed: %d model calls, %d summarising calls", want.calls, want.summaries)
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
	if d.Every > 1 {
		var some []int
		for i, p := range points {
			if i%d.Every == 0 || i == len(points)-1 {
				some = append(some, p)
			}
		}
		points = some
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
			k := newKit(t, d, root)
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
			if o.Kind != w.Kind || o.Reason != w.Reason || o.Steps != w.Steps || o.Tokens != w.Tokens || string(o.Answer) != string(w.Answer) {
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
			if cm, wc := o.Commit, w.Commit; cm == nil || cm.Error != "" || cm.Branch != "rein/"+run || fmt.Sprint(cm.Paths) != fmt.Sprint(wc.Paths) ||
				fmt.Sprint(res.branches) != "[refs/heads/"+cm.Branch+"]" {
				t.Errorf("killed at %s: the resumed run committed %+v (branches %v), the run never killed %+v", name, cm, res.branches, wc)
			}
			if res.calls != want.calls || res.summaries != want.summaries {
				t.Errorf("killed at %s: %d model calls and %d summarising calls were made, want %d and %d: one was made twice", name, res.calls, res.summaries, want.calls, want.summaries)
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
	case "read_file", "list_dir", "find_files", "search_files", "read_result", "todo_write", "ask_question", "propose_plan":
		return true
	}
	return false
}

// boundaryIndex is the position (from 1) of the named boundary in a run
// never killed.
func boundaryIndex(t *testing.T, d Driver, root, name string) int {
	t.Helper()
	rep, _, err := newKit(t, d, root).child("", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range rep.Boundaries {
		if b == name {
			return i + 1
		}
	}
	t.Fatalf("no boundary %q in %v", name, rep.Boundaries)
	return 0
}

// requestsOf are the model calls' requests of run, whole.
func requestsOf(t *testing.T, k kit, run string) string {
	t.Helper()
	s, err := k.d.open(k.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	calls, err := s.ProviderCalls(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.Request + "\n")
	}
	return b.String()
}

// InterruptedCall kills the run after a command that appends to
// log.txt ran and before its end was recorded: the resumed run does not
// run it again, and tells the model it was interrupted, with the change
// in the workspace since it started; with recovery "wait" the run waits
// for an operator instead, whose --no tells the model and whose --yes
// makes the call again.
func InterruptedCall(t *testing.T, d Driver) {
	requireSandbox(t)
	root := t.TempDir()
	at := boundaryIndex(t, d, root, "tool-ran call_5_0")
	t.Run("tell", func(t *testing.T) {
		k := newKit(t, d, root)
		if _, killed, err := k.child("", at, ""); !killed {
			t.Fatalf("not killed: %v", err)
		}
		run := k.runID(t)
		rep, _, err := k.child(run, 0, "")
		if err != nil || rep.Err != "" || rep.Outcome.Kind != agent.Succeeded {
			t.Fatalf("resumed: %+v %v %s", rep.Outcome, err, rep.Err)
		}
		if got := k.result(t, run).files["log.txt"]; got != "one\ntwo\nthree\n" {
			t.Errorf("log.txt = %q: the interrupted command ran again", got)
		}
		reqs := requestsOf(t, k, run)
		for _, want := range []string{"shell: interrupted", "it is not one rein repeats on its own", "1 change(s) in the workspace since the call started:", "added log.txt (4 bytes, sha256 "} {
			if !strings.Contains(reqs, want) {
				t.Errorf("the model was not told %q:\n%s", want, reqs)
			}
		}
	})
	for _, answer := range []string{"no", "yes"} {
		t.Run("wait/"+answer, func(t *testing.T) {
			k := newKit(t, d, root)
			if _, killed, err := k.child("", at, agent.RecoverWait); !killed {
				t.Fatalf("not killed: %v", err)
			}
			run := k.runID(t)
			rep, _, err := k.child(run, 0, "")
			if err != nil || rep.Err != "" || rep.Outcome.Kind != agent.AwaitingRecovery || rep.Outcome.Waiting == nil {
				t.Fatalf("resumed: %+v %v %s", rep.Outcome, err, rep.Err)
			}
			w := rep.Outcome.Waiting
			if w.CallID != "call_5_0" || !strings.Contains(w.Shown, `shell {"line":"echo one >> log.txt"}`) || !strings.Contains(w.Shown, "added log.txt") {
				t.Errorf("the operator is shown %+v", w)
			}
			if agent.AwaitingRecovery.ExitCode() != 6 {
				t.Errorf("awaiting_recovery exits %d", agent.AwaitingRecovery.ExitCode())
			}
			decide(t, k, run, w.Request, answer)
			rep, _, err = k.child(run, 0, "")
			if err != nil || rep.Err != "" || rep.Outcome.Kind != agent.Succeeded {
				t.Fatalf("resumed after the answer: %+v %v %s", rep.Outcome, err, rep.Err)
			}
			want := map[string]string{"no": "one\ntwo\nthree\n", "yes": "one\none\ntwo\nthree\n"}[answer]
			if got := k.result(t, run).files["log.txt"]; got != want {
				t.Errorf("log.txt = %q, want %q", got, want)
			}
			told := strings.Contains(requestsOf(t, k, run), "an operator chose not to make it again")
			if told != (answer == "no") {
				t.Errorf("answered %s: the model was told of the operator's choice: %v", answer, told)
			}
		})
	}
}

func decide(t *testing.T, k kit, run, request, answer string) error {
	t.Helper()
	s, err := k.d.open(k.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Decide(context.Background(), trace.ApprovalDecision{RunID: run, Request: request, Answer: answer, Note: "checked by hand", By: "test"})
}

// Lease: a second driver of a live run is refused, naming the first's
// pid and host; a killed driver's run is taken over at once with the
// generation bumped; a driver whose lease was taken over is fenced out at
// its next commit.
func Lease(t *testing.T, d Driver) {
	requireSandbox(t)
	root := t.TempDir()
	at := boundaryIndex(t, d, root, "model-after 5.1")
	k := newKit(t, d, root)
	if _, killed, err := k.child("", at, ""); !killed {
		t.Fatalf("not killed: %v", err)
	}
	run := k.runID(t)
	// Two resumptions at once: the first holds the run while it sleeps
	// at its first boundary; the second is refused.
	cfg, _ := json.Marshal(childConfig{Driver: k.driver, WS: k.ws, Store: k.store, Calls: k.calls, Cache: k.cache, Resume: run})
	first := exec.Command(os.Args[0], "-test.run=^$")
	first.Env = append(os.Environ(), childEnv+"="+string(cfg), "REIN_AGENT_TEST_HOLD=1")
	var out1 bytes.Buffer
	first.Stdout = &out1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Wait()
	s, err := k.d.open(k.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held *trace.Lease
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		runs, _ := s.DurableRuns(context.Background())
		if len(runs) == 1 && runs[0].Lease != nil && runs[0].Lease.PID == first.Process.Pid {
			held = runs[0].Lease
			break
		}
	}
	if held == nil {
		t.Fatal("the first resumption did not take the lease")
	}
	if held.Generation != 2 {
		t.Errorf("the dead driver's lease was taken over at generation %d, want 2", held.Generation)
	}
	rep, _, err := k.child(run, 0, "")
	host, _ := os.Hostname()
	var lh *trace.LeaseHeldError
	if err != nil || !strings.Contains(rep.Err, fmt.Sprintf("is being driven by pid %d on host %s", first.Process.Pid, host)) {
		t.Errorf("the second resumption: %v %q", err, rep.Err)
	}
	if _, err := s.AcquireLease(context.Background(), run, time.Minute); !errors.As(err, &lh) || lh.Lease.PID != first.Process.Pid {
		t.Errorf("a lease taken beside the first: %v", err)
	}
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	var got childReport
	if err := json.Unmarshal(out1.Bytes(), &got); err != nil || got.Outcome.Kind != agent.Succeeded {
		t.Fatalf("the first resumption: %s %v", out1.String(), err)
	}

	// Fenced: a run whose lease is taken over in its middle stops at its
	// next commit, and records nothing more.
	ws := newKit(t, d, root).ws
	calls := filepath.Join(t.TempDir(), "calls")
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o, err := scriptOptions(ws, calls, store)
	if err != nil {
		t.Fatal(err)
	}
	var lease trace.Lease
	o.Boundary = func(name string) {
		if name != "model-after 2.1" {
			return
		}
		runs, _ := store.DurableRuns(context.Background())
		// Another driver, elsewhere, finds the lease expired and takes
		// the run.
		db, err := sql.Open("sqlite", store.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE leases SET host = 'elsewhere', expires_at = ? WHERE run_id = ?`, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano), runs[0].RunID); err != nil {
			t.Fatal(err)
		}
		if lease, err = store.AcquireLease(context.Background(), runs[0].RunID, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	out, err := d.Run(context.Background(), scriptContract(ws, ""), o)
	var fenced *trace.FencedError
	if !errors.As(err, &fenced) || fenced.Held != 1 || fenced.Current != 2 || lease.Generation != 2 {
		t.Fatalf("the run whose lease was taken: %+v, %v", out, err)
	}
	steps, _ := store.Steps(context.Background(), out.Run)
	if len(steps) != 2 {
		t.Errorf("the fenced driver recorded %d steps, want the baseline gate's and the 1 before the takeover", len(steps))
	}
	if ends, _ := store.Runs(context.Background(), 0); len(ends) != 1 || ends[0].EndedAt != nil {
		t.Errorf("the fenced driver recorded the run's end: %+v", ends)
	}
}
