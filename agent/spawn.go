package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// A run's step may start child runs (spawn_agent): each is a run of the
// same loop with a transcript of its own, driven in the parent's process
// by the parent's tools executor, and its result (its answer, its
// outcome, what it changed) is the call's one observation. The child's id
// is its call's key (loop.ChildID): a parent resumed after its death makes
// its spawn calls again and each finds the child it started, ended or to
// be resumed, so no child is started twice. A child's policy is its
// parent's (for a worktree, the same files loaded for the worktree), its
// tools a subset of its parent's, its budget carved from what its parent
// has left, and what it spends counts in its parent's ledger.

// SpawnTool is the tool whose call starts a child run.
const SpawnTool = loop.SpawnTool

// SpawnArgs are spawn_agent's arguments.
type SpawnArgs struct {
	Goal     string   `json:"goal" jsonschema:"what the child run is to do, in words; it sees this and nothing else of your conversation, so say all it needs"`
	Tools    []string `json:"tools,omitempty" jsonschema:"the tools it may use, a subset of yours (omitted: all of yours but the ones that ask a person)"`
	ReadOnly bool     `json:"read_only,omitempty" jsonschema:"give it only read-only tools: it reads and answers and changes nothing; read-only children run at once"`
	Worktree bool     `json:"worktree,omitempty" jsonschema:"let it work in a git worktree of its own, on a new branch its result names, committed when it ends; you decide what to merge (git_merge)"`
	Steps    int      `json:"steps,omitempty" jsonschema:"the steps it may take (omitted: an equal share of what you have left)"`
	Tokens   int64    `json:"tokens,omitempty" jsonschema:"the tokens it may spend (omitted: an equal share of what you have left)"`
}

const spawnDescription = "Start a child agent on a side task with a fresh context (read a part of the codebase and summarise it; try a fix in a worktree) and get its result back as this call's observation: its final answer, how it ended, and, in a worktree, the branch with its commit. Several spawn_agent calls in one response run at once. Its budget comes out of yours."

// tree is what the runs of one tree in this process share: the children
// started, by id, against the tree's limit.
type tree struct {
	limits loop.ChildLimits
	mu     sync.Mutex
	// started counts the children the tree has started: those the root's
	// state counts, and those this process has seen since (with the
	// children a resumed child had started).
	started int
	ids     map[string]bool
}

// admit counts child id in the tree, once, with the children it started
// before (a child started before the process that drives the tree): a
// new child past the tree's limit is refused; one started before never
// is.
func (t *tree) admit(id string, before *State) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids[id] {
		return nil
	}
	if before == nil && t.started >= t.limits.Total {
		return fmt.Errorf("the run tree has started %d children, its limit ([run] children)", t.limits.Total)
	}
	t.ids[id] = true
	t.started++
	if before != nil {
		t.started += before.Children.Runs
	}
	return nil
}

// kids is what a parent keeps of its children in flight: a slot each
// (the rest queue), the turns of those that write in its workspace, and
// the budget carved for them.
type kids struct {
	slots  chan struct{}
	writer chan struct{}
	mu     sync.Mutex
	// reserved is the budget carved for the children running; spent what
	// the children of the group in progress that ended spent (the run's
	// state counts it once the group's results are in); share a child's
	// equal share of what was left when the group began.
	reserved loop.Budget
	spent    loop.Spent
	share    loop.Budget
}

// begin starts a group of n spawn calls: what the children before spent
// is in the state now, and each of the group's gets an equal share of
// what is left (the same share whatever order they start in, so that a
// replay carves what the run carved).
func (k *kids) begin(left loop.Budget, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n = max(n, 1)
	k.spent = loop.Spent{}
	k.share = loop.Budget{Steps: left.Steps / n, Tokens: left.Tokens / int64(n), Cost: left.Cost / float64(n)}
}

// ended gives back child's carved budget b, and counts what it spent.
func (k *kids) ended(b loop.Budget, spent loop.Spent) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reserve(b, -1)
	k.spent = k.spent.Add(spent)
}

