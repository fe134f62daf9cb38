package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/tool"
)

// SurfaceAgent is the agent's own tool set: the coding surface, its todo
// list (loop.TodoTool), and the question and plan tools a person answers
// (QuestionTool, PlanTool), which only the agent has.
const SurfaceAgent = "agent"

// TodoItem is one item of the model's todo list.
type TodoItem = loop.TodoItem

// todoDescription is what the model is told of the todo tool.
const todoDescription = "Keep a short todo list of the goal's work (at most 30 items, each one line): each call replaces the whole list. " +
	"Mark an item in_progress when you start it and done when it is. The current list is shown in your instructions at every step, not here."

// agentRegistry is the built-in tools with the todo, question and plan
// tools, and the agent's surface over them, with the web tools when the
// contract says Web (search_internet when search says a backend is set).
func (d *driver) agentRegistry(search bool) (*tool.Registry, error) {
	reg, err := tool.Builtin()
	if err != nil {
		return nil, err
	}
	spec, err := tool.Define(loop.TodoTool, todoDescription, true, nil, func(_ context.Context, _ *tool.Call, a loop.TodoArgs) *tool.Result {
		if err := loop.CheckTodo(a.Items); err != nil {
			return &tool.Result{Status: tool.Failed, Reason: err.Error(), Output: "todo_write: " + err.Error() + "; the list is unchanged"}
		}
		done, all := loop.TodoCounts(a.Items)
		return &tool.Result{Status: tool.OK, Output: fmt.Sprintf("todo_write: ok (%d of %d done)", done, all)}
	})
	if err != nil {
		return nil, err
	}
	if err := reg.Add(spec); err != nil {
		return nil, err
	}
	person, err := d.personTools(reg)
	if err != nil {
		return nil, err
	}
	coding, err := reg.Surface(tool.SurfaceCoding)
	if err != nil {
		return nil, err
	}
	names := append([]string{loop.TodoTool}, person...)
	for _, s := range coding {
		names = append(names, s.Name)
	}
	if d.c.Web {
		// Exposure follows the contract's Web alone.
		names = append(names, tool.FetchURLTool)
		if search {
			names = append(names, tool.SearchTool)
		}
	}
	if d.c.CanSpawn() {
		spawn, err := d.spawnSpec()
		if err != nil {
			return nil, err
		}
		if err := reg.Add(spawn); err != nil {
			return nil, err
		}
		names = append(names, loop.SpawnTool)
	}
	if ch := d.c.Child; ch != nil {
		// A child has the tools its parent gave it, and no more.
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(ch.Tools, n) })
	}
	if err := reg.DefineSurface(SurfaceAgent, names...); err != nil {
		return nil, err
	}
	return reg, nil
}

// systemTail is the part of a step's system block that changes in a run:
// the approved plan and the todo list, as the state keeps them.
func systemTail(s *State) string {
	out := ""
	if s.Plan != nil {
		out += "\n## The approved plan\n\n" + loop.PlanText(s.Plan)
	}
	if len(s.Todo) > 0 {
		out += "\n## Your todo list (todo_write replaces it)\n\n" + loop.TodoText(s.Todo) + "\n"
	}
	return out
}
