package agent

// Attacks on child runs (spawn_agent): each test asserts the safe
// behaviour, so a test that fails names a hole.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/trace"
)

// atkShell is a shell call of line.
func atkShell(id, line string) ToolCall {
	data, _ := json.Marshal(map[string]string{"line": line})
	return call(id, "shell", string(data))
}

// atkScript is a call that writes script to evil.sh in the workspace and
// one that runs it: the policy sees "sh evil.sh", the sandbox the rest.
func atkScript(script string) []ToolCall {
	data, _ := json.Marshal(map[string]string{"path": "evil.sh", "content": "set -e\n" + script + "\nrm -f evil.sh\necho script-ok\n"})
	return []ToolCall{call("w", "write_file", string(data)), atkShell("x", "sh evil.sh")}
}

// atkTree runs the root goal of m in k's workspace with c's budget and
// limits; root is set to the root's id as soon as it starts.
func atkTree(t *testing.T, k treeKit, m *treeModel, c Contract, root *atomic.Value, tweak func(*Options)) Outcome {
	t.Helper()
	o := k.opts(m)
	o.Observer = func(e Event) {
		if e.Kind == EventStarted && !strings.Contains(e.Run, ".") {
			root.CompareAndSwap(nil, e.Run)
		}
	}
	if tweak != nil {
		tweak(&o)
	}
	c.Workspace = k.ws
	out, err := Run(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// atkToolTexts are the tool observations of run id.
func atkToolTexts(t *testing.T, k treeKit, id string) []string {
	t.Helper()
	s, err := LoadState(context.Background(), k.store, id)
	if err != nil {
		t.Fatalf("the run %s: %v", id, err)
	}
	var out []string
	for _, msg := range s.Transcript {
		if msg.Role == RoleTool {
			out = append(out, msg.Text)
		}
	}
	return out
}

// TestSpawnAttackReflogLink: a worktree child may write
// .git/logs/refs/heads/rein and its administrative directory, so it can
// put a symbolic link where git keeps its branch's reflog. rein's
// host-side git (commitRun's update-ref) then appends to whatever the
// link names, outside every sandbox. Safe: a file outside the repository
// is never written.
func TestSpawnAttackReflogLink(t *testing.T) {
	k := newTreeKit(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"reflog": {calls(spawnCall("g1", SpawnArgs{Goal: "plant", Worktree: true}))},
		"plant": {func(Request) *Response {
			// All the child needs it finds itself: its branch, the
			// repository's .git.
			script := fmt.Sprintf(`log=$(git rev-parse --git-common-dir)/logs/$(git symbolic-ref HEAD)
rm -f $log
ln -s %[1]s $log
rm -f "$(git rev-parse --git-dir)/logs/HEAD"
ln -s %[1]s "$(git rev-parse --git-dir)/logs/HEAD"`, victim)
			return &Response{Text: "planting", ToolCalls: append(atkScript(script),
				call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`))}
		}, reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "reflog", Budget: Budget{Steps: 20}}, &root, nil)
	obs := atkToolTexts(t, k, loop.ChildID(out.Run, 1, 0))
	t.Logf("the child's observations: %q", obs)
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("rein's host-side git wrote a file outside the repository through a link the child planted:\n%s", data)
	}
}

// TestSpawnAttackForgeRootCommit: refs/heads/rein is writable to a
// worktree child whole, the root's own result branch rein/<root> with
// it. A child plants there a commit whose parent is the root's start
// commit and whose message names the root run; the root's gate passes on
// its own workspace, and its commitRun (madeCommit) takes the planted
// commit as the one it made before a kill. Safe: the root's branch holds
// what the root's gate saw.
func TestSpawnAttackForgeRootCommit(t *testing.T) {
	k := newTreeKit(t)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"forge": {calls(spawnCall("g1", SpawnArgs{Goal: "plant", Worktree: true})),
			calls(call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`)), reply("done")},
		"plant": {func(Request) *Response {
			// The root's id is the child's branch but its last two
			// parts (rein/<root>.<step>.<index>).
			script := `b=$(git symbolic-ref --short HEAD)
r=${b%.*.*}
start=$(git rev-parse HEAD)
blob=$(echo pwned | git hash-object -w --stdin)
tree=$(git ls-tree $start | sed "s/[0-9a-f]\{40\}	bug.txt/$blob	bug.txt/" | git mktree)
c=$(printf 'rein: forge\n\nThe changes of rein run %s, whose gate "grep -q fixed bug.txt" passed.\n' ${r#rein/} | git commit-tree $tree -p $start)
git update-ref refs/heads/$r $c`
			return &Response{Text: "planting", ToolCalls: atkScript(script)}
		}, reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "forge", Commit: true, Verify: &Gate{Line: "grep -q fixed bug.txt", ExpectExit: 0}, Budget: Budget{Steps: 20}}, &root, nil)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, loop.ChildID(out.Run, 1, 0)))
	if out.Kind != Succeeded || out.Commit == nil || out.Commit.Hash == "" {
		t.Fatalf("the root: %+v %+v", out, out.Commit)
	}
	if got := strings.TrimSpace(testenv.Git(t, k.ws, "show", out.Commit.Hash+":bug.txt")); got != "fixed" {
		t.Errorf("the root's result commit %s on %s is the child's: bug.txt is %q, the gate saw \"fixed\"", out.Commit.Hash, out.Commit.Branch, got)
	}
}

// TestSpawnAttackObjects: .git/objects is writable to a worktree child
// whole: it can replace an object the repository already has (git trusts
// a loose object's name, not its content) and plant
// objects/info/alternates (one of sandbox.gitControl). Safe: main's
// content is what it was, no alternates appear, or at least the parent
// is told.
func TestSpawnAttackObjects(t *testing.T) {
	k := newTreeKit(t)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"objects": {calls(spawnCall("g1", SpawnArgs{Goal: "rewrite", Worktree: true}))},
		"rewrite": {func(Request) *Response {
			script := `common=$(git rev-parse --git-common-dir)
old=$(git rev-parse main:bug.txt)
new=$(echo pwned | git hash-object -w --stdin)
o=$common/objects/$(echo $old | cut -c1-2)/$(echo $old | cut -c3-)
n=$common/objects/$(echo $new | cut -c1-2)/$(echo $new | cut -c3-)
rm -f $o
cp $n $o
echo /nonexistent-rein-objects > $common/objects/info/alternates`
			return &Response{Text: "rewriting", ToolCalls: atkScript(script)}
		}, reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "objects", Budget: Budget{Steps: 20}}, &root, nil)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, loop.ChildID(out.Run, 1, 0)))
	told := strings.Contains(strings.Join(atkToolTexts(t, k, out.Run), "\n"), ".git changed")
	if got := strings.TrimSpace(testenv.Git(t, k.ws, "show", "main:bug.txt")); got != "broken" {
		t.Errorf("a child rewrote main's content: main:bug.txt is %q (the parent was told: %v)", got, told)
	}
	if _, err := os.Stat(filepath.Join(k.ws, ".git", "objects", "info", "alternates")); err == nil {
		t.Errorf("a child planted .git/objects/info/alternates (the parent was told: %v)", told)
	}
}

