//go:build linux

package sandbox

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestMasksOnlyReachable: the bwrap rung masks the private files of /etc
// the caller could reach itself, and no others: root reaches them all and
// has them all masked; another user reaches none of /etc/shadow and
// /etc/ssl/private and gets no mount over them, and still cannot read
// them in the sandbox.
func TestMasksOnlyReachable(t *testing.T) {
	requireRung(t, RungBwrap)
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a helper as another user")
	}
	private, err := privateSystemFiles()
	if err != nil {
		t.Fatal(err)
	}
	masks, err := systemMasks(RungBwrap)
	if err != nil || !slices.Equal(masks, private) {
		t.Fatalf("as root the masks are %v, not every private file %v (%v)", masks, private, err)
	}
	if !slices.Contains(private, "/etc/shadow") {
		t.Fatalf("/etc/shadow is not among the private files: %v", private)
	}
	// The helper is this test binary, run as nobody from a directory it
	// may enter, with a cache directory and a workspace of its own.
	dir := t.TempDir()
	// The test's temporary directories, which only root may enter.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	io.Copy(dst, src)
	src.Close()
	dst.Close()
	ws, cache := filepath.Join(dir, "ws"), filepath.Join(dir, "cache")
	for _, d := range []string{ws, cache} {
		os.Mkdir(d, 0o700)
		os.Chown(d, 65534, 65534)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"REIN_TEST_MASKS_WS=" + ws, "REIN_CACHE_DIR=" + cache, "HOME=" + cache, "PATH=/usr/bin:/bin",
		"REIN_TEST_MASKS_LINE=sh -c 'grep -c \" /etc/shadow \" /proc/self/mountinfo; cat /etc/shadow; ls /etc/ssl/private'"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper as nobody: %v: %s", err, out)
	}
	var got struct {
		Masks          []string
		Stdout, Stderr string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range []string{"/etc/shadow", "/etc/ssl/private"} {
		if slices.Contains(got.Masks, f) {
			t.Errorf("%s is masked for a user who cannot reach it: %v", f, got.Masks)
		}
	}
	if got.Stdout != "0\n" || !strings.Contains(got.Stderr, "/etc/shadow: Permission denied") || !strings.Contains(got.Stderr, "'/etc/ssl/private': Permission denied") {
		t.Errorf("as nobody in the sandbox: stdout %q, stderr %q", got.Stdout, got.Stderr)
	}
}
