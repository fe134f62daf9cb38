package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reinhq/rein/agent/loop"
)

// maxAnswerErrors bounds the validation errors the model is told, and
// maxAnswerError each one's length.
const (
	maxAnswerErrors = 8
	maxAnswerError  = 300
)

// CompileSchema reads a JSON Schema for a run's final answer (draft-07 or
// 2020-12, with no reference to another document), or says why it cannot
// be one.
func CompileSchema(schema []byte) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the output schema is not a JSON Schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the output schema cannot be used: %w", err)
	}
	return rs, nil
}

// CheckAnswer reads a final answer against the output schema: the answer
// is the response's text as one JSON value (or the one fenced ```json
// block it holds, as models often write it).
func CheckAnswer(rs *jsonschema.Resolved, text string) *loop.AnswerCheck {
	raw := strings.TrimSpace(text)
	if body, ok := fenced(raw); ok {
		raw = body
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &loop.AnswerCheck{Errors: []string{"it is not JSON: " + err.Error()}}
	}
	if dec.More() {
		return &loop.AnswerCheck{Errors: []string{"it holds more than one JSON value"}}
	}
	// Validation reads numbers as float64, as encoding/json decodes them.
	var plain any
	if err := json.Unmarshal([]byte(raw), &plain); err != nil {
		return &loop.AnswerCheck{Errors: []string{"it is not JSON: " + err.Error()}}
	}
	if err := rs.Validate(plain); err != nil {
		errs := strings.Split(err.Error(), "\n")
		for i, e := range errs {
			// An error can quote the answer's value: bounded.
			if len(e) > maxAnswerError {
				errs[i] = e[:maxAnswerError] + "..."
			}
		}
		if len(errs) > maxAnswerErrors {
			errs = append(errs[:maxAnswerErrors], fmt.Sprintf("and %d more", len(errs)-maxAnswerErrors))
		}
		return &loop.AnswerCheck{Errors: errs}
	}
	var compact bytes.Buffer
	json.Compact(&compact, []byte(raw))
	return &loop.AnswerCheck{JSON: compact.Bytes()}
}

// fenced is the body of text when it is one fenced code block.
func fenced(text string) (string, bool) {
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return "", false
	}
	body := strings.TrimSuffix(text[3:], "```")
	first, rest, ok := strings.Cut(body, "\n")
	if !ok || strings.Contains(rest, "```") {
		return "", false
	}
	if f := strings.TrimSpace(first); f != "" && f != "json" {
		return "", false
	}
	return strings.TrimSpace(rest), true
}
