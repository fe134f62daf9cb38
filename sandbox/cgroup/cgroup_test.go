//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

func hierarchy(t *testing.T) *Hierarchy {
	t.Helper()
	h, err := Find()
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	return h
}

func TestSelfPath(t *testing.T) {
	dir := t.TempDir()
	for in, want := range map[string]string{
		"0::/\n":                               "/",
		"12:pids:/x\n0::/user.slice/a.scope\n": "/user.slice/a.scope",
		"4:memory:/a\n":                        "",
		"0::relative\n":                        "",
		"0::/a/../b\n":                         "",
	} {
		f := filepath.Join(dir, "cgroup")
		os.WriteFile(f, []byte(in), 0o644)
		got, err := selfPath(f)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestKillTree: a process born in the group and a setsid daemon it
// started both die at Kill, and the group is then empty and removable.
func TestKillTree(t *testing.T) {
	h := hierarchy(t)
	g, err := h.New("rein-test")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "setsid sleep 1000 & echo started; sleep 1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	out.Read(buf)
	var procs []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if procs, _ = os.ReadFile(filepath.Join(g.Path, "cgroup.procs")); len(strings.Fields(string(procs))) == 3 {
			break
		}
	}
	if n := len(strings.Fields(string(procs))); n != 3 {
		t.Fatalf("%d processes in the group, want sh and two sleeps: %q", n, procs)
	}
	if err := g.KillAndWait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if pop, err := g.Populated(); pop || err != nil {
		t.Fatalf("populated %v, %v", pop, err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path); err == nil {
		t.Fatal("the group is still there")
	}
}

// TestSweep removes the groups of makers that are gone, and only those.
func TestSweep(t *testing.T) {
	h := hierarchy(t)
	dead := exec.Command("true")
	dead.Run()
	stale := filepath.Join(h.Parent, "rein-sweeptest-"+strconv.Itoa(dead.Process.Pid)+"-x")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	live, err := h.New("rein-sweeptest")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	h.Sweep("rein-sweeptest")
	if _, err := os.Stat(stale); err == nil {
		os.Remove(stale)
		t.Fatal("a dead maker's group was kept")
	}
	if _, err := os.Stat(live.Path); err != nil {
		t.Fatal("a live maker's group was swept")
	}
}