// TestSpawnAttackCommondir: commitRun checks that the worktree's .git
// still leads to its administrative directory, but that directory is the
// child's to write, its commondir with it. A child points commondir at a
// repository of its own making (the real objects as alternates, its
// config naming another user): rein's host-side git then commits there,
// as that user, and reports a commit the repository's branch does not
// have. Safe: rein runs no git through a changed commondir (no commit,
// or the commit on the real branch).
func TestSpawnAttackCommondir(t *testing.T) {
	k := newTreeKit(t)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"redirect": {calls(spawnCall("g1", SpawnArgs{Goal: "redirect it", Worktree: true}))},
		"redirect it": {func(Request) *Response {
			script := `admin=$(git rev-parse --git-dir)
common=$(git rev-parse --git-common-dir)
mkdir -p $admin/evil/objects/info
cp -r $common/refs $common/HEAD $admin/evil/
if [ -f $common/packed-refs ]; then cp $common/packed-refs $admin/evil/; fi
echo $common/objects > $admin/evil/objects/info/alternates
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n[user]\n\tname = Evil\n\temail = evil@example.com\n' > $admin/evil/config
echo evil > $admin/commondir`
			return &Response{Text: "redirecting", ToolCalls: append(atkScript(script),
				call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`))}
		}, reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "redirect", Budget: Budget{Steps: 20}}, &root, nil)
	id := loop.ChildID(out.Run, 1, 0)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, id))
	cs, err := LoadState(context.Background(), k.store, id)
	if err != nil || cs.Done == nil {
		t.Fatalf("the child: %v %+v", err, cs)
	}
	c := cs.Done.Commit
	t.Logf("the child's outcome: %s %s; commit %+v", cs.Done.Kind, cs.Done.Reason, c)
	if c == nil || c.Hash == "" {
		return
	}
	real := strings.TrimSpace(testenv.Git(t, k.ws, "rev-parse", "refs/heads/"+c.Branch))
	if real != c.Hash {
		t.Errorf("rein's host-side git followed the child's commondir: it reports the commit %s on %s, the repository's branch is at %s", c.Hash, c.Branch, real)
	}
}

// TestSpawnAttackTokenOvershoot: a child's token budget is carved from
// what the root has left, but a run only stops once a response has put it
// past its budget: each child spends a whole response however small its
// share. Eight children of a root with 400 tokens spend 880. Safe: the
// tree spends at most the root's budget and one response.
func TestSpawnAttackTokenOvershoot(t *testing.T) {
	k := newTreeKit(t)
	var spawns []ToolCall
	for i := range 8 {
		spawns = append(spawns, spawnCall(fmt.Sprintf("s%d", i), SpawnArgs{Goal: fmt.Sprintf("tiny %d", i), ReadOnly: true, Tokens: 1}))
	}
	m := &treeModel{scripts: map[string][]func(Request) *Response{"many": {calls(spawns...)}}}
	var root atomic.Value
	budget := int64(400)
	out := atkTree(t, k, m, Contract{Goal: "many", Budget: Budget{Steps: 100, Tokens: budget}}, &root, nil)
	spent := loop.Sat(out.Tokens.Input, out.Tokens.Output)
	if out.Children != nil {
		spent += loop.Sat(out.Children.Tokens.Input, out.Children.Tokens.Output)
		t.Logf("the children: %+v", *out.Children)
	}
	if spent > budget+110 {
		t.Errorf("the tree spent %d tokens of a root budget of %d (%s: %s)", spent, budget, out.Kind, out.Reason)
	}
}

// TestSpawnAttackTotalAfterResume: the tree's count of children
// ([run] children) lives in the driver's memory: a root that parks for an
// approval (or is killed) and is resumed starts counting again. Safe: a
// tree limited to 2 children starts 2 in all.
func TestSpawnAttackTotalAfterResume(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"count": {
			calls(spawnCall("a", SpawnArgs{Goal: "child a", ReadOnly: true}), spawnCall("b", SpawnArgs{Goal: "child b", ReadOnly: true})),
			calls(atkShell("ask", "touch approved.txt")),
			calls(spawnCall("c", SpawnArgs{Goal: "child c", ReadOnly: true}), spawnCall("d", SpawnArgs{Goal: "child d", ReadOnly: true})),
			reply("done"),
		},
	}}
	limits := &loop.ChildLimits{Depth: 2, Concurrency: 4, Total: 2}
	opts := func() Options {
		o := k.opts(m)
		mode := policy.ModeAuto
		p, err := policy.Load(policy.Options{Workspace: k.ws, Home: k.home, NoFiles: true, Mode: &mode,
			Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Ask, Pattern: "touch approved.txt"}}})
		if err != nil {
			t.Fatal(err)
		}
		o.Tool.Policy, o.Tool.Approver = p, Defer{}
		return o
	}
	out, err := Run(context.Background(), Contract{Goal: "count", Workspace: k.ws, Budget: Budget{Steps: 40}, Children: limits}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != AwaitingApproval || out.Waiting == nil {
		t.Fatalf("the root did not park: %+v", out)
	}
	if err := k.store.Decide(context.Background(), trace.ApprovalDecision{RunID: out.Run, Request: out.Waiting.Request, Answer: "yes", By: "test"}); err != nil {
		t.Fatal(err)
	}
	out, err = Resume(context.Background(), out.Run, opts())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := k.store.Runs(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, r := range runs {
		if strings.HasPrefix(r.ID, out.Run+".") {
			kids = append(kids, r.ID)
		}
	}
	if len(kids) > limits.Total {
		t.Errorf("a tree limited to %d children started %d: %v (%s)", limits.Total, len(kids), kids, out.Kind)
	}
}

// TestSpawnAttackGrandchildTools: a child given read_file and
// spawn_agent cannot give its own child a tool it lacks (shell), nor get
// one by omitting the list: its child's tools are a subset of its own.
func TestSpawnAttackGrandchildTools(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"grand":   {calls(spawnCall("a", SpawnArgs{Goal: "middle", Tools: []string{"read_file", SpawnTool}}))},
		"middle":  {calls(spawnCall("b", SpawnArgs{Goal: "wide", Tools: []string{"shell"}}), spawnCall("c", SpawnArgs{Goal: "default"}))},
		"wide":    {calls(atkShell("x", "touch wide.txt"))},
		"default": {calls(atkShell("x", "touch default.txt"))},
	}}
	var root atomic.Value
	out := atkTree(t, k, m, Contract{Goal: "grand", Budget: Budget{Steps: 40}}, &root, nil)
	mid := loop.ChildID(out.Run, 1, 0)
	obs := strings.Join(atkToolTexts(t, k, mid), "\n")
	if !strings.Contains(obs, "a child gets no tool its parent cannot give: shell") {
		t.Errorf("the grandchild was given shell: %s", obs)
	}
	if s, err := LoadState(context.Background(), k.store, loop.ChildID(mid, 1, 1)); err == nil {
		if tools := s.Contract.Child.Tools; len(tools) != 1 || tools[0] != "read_file" {
			t.Errorf("the default grandchild's tools: %v", tools)
		}
	}
	for _, f := range []string{"wide.txt", "default.txt"} {
		if _, err := os.Stat(filepath.Join(k.ws, f)); err == nil {
			t.Errorf("a grandchild ran shell: %s", f)
		}
	}
}

// TestSpawnAttackWorktreesAtOnce: eight worktree children at once
// (child_concurrency 8), three steps running: their git_worktree adds
// run git worktree add at once in one repository, each reading the
// others' administrative directories while they are made. Each child gets
// its worktree and commits on its own branch, and no worktree is left.
func TestSpawnAttackWorktreesAtOnce(t *testing.T) {
	k := newTreeKit(t)
	s := map[string][]func(Request) *Response{}
	files := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	const rounds = 3
	for r := range rounds {
		var spawns []ToolCall
		for i, p := range files {
			goal := fmt.Sprintf("change %s%d", p, r)
			spawns = append(spawns, spawnCall(fmt.Sprintf("s%d", i), SpawnArgs{Goal: goal, Worktree: true, Tools: []string{"write_file"}}))
			s[goal] = []func(Request) *Response{calls(call("e", "write_file", fmt.Sprintf(`{"path":"new/%s%d.txt","content":"did"}`, p, r))), reply("ok")}
		}
		s["eight"] = append(s["eight"], calls(spawns...))
	}
	var root atomic.Value
	out := atkTree(t, k, &treeModel{scripts: s}, Contract{Goal: "eight", Budget: Budget{Steps: 100, Tokens: 100000},
		Children: &loop.ChildLimits{Depth: 2, Concurrency: 8, Total: rounds * len(files)}}, &root, nil)
	obs := atkToolTexts(t, k, out.Run)
	for r := range rounds {
		for i, p := range files {
			id := loop.ChildID(out.Run, r+1, i)
			if got, err := exec.Command("git", "-C", k.ws, "show", fmt.Sprintf("rein/%s/work:new/%s%d.txt", id, p, r)).Output(); err != nil || string(got) != "did" {
				o := ""
				if n := r*len(files) + i; n < len(obs) {
					o = obs[n]
				}
				t.Errorf("child %s made no commit: %s", id, o)
			}
		}
	}
	if left := testenv.Git(t, k.ws, "worktree", "list", "--porcelain"); strings.Count(left, "worktree ") != 1 {
		t.Errorf("worktrees left: %s", left)
	}
}

// TestSpawnAttackStepsAfterRelease: a child's carved budget is reserved
// while it runs and released when it ends, but what it spent reaches the
// parent's ledger only when the whole spawn group ends. A child that
// waits for a place (child_concurrency 1 here; the fifth of eight by
// default) carves after its sibling ended, from a ledger that counts
// neither the sibling's reservation nor its spending. Safe: the tree
// takes at most the root's steps.
func TestSpawnAttackStepsAfterRelease(t *testing.T) {
	k := newTreeKit(t)
	long := func() []func(Request) *Response {
		var s []func(Request) *Response
		for range 30 {
			s = append(s, calls(call("r", "read_file", `{"path":"bug.txt"}`)))
		}
		return s
	}
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"steps":  {calls(spawnCall("a", SpawnArgs{Goal: "long a", ReadOnly: true}), spawnCall("b", SpawnArgs{Goal: "long b", ReadOnly: true}))},
		"long a": long(),
		"long b": long(),
	}}
	var root atomic.Value
	budget := 10
	out := atkTree(t, k, m, Contract{Goal: "steps", Budget: Budget{Steps: budget}, Children: &loop.ChildLimits{Depth: 2, Concurrency: 1, Total: 16}}, &root, nil)
	steps := out.Steps
	if out.Children != nil {
		steps += out.Children.Steps
	}
	for i := range 2 {
		if s, err := LoadState(context.Background(), k.store, loop.ChildID(out.Run, 1, i)); err == nil {
			t.Logf("child %d: budget %d steps, took %d", i, s.Contract.Budget.Steps, s.Steps)
		}
	}
	if steps > budget {
		t.Errorf("the tree took %d steps of a root budget of %d (%s: %s)", steps, budget, out.Kind, out.Reason)
	}
}

// TestSpawnAttackBackground: a child starts a background command and
// ends: the command does not outlive the child (nor the tree).
func TestSpawnAttackBackground(t *testing.T) {
	k := newTreeKit(t)
	mark := fmt.Sprintf("%d.4242", 40+os.Getpid()%50)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"bg":     {calls(spawnCall("a", SpawnArgs{Goal: "linger", Tools: []string{"shell"}}))},
		"linger": {calls(atkShell("s", "sleep "+mark+" &")), reply("left it running")},
	}}
	var root atomic.Value
	out := atkTree(t, k, m, Contract{Goal: "bg", Budget: Budget{Steps: 10}}, &root, nil)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, loop.ChildID(out.Run, 1, 0)))
	pids := atkPids("sleep " + mark)
	for _, p := range pids {
		if pr, err := os.FindProcess(p); err == nil {
			pr.Kill()
		}
	}
	if len(pids) > 0 {
		t.Errorf("the child's background command outlived the tree: pids %v", pids)
	}
}

// atkPids are the processes whose command line is cmd.
func atkPids(cmd string) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(d.Name(), "%d", &pid); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.TrimRight(strings.ReplaceAll(string(data), "\x00", " "), " ") == cmd {
			out = append(out, pid)
		}
	}
	return out
}

// TestSpawnAttackCallID: the model's own ids for its spawn calls (a
// crafted one, the same one twice) neither name the child nor link it:
// each child is its parent's id, step and index, its call rein's key.
func TestSpawnAttackCallID(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"ids": {calls(spawnCall("../x.9.9", SpawnArgs{Goal: "one", ReadOnly: true}), spawnCall("../x.9.9", SpawnArgs{Goal: "two", ReadOnly: true}))},
	}}
	var root atomic.Value
	out := atkTree(t, k, m, Contract{Goal: "ids", Budget: Budget{Steps: 10}}, &root, nil)
	runs, _ := k.store.Runs(context.Background(), 100)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	for i, goal := range []string{"one", "two"} {
		id := loop.ChildID(out.Run, 1, i)
		s, err := LoadState(context.Background(), k.store, id)
		if err != nil {
			t.Errorf("no child %s: %v (runs %v)", id, err, ids)
			continue
		}
		if s.Contract.Goal != goal || s.Contract.Child.Call != fmt.Sprintf("call_1_%d", i) || s.Contract.Child.Parent != out.Run {
			t.Errorf("child %s: goal %q, %+v", id, s.Contract.Goal, s.Contract.Child)
		}
	}
	if len(ids) != 3 {
		t.Errorf("the runs: %v", ids)
	}
}

// TestSpawnAttackChildTrace: a child is driven under its spawn call's
// context, which carries the parent's call key (withCall): what the
// child's own store wrapper (heldRecords) is given outside the child's
// calls is held under the parent's key, which the child never commits.
// Safe: a worktree child's commit is in the trace as a root's is (an
// edit "commit <hash> on <branch>").
func TestSpawnAttackChildTrace(t *testing.T) {
	k := newTreeKit(t)
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"trace":  {calls(spawnCall("a", SpawnArgs{Goal: "fix it", Worktree: true}))},
		"fix it": {calls(call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`)), reply("fixed")},
	}}
	var root atomic.Value
	out := atkTree(t, k, m, Contract{Goal: "trace", Budget: Budget{Steps: 10}}, &root, nil)
	id := loop.ChildID(out.Run, 1, 0)
	s, err := LoadState(context.Background(), k.store, id)
	if err != nil || s.Done == nil || s.Done.Commit == nil || s.Done.Commit.Hash == "" {
		t.Fatalf("the child did not commit: %v %+v", err, s.Done)
	}
	edits, err := k.store.Edits(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := "commit " + s.Done.Commit.Hash + " on " + s.Done.Commit.Branch
	var paths []string
	for _, e := range edits {
		paths = append(paths, e.Path)
	}
	if !slices.Contains(paths, want) {
		t.Errorf("the trace of child %s lacks %q: its edits are %q", id, want, paths)
	}
}
