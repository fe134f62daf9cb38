//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedFilesHidden: `rein shell 'strings @.env'` and a program
// run by `rein sandbox` cannot print the workspace's .env, whatever the
// policy makes of the line.
func TestProtectedFilesHidden(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=hunter2-in-env\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("strings"); err == nil {
		_, out, errOut := rein(t, "shell", "--approve", "all", "strings @.env")
		if strings.Contains(out+errOut, "hunter2") {
			t.Errorf("rein shell printed .env: %s %s", out, errOut)
		}
	}
	for _, rung := range []string{"bwrap", "landlock"} {
		_, out, errOut := rein(t, "sandbox", "--rung", rung, "--", "cat", ".env")
		if strings.Contains(out+errOut, "hunter2") {
			t.Errorf("%s: rein sandbox printed .env: %s %s", rung, out, errOut)
		}
	}
}

// TestPutBackFailsTheRun: a program that succeeds but leaves a nested
// repository whose config would run a program on the host's next git
// command exits 125, with what was put back named.
func TestPutBackFailsTheRun(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	code, _, errOut := rein(t, "sandbox", "--", "sh", "-c", `mkdir -p sub/.git && printf "[core]\n\tfsmonitor = touch m\n" > sub/.git/config`)
	if code != exitSandbox || !strings.Contains(errOut, "sub/.git (made by the command; sub/.git/config sets core.fsmonitor): removed") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Lstat("sub/.git"); err == nil {
		t.Fatal("sub/.git is still there")
	}
}
