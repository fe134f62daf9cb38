package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// NotFoundError says that no bubblewrap binary was found, where it was
// looked for, and how to install one.
type NotFoundError struct {
	Searched []string // the directories and PATH lookups tried, in order
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("bubblewrap (bwrap) not found in %s: install bubblewrap (Debian: apt-get install bubblewrap)", strings.Join(e.Searched, ", "))
}

// Find returns the path of the bwrap binary: /usr/bin/bwrap or
// /bin/bwrap, which a package manager owns and an unprivileged user cannot
// replace, and only then the first bwrap on PATH.
func Find() (string, error) {
	fixed := []string{"/usr/bin/bwrap", "/bin/bwrap"}
	for _, p := range fixed {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("bwrap")
	if err == nil {
		return p, nil
	}
	return "", &NotFoundError{Searched: append(fixed, "PATH")}
}

// Version returns the version bwrapPath reports, such as "0.8.0". It proves
// only that the binary runs; whether it can build a sandbox on this host is
// known only from a real run.
func Version(bwrapPath string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrapPath, "--version")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%s --version: %w: %s", bwrapPath, err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("%s --version: %w", bwrapPath, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "bubblewrap ")
	if !ok || v == "" || strings.ContainsAny(v, " \n") {
		return "", fmt.Errorf("%s --version: unexpected output %q", bwrapPath, out)
	}
	return v, nil
}
