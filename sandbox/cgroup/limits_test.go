//go:build linux

package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// fakeGroup lays out a directory as the kernel does a cgroup v2 group
// with the memory and pids controllers enabled.
func fakeGroup(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestV2Protocol drives the v2 file protocol against a directory laid
// out like cgroupfs, as on a host with no delegated v2 hierarchy: what
// Enable writes to the parent, what SetLimits writes to the group, what
// Events reads back.
func TestV2Protocol(t *testing.T) {
	root := t.TempDir()
	fakeGroup(t, root, map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "cpu\n"})
	h := &Hierarchy{Mount: root, Parent: root}
	if err := h.Enable("memory", "pids"); err != nil {
		t.Fatal(err)
	}
	// The kernel takes one "+controller" per write; a file rewritten each
	// time keeps the last.
	if got := read(t, filepath.Join(root, "cgroup.subtree_control")); got != "+pids" {
		t.Fatalf("subtree_control: %q", got)
	}
	g := &Group{Path: filepath.Join(root, "rein-run-1-x")}
	fakeGroup(t, g.Path, map[string]string{"memory.max": "max\n", "memory.swap.max": "max\n", "memory.oom.group": "0\n", "pids.max": "max\n",
		"memory.events": "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 1\n", "pids.events": "max 7\n"})
	if err := g.SetLimits(Limits{MemoryBytes: 512 << 20, Processes: 116}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"memory.max": "536870912", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "116"} {
		if got := read(t, filepath.Join(g.Path, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if e := g.Events(); e != (Events{OOMKills: 1, ForksRefused: 7}) {
		t.Fatalf("events: %+v", e)
	}

	// No swap accounting: memory.swap.max is absent and not needed.
	g2 := &Group{Path: filepath.Join(root, "rein-run-1-y")}
	fakeGroup(t, g2.Path, map[string]string{"memory.max": "max\n", "memory.oom.group": "0\n"})
	if err := g2.SetLimits(Limits{MemoryBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if e := g2.Events(); e != (Events{}) {
		t.Fatalf("a group with nothing counted: %+v", e)
	}
	// A controller that is not enabled in the group has no files: fail.
	g3 := &Group{Path: filepath.Join(root, "rein-run-1-z")}
	fakeGroup(t, g3.Path, nil)
	if err := g3.SetLimits(Limits{Processes: 10}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "pids.max") {
		t.Fatalf("no pids controller: %v", err)
	}
}

func TestV2EnableRefusals(t *testing.T) {
	root := t.TempDir()
	fakeGroup(t, root, map[string]string{"cgroup.controllers": "cpu io\n", "cgroup.subtree_control": ""})
	h := &Hierarchy{Mount: root, Parent: root}
	err := h.Enable("memory")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "the memory controller is not delegated to "+root+" (its cgroup.controllers lists cpu io)") {
		t.Fatalf("%v", err)
	}
	// Already on: nothing is written.
	fakeGroup(t, root, map[string]string{"cgroup.controllers": "memory\n", "cgroup.subtree_control": "memory\n"})
	os.Chmod(filepath.Join(root, "cgroup.subtree_control"), 0o444)
	if err := h.Enable("memory"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "cgroup.controllers")); err != nil {
		t.Fatal(err)
	}
	if err := h.Enable("pids"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no cgroup.controllers: %v", err)
	}
}

// TestFindV1 reads a hybrid host's mountinfo and cgroup files: the
// controller's mount, a container's view of a subtree, and the refusals.
func TestFindV1(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "sys fs")
	for _, d := range []string{"memory/machine.slice/abc", "pids", "cpu,cpuacct/x"} {
		os.MkdirAll(filepath.Join(mnt, d), 0o755)
	}
	esc := strings.ReplaceAll(mnt, " ", `\040`)
	mountinfo := filepath.Join(dir, "mountinfo")
	os.WriteFile(mountinfo, []byte(strings.Join([]string{
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
		"32 31 0:29 / " + esc + "/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct",
		"35 31 0:32 / " + esc + "/memory rw,relatime - cgroup cgroup rw,memory",
		"39 31 0:36 /outer " + esc + "/pids rw,relatime - cgroup cgroup rw,pids",
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
	}, "\n")+"\n"), 0o644)
	self := filepath.Join(dir, "cgroup")
	os.WriteFile(self, []byte("9:name=systemd:/\n8:pids:/outer\n4:memory:/machine.slice/abc\n1:cpu,cpuacct:/x\n0::/\n"), 0o644)
	for c, want := range map[string]string{"memory": mnt + "/memory/machine.slice/abc", "pids": mnt + "/pids", "cpuacct": mnt + "/cpu,cpuacct/x"} {
		v, err := findV1(c, mountinfo, self)
		if err != nil || v.Parent != want || v.Controller != c || !slices.Contains(v.Controllers, c) {
			t.Errorf("%s: %+v, %v; want parent %s", c, v, err, want)
		}
	}
	if _, err := findV1("blkio", mountinfo, self); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no cgroup v1 hierarchy has the blkio controller") {
		t.Errorf("blkio: %v", err)
	}
	os.WriteFile(self, []byte("8:pids:/elsewhere\n4:memory:/a/../b\n"), 0o644)
	if _, err := findV1("pids", mountinfo, self); err == nil || !strings.Contains(err.Error(), "outside the mounted part") {
		t.Errorf("a group outside the mount: %v", err)
	}
	if _, err := findV1("memory", mountinfo, self); err == nil || !strings.Contains(err.Error(), "not a clean absolute path") {
		t.Errorf("a dotted path: %v", err)
	}
}

// TestV1Group: a real v1 group on a hybrid host enforces its limits on a
// thread that joined it, counts what it refused, and is removed.
func TestV1Group(t *testing.T) {
	v, err := FindV1("pids")
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	g, err := v.New("rein-test")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	if err := g.SetLimits(Limits{Processes: 3}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(read(t, filepath.Join(g.Path, "pids.max"))); got != "3" {
		t.Fatalf("pids.max %q", got)
	}
	if err := g.KillAndWait(0); err != nil {
		t.Fatal(err)
	}
	if e := g.Events(); e != (Events{}) {
		t.Fatalf("%+v", e)
	}
	if err := g.AddThread(1 << 30); err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("joining with a thread that does not exist: %v", err)
	}
}
