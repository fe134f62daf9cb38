// Package tool is where the layers meet: the tool specs a model sees (a
// name, a description, a JSON schema derived from the Go argument type,
// whether the tool mutates, the modes it runs in), the registry, the
// surfaces (the named tool set a role sees), and the router, which takes
// every call through the same life: schema validation, hard gates, parse,
// policy, approver, sandbox, one result type, a bounded envelope for the
// model with the whole result kept in a result store, the trace, the
// observers.
//
// tool imports the decision layer (policy, shell, workspace, files), the
// execution layer (sandbox) and the trace; nothing below imports tool.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
)

// Status is how a call ended: the statuses of the execution contract,
// the sandbox's own type (sandbox.Status), so that a run's status is a
// call's without a conversion that could drift.
type Status = sandbox.Status

// The statuses.
const (
	OK          = sandbox.OK
	Denied      = sandbox.Denied
	Cancelled   = sandbox.Cancelled
	InvalidPath = sandbox.InvalidPath
	NotFound    = sandbox.NotFound
	Timeout     = sandbox.Timeout
	Failed      = sandbox.Failed
	Unavailable = sandbox.Unavailable
)

// Result is what a tool returns: one type for every tool.
type Result struct {
	Status Status `json:"status"`
	// Reason says why the call did not end ok, in one sentence.
	Reason string `json:"reason,omitempty"`
	// Rule is the policy rule that refused (or asked), when one did.
	Rule *policy.Attribution `json:"rule,omitempty"`
	// Output is the whole text result, before the envelope bounds it.
	Output string `json:"output"`
	// ExitCode is a command's exit status.
	ExitCode *int `json:"exit_code,omitempty"`
	// Changed are the paths a mutating tool changed, and Diff how.
	Changed []string `json:"changed,omitempty"`
	Diff    string   `json:"-"`
	// Rung, Limits and LimitHit are the sandbox's, for a command.
	Rung     sandbox.Rung      `json:"rung,omitempty"`
	Limits   []sandbox.Applied `json:"limits,omitempty"`
	LimitHit string            `json:"limit_hit,omitempty"`
	Poisoned string            `json:"poisoned,omitempty"`
	// Warm says the command took a sandbox started before it was asked
	// for (sandbox.Pool).
	Warm bool `json:"warm,omitempty"`
	// Data is the tool's structured result, when it has one.
	Data any `json:"data,omitempty"`

	// events are the policy decisions made on the way, and records what
	// else the trace keeps of the call (handles and their output).
	events  []policyEvent
	records []trace.Record
}

type policyEvent struct {
	kind    string // "refusal" or "approval"
	verdict *policy.Verdict
}

func (r *Result) note(kind string, v *policy.Verdict) {
	r.events = append(r.events, policyEvent{kind: kind, verdict: v})
}

// Mode names, as specs list them.
var allModes = []policy.Mode{policy.ModeSafe, policy.ModeAsk, policy.ModeAuto}

// Spec is a tool as the model sees it and the router runs it.
type Spec struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Schema      *jsonschema.Schema `json:"input_schema"`
	// ReadOnly tools change nothing; the others are mutating.
	ReadOnly bool `json:"read_only"`
	// Modes are the modes the tool runs in.
	Modes []policy.Mode `json:"modes"`

	resolved *jsonschema.Resolved
	run      func(ctx context.Context, c *Call, args json.RawMessage) *Result
}

// portable keeps a schema within what every major provider's function
// calling takes: one type per property (Go's slices come out as
// ["null", "array"], which Gemini refuses), so null is dropped.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type, s.Types = t, nil
			}
		}
	}
	for _, p := range s.Properties {
		portable(p)
	}
	portable(s.Items)
}

// Define makes the spec of a tool whose arguments are an A, with the
// schema derived from A.
func Define[A any](name, description string, readOnly bool, modes []policy.Mode, run func(ctx context.Context, c *Call, a A) *Result) (*Spec, error) {
	schema, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: deriving the schema: %w", name, err)
	}
	portable(schema)
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if modes == nil {
		modes = allModes
	}
	return &Spec{
		Name: name, Description: description, Schema: schema, ReadOnly: readOnly, Modes: modes, resolved: resolved,
		run: func(ctx context.Context, c *Call, raw json.RawMessage) *Result {
			var a A
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				return &Result{Status: Denied, Reason: fmt.Sprintf("the arguments do not decode: %v", err)}
			}
			return run(ctx, c, a)
		},
	}, nil
}

// validate checks raw arguments against the spec's schema.
func (s *Spec) validate(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("the arguments are not JSON: %v", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	return s.resolved.Validate(v)
}

// Registry holds the tools and the surfaces.
type Registry struct {
	tools    map[string]*Spec
	surfaces map[string][]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]*Spec{}, surfaces: map[string][]string{}}
}

// Add registers specs; a name used twice is an error.
func (r *Registry) Add(specs ...*Spec) error {
	for _, s := range specs {
		if _, dup := r.tools[s.Name]; dup {
			return fmt.Errorf("tool %s is registered twice", s.Name)
		}
		r.tools[s.Name] = s
	}
	return nil
}

// DefineSurface names a tool set; every tool must be registered.
func (r *Registry) DefineSurface(name string, tools ...string) error {
	for _, t := range tools {
		if _, ok := r.tools[t]; !ok {
			return fmt.Errorf("surface %s names tool %s, which is not registered", name, t)
		}
	}
	r.surfaces[name] = slices.Clone(tools)
	return nil
}

// Surfaces lists the surface names.
func (r *Registry) Surfaces() []string {
	var out []string
	for n := range r.surfaces {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Surface returns the specs a surface sees, in its order.
func (r *Registry) Surface(name string) ([]*Spec, error) {
	names, ok := r.surfaces[name]
	if !ok {
		return nil, fmt.Errorf("no surface %q: the surfaces are %s", name, strings.Join(r.Surfaces(), ", "))
	}
	out := make([]*Spec, len(names))
	for i, n := range names {
		out[i] = r.tools[n]
	}
	return out, nil
}

func (r *Registry) lookup(surface, name string) (*Spec, error) {
	names, ok := r.surfaces[surface]
	if !ok {
		return nil, fmt.Errorf("no surface %q", surface)
	}
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("no tool %q in the %s surface (it has %s)", name, surface, strings.Join(names, ", "))
	}
	return r.tools[name], nil
}
