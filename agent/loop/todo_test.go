package loop

import (
	"strings"
	"testing"
	"time"
)

// The todo list: a todo_write call's list, when it is one, is the
// state's; one that is not leaves the list before.
func TestTodo(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, _ := Contract{Goal: "g", Workspace: "/w"}.WithDefaults()
	s := newState(c, t0)
	write := func(args string) {
		s.Apply(ModelReplied{Response: Response{Finish: FinishToolCalls, ToolCalls: []ToolCall{{Name: TodoTool, Args: args}}}}, t0)
		s.Apply(CallsRan{Results: []ToolResult{{Observation: "todo_write: ..."}}}, t0)
	}
	write(`{"items":[{"text":"a","state":"done"},{"text":"b","state":"pending"}]}`)
	if TodoText(s.Todo) != "[x] a\n[ ] b" {
		t.Fatalf("the list: %q", TodoText(s.Todo))
	}
	for _, bad := range []string{
		`{"items":[{"text":"a","state":"later"}]}`,
		`{"items":[{"text":"","state":"done"}]}`,
		`{"items":[{"text":"two\nlines","state":"done"}]}`,
		`{"items":[{"text":"a \u001b[2J","state":"done"}]}`,
		`{"items":[{"text":"` + strings.Repeat("x", MaxTodoText+1) + `","state":"done"}]}`,
		`{"items":[` + strings.TrimSuffix(strings.Repeat(`{"text":"a","state":"done"},`, MaxTodoItems+1), ",") + `]}`,
		`{"items":[],"extra":1}`,
		`not json`,
	} {
		write(bad)
		if TodoText(s.Todo) != "[x] a\n[ ] b" {
			t.Errorf("%.60s: the list became %q", bad, TodoText(s.Todo))
		}
		if _, err := ParseTodo(bad); err == nil {
			t.Errorf("%.60s parsed", bad)
		}
	}
	write(`{"items":[]}`)
	if len(s.Todo) != 0 || TodoText(nil) != "(empty)" {
		t.Errorf("an empty list: %v", s.Todo)
	}
}
