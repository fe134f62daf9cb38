// Package policy owns rein's decision: whether an action an agent asks for
// (run a line, read, write or delete a path, reach a host, call a tool) is
// allowed, asked or denied, and why. It holds the modes, the rules and their
// layers, the class table, wrapper unwrapping, path rules and the protected
// set, trust of project files, approvers, and the loading of the policy
// file.
//
// Every decision carries its attribution (rule, layer, file, stage, paths),
// so a refusal can always be traced to the line of configuration that made
// it. Check and explain are the same function.
//
// policy is the decision layer: it imports shell (the plan) and workspace
// (physical path resolution) and must never import sandbox, tool or trace.
// It does not know how confinement works.
package policy

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/shell"
)

// Decision is the outcome of a check, and the effect of a rule.
type Decision int

// Decisions, weakest first: the strictest of several is the largest.
const (
	Allow Decision = iota
	Ask
	Deny
)

var decisionNames = [...]string{"allow", "ask", "deny"}

func (d Decision) String() string {
	if int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return "invalid"
}

// MarshalText writes the decision's name.
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func parseDecision(s string) (Decision, error) {
	for i, n := range decisionNames {
		if n == s {
			return Decision(i), nil
		}
	}
	return 0, fmt.Errorf("unknown effect %q: use allow, ask or deny", s)
}

// Mode is the ceiling of what a run may do; rules decide inside it.
type Mode int

// The modes.
const (
	// ModeSafe reads the workspace; everything else is denied, never asked.
	ModeSafe Mode = iota
	// ModeAsk may do everything, but mutating, network and complex work is
	// asked unless a rule allows it.
	ModeAsk
	// ModeAuto writes the workspace and runs unknown programs without
	// asking; shell-complex and dangerous work is still asked.
	ModeAuto
)

var modeNames = [...]string{"safe", "ask", "auto"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "invalid"
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q: use safe, ask or auto", s)
}

// Grant is what a mode permits at most, as plain data. The runner turns it
// into the sandbox's execution profile; rules can narrow it, never widen it.
type Grant struct {
	// WorkspaceWrite: the workspace may be written (mounted read-write).
	WorkspaceWrite bool
	// Network: network clients may run (their hosts are still decided by
	// the net rules).
	Network bool
	// ShellComplex: code the matcher cannot see may run (after approval).
	ShellComplex bool
	// UnknownPrograms: programs the class table does not know may run.
	UnknownPrograms bool
}

// ForMode is the one way to ask what a mode grants.
func ForMode(m Mode) Grant {
	switch m {
	case ModeAsk, ModeAuto:
		return Grant{WorkspaceWrite: true, Network: true, ShellComplex: true, UnknownPrograms: true}
	}
	return Grant{}
}

// Act is the kind of action a rule governs.
type Act string

// The acts.
const (
	ActExec   Act = "exec"
	ActRead   Act = "read"
	ActWrite  Act = "write"
	ActDelete Act = "delete"
	ActNet    Act = "net"
	ActTool   Act = "tool"
)

var acts = []Act{ActExec, ActRead, ActWrite, ActDelete, ActNet, ActTool}

func (a Act) isPath() bool { return a == ActRead || a == ActWrite || a == ActDelete }

// Layer is the source of a rule. Deny in any layer beats allow in any
// other; the order matters for attribution and for trust.
type Layer int

// The layers, strongest first.
const (
	LayerBuiltin Layer = iota
	LayerOrg
	LayerUser
	LayerProject
	LayerFlags
	// LayerVerification holds a run's protect globs as deny rules for
	// every write and delete: the run cannot weaken its own gate.
	LayerVerification
	// LayerPlanGate is a plan-gated agent run's hold on every write and
	// command until its plan is approved; no policy file writes it.
	LayerPlanGate
)

var layerNames = [...]string{"builtin", "org", "user", "project", "flags", "verification", "plan-gate"}

func (l Layer) String() string {
	if int(l) < len(layerNames) {
		return layerNames[l]
	}
	return "invalid"
}

