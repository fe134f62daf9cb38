package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// treeModel is one scripted model for a whole run tree: each request is
// answered by the script of its run's goal (the first line of the first
// message), at the run's step (the replies so far). A script's step may
// be a function of the request (to read what a child said).
type treeModel struct {
	mu      sync.Mutex
	scripts map[string][]func(Request) *Response
	// seen are the goals of the requests, in order; block makes the
	// model wait for its context on the goals it names.
	seen  []string
	at    []time.Time
	block map[string]bool
	// started is told of each blocked call.
	started chan string
}

func (m *treeModel) Name() string  { return "tree" }
func (m *treeModel) Model() string { return "tree-1" }
func (m *treeModel) Stream(ctx context.Context, req Request) (*Response, error) {
	goal, _, _ := strings.Cut(req.Messages[0].Text, "\n")
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == RoleAssistant {
			n++
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, goal)
	m.at = append(m.at, time.Now())
	script, block := m.scripts[goal], m.block[goal]
	m.mu.Unlock()
	if block {
		if m.started != nil {
			m.started <- goal
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	usage := Usage{Input: 100, Output: 10}
	if n >= len(script) {
		return &Response{Text: "done: " + goal, Finish: FinishStop, Usage: usage}, nil
	}
	r := script[n](req)
	r.Usage = usage
	if len(r.ToolCalls) > 0 {
		r.Finish = FinishToolCalls
	} else {
		r.Finish = FinishStop
	}
	return r, nil
}

func calls(cs ...ToolCall) func(Request) *Response {
	return func(Request) *Response { return &Response{Text: "working", ToolCalls: cs} }
}

func reply(text string) func(Request) *Response {
	return func(Request) *Response { return &Response{Text: text} }
}

func spawnCall(id string, a SpawnArgs) ToolCall {
	data, _ := json.Marshal(a)
	return call(id, SpawnTool, string(data))
}

// treeKit is a git workspace with four packages to summarise and a bug
// to fix, its policy (auto, with a gate that passes once the bug is
// fixed) and its trace.
type treeKit struct {
	ws    string
	home  string
	store *sqlite.Store
	opts  func(m Provider) Options
}

func newTreeKit(t *testing.T) treeKit {
	t.Helper()
	requireSandbox(t)
	ws := t.TempDir()
	files := map[string]string{"bug.txt": "broken\n", ".gitignore": "*.o\n"}
	for _, p := range []string{"a", "b", "c", "d"} {
		files["pkg/"+p+".txt"] = "package " + p + " does " + strings.Repeat(p, 3) + "\n"
	}
	testenv.WriteFiles(t, ws, files, 0o644)
	testenv.Git(t, ws, "init", "-q", "-b", "main")
	testenv.Git(t, ws, "config", "user.email", "dev@example.com")
	testenv.Git(t, ws, "config", "user.name", "Dev")
	testenv.Git(t, ws, "add", ".")
	testenv.Git(t, ws, "commit", "-qm", "start")
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	home := t.TempDir()
	if _, err := treeOptions(ws, home, store, nil); err != nil {
		t.Fatal(err)
	}
	return treeKit{ws: ws, home: home, store: store, opts: func(m Provider) Options {
		o, _ := treeOptions(ws, home, store, m)
		return o
	}}
}

// treeOptions are the options of a tree run in ws: auto, with a gate that
// passes once the bug is fixed, the same policy loaded for a worktree.
func treeOptions(ws, home string, store *sqlite.Store, m Provider) (Options, error) {
	load := func(dir string) (*policy.Policy, error) {
		mode := policy.ModeAuto
		return policy.Load(policy.Options{Workspace: dir, Home: home, NoFiles: true, Mode: &mode,
			Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "grep -q fixed bug.txt"}}})
	}
	p, err := load(ws)
	if err != nil {
		return Options{}, err
	}
	return Options{Provider: m, PolicyFor: load,
		Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}}, nil
}

var branchRE = regexp.MustCompile(`committed on the branch (\S+) `)

