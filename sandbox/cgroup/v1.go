package cgroup

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// V1 is one controller's cgroup v1 hierarchy, as a hybrid host mounts it
// beside a controller-less cgroup2, and the calling process's group in
// it, where new groups are made.
//
// A v1 group cannot be entered at clone time. Its membership is per
// thread, though, and a child inherits the groups of the thread that
// forked it: a thread that joins the groups (AddThread) before it starts
// the child, and is never used again, starts it inside them with no moment
// outside.
type V1 struct {
	Controller string
	// Controllers are all the controllers mounted in the hierarchy, which
	// a host may mount together ("cpu,cpuacct", or every one in one).
	Controllers []string
	// Mount is where the controller's hierarchy is mounted.
	Mount string
	// Parent is the absolute directory new groups are made in.
	Parent string
}

// FindV1 locates controller's v1 hierarchy and checks that the calling
// process may make groups in its own group there. It changes nothing.
func FindV1(controller string) (*V1, error) {
	return findV1(controller, "/proc/self/mountinfo", "/proc/self/cgroup")
}

func findV1(controller, mountinfo, cgroupFile string) (*V1, error) {
	fail := func(format string, args ...any) (*V1, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrUnavailable}, args...)...)
	}
	data, err := os.ReadFile(mountinfo)
	if err != nil {
		return fail("%v", err)
	}
	var mount, root string
	var controllers []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		opts := strings.Split(g[2], ",")
		for _, o := range opts {
			if o == controller {
				mount, root, controllers = unescape(f[4]), unescape(f[3]), opts
			}
		}
		if mount != "" {
			break
		}
	}
	if mount == "" {
		return fail("no cgroup v1 hierarchy has the %s controller mounted", controller)
	}
	self, err := os.ReadFile(cgroupFile)
	if err != nil {
		return fail("%v", err)
	}
	var path string
	sc = bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// id:controller[,controller]:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				path = parts[2]
			}
		}
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "/..") {
		return fail("the process's %s group %q is not a clean absolute path", controller, path)
	}
	// The mount may show a subtree of the hierarchy (a container's view).
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/"))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return fail("the process's %s group %s lies outside the mounted part %s of the hierarchy", controller, path, root)
	}
	v := &V1{Controller: controller, Controllers: controllers, Mount: mount, Parent: filepath.Join(mount, rel)}
	if err := writable(v.Parent); err != nil {
		return fail("%s is not writable by this user (run as root)", v.Parent)
	}
	return v, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// V1Group is one run's group in one v1 hierarchy.
type V1Group struct {
	// Controllers are the controllers of the group's hierarchy.
	Controllers []string
	Path        string
	// parent is the group the calling process is in, where a thread
	// that joined goes back.
	parent string
}