// MarshalText writes the layer's name.
func (l Layer) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Attribution names the rule that decided, and where it came from.
type Attribution struct {
	// Rule is the rule's pattern as written, or a builtin rule's text such
	// as "hard deny: rm of the workspace".
	Rule   string   `json:"rule"`
	Act    Act      `json:"act"`
	Effect Decision `json:"effect"`
	Layer  Layer    `json:"layer"`
	// File is the policy file the rule came from; empty for builtin rules
	// and rules given on the command line.
	File string `json:"file,omitempty"`
	// Line is the rule's line in File, when known.
	Line int `json:"line,omitempty"`
}

func (a *Attribution) String() string {
	if a == nil {
		return ""
	}
	s := fmt.Sprintf("%s rule %q (%s layer", a.Effect, a.Rule, a.Layer)
	if a.File != "" {
		s += ", " + a.File
		if a.Line > 0 {
			s += fmt.Sprintf(":%d", a.Line)
		}
	}
	return s + ")"
}

// Verdict is the decision on one whole action: a line, a path, a host or a
// tool call.
type Verdict struct {
	Decision Decision
	// Class is the strongest class of the line's stages (lines only).
	Class Class
	// Reason is one sentence saying why, naming the deciding rule.
	Reason string
	// Rule is the rule that decided the strictest part, when a rule did.
	Rule *Attribution
	// Stages holds one verdict per stage of a line, left to right.
	Stages []StageVerdict
	// Paths holds the path verdicts of a path check (and is empty for
	// lines, whose paths sit in their stages).
	Paths []PathVerdict
	// Opaque, for a line outside the grammar, names the construct that
	// made it opaque shell code: decided as bash -c LINE is, never allowed
	// without asking.
	Opaque *shell.Refusal
	// Notes say what in the line runs nothing (its comments).
	Notes []string
}

// StageVerdict is the decision on one stage of a line.
type StageVerdict struct {
	Index int `json:"index"`
	// Argv as it will be spawned; a cd stage shows ["cd", DIR].
	Argv []string `json:"argv"`
	// Env are the variables the line sets for the stage (NAME=value).
	Env []string `json:"env,omitempty"`
	// Venv is the workspace virtual environment the line activated for
	// the stage: its bin comes first on the stage's PATH.
	Venv string `json:"venv,omitempty"`
	// Source is the stage as the line wrote it (~ as ~), when the line
	// was parsed from text.
	Source   string       `json:"source,omitempty"`
	Class    Class        `json:"class"`
	Decision Decision     `json:"decision"`
	Reason   string       `json:"reason"`
	Rule     *Attribution `json:"-"`
	// Paths are the stage's redirect targets and the path arguments of
	// known programs, each decided.
	Paths []PathVerdict `json:"paths"`
}

// PathVerdict is the decision on one path.
type PathVerdict struct {
	// Path as written in the line or the call.
	Path string `json:"path"`
	// Resolved is the physical path it reaches.
	Resolved string       `json:"resolved"`
	Access   Act          `json:"access"`
	Decision Decision     `json:"decision"`
	Reason   string       `json:"reason"`
	Rule     *Attribution `json:"-"`
}

// MarshalJSON flattens the attribution into the stage object, the schema
// `rein policy check --json` documents.
func (s StageVerdict) MarshalJSON() ([]byte, error) {
	type plain StageVerdict
	return json.Marshal(struct {
		plain
		attributionFields
		Paths []PathVerdict `json:"paths"`
	}{plain(s), flatten(s.Rule), nonNil(s.Paths)})
}

// MarshalJSON flattens the attribution into the path object.
func (p PathVerdict) MarshalJSON() ([]byte, error) {
	type plain PathVerdict
	return json.Marshal(struct {
		plain
		attributionFields
	}{plain(p), flatten(p.Rule)})
}

type attributionFields struct {
	Rule  *string `json:"rule"`
	Layer *string `json:"layer"`
	File  *string `json:"file"`
	Line  int     `json:"line,omitempty"`
}

func flatten(a *Attribution) attributionFields {
	if a == nil {
		return attributionFields{}
	}
	layer := a.Layer.String()
	return attributionFields{Rule: &a.Rule, Layer: &layer, File: &a.File, Line: a.Line}
}

func nonNil(p []PathVerdict) []PathVerdict {
	if p == nil {
		return []PathVerdict{}
	}
	return p
}