// fanOut is the script of a parent that hands four packages to four
// read-only children and the bug to a child in a worktree, merges the
// branch the latter names, and ends.
func fanOut() map[string][]func(Request) *Response {
	s := map[string][]func(Request) *Response{}
	var spawns []ToolCall
	for i, p := range []string{"a", "b", "c", "d"} {
		goal := "summarise pkg/" + p + ".txt"
		spawns = append(spawns, spawnCall(fmt.Sprintf("s%d", i), SpawnArgs{Goal: goal, ReadOnly: true}))
		s[goal] = []func(Request) *Response{calls(call("r1", "read_file", `{"path":"pkg/`+p+`.txt"}`)), func(req Request) *Response {
			last := req.Messages[len(req.Messages)-1].Text
			return &Response{Text: "summary of " + p + ": " + strings.TrimSpace(last[strings.LastIndex(last, "package"):])}
		}}
	}
	spawns = append(spawns, spawnCall("s4", SpawnArgs{Goal: "fix bug.txt", Worktree: true}))
	s["fix bug.txt"] = []func(Request) *Response{calls(call("e1", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`)), reply("fixed it")}
	s["fan out"] = []func(Request) *Response{calls(spawns...), func(req Request) *Response {
		for _, msg := range req.Messages {
			if m := branchRE.FindStringSubmatch(msg.Text); m != nil {
				return &Response{Text: "merging", ToolCalls: []ToolCall{call("m1", "git_merge", `{"branch":"`+m[1]+`"}`)}}
			}
		}
		return &Response{Text: "no branch was named"}
	}, reply("all done")}
	return s
}

// TestSpawnFanOut: a parent fans out four read-only children that each
// summarise a package, and one child in a worktree that fixes the bug;
// the parent merges the branch the child names, and its gate passes. The
// run ends succeeded, each child's answer came back as one observation,
// the tree's spending is counted in the root's ledger and within its
// budget, the read-only children ran at once, each child is linked to
// its parent's step, and the worktree is gone with its branch kept.
func TestSpawnFanOut(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: fanOut()}
	c := Contract{Goal: "fan out", Workspace: k.ws, Verify: &Gate{Line: "grep -q fixed bug.txt", ExpectExit: 0}, Budget: Budget{Steps: 40, Tokens: 200000}}
	out, err := Run(context.Background(), c, k.opts(m))
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != Succeeded {
		t.Fatalf("%+v", out)
	}
	if out.Children == nil || out.Children.Runs != 5 || out.Children.Steps != 10 {
		t.Fatalf("the children's spending: %+v", out.Children)
	}
	tree := out.Children.Steps + out.Steps
	if tree > c.Budget.Steps || loop.Sat(out.Tokens.Input, out.Tokens.Output)+loop.Sat(out.Children.Tokens.Input, out.Children.Tokens.Output) > c.Budget.Tokens {
		t.Fatalf("the tree spent past the root's budget: %+v %+v", out, out.Children)
	}
	if got := strings.TrimSpace(testenv.Git(t, k.ws, "show", "HEAD:bug.txt")); got != "fixed" {
		t.Errorf("the merge: bug.txt is %q", got)
	}
	st, err := LoadState(context.Background(), k.store, out.Run)
	if err != nil {
		t.Fatal(err)
	}
	var obs []string
	for _, msg := range st.Transcript {
		if msg.Role == RoleTool && strings.Contains(msg.Text, "spawn_agent: the child run") {
			obs = append(obs, msg.Text)
		}
	}
	if len(obs) != 5 {
		t.Fatalf("%d child observations", len(obs))
	}
	for i, p := range []string{"a", "b", "c", "d"} {
		id := loop.ChildID(out.Run, 1, i)
		if !strings.Contains(obs[i], "the child run "+id+" ended finished") || !strings.Contains(obs[i], "summary of "+p+": package "+p+" does "+strings.Repeat(p, 3)) {
			t.Errorf("child %d's observation: %s", i, obs[i])
		}
		cs, err := LoadState(context.Background(), k.store, id)
		if err != nil {
			t.Fatal(err)
		}
		ch := cs.Contract.Child
		if ch == nil || ch.Parent != out.Run || ch.Root != out.Run || ch.Step != 1 || ch.Index != i || ch.Depth != 1 || !ch.ReadOnly || slices.Contains(ch.Tools, "write_file") {
			t.Errorf("child %d's link: %+v", i, ch)
		}
	}
	wt := loop.ChildID(out.Run, 1, 4)
	if !strings.Contains(obs[4], "the child run "+wt+" ended succeeded") || !strings.Contains(obs[4], "committed on the branch rein/"+wt+"/work ") {
		t.Errorf("the worktree child's observation: %s", obs[4])
	}
	if got := strings.TrimSpace(testenv.Git(t, k.ws, "show", "rein/"+wt+"/work:bug.txt")); got != "fixed" {
		t.Errorf("the child's branch: bug.txt is %q", got)
	}
	if list, _ := sandbox.Worktrees(k.ws); len(list) != 0 {
		t.Errorf("the child's worktree is still there: %+v", list)
	}
	// The read-only children asked the model at once: their first
	// requests came before any's second.
	m.mu.Lock()
	firsts := 0
	for _, g := range m.seen {
		if strings.HasPrefix(g, "summarise") {
			firsts++
		} else if firsts > 0 {
			break
		}
	}
	m.mu.Unlock()
	if firsts < 4 {
		t.Errorf("the read-only children did not run at once: %v", m.seen)
	}
}

// TestSpawnNarrows: a child is never given more than its parent has: a
// tool the parent lacks, a person's tool, spawning past the tree's depth
// are refused, and a child's policy is its parent's (a command the
// parent's policy denies is denied in the child).
func TestSpawnNarrows(t *testing.T) {
	k := newTreeKit(t)
	limits := &loop.ChildLimits{Depth: 1, Concurrency: 2, Total: 3}
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"narrow": {calls(
			spawnCall("w1", SpawnArgs{Goal: "widen", Tools: []string{"read_file", "run_command"}}),
			spawnCall("w2", SpawnArgs{Goal: "ask", Tools: []string{QuestionTool}}),
			spawnCall("w3", SpawnArgs{Goal: "deeper", Tools: []string{SpawnTool}}),
			spawnCall("w4", SpawnArgs{Goal: "deny", Tools: []string{"shell"}}),
		)},
		"deny": {calls(call("x1", "shell", `{"line":"curl https://example.com"}`)), reply("could not")},
	}}
	o := k.opts(m)
	o.Registry = nil
	out, err := Run(context.Background(), Contract{Goal: "narrow", Workspace: k.ws, Children: limits}, o)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := LoadState(context.Background(), k.store, out.Run)
	text := ""
	for _, msg := range st.Transcript {
		text += msg.Text + "\n"
	}
	for _, want := range []string{
		"a child gets no tool its parent cannot give: run_command (it is not one of yours)",
		"a child gets no tool its parent cannot give: " + QuestionTool + " (a child asks no person)",
		"a child gets no tool its parent cannot give: spawn_agent (a child at depth 1 may not spawn (the tree's depth is 1))",
		"the child run " + loop.ChildID(out.Run, 1, 3) + " ended finished",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the transcript does not say %q:\n%s", want, text)
		}
	}
	cs, err := LoadState(context.Background(), k.store, loop.ChildID(out.Run, 1, 3))
	if err != nil {
		t.Fatal(err)
	}
	child := ""
	for _, msg := range cs.Transcript {
		child += msg.Text + "\n"
	}
	if !strings.Contains(child, "denied") || !slices.Equal(cs.Contract.Child.Tools, []string{"shell"}) {
		t.Errorf("the child's curl was not denied by its parent's policy:\n%s", child)
	}
}

// TestSpawnCancel: a cancel of the root, mid-fan-out, cancels every
// child's model call in flight at once; no request reaches the model
// after it, and the tree ends cancelled.
func TestSpawnCancel(t *testing.T) {
	k := newTreeKit(t)
	s := fanOut()
	m := &treeModel{scripts: s, block: map[string]bool{}, started: make(chan string, 16)}
	for _, p := range []string{"a", "b", "c", "d"} {
		m.block["summarise pkg/"+p+".txt"] = true
	}
	m.block["fix bug.txt"] = true
	var runID atomic.Value
	o := k.opts(m)
	o.Observer = func(e Event) {
		if e.Kind == EventStarted && !strings.Contains(e.Run, ".") {
			runID.Store(e.Run)
		}
	}
	done := make(chan Outcome, 1)
	go func() {
		out, _ := Run(context.Background(), Contract{Goal: "fan out", Workspace: k.ws, Budget: Budget{Steps: 40}, Children: &loop.ChildLimits{Depth: 2, Concurrency: 4, Total: 16}}, o)
		done <- out
	}()
	for range 4 {
		select {
		case <-m.started:
		case <-time.After(30 * time.Second):
			t.Fatal("the children did not start")
		}
	}
	run := runID.Load().(string)
	asked := time.Now()
	if _, err := k.store.Append(context.Background(), trace.ApprovalRequest{RunID: run, Request: "c1", Kind: CancelRequest, Shown: "cancel the tree", At: asked}); err != nil {
		t.Fatal(err)
	}
	var out Outcome
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the tree did not stop")
	}
	if out.Kind != Cancelled || !strings.Contains(out.Reason, "cancelled by request c1") {
		t.Fatalf("%+v", out)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, at := range m.at {
		if at.After(asked) {
			t.Errorf("a request after the cancel: %s", m.seen[i])
		}
	}
	// Four children at once; the fifth waited for a place and was
	// cancelled before it began.
	if len(m.seen) != 5 {
		t.Errorf("the requests: %v", m.seen)
	}
	ran := 0
	for i := range 5 {
		cs, err := LoadState(context.Background(), k.store, loop.ChildID(run, 1, i))
		if err != nil {
			continue
		}
		ran++
		if cs.Done == nil || cs.Done.Kind != Cancelled {
			t.Errorf("child %d: %+v", i, cs.Done)
		}
	}
	if ran != 4 {
		t.Errorf("%d children ran, want 4", ran)
	}
	t.Logf("the tree stopped %s after the cancel", time.Since(asked).Round(time.Millisecond))
}

// treeContract is the fan-out's: a gate that passes once the merged fix
// is in.
func treeContract(ws string) Contract {
	return Contract{Goal: "fan out", Workspace: ws, Verify: &Gate{Line: "grep -q fixed bug.txt", ExpectExit: 0}, Budget: Budget{Steps: 40, Tokens: 200000}}
}

// spawnKillEnv names the configuration of a test binary started to drive
// a tree and die at one of its boundaries.
const spawnKillEnv = "REIN_SPAWN_KILL"

type spawnKillConfig struct {
	WS, Home, Store, Cache string
	// Target is the boundary to die at (the root's id written R); Resume
	// the run to resume.
	Target, Resume string
}

// spawnKillChild drives the fan-out in a test binary started by
// TestSpawnKill, dying with SIGKILL at its target boundary; it prints the
// outcome and the boundaries it passed.
func spawnKillChild() (int, bool) {
	env := os.Getenv(spawnKillEnv)
	if env == "" {
		return 0, false
	}
	var cfg spawnKillConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	os.Setenv("REIN_CACHE_DIR", cfg.Cache)
	store, err := sqlite.Open(cfg.Store, trace.NewRedactor())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	o, err := treeOptions(cfg.WS, cfg.Home, store, &treeModel{scripts: fanOut()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	var mu sync.Mutex
	var passed []string
	root := cfg.Resume
	o.Observer = func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if root == "" && e.Kind == EventStarted {
			root = e.Run
		}
	}
	o.Boundary = func(name string) {
		mu.Lock()
		if root != "" {
			name = strings.ReplaceAll(name, root, "R")
		}
		passed = append(passed, name)
		hit := name == cfg.Target
		mu.Unlock()
		if hit {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {}
		}
	}
	var out Outcome
	if cfg.Resume != "" {
		out, err = Resume(context.Background(), cfg.Resume, o)
	} else {
		out, err = Run(context.Background(), treeContract(cfg.WS), o)
	}
	store.Close()
	rep := map[string]any{"outcome": out, "boundaries": passed}
	if err != nil {
		rep["error"] = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0, true
}

// TestSpawnKill: the tree's driver killed with SIGKILL at each boundary
// of the spawn group, as a run never killed passes them (every effect
// boundary of a read-only child and of the worktree child: their starts,
// model calls, tool calls, gate attempts and commit; and the parent's
// step around them) and resumed ends as the tree never killed does:
// succeeded, the fix merged, each child run once (one run of each id in
// the trace, no other), the tree's spending within the root's budget. A
// kill between the worktree child's edit was journalled and its end
// (tool-started) tells that child its edit was interrupted, as any
// run's: the edit is never made again unseen, and the tree ends as that
// child's gate says.
func TestSpawnKill(t *testing.T) {
	requireSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	drive := func(cfg spawnKillConfig) (map[string]json.RawMessage, bool) {
		t.Helper()
		env, _ := json.Marshal(cfg)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), spawnKillEnv+"="+string(env))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
			return nil, true
		}
		if err != nil {
			t.Fatalf("the driver: %v\n%s", err, stderr.String())
		}
		var rep map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
			t.Fatalf("the driver's report %q: %v\n%s", stdout.String(), err, stderr.String())
		}
		return rep, false
	}
	// The boundaries, as a run never killed passes them.
	k := newTreeKit(t)
	rep, killed := drive(spawnKillConfig{WS: k.ws, Home: k.home, Store: k.store.Path(), Cache: os.Getenv("REIN_CACHE_DIR")})
	var passed []string
	if killed || json.Unmarshal(rep["boundaries"], &passed) != nil {
		t.Fatalf("the run never killed: %s", rep["error"])
	}
	var targets []string
	for _, b := range passed {
		if strings.HasPrefix(b, "child R.1.0 ") || strings.HasPrefix(b, "child R.1.4 ") || strings.HasSuffix(b, " call_1_0") && !strings.HasPrefix(b, "child ") {
			targets = append(targets, b)
		}
	}
	if len(targets) < 20 {
		t.Fatalf("%d boundaries of the spawn group: %q", len(targets), passed)
	}
	for _, target := range targets {
		t.Run(strings.ReplaceAll(target, " ", "_"), func(t *testing.T) {
			k := newTreeKit(t)
			cfg := spawnKillConfig{WS: k.ws, Home: k.home, Store: k.store.Path(), Cache: os.Getenv("REIN_CACHE_DIR"), Target: target}
			if _, killed := drive(cfg); !killed {
				t.Fatalf("the driver was not killed at %q", target)
			}
			runs, err := k.store.DurableRuns(context.Background())
			if err != nil || len(runs) == 0 {
				t.Fatalf("no run after the kill: %v", err)
			}
			root := ""
			for _, r := range runs {
				if !strings.Contains(r.RunID, ".") {
					root = r.RunID
				}
			}
			cfg.Target, cfg.Resume = "", root
			rep, killed := drive(cfg)
			if killed {
				t.Fatal("the resumed driver was killed")
			}
			var out Outcome
			json.Unmarshal(rep["outcome"], &out)
			// The children run side by side, so a kill at any boundary
			// can land while the worktree child's edit is journalled and
			// not yet made (at its own tool-started boundary always, at
			// another child's when the timing says so). Then the child is
			// told its edit was interrupted, makes no edit, and its gate
			// and the root's fail: the journal, not the boundary's name,
			// says which outcome is right.
			cs, err := LoadState(context.Background(), k.store, loop.ChildID(root, 1, 4))
			if err != nil {
				t.Fatalf("the worktree child's state: %v", err)
			}
			interrupted := slices.ContainsFunc(cs.Transcript, func(m Message) bool { return strings.Contains(m.Text, "edit_file: interrupted") })
			if (target == "child R.1.4 tool-started call_1_0" || target == "child R.1.4 tool-ran call_1_0") && !interrupted {
				t.Fatal("the worktree child was not told its edit was interrupted")
			}
			// An interrupted edit may or may not have been made before the
			// kill (tool-started: not; tool-ran: made, its result not
			// recorded); the tree then ends as the merged file says.
			fixed := strings.TrimSpace(testenv.Git(t, k.ws, "show", "HEAD:bug.txt")) == "fixed"
			if !interrupted && !fixed {
				t.Errorf("bug.txt is not fixed after the merge")
			}
			want := Succeeded
			if !fixed {
				want = GateFailed
			}
			if out.Kind != want || out.Children == nil || out.Children.Runs != 5 {
				t.Fatalf("resumed after the kill at %q (the edit interrupted: %v, made: %v): %+v %s", target, interrupted, fixed, out, rep["error"])
			}
			if out.Steps+out.Children.Steps > 40 {
				t.Errorf("the tree spent %d steps", out.Steps+out.Children.Steps)
			}
			// One run of each id, and no other: no child started twice.
			summaries, err := k.store.Runs(context.Background(), 100)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]int{}
			for _, s := range summaries {
				ids[s.ID]++
			}
			runs1 := map[string]int{root: 1}
			for i := range 5 {
				runs1[loop.ChildID(root, 1, i)] = 1
			}
			if !maps.Equal(ids, runs1) {
				t.Errorf("the runs: %v, want %v", ids, runs1)
			}
		})
	}
}

// TestSpawnWorktreeGit: a child in a worktree runs git in its sandbox
// (status, add, commit on its own branch work: the objects, its
// administrative directory and its branch are writable), and cannot
// change the rest of the repository: git config, a hook, another branch
// fail in the sandbox, and the parent is told nothing else changed.
func TestSpawnWorktreeGit(t *testing.T) {
	k := newTreeKit(t)
	before := testenv.Git(t, k.ws, "config", "--list", "--local")
	testenv.Git(t, k.ws, "branch", "other")
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"git": {calls(spawnCall("g1", SpawnArgs{Goal: "use git", Worktree: true}))},
		"use git": {calls(
			call("e1", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`),
			call("s1", "shell", `{"line":"git status --short"}`),
			call("s2", "shell", `{"line":"git config user.name evil"}`),
			call("s4", "shell", `{"line":"git commit -qam by-the-child"}`),
			call("s3", "shell", `{"line":"git branch -f other HEAD"}`),
			call("s5", "shell", `{"line":"git log --format=%s -1"}`),
		), reply("committed")},
	}}
	o := k.opts(m)
	o.Tool.Policy.Mode = policy.ModeAuto
	out, err := Run(context.Background(), Contract{Goal: "git", Workspace: k.ws, Budget: Budget{Steps: 20}}, o)
	if err != nil {
		t.Fatal(err)
	}
	id := loop.ChildID(out.Run, 1, 0)
	cs, err := LoadState(context.Background(), k.store, id)
	if err != nil {
		t.Fatal(err)
	}
	var obs []string
	for _, msg := range cs.Transcript {
		if msg.Role == RoleTool {
			obs = append(obs, msg.Text)
		}
	}
	t.Logf("%q", obs)
	if len(obs) != 6 || !strings.Contains(obs[1], " M bug.txt") || !strings.Contains(obs[3], "ok (exit 0)") || !strings.Contains(obs[5], "by-the-child") {
		t.Fatalf("git in the child's sandbox: %q", obs)
	}
	if !strings.Contains(obs[2], "denied") {
		t.Errorf("git config in the child: %s", obs[2])
	}
	// The policy lets the branch move through; the sandbox does not.
	if !strings.Contains(obs[4], "failed") || !strings.Contains(obs[4], "Read-only file system") {
		t.Errorf("git branch -f other in the child's sandbox: %s", obs[4])
	}
	if got := testenv.Git(t, k.ws, "log", "--format=%s", "-1", "other"); strings.TrimSpace(got) != "start" {
		t.Errorf("the branch other moved: %q", got)
	}
	if after := testenv.Git(t, k.ws, "config", "--list", "--local"); after != before {
		t.Errorf("the repository's config changed:\n%s", after)
	}
	if got := testenv.Git(t, k.ws, "log", "--format=%s", "-1", "rein/"+id+"/work"); !strings.Contains(got, "by-the-child") {
		t.Errorf("the child's branch: %q", got)
	}
	if got := testenv.Git(t, k.ws, "log", "--format=%s", "-1", "main"); strings.TrimSpace(got) != "start" {
		t.Errorf("main moved: %q", got)
	}
	st, _ := LoadState(context.Background(), k.store, out.Run)
	parent := ""
	for _, msg := range st.Transcript {
		parent += msg.Text + "\n"
	}
	head := strings.TrimSpace(testenv.Git(t, k.ws, "rev-parse", "rein/"+id+"/work"))
	if !strings.Contains(parent, "committed on the branch rein/"+id+"/work ("+head+"): bug.txt") {
		t.Errorf("the parent was not told of the child's own commit %s:\n%s", head, parent)
	}
	if strings.Contains(parent, ".git changed") {
		t.Errorf("the parent was told .git changed:\n%s", parent)
	}
}