// New makes an empty group named prefix-PID-random under v.Parent.
func (v *V1) New(prefix string) (*V1Group, error) {
	var b [6]byte
	rand.Read(b[:])
	p := filepath.Join(v.Parent, fmt.Sprintf("%s-%d-%s", prefix, os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(p, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &V1Group{Controllers: v.Controllers, Path: p, parent: v.Parent}, nil
}

// SetLimits writes the part of l that the group's controllers enforce:
// memory.limit_in_bytes and, where swap is accounted, the same value as
// memory.memsw.limit_in_bytes, so that nothing is swapped out beyond it;
// pids.max.
func (g *V1Group) SetLimits(l Limits) error {
	if g.has("memory") && l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := write(filepath.Join(g.Path, "memory.limit_in_bytes"), v); err != nil {
			return fmt.Errorf("%w: setting memory.limit_in_bytes: %w", ErrUnavailable, err)
		}
		if err := write(filepath.Join(g.Path, "memory.memsw.limit_in_bytes"), v); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: setting memory.memsw.limit_in_bytes: %w", ErrUnavailable, err)
		}
	}
	if g.has("pids") && l.Processes > 0 {
		if err := write(filepath.Join(g.Path, "pids.max"), strconv.FormatInt(l.Processes, 10)); err != nil {
			return fmt.Errorf("%w: setting pids.max: %w", ErrUnavailable, err)
		}
	}
	return nil
}

// SwapBounded reports whether the group's memory limit bounds swap too:
// whether the kernel accounts swap (memory.memsw.*).
func (g *V1Group) SwapBounded() bool {
	_, err := os.Stat(filepath.Join(g.Path, "memory.memsw.limit_in_bytes"))
	return err == nil
}

func (g *V1Group) has(c string) bool { return slices.Contains(g.Controllers, c) }

// Holds reports whether pid is in the group (a zombie is in none).
func (g *V1Group) Holds(pid int) (bool, error) {
	pids, err := g.procs()
	if err != nil {
		return false, err
	}
	for _, p := range pids {
		if p == pid {
			return true, nil
		}
	}
	return false, nil
}

// AddThread moves the thread tid (of the calling process) into the group.
func (g *V1Group) AddThread(tid int) error {
	if err := write(filepath.Join(g.Path, "tasks"), taskID(tid)); err != nil {
		return fmt.Errorf("%w: joining %s: %w", ErrUnavailable, g.Path, err)
	}
	return nil
}

// Leave moves the thread tid back to the group the process is in.
func (g *V1Group) Leave(tid int) error {
	if err := write(filepath.Join(g.parent, "tasks"), taskID(tid)); err != nil {
		return fmt.Errorf("%w: leaving %s for %s: %w", ErrUnavailable, g.Path, g.parent, err)
	}
	return nil
}

// taskID is what to write to a tasks file to move tid: "0" when tid is
// the calling thread. The kernel then moves the writer without looking the
// id up, and without the RCU grace period each move by id waits for when
// the thread is the group's own (upstream commit 9a3284fad42f): about
// 10 ms a move on the hosts measured, two moves a run.
func taskID(tid int) string {
	if tid == gettid() {
		return "0"
	}
	return strconv.Itoa(tid)
}

// Events reads what the kernel counted in the group.
func (g *V1Group) Events() Events {
	var e Events
	if g.has("memory") {
		e.OOMKills = keyed(filepath.Join(g.Path, "memory.oom_control"), "oom_kill")
	}
	if g.has("pids") {
		e.ForksRefused = keyed(filepath.Join(g.Path, "pids.events"), "max")
	}
	return e
}

// procs lists the group's processes.
func (g *V1Group) procs() ([]int, error) {
	data, err := os.ReadFile(filepath.Join(g.Path, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// KillAndWait kills every process in the group until none is left or the
// time is up; it returns nil only when the group is empty. v1 has no
// cgroup.kill, so a process could fork between the listing and the kill;
// every round kills what the last one missed, and a killed process forks
// no more.
func (g *V1Group) KillAndWait(timeout time.Duration) error {
	return v1KillAndWait(g.Path, timeout)
}

func v1KillAndWait(p string, timeout time.Duration) error {
	g := &V1Group{Path: p}
	self := os.Getpid()
	deadline := time.Now().Add(timeout)
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		pids, err := g.procs()
		if err != nil {
			return err
		}
		// A thread of this process in the group lists it too; it is
		// never killed (it leaves, or ends, on its own).
		pids = slices.DeleteFunc(pids, func(pid int) bool { return pid == self || pid <= 0 })
		if len(pids) == 0 {
			return nil
		}
		// By pidfd, and only what is still in the group once its pidfd is
		// open: a pid that ended and was reused between the listing and
		// the kill is not in the group.
		killListed(pids, g.procs)
		if time.Now().After(deadline) {
			return fmt.Errorf("processes are still in %s %s after they were killed", p, timeout)
		}
		time.Sleep(wait)
	}
}

// Remove removes the emptied group.
func (g *V1Group) Remove() error {
	return os.Remove(g.Path)
}

// Sweep kills and removes the groups under v.Parent named prefix-PID-*
// whose maker PID is no longer running.
func (v *V1) Sweep(prefix string) {
	sweep(v.Parent, prefix, func(d string) error { return v1KillAndWait(d, time.Second) })
}

// sweep removes the groups under parent named prefix-PID-* whose maker PID
// is no longer running, once kill has emptied them.
func sweep(parent, prefix string, kill func(string) error) {
	dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(d), prefix+"-"), "%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if !alive(pid) {
			if kill(d) == nil {
				os.Remove(d)
			}
		}
	}
}
