package policy

import (
	"strings"
	"testing"
)

// A HOME that is not absolute is refused by name: ~ would otherwise mean
// a directory relative to wherever rein runs (and the protected set's
// globs were built from it).
func TestRelativeHomeRefused(t *testing.T) {
	for _, home := range []string{"x", ".", "../h", "x/y"} {
		_, err := Load(Options{Workspace: t.TempDir(), Home: home})
		if err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("HOME %q: %v", home, err)
		}
	}
	if _, err := Load(Options{Workspace: t.TempDir(), Getenv: func(string) string { return "" }}); err != nil {
		t.Errorf("no HOME: %v", err)
	}
}
