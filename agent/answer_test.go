package agent

import (
	"strings"
	"testing"
)

// CheckAnswer reads the answer as JSON (bare, or the one fenced block a
// model writes it in) against the schema, naming what is wrong.
func TestCheckAnswer(t *testing.T) {
	rs, err := CompileSchema([]byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{
		`{"n": 3}`:                         `{"n":3}`,
		"  {\"n\":3}\n":                    `{"n":3}`,
		"```json\n{\"n\": 3}\n```":         `{"n":3}`,
		"```\n{\"n\": 3}\n```":             `{"n":3}`,
		`{"n": 0}`:                         "minimum",
		`{"m": 1}`:                         "n",
		`The answer is {"n": 3}`:           "not JSON",
		`{"n": 3} {"n": 4}`:                "more than one JSON value",
		"```json\n{\"n\": 3}\n```\nmore\n": "not JSON",
		"```python\n{\"n\": 3}\n```":       "not JSON",
		"":                                 "not JSON",
	} {
		got := CheckAnswer(rs, text)
		if strings.HasPrefix(want, "{") {
			if !got.OK() || string(got.JSON) != want {
				t.Errorf("%q: %+v, want %s", text, got, want)
			}
		} else if got.OK() || !strings.Contains(strings.Join(got.Errors, " "), want) {
			t.Errorf("%q: %+v, want an error naming %q", text, got, want)
		}
	}
	long := CheckAnswer(rs, `{"n": "`+strings.Repeat("x", 5000)+`"}`)
	if long.OK() || len(strings.Join(long.Errors, " ")) > 8*320 {
		t.Errorf("a long value's errors: %d bytes", len(strings.Join(long.Errors, " ")))
	}
	for _, bad := range []string{`{"type": 7}`, `not json`, `{"$ref": "https://example.com/other.json"}`} {
		if _, err := CompileSchema([]byte(bad)); err == nil {
			t.Errorf("%s compiled", bad)
		}
	}
}
