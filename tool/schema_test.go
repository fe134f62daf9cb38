package tool

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestSchemasDescribed: every property of every built-in tool's schema
// has a description the model can act on; the Go comments on the argument
// structs are not in the schema, only the jsonschema tags are.
func TestSchemasDescribed(t *testing.T) {
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, surface := range reg.Surfaces() {
		specs, err := reg.Surface(surface)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			if s.Description == "" {
				t.Errorf("%s has no description", s.Name)
			}
			var walk func(path string, sc *jsonschema.Schema)
			walk = func(path string, sc *jsonschema.Schema) {
				for name, p := range sc.Properties {
					if len(p.Description) < 12 {
						t.Errorf("%s: the property %s%s has no description the model can act on: %q", s.Name, path, name, p.Description)
					}
					walk(path+name+".", p)
				}
				if sc.Items != nil {
					walk(path+"[].", sc.Items)
				}
			}
			walk("", s.Schema)
			portableSubset(t, s.Name, s.Schema)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d tools", len(seen))
	}
}

// portableSubset fails on what the strictest major provider's schema
// subset (Gemini's, an OpenAPI subset) does not take: a keyword outside
// type, properties, required, items, description, enum, minimum, maximum
// and additionalProperties (false only), or more than one type.
func portableSubset(t *testing.T, tool string, s *jsonschema.Schema) {
	t.Helper()
	data, _ := json.Marshal(s)
	var m map[string]any
	json.Unmarshal(data, &m)
	allowed := map[string]bool{"type": true, "properties": true, "required": true, "items": true, "description": true,
		"enum": true, "minimum": true, "maximum": true, "additionalProperties": true}
	var walk func(path string, v map[string]any)
	walk = func(path string, v map[string]any) {
		for k, x := range v {
			switch {
			case !allowed[k]:
				t.Errorf("%s: %s uses %q, outside the portable subset", tool, path, k)
			case k == "type":
				if _, ok := x.(string); !ok {
					t.Errorf("%s: %s has the types %v; one type is portable", tool, path, x)
				}
			case k == "additionalProperties" && x != false:
				t.Errorf("%s: %s has additionalProperties %v", tool, path, x)
			case k == "properties":
				for name, p := range x.(map[string]any) {
					walk(path+"."+name, p.(map[string]any))
				}
			case k == "items":
				walk(path+"[]", x.(map[string]any))
			}
		}
	}
	walk(tool, m)
}