func newKids(l loop.ChildLimits) *kids {
	return &kids{slots: make(chan struct{}, max(l.Concurrency, 1)), writer: make(chan struct{}, 1)}
}

// take waits for a place in ch, or for ctx.
func take(ctx context.Context, ch chan struct{}) error {
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// spawnSlot is one spawn call's place in its group and what its child
// gave back.
type spawnSlot struct {
	index int
	spent *loop.Spent
	wrote bool
}

type spawnKey struct{}

// spawnSpec is spawn_agent, for d's run.
func (d *driver) spawnSpec() (*tool.Spec, error) {
	return tool.Define(loop.SpawnTool, spawnDescription, false, nil, func(ctx context.Context, _ *tool.Call, a SpawnArgs) *tool.Result {
		return d.spawn(ctx, a)
	})
}

// personTool says whether name is a tool that asks a person: a child has
// none of them.
func personTool(name string) bool {
	return name == QuestionTool || name == PlanTool
}

// childTools is the tool set a child asks for, checked against its
// parent's: never a tool the parent lacks.
func (d *driver) childTools(a SpawnArgs) ([]string, error) {
	var mine []string
	for name := range d.specs {
		if !personTool(name) && (name != loop.SpawnTool || d.c.Depth()+1 < d.c.Limits().Depth) {
			mine = append(mine, name)
		}
	}
	slices.Sort(mine)
	want := mine
	if a.Tools != nil {
		want = nil
		for _, name := range a.Tools {
			if !slices.Contains(mine, name) {
				why := "it is not one of yours"
				switch {
				case personTool(name):
					why = "a child asks no person"
				case name == loop.SpawnTool:
					why = fmt.Sprintf("a child at depth %d may not spawn (the tree's depth is %d)", d.c.Depth()+1, d.c.Limits().Depth)
				}
				return nil, fmt.Errorf("a child gets no tool its parent cannot give: %s (%s)", name, why)
			}
			want = append(want, name)
		}
		slices.Sort(want)
		want = slices.Compact(want)
	}
	if a.ReadOnly {
		want = slices.DeleteFunc(slices.Clone(want), func(n string) bool { return !d.readOnly(n) })
	}
	if len(want) == 0 {
		return nil, errors.New("the child would have no tool")
	}
	return want, nil
}

// carve is the budget of a new child: what it asks, or an equal share of
// what the parent has left among the calls of its group not yet carved,
// never more than is left; its wall clock is what is left of the
// parent's.
func (d *driver) carve(a SpawnArgs) (loop.Budget, error) {
	k := d.kids
	k.mu.Lock()
	defer k.mu.Unlock()
	// What is left: the state's count, less what the group's children
	// that ended spent and what those running may.
	left := d.state.Left()
	left.Steps -= k.reserved.Steps + k.spent.Steps
	left.Tokens -= k.reserved.Tokens + loop.Sat(k.spent.Tokens.Input, k.spent.Tokens.Output)
	if left.Cost > 0 {
		left.Cost -= k.reserved.Cost + d.c.Prices.Cost(k.spent.Tokens)
	}
	b := loop.Budget{Steps: min(k.share.Steps, left.Steps), Tokens: min(k.share.Tokens, left.Tokens)}
	if a.Steps > 0 {
		b.Steps = min(a.Steps, left.Steps)
	}
	if a.Tokens > 0 {
		b.Tokens = min(a.Tokens, left.Tokens)
	}
	if d.c.Budget.Cost > 0 {
		b.Cost = min(k.share.Cost, left.Cost)
	}
	// The least a child can make one call with: what the parent's
	// requests carry besides the transcript, and a short answer.
	least := int64(d.state.Overhead/4) + 512
	if b.Steps < 1 || b.Tokens < least || d.c.Budget.Cost > 0 && b.Cost <= 0 {
		return b, fmt.Errorf("the budget left (%d steps, %d tokens, once the children running and ended are counted) cannot carve a child (a share of %d steps and %d tokens; a call takes about %d)", max(left.Steps, 0), max(left.Tokens, 0), b.Steps, b.Tokens, least)
	}
	// What is left of the parent's wall clock, in whole minutes (whole
	// seconds under one): the child's system block says it, and a replay
	// asks what the run asked.
	b.WallClock = d.state.Deadline.Sub(d.o.Now())
	if b.WallClock >= time.Minute {
		b.WallClock = b.WallClock.Truncate(time.Minute)
	} else {
		b.WallClock = b.WallClock.Truncate(time.Second)
	}
	if b.WallClock <= 0 {
		return b, errors.New("the wall-clock budget is spent")
	}
	k.reserve(b, 1)
	return b, nil
}

// reserve adds b to the budget carved for running children (sign -1
// gives it back).
func (k *kids) reserve(b loop.Budget, sign int) {
	k.reserved.Steps += sign * b.Steps
	k.reserved.Tokens += int64(sign) * b.Tokens
	k.reserved.Cost += float64(sign) * b.Cost
}

// spawn starts the child run of the call in ctx, or goes on with the one
// it started before, and returns its result.
func (d *driver) spawn(ctx context.Context, a SpawnArgs) *tool.Result {
	slot, _ := ctx.Value(spawnKey{}).(*spawnSlot)
	if slot == nil {
		return &tool.Result{Status: tool.Denied, Reason: "spawn_agent is made by the agent's own loop only"}
	}
	refuse := func(format string, args ...any) *tool.Result {
		why := fmt.Sprintf(format, args...)
		return &tool.Result{Status: tool.Denied, Reason: why}
	}
	if strings.TrimSpace(a.Goal) == "" {
		return refuse("the child's goal is empty")
	}
	if a.Worktree && a.ReadOnly {
		return refuse("a read-only child changes nothing: it needs no worktree")
	}
	if a.Steps < 0 || a.Tokens < 0 {
		return refuse("a budget is negative")
	}
	if !d.c.CanSpawn() {
		return refuse("this run may not start children (depth %d of %d)", d.c.Depth(), d.c.Limits().Depth)
	}
	parent := d.router.RunID()
	step := d.state.Steps
	id := loop.ChildID(parent, step, len(d.state.Results)+slot.index)
	var before *State
	restart := false
	if d.durable != nil {
		if s, err := LoadState(ctx, d.durable, id); err == nil {
			before = s
		} else if h, ok := d.durable.(interface {
			HasRun(context.Context, string) (bool, error)
		}); ok {
			// Recorded, and killed before its first checkpoint: the same
			// run begins again, under its id.
			restart, _ = h.HasRun(ctx, id)
		}
	}
	if before != nil && before.Done != nil && !commitPending(before) {
		// Ended before the parent's driver died: its result is read.
		out := *before.Done
		out.Run = id
		if ch := before.Contract.Child; ch.Branch != "" && out.Commit != nil && out.Commit.Hash != "" {
			d.router.NoteBranch(ch.Branch)
		}
		d.tree.admit(id, before)
		d.kids.ended(loop.Budget{}, spentBy(out))
		return d.childResult(ctx, id, before.Contract, out, lastReply(before))
	}
	var tools []string
	if before == nil {
		var err error
		if tools, err = d.childTools(a); err != nil {
			return refuse("%v", err)
		}
	}
	if err := d.tree.admit(id, before); err != nil {
		return refuse("%v", err)
	}
	if err := take(ctx, d.kids.slots); err != nil {
		return &tool.Result{Status: tool.Failed, Reason: "cancelled while it waited for a place: " + err.Error()}
	}
	defer func() { <-d.kids.slots }()
	var cc Contract
	if before != nil {
		// Started before this driver's death: the same child goes on,
		// with what it was given.
		cc = before.Contract
		d.kids.mu.Lock()
		d.kids.reserve(cc.Budget, 1)
		d.kids.mu.Unlock()
	} else {
		b, err := d.carve(a)
		if err != nil {
			return refuse("%v", err)
		}
		root := parent
		if d.c.Child != nil {
			root = d.c.Child.Root
		}
		ro := !slices.ContainsFunc(tools, func(n string) bool { return !d.readOnly(n) })
		// A child's answers are bounded by its share: its budget counts
		// the next call's longest one before it is made.
		cc = Contract{Goal: a.Goal, Workspace: d.c.Workspace, Protect: d.c.Protect, Budget: b, ResponseMaxTokens: int(min(int64(d.c.ResponseMaxTokens), max(b.Tokens/4, 256))),
			GateRetries: d.c.GateRetries, Instructions: d.c.Instructions, Prices: d.c.Prices, ContextTokens: d.c.ContextTokens,
			Recovery: d.c.Recovery, Web: d.c.Web && slices.Contains(tools, tool.FetchURLTool), Config: d.c.Config, Children: d.c.Children,
			Child: &loop.ChildRef{Parent: parent, Root: root, Step: step, Call: callFrom(ctx), Index: len(d.state.Results) + slot.index,
				Depth: d.c.Depth() + 1, Tools: tools, ReadOnly: ro}}
		if a.Worktree {
			// A branch in a directory of the child's own (refs/heads/
			// rein/<id>/): its sandbox may write that directory, and no
			// other run's branch is in it.
			cc.Child.Worktree, cc.Child.Branch, cc.Child.Repo = id, "rein/"+id+"/work", d.c.Workspace
			cc.Verify, cc.Commit = d.c.Verify, true
		}
	}
	carved := true
	defer func() {
		if carved {
			// Not run: nothing spent.
			d.kids.ended(cc.Budget, loop.Spent{})
		}
	}()
	ch := cc.Child
	if ch.Worktree == "" && !ch.ReadOnly {
		// Children that write in the parent's workspace take turns.
		if err := take(ctx, d.kids.writer); err != nil {
			return &tool.Result{Status: tool.Failed, Reason: "cancelled while it waited for its turn to write: " + err.Error()}
		}
		defer func() { <-d.kids.writer }()
	}
	co, err := d.childOptions(ctx, id, &cc, before != nil, restart)
	if err != nil {
		return &tool.Result{Status: tool.Failed, Reason: err.Error(), Output: "spawn_agent: " + err.Error()}
	}
	if before == nil && d.o.Tool.Store != nil {
		meta, _ := json.Marshal(map[string]any{"child": id, "step": step, "call": ch.Call, "goal": cc.Goal, "tools": ch.Tools, "worktree": ch.Worktree,
			"budget": map[string]any{"steps": cc.Budget.Steps, "tokens": cc.Budget.Tokens, "cost": cc.Budget.Cost}})
		d.o.Tool.Store.AppendAll(ctx, trace.Audit{RunID: parent, Kind: "child_run", At: time.Now(), Meta: string(meta)})
	}
	var guarded map[string]string
	if ch.Worktree != "" {
		guarded = gitGuarded(d.c.Workspace, ch.Worktree)
	}
	out, last, err := runChild(ctx, cc, co, before)
	if err != nil && out.Run == "" {
		return &tool.Result{Status: tool.Failed, Reason: "the child run " + id + " did not run: " + err.Error()}
	}
	carved = false
	d.kids.ended(cc.Budget, spentBy(out))
	if guarded != nil {
		// Nothing of .git but what the child's sandbox may write changed.
		if changed := gitChanged(guarded, gitGuarded(d.c.Workspace, ch.Worktree)); len(changed) > 0 {
			out.Reason += "; rein found the repository's .git changed while the child ran, beyond its objects, its branch and its worktree's administrative directory: " + strings.Join(changed, ", ")
			if d.o.Tool.Store != nil {
				detail, _ := json.Marshal(map[string]any{"changed": changed})
				d.o.Tool.Store.AppendAll(ctx, trace.SandboxEvent{RunID: id, Kind: "git_changed", Detail: string(detail), At: time.Now()})
			}
		}
	}
	return d.childResult(ctx, id, cc, out, last)
}

// childResult is the spawn call's result of the child id that ended with
// out: what it spent, for the parent's ledger, and what it did, for the
// model; its worktree is removed once its changes are kept.
func (d *driver) childResult(ctx context.Context, id string, cc Contract, out Outcome, last string) *tool.Result {
	slot, _ := ctx.Value(spawnKey{}).(*spawnSlot)
	spent := spentBy(out)
	slot.spent, slot.wrote = &spent, !cc.Child.ReadOnly
	if cc.Child.Worktree != "" {
		d.removeWorktree(ctx, cc.Child, out)
	}
	return &tool.Result{Status: tool.OK, Output: childObservation(id, cc, out, last)}
}

// spentBy is what a child that ended with out spent, its own children
// counted.
func spentBy(out Outcome) loop.Spent {
	spent := loop.Spent{Runs: 1, Steps: out.Steps, Tokens: out.Tokens}
	if out.Children != nil {
		spent = spent.Add(*out.Children)
	}
	return spent
}

// runChild drives the child: a new one from its contract, or the one
// started before (resumed, or its outcome read when it has ended); it
// returns the outcome and the child's last reply.
func runChild(ctx context.Context, cc Contract, co Options, before *State) (Outcome, string, error) {
	var x *Executors
	var err error
	if before == nil {
		x, err = Open(ctx, cc, co)
	} else {
		x, err = Reopen(ctx, before.Run, co)
		var ended *EndedError
		if errors.As(err, &ended) {
			return ended.Outcome, lastReply(before), nil
		}
	}
	if err != nil {
		return Outcome{}, "", err
	}
	out, err := drive(ctx, x)
	return out, lastReply(x.State()), err
}

// lastReply is the model's last words in s.
func lastReply(s *State) string {
	if s == nil {
		return ""
	}
	for i := len(s.Transcript) - 1; i >= 0; i-- {
		if m := s.Transcript[i]; m.Role == RoleAssistant && strings.TrimSpace(m.Text) != "" {
			return m.Text
		}
	}
	return ""
}

// childObservation is what the parent is told of its child.
func childObservation(id string, cc Contract, out Outcome, last string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spawn_agent: the child run %s ended %s: %s\n", id, out.Kind, out.Reason)
	fmt.Fprintf(&b, "it took %d steps and %d tokens", out.Steps, loop.Sat(out.Tokens.Input, out.Tokens.Output))
	if out.Children != nil {
		fmt.Fprintf(&b, " (its own children: %d runs, %d steps, %d tokens)", out.Children.Runs, out.Children.Steps, loop.Sat(out.Children.Tokens.Input, out.Children.Tokens.Output))
	}
	b.WriteString("\n")
	if c := out.Commit; cc.Child.Worktree != "" && c != nil {
		if c.Hash != "" {
			fmt.Fprintf(&b, "its changes are committed on the branch %s (%s): %s; merge it with git_merge if you want them\n", c.Branch, c.Hash, strings.Join(c.Paths, ", "))
		} else {
			fmt.Fprintf(&b, "no commit was made: %s\n", c.Error)
		}
	}
	if len(out.Answer) > 0 {
		fmt.Fprintf(&b, "its answer: %s\n", out.Answer)
	} else if last != "" {
		fmt.Fprintf(&b, "its last reply:\n%s\n", last)
	}
	return b.String()
}

// childOptions are what child id is driven with: its parent's provider,
// clock and observer, its parent's policy (or, in a worktree, the same
// files loaded for it), its parent's approver (a deferred ask refused: a
// child does not park), no one to ask questions of, the tree shared.
func (d *driver) childOptions(ctx context.Context, id string, cc *Contract, resumed, restart bool) (Options, error) {
	tc := d.base
	tc.Surface, tc.Resume, tc.Carried, tc.KeepResults, tc.Hold, tc.Results, tc.RunID, tc.ID = "", "", nil, false, nil, nil, "", id
	if restart {
		tc.Resume, tc.ID = id, ""
	}
	if _, ok := tc.Approver.(Defer); ok {
		tc.Approver = nil
	}
	if ch := cc.Child; ch.Worktree != "" {
		if d.o.PolicyFor == nil {
			return Options{}, errors.New("this run gives no policy for a worktree (Options.PolicyFor): its children work in its workspace")
		}
		path, err := d.worktree(ctx, ch, resumed)
		if err != nil {
			return Options{}, err
		}
		if tc.Policy, err = d.o.PolicyFor(path); err != nil {
			return Options{}, fmt.Errorf("the policy of the worktree %s: %v", path, err)
		}
		cc.Workspace = path
		// git in the child's sandbox sees the repository as it needs it:
		// its worktree's administrative directory (which holds the
		// objects it makes: the repository's are read-only, its
		// alternate) and its branch's directory writable, the rest
		// (config, hooks, objects, the other refs and worktrees)
		// read-only. rein takes its objects in when it ends, each checked
		// against its name (importObjects).
		common := filepath.Join(d.c.Workspace, ".git")
		admin := filepath.Join(common, "worktrees", ch.Worktree)
		own := filepath.FromSlash(ch.Branch[:strings.LastIndexByte(ch.Branch, '/')])
		writes := []string{admin, filepath.Join(common, "refs", "heads", own), filepath.Join(common, "logs", "refs", "heads", own)}
		for _, w := range append(writes, filepath.Join(admin, "objects")) {
			rel, _ := filepath.Rel(common, w)
			if err := linkFree(common, rel); err != nil {
				return Options{}, err
			}
			if err := os.MkdirAll(w, 0o755); err != nil {
				return Options{}, err
			}
		}
		tc.Profile.HostReadPaths = append(slices.Clip(tc.Profile.HostReadPaths), common)
		tc.Profile.HostWritePaths = append(slices.Clip(tc.Profile.HostWritePaths), writes...)
		if tc.Profile.Env == nil {
			tc.Profile.Env = tool.Env(os.Environ(), tc.Policy)
		}
		tc.Profile.Env = append(slices.Clip(tc.Profile.Env), "GIT_OBJECT_DIRECTORY="+filepath.Join(admin, "objects"),
			"GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(common, "objects"))
	}
	boundary := d.o.Boundary
	if boundary != nil {
		boundary = func(name string) { d.o.Boundary("child " + id + " " + name) }
	}
	provider := d.o.Provider
	if cp, ok := provider.(childProvider); ok {
		// A replay: the child answers from its own recording.
		var err error
		if provider, err = cp.forChild(ctx, d.router.RunID(), id); err != nil {
			return Options{}, err
		}
	}
	return Options{Provider: provider, Tool: tc, Observer: d.o.Observer, Now: d.o.Now, Sleep: d.o.Sleep, Boundary: boundary,
		PolicyFor: d.o.PolicyFor, tree: d.tree}, nil
}

// worktree makes the child's worktree through the parent's git_worktree
// (the policy decides it, the trace records it), or finds the one made
// before the parent's driver died; it returns its path.
func (d *driver) worktree(ctx context.Context, ch *loop.ChildRef, resumed bool) (string, error) {
	w, err := d.router.Worktree(ch.Worktree)
	if err != nil {
		return "", err
	}
	if w != nil {
		if w.Run != d.router.RunID() || w.Branch != ch.Branch {
			return "", fmt.Errorf("the worktree %s is not the one rein made for this child (run %s, branch %s)", w.Name, w.Run, w.Branch)
		}
		// Made before the driver's death: the merge may take its branch.
		d.router.NoteBranch(w.Branch)
		return w.Path, nil
	}
	if resumed {
		return "", fmt.Errorf("the child's worktree %s is gone", ch.Worktree)
	}
	// git on the host writes the branch, its log and the worktree's
	// administrative directory: no link of a command's may be on the
	// way.
	if err := linkFree(filepath.Join(d.c.Workspace, ".git"), "refs/heads/"+ch.Branch, "logs/refs/heads/"+ch.Branch, "worktrees/"+ch.Worktree); err != nil {
		return "", err
	}
	// The child has not begun (no checkpoint): a branch of its name is
	// what an add killed midway made, and goes.
	if head, err := hostGit(ctx, d.c.Workspace, nil, nil, "rev-parse", "--verify", "-q", "refs/heads/"+ch.Branch); err == nil {
		if _, err := hostGit(ctx, d.c.Workspace, nil, nil, "update-ref", "-d", "refs/heads/"+ch.Branch, strings.TrimSpace(head)); err != nil {
			return "", err
		}
	}
	args, _ := json.Marshal(tool.GitWorktreeArgs{Action: "add", Name: ch.Worktree, Branch: ch.Branch})
	env := d.router.Call(ctx, tool.GitWorktreeTool, args)
	if env.Status != tool.OK {
		return "", fmt.Errorf("making the child's worktree: %s: %s", env.Status, env.Reason)
	}
	if w, err = d.router.Worktree(ch.Worktree); err != nil || w == nil {
		return "", fmt.Errorf("the child's worktree %s is not listed after it was made (%v)", ch.Worktree, err)
	}
	return w.Path, nil
}

// removeWorktree removes the child's worktree once its changes are
// committed (or it made none); one that holds anything not committed is
// kept, and git_worktree list names it.
func (d *driver) removeWorktree(ctx context.Context, ch *loop.ChildRef, out Outcome) {
	if out.Kind == AwaitingApproval || out.Kind == Cancelled && ctx.Err() != nil {
		return
	}
	if w, err := d.router.Worktree(ch.Worktree); err != nil || w == nil {
		return
	}
	// The objects the child made (its own commits on its branch) are
	// taken in first, each checked: removing the worktree removes them.
	common := filepath.Join(d.c.Workspace, ".git")
	admin := filepath.Join(common, "worktrees", ch.Worktree)
	if notPlain(admin) != "" || gitWrites(common, ch.Branch) != nil {
		// Kept as the child left it, for a person to look at.
		return
	}
	if err := importObjects(filepath.Join(admin, "objects"), filepath.Join(common, "objects"), d.objectFormat(ctx)); err != nil {
		return
	}
	args, _ := json.Marshal(tool.GitWorktreeArgs{Action: "remove", Name: ch.Worktree})
	d.router.Call(context.WithoutCancel(ctx), tool.GitWorktreeTool, args)
}

// gitGuarded lists what a worktree child's sandbox may not change of
// its repository's .git, with each file's digest: HEAD, config,
// packed-refs, the hooks, info, every ref but the rein branches', and the
// links of the child's administrative directory.
func gitGuarded(repo, worktree string) map[string]string {
	common := filepath.Join(repo, ".git")
	out := map[string]string{}
	skip := []string{"objects", "logs", filepath.Join("refs", "heads", "rein"), "worktrees", "index", "FETCH_HEAD", "ORIG_HEAD"}
	filepath.WalkDir(common, func(path string, e fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(common, path)
		if err != nil {
			out[rel] = "unreadable: " + err.Error()
			return nil
		}
		if rel != "." && slices.Contains(skip, rel) {
			return filepath.SkipDir
		}
		if e.IsDir() || strings.HasSuffix(rel, ".lock") {
			return nil
		}
		out[rel] = digestOf(path, e)
		return nil
	})
	admin := filepath.Join(common, "worktrees", worktree)
	for _, name := range []string{"commondir", "gitdir", "config.worktree"} {
		p := filepath.Join(admin, name)
		if fi, err := os.Lstat(p); err == nil {
			out[filepath.Join("worktrees", worktree, name)] = digestOf(p, fs.FileInfoToDirEntry(fi))
		}
	}
	return out
}

// digestOf is a file's kind and content digest (a link's target).
func digestOf(path string, e fs.DirEntry) string {
	if e.Type()&fs.ModeSymlink != 0 {
		t, _ := os.Readlink(path)
		return "link " + t
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "unreadable"
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%v %x", e.Type(), sum[:8])
}

// gitChanged names what changed between two gitGuarded listings.
func gitChanged(before, after map[string]string) []string {
	return changedKeys(before, after, func(x, y string) bool { return x == y })
}

// objectFormat is the repository's object format: sha1 or sha256.
func (d *driver) objectFormat(ctx context.Context) string {
	if f, err := hostGit(ctx, d.c.Workspace, nil, nil, "rev-parse", "--show-object-format"); err == nil && strings.TrimSpace(f) == "sha256" {
		return "sha256"
	}
	return "sha1"
}
