package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/policy"
)

// TestSessionLimits: a launched session runs under the policy's [limits],
// each as the user wrote it, never the defaults.
func TestSessionLimits(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	user := filepath.Join(root, "user.toml")
	os.WriteFile(user, []byte("[limits]\nmemory = \"300MiB\"\nprocesses = 77\ncpu_seconds = 42\nopen_files = 99\nfile_size = \"5MiB\"\n"), 0o644)
	pol, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: os.DevNull, UserFile: user, ProjectFile: os.DevNull})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sessionLimits(pol)
	if err != nil {
		t.Fatal(err)
	}
	if l.MemoryBytes != 300<<20 || l.Processes != 77 || l.CPUSeconds != 42 || l.OpenFiles != 99 || l.FileSizeBytes != 5<<20 {
		t.Fatalf("the session's limits are %+v, not the policy's", l)
	}
}
