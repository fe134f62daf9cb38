package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestChangedConfig: the net under the table reports every dotted file
// made or changed since the time given, whatever its name, and leaves out
// what was there before, what is not dotted, and the caches.
func TestChangedConfig(t *testing.T) {
	ws := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".editorconfig", "old")
	write(".tool/old.toml", "old")
	write("old/.eslintrc", "old")
	time.Sleep(100 * time.Millisecond)
	since := time.Now()
	write(".newtool/config.toml", "x")  // a tool no table names
	write("pkg/.zed/tasks.json", "x")   // a table's name, below the top
	write("lefthook.yml", "x")          // a table's name without a dot
	write(".editorconfig", "changed")   // changed
	write("src/main.go", "x")           // not configuration
	write("node_modules/.bin/x", "x")   // a cache
	write(".venv/bin/activate", "x")    // a cache
	write(".git/hooks/pre-commit", "x") // git's own, guarded on its own
	write("a/.cache/b/c", "x")          // a cache, below the top
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, ".envrc")); err != nil {
		t.Fatal(err)
	}
	// A modification time set back does not hide a change.
	write(".hidden-old", "x")
	old := since.Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(ws, ".hidden-old"), old, old); err != nil {
		t.Fatal(err)
	}
	r := ChangedConfig(ws, since)
	want := []string{".editorconfig", ".envrc", ".hidden-old", ".newtool/config.toml", "lefthook.yml", "pkg/.zed/tasks.json"}
	if r.Count != len(want) || !slices.Equal(r.Paths, want) || r.Truncated {
		t.Errorf("got %+v, want %q", r, want)
	}

	// Past MaxConfigShown the count goes on and the paths stop.
	for i := range MaxConfigShown + 5 {
		write(fmt.Sprintf(".many/f%02d", i), "x")
	}
	r = ChangedConfig(ws, since)
	if r.Count != len(want)+MaxConfigShown+5 || len(r.Paths) != MaxConfigShown || r.Paths[0] != ".editorconfig" {
		t.Errorf("got %d paths of %d: %q", len(r.Paths), r.Count, r.Paths)
	}
	if r := ChangedConfig(ws, time.Now().Add(time.Second)); r.Count != 0 {
		t.Errorf("nothing changed since, got %+v", r)
	}
}
