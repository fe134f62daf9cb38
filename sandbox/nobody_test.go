//go:build linux

package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// asNobody runs this test binary as the user nobody, from a directory it
// may enter, with a workspace and a cache directory of its own, and
// returns what it printed. env are the helper's variables; WS= in one of
// them is completed with the workspace's path. Running as another user
// needs root: elsewhere the test is missing its mechanism.
func asNobody(t *testing.T, env ...string) []byte {
	t.Helper()
	if os.Getuid() != 0 {
		testenv.Missing(t, "running a helper as another user needs root")
	}
	dir := t.TempDir()
	// The test's temporary directories, which only root may enter.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	ws, cache := filepath.Join(dir, "ws"), filepath.Join(dir, "cache")
	for _, d := range []string{ws, cache} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"REIN_CACHE_DIR=" + cache, "HOME=" + cache, "PATH=/usr/bin:/bin"}
	for _, e := range env {
		if strings.HasSuffix(e, "WS=") {
			e += ws
		}
		cmd.Env = append(cmd.Env, e)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper as nobody: %v: %s", err, out)
	}
	return out
}
