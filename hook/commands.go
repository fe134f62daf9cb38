package hook

import (
	"encoding/json"
	"fmt"
)

// CommandKeys are the input fields by which an agent's tool takes a
// command line: a tool rein does not model that takes one runs it as the
// agent's shell would.
var CommandKeys = []string{"command", "cmd"}

// DecideTool decides a tool rein does not model, named name with input m:
// by the tool rules, and each command line it takes (CommandKeys) as a
// command line too, the stricter answer winning; a [tool] allow rule for
// the tool does not let its command through, and a command field that is
// not a string is asked.
func (e *Engine) DecideTool(name string, m map[string]any) Decision {
	d := e.Decide(Action{Kind: CallTool, Tool: name})
	for _, k := range CommandKeys {
		v, present := m[k]
		switch cmd, ok := v.(string); {
		case ok:
			d = Stricter(e.Decide(Action{Kind: Run, Tool: name, Command: cmd}), d)
		case present && v != nil:
			d = Stricter(Decision{Answer: Ask, Reason: fmt.Sprintf("%s's %s is not a command line rein can decide (%T)", name, k, v)}, d)
		}
	}
	return d
}

// ConfineCommands rewrites every command field (CommandKeys) of an
// allowed or asked call's input so that the agent runs it through rein:
// rewrite returns the line that replaces line in the input m, or a
// refusal. Every field is rewritten, not the first: a tool that took two
// would otherwise run the other unconfined. A denial is left as it is.
func ConfineCommands(c Call, d Decision, rewrite func(m map[string]any, line string) (string, *Decision)) Decision {
	if d.Answer == Deny {
		return d
	}
	var m map[string]any
	if json.Unmarshal(c.Input(), &m) != nil {
		return Denied("the tool input is not a JSON object")
	}
	rewritten, other := false, false
	for _, k := range CommandKeys {
		switch v, present := m[k]; line := v.(type) {
		case string:
			confined, refused := rewrite(m, line)
			if refused != nil {
				return *refused
			}
			m[k] = confined
			rewritten = true
		default:
			other = other || present && v != nil
		}
	}
	if rewritten {
		d.UpdatedInput = m
		if other {
			d.Reason += "; its string command runs in rein's sandbox, the other is not rein's to run"
		} else {
			d.Reason += "; runs in rein's sandbox"
		}
	}
	return d
}
