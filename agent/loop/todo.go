package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TodoTool is the tool by which the model keeps its todo list: each call
// replaces the whole list, which the loop keeps in its state (and so in
// the checkpoint) and the driver shows in the system block of every later
// step, not in the transcript.
const TodoTool = "todo_write"

// The bounds of a todo list.
const (
	MaxTodoItems = 30
	MaxTodoText  = 200
)

// The states of a todo item.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoDone       = "done"
)

// TodoItem is one item of the list.
type TodoItem struct {
	Text  string `json:"text" jsonschema:"what to do, in a few words"`
	State string `json:"state" jsonschema:"pending, in_progress or done"`
}

// TodoArgs are the todo tool's arguments: the whole list.
type TodoArgs struct {
	Items []TodoItem `json:"items" jsonschema:"the whole list, in order; it replaces the one before"`
}

// ParseTodo reads the todo tool's arguments, or says why they are not a
// list it keeps.
func ParseTodo(args string) ([]TodoItem, error) {
	var a TodoArgs
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("the list is not {\"items\": [{\"text\": ..., \"state\": ...}]}: %v", err)
	}
	return a.Items, CheckTodo(a.Items)
}

// CheckTodo says why items are not a list the loop keeps.
func CheckTodo(items []TodoItem) error {
	if len(items) > MaxTodoItems {
		return fmt.Errorf("the list has %d items; at most %d", len(items), MaxTodoItems)
	}
	for i, it := range items {
		switch {
		case strings.TrimSpace(it.Text) == "":
			return fmt.Errorf("item %d has no text", i+1)
		case len(it.Text) > MaxTodoText || !utf8.ValidString(it.Text) || strings.IndexFunc(it.Text, unicode.IsControl) >= 0:
			return fmt.Errorf("item %d's text is not one line of at most %d bytes of printable text", i+1, MaxTodoText)
		case it.State != TodoPending && it.State != TodoInProgress && it.State != TodoDone:
			return fmt.Errorf("item %d's state %q is not pending, in_progress or done", i+1, it.State)
		}
	}
	return nil
}

// TodoText is the list as the model and the operator read it.
func TodoText(items []TodoItem) string {
	if len(items) == 0 {
		return "(empty)"
	}
	var b strings.Builder
	for _, it := range items {
		mark := " "
		switch it.State {
		case TodoInProgress:
			mark = "~"
		case TodoDone:
			mark = "x"
		}
		fmt.Fprintf(&b, "[%s] %s\n", mark, it.Text)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TodoCounts are how many items are done, of how many.
func TodoCounts(items []TodoItem) (done, all int) {
	for _, it := range items {
		if it.State == TodoDone {
			done++
		}
	}
	return done, len(items)
}
