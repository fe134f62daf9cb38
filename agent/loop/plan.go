package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PlanTool is the tool by which the model proposes its plan in a
// plan-gated run (Contract.PlanGate): until a plan is approved, the run's
// plan-gate layer denies every write and command; the approved plan is
// kept in the state (and so in the checkpoint) and shown in the system
// block of every later step.
const PlanTool = "propose_plan"

// QuestionTool is the tool by which the model asks about intent. Its
// answer is text for the model, never permission: it changes no
// decision of the policy.
const QuestionTool = "ask_question"

// The bounds of a plan and a question.
const (
	MaxPlanSteps    = 30
	MaxPlanStep     = 500
	MaxQuestionText = 2000
)

// The decisions on a proposed plan, as a propose_plan call's result
// carries them (ToolResult.Plan).
const (
	PlanApproved  = "approved"
	PlanRevise    = "revise"
	PlanCancelled = "cancelled"
)

// PlanArgs are the plan tool's arguments.
type PlanArgs struct {
	Steps []string `json:"steps" jsonschema:"the plan's steps in words, in order, one line each"`
}

// QuestionArgs are the question tool's arguments.
type QuestionArgs struct {
	Question string `json:"question" jsonschema:"the question about what is wanted, in words a person answers"`
}

// ParsePlan reads the plan tool's arguments, or says why they are not a
// plan.
func ParsePlan(args string) ([]string, error) {
	var a PlanArgs
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("the plan is not {\"steps\": [\"...\"]}: %v", err)
	}
	return a.Steps, CheckPlan(a.Steps)
}

// CheckPlan says why steps are not a plan: none, too many, or a step
// that is not one line of printable text.
func CheckPlan(steps []string) error {
	switch {
	case len(steps) == 0:
		return fmt.Errorf("the plan has no steps")
	case len(steps) > MaxPlanSteps:
		return fmt.Errorf("the plan has %d steps; at most %d", len(steps), MaxPlanSteps)
	}
	for i, s := range steps {
		if err := printableLine(s, MaxPlanStep); err != nil {
			return fmt.Errorf("step %d %v", i+1, err)
		}
	}
	return nil
}

// CheckQuestion says why q is not a question the tool puts.
func CheckQuestion(q string) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("the question is empty")
	}
	if len(q) > MaxQuestionText || !utf8.ValidString(q) || strings.IndexFunc(q, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) >= 0 {
		return fmt.Errorf("the question is not at most %d bytes of printable text", MaxQuestionText)
	}
	return nil
}

func printableLine(s string, max int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("is empty")
	case len(s) > max || !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("is not one line of at most %d bytes of printable text", max)
	}
	return nil
}

// PlanText is a plan as the model and the operator read it: its steps,
// numbered.
func PlanText(steps []string) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}

// Gated says the run's plan gate holds: the contract asks for one, and no
// plan has been approved.
func (s *State) Gated() bool { return s.Contract.PlanGate && !s.PlanApproved() }

// PlanApproved says a plan was approved: the state keeps one, or a
// propose_plan call of the step in progress was approved (its result in,
// the step's other calls not yet), so that the calls after it in the
// same response, in this process or a resumed one, are not held.
func (s *State) PlanApproved() bool {
	if s.Plan != nil {
		return true
	}
	for i, r := range s.Results {
		if i < len(s.Pending) && s.Pending[i].Name == PlanTool && r.Plan == PlanApproved {
			return true
		}
	}
	return false
}
