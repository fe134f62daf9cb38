package evidence

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

func TestMain(m *testing.M) {
	// The go command's own build cache is the user's: each test's module
	// is at a directory of its own, so no result of another run is
	// replayed for it.
	os.Exit(m.Run())
}

// goRun is what one go command printed and how it ended.
type goRun struct {
	stdout, stderr []byte
	exit           int
}

// runGo runs the go command in dir with this binary's build cache, none
// of this environment's Go settings that would change what is built, and
// the GOFLAGS given (beyond -mod=mod).
func runGo(t testing.TB, dir, goflags string, args ...string) goRun {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "reports are read from the real go command: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOENV=off", "GOFLAGS=-mod=mod "+goflags, "GOTOOLCHAIN=local",
		"GOPROXY=off", "GO111MODULE=on", "GOWORK=off", "CGO_ENABLED=0", "GODEBUG=", "GOCOVERDIR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	run := goRun{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("go %v: %v", args, err)
	}
	return run
}

// module writes a module of path modPath with files into a new
// directory and returns it.
func module(t testing.TB, modPath string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	all := map[string]string{"go.mod": "module " + modPath + "\n\ngo 1.26\n"}
	for k, v := range files {
		all[k] = v
	}
	testenv.WriteFiles(t, dir, all, 0o644)
	return dir
}
