package tool

import (
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
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d tools", len(seen))
	}
}
