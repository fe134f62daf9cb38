//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/reinhq/rein/shell"
)

// scratchHelper is, in a helper process of TestAttack4ScratchRemoved run
// as another user, a line run on the bwrap rung, then what is left in
// rein's runs directory.
func scratchHelper() {
	ws := os.Getenv("REIN_TEST_A4_WS")
	if ws == "" {
		return
	}
	l, _ := shell.Parse(os.Getenv("REIN_TEST_A4_LINE"))
	res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	runs, _ := filepath.Glob(filepath.Join(CacheDir(), "runs", "rein-run-*"))
	json.NewEncoder(os.Stdout).Encode(map[string]any{"status": res.Status, "reason": res.Reason, "runs": runs})
	os.Exit(0)
}

// TestAttack4ScratchRemoved: a run's scratch directory, whose home the
// bwrap rung mounts as the command's HOME, is gone once the run ends,
// whatever the command did to the modes of the directories it made
// there. Left behind, each run's stays for good (the sweep could not
// remove it either), and every later session's sweep finds a dead rein's
// directory and lists the cgroup hierarchies again.
func TestAttack4ScratchRemoved(t *testing.T) {
	requireRung(t, RungBwrap)
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a helper as another user")
	}
	dir := t.TempDir()
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
	cmd.Env = []string{"REIN_TEST_A4_WS=" + ws, "REIN_CACHE_DIR=" + cache, "HOME=" + cache, "PATH=/usr/bin:/bin",
		"REIN_TEST_A4_LINE=sh -c 'mkdir -p $HOME/a/b $HOME/c && touch $HOME/a/b/f && chmod 000 $HOME/a/b $HOME/a && chmod 500 $HOME/c'"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper as nobody: %v: %s", err, out)
	}
	var got struct {
		Status, Reason string
		Runs           []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Status != string(OK) {
		t.Fatalf("the line: %s %s", got.Status, got.Reason)
	}
	if len(got.Runs) > 0 {
		t.Errorf("the run's scratch directory is left behind: %v", got.Runs)
	}
}
