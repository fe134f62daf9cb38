//go:build linux

package sandbox

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestForgottenMain: a program that embeds the sandbox without calling
// Main is refused at once, by name, and never started again as an init.
func TestForgottenMain(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "noinit")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/noinit").CombinedOutput(); err != nil {
		t.Fatalf("building the program: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 {
		t.Fatalf("exit %v:\n%s", err, out)
	}
	if !strings.Contains(string(out), "is ErrNoInit: true") || !strings.Contains(string(out), "call sandbox.Main() first thing in its main function") ||
		!strings.Contains(string(out), "preflight ok: false (this program cannot serve as rein's sandbox init") {
		t.Fatalf("%s", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the refusal took %s", d)
	}
	if len(out) > 2000 {
		t.Fatalf("the refusal printed %d bytes, as a program started again would", len(out))
	}
}
