package loop

import (
	"fmt"
	"slices"
)

// SpawnTool is the tool whose call starts a child run: a run of the same
// loop with a transcript of its own, whose result comes back to the
// parent as the call's one observation.
const SpawnTool = "spawn_agent"

// The limits of a run tree, as [run] child_depth, child_concurrency and
// children default them.
const (
	DefaultChildDepth       = 2
	DefaultChildConcurrency = 4
	DefaultChildren         = 16
)

// ChildLimits bound a run tree: how deep it goes (a root is at depth 0,
// and a run at Depth spawns none), how many of its children run at once
// (the rest queue) and how many it starts in all.
type ChildLimits struct {
	Depth       int `json:"depth"`
	Concurrency int `json:"concurrency"`
	Total       int `json:"total"`
}

// ChildRef is what a child run is to its parent: the parent's run, the
// step and the call that started it, its place in the tree, and what it
// was given.
type ChildRef struct {
	Parent string `json:"parent"`
	// Root is the tree's root run.
	Root string `json:"root"`
	// Step is the parent's step whose call started it; Call that call's
	// id, Index its place among the step's calls.
	Step  int    `json:"step"`
	Call  string `json:"call"`
	Index int    `json:"index"`
	// Depth is the child's: 1 for a child of the root.
	Depth int `json:"depth"`
	// Tools are the tools it was given (a subset of its parent's);
	// ReadOnly says they are read-only ones.
	Tools    []string `json:"tools"`
	ReadOnly bool     `json:"read_only,omitempty"`
	// Worktree names the git worktree it works in (its workspace), Branch
	// the worktree's branch and Repo the workspace whose repository it is
	// of; empty for a child in its parent's workspace.
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	Repo     string `json:"repo,omitempty"`
}

// ChildID is the id of the child run that the call at index of the
// parent's step starts: the same call is the same child, so a driver that
// makes the call again after its death finds the child it started.
func ChildID(parent string, step, index int) string {
	return fmt.Sprintf("%s.%d.%d", parent, step, index)
}

// Spent is what a run's children, and theirs, spent, as their outcomes
// said: one ledger for the tree.
type Spent struct {
	Runs   int   `json:"runs"`
	Steps  int   `json:"steps"`
	Tokens Usage `json:"tokens"`
}

// Add is s and o together.
func (s Spent) Add(o Spent) Spent {
	return Spent{Runs: s.Runs + o.Runs, Steps: s.Steps + o.Steps, Tokens: s.Tokens.Add(o.Tokens)}
}

// TreeSpent is what the run and its children spent.
func (s *State) TreeSpent() Spent {
	return Spent{Steps: s.Steps, Tokens: s.Tokens}.Add(s.Children)
}

// Left is what is left of the run's budget for its tree: the steps,
// tokens and cost not yet spent by it and its children.
func (s *State) Left() Budget {
	t := s.TreeSpent()
	b := s.Contract.Budget
	left := Budget{Steps: max(b.Steps-t.Steps, 0), Tokens: max(b.Tokens-Sat(t.Tokens.Input, t.Tokens.Output), 0)}
	if b.Cost > 0 {
		left.Cost = max(b.Cost-s.Contract.Prices.Cost(t.Tokens), 0)
	}
	return left
}

// spawnGroup is the spawn calls at the head of rest.
func spawnGroup(rest []ToolCall) int {
	n := 0
	for n < len(rest) && rest[n].Name == SpawnTool {
		n++
	}
	return n
}

// withChildren is the outcome o with the children's spending, if any.
func (s *State) withChildren(o Outcome) Outcome {
	if s.Children.Runs > 0 {
		c := s.Children
		o.Children = &c
	}
	return o
}

// CanSpawn says whether the run may start children: it is not at the
// tree's depth limit, and the tree may have any.
func (c Contract) CanSpawn() bool {
	l := c.Limits()
	return l.Total > 0 && l.Concurrency > 0 && c.Depth() < l.Depth
}

// Depth is the run's depth in its tree (0 for a root).
func (c Contract) Depth() int {
	if c.Child == nil {
		return 0
	}
	return c.Child.Depth
}

// Limits are the tree's limits, the defaults where the contract sets none.
func (c Contract) Limits() ChildLimits {
	if c.Children == nil {
		return ChildLimits{Depth: DefaultChildDepth, Concurrency: DefaultChildConcurrency, Total: DefaultChildren}
	}
	return *c.Children
}

// checkChild refuses a contract's child settings that cannot be.
func (c Contract) checkChild() error {
	if l := c.Children; l != nil && (l.Depth < 0 || l.Concurrency < 0 || l.Total < 0) {
		return fmt.Errorf("agent: contract: a child limit is negative")
	}
	if ch := c.Child; ch != nil {
		if ch.Parent == "" || ch.Root == "" || ch.Depth < 1 {
			return fmt.Errorf("agent: contract: a child run names no parent")
		}
		if slices.Contains(ch.Tools, SpawnTool) && ch.Depth >= c.Limits().Depth {
			return fmt.Errorf("agent: contract: a child at depth %d may not spawn (the tree's depth is %d)", ch.Depth, c.Limits().Depth)
		}
	}
	return nil
}