// TestSpawnReplay: a tree replays: the root answers from its recorded
// calls and each child from those of the child the recorded root's same
// call started, and the replayed tree ends as the recorded one did; a
// replay whose child asks otherwise fails naming the difference.
func TestSpawnReplay(t *testing.T) {
	k := newTreeKit(t)
	start := strings.TrimSpace(testenv.Git(t, k.ws, "rev-parse", "HEAD"))
	first, err := Run(context.Background(), treeContract(k.ws), k.opts(&treeModel{scripts: fanOut()}))
	if err != nil || first.Kind != Succeeded {
		t.Fatalf("%+v %v", first, err)
	}
	calls, err := k.store.ProviderCalls(context.Background(), first.Run)
	if err != nil || len(calls) != 3 {
		t.Fatalf("%d calls: %v", len(calls), err)
	}
	replay := func(goal string) Outcome {
		t.Helper()
		testenv.Git(t, k.ws, "reset", "-q", "--hard", start)
		c := treeContract(k.ws)
		c.Goal = goal
		out, err := Run(context.Background(), c, k.opts(ReplayTree(calls, k.store.ProviderCalls)))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := replay("fan out")
	if out.Kind != Succeeded || out.Children == nil || *out.Children != *first.Children || out.Steps != first.Steps {
		t.Fatalf("the replay: %+v %+v, recorded %+v", out, out.Children, first.Children)
	}
	for i := range 5 {
		a, _ := LoadState(context.Background(), k.store, loop.ChildID(first.Run, 1, i))
		b, _ := LoadState(context.Background(), k.store, loop.ChildID(out.Run, 1, i))
		if a == nil || b == nil || lastReply(a) != lastReply(b) || a.Done.Kind != b.Done.Kind {
			t.Errorf("child %d replayed otherwise", i)
		}
	}
	if out := replay("fan out otherwise"); out.Kind != ProviderFailed || !strings.Contains(out.Reason, "differs from the recording") {
		t.Errorf("a replay that asks otherwise: %+v", out)
	}
}

// TestSpawnCancelChild: rein run cancel of one child stops that child
// alone: it ends cancelled, and its parent, told so in the child's
// observation, goes on with its next step.
func TestSpawnCancelChild(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"two": {calls(spawnCall("a", SpawnArgs{Goal: "wait", ReadOnly: true}), spawnCall("b", SpawnArgs{Goal: "quick", ReadOnly: true})), reply("went on")},
	}, block: map[string]bool{"wait": true}, started: make(chan string, 4)}
	var root atomic.Value
	o := k.opts(m)
	o.Observer = func(e Event) {
		if e.Kind == EventStarted && !strings.Contains(e.Run, ".") {
			root.Store(e.Run)
		}
	}
	done := make(chan Outcome, 1)
	go func() {
		out, _ := Run(context.Background(), Contract{Goal: "two", Workspace: k.ws, Budget: Budget{Steps: 20}}, o)
		done <- out
	}()
	select {
	case <-m.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not start")
	}
	child := loop.ChildID(root.Load().(string), 1, 0)
	if _, err := k.store.Append(context.Background(), trace.ApprovalRequest{RunID: child, Request: "c1", Kind: CancelRequest, Shown: "cancel one child", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var out Outcome
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the parent did not go on")
	}
	st, _ := LoadState(context.Background(), k.store, out.Run)
	if out.Kind != Finished || lastReply(st) != "went on" {
		t.Fatalf("the parent: %+v", out)
	}
	text := ""
	for _, msg := range st.Transcript {
		text += msg.Text + "\n"
	}
	if !strings.Contains(text, "the child run "+child+" ended cancelled: the run was cancelled by request c1") || !strings.Contains(text, "ended finished") {
		t.Errorf("the parent's transcript:\n%s", text)
	}
}
