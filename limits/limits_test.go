package limits

import (
	"reflect"
	"testing"
)

// TestEachNamesEvery: Each names every field of Limits once, so that
// Within and the command line's flags bound every limit there is.
func TestEachNamesEvery(t *testing.T) {
	var l Limits
	seen := map[*int64]string{}
	keys := map[string]bool{}
	l.Each(func(key string, v *int64) {
		if keys[key] || seen[v] != "" {
			t.Errorf("Each names %s twice", key)
		}
		keys[key], seen[v] = true, key
	})
	if n := reflect.TypeOf(l).NumField(); len(seen) != n {
		t.Fatalf("Each names %d limits, Limits has %d fields", len(seen), n)
	}
}

// TestWithin: a limit is lowered to the policy's, never raised; one left
// unset is the policy's; one the policy leaves unset is the caller's.
func TestWithin(t *testing.T) {
	got := Within(Limits{MemoryBytes: 1 << 30, Processes: 10, OpenFiles: 0, CPUSeconds: 5}, Limits{MemoryBytes: 512 << 20, Processes: 100, OpenFiles: 64})
	want := Limits{MemoryBytes: 512 << 20, Processes: 10, OpenFiles: 64, CPUSeconds: 5}
	if got != want {
		t.Fatalf("Within = %+v, want %+v", got, want)
	}
}
