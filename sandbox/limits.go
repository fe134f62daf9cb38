//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/cgroup"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/sandbox/runplan"
	"github.com/reinhq/rein/shell"
)

// tmpBytes is the size of the bwrap rung's /tmp.
func tmpBytes(l Limits) int64 {
	switch {
	case l.TmpBytes > 0:
		return l.TmpBytes
	case l.MemoryBytes > 0:
		return l.MemoryBytes
	}
	return DefaultTmpBytes
}

// rlimits are the per-process limits the init sets.
func rlimits(l Limits) confine.Rlimits {
	return confine.Rlimits{CPUSeconds: uint64(l.CPUSeconds), OpenFiles: uint64(l.OpenFiles), FileSize: uint64(l.FileSizeBytes)}
}

// initReserve is the pids.max allowance of line: InitTasks and one per
// stage.
func initReserve(line *shell.Line) int64 {
	n := int64(InitTasks)
	for _, p := range line.Pipelines {
		n += int64(len(p.Stages))
	}
	return n
}

// perProcess lists the limits the init sets and, on the bwrap rung, the
// size of /tmp.
func perProcess(l Limits, rung Rung) []Applied {
	out := []Applied{{Limit: LimitCore, Value: 0, Mechanism: "rlimit RLIMIT_CORE"}}
	for _, f := range []struct {
		name, mech string
		v          int64
	}{
		{LimitCPU, "rlimit RLIMIT_CPU per process (SIGXCPU, then SIGKILL a second later)", l.CPUSeconds},
		{LimitOpenFiles, "rlimit RLIMIT_NOFILE per process", l.OpenFiles},
		{LimitFileSize, "rlimit RLIMIT_FSIZE per file", l.FileSizeBytes},
	} {
		if f.v > 0 {
			out = append(out, Applied{Limit: f.name, Value: f.v, Mechanism: f.mech})
		}
	}
	if rung == RungBwrap {
		out = append(out, Applied{Limit: LimitTmp, Value: tmpBytes(l), Mechanism: "tmpfs size of the private /tmp"})
	}
	return out
}

// The cgroup finders, replaced by tests to stand for a host without them.
var (
	findCgroup   = found.v2
	findCgroupV1 = found.v1
	newCgroup    = func(h *cgroup.Hierarchy) (*cgroup.Group, error) { return h.New("rein-run") }
)

// found remembers this process's cgroup discovery: where each hierarchy
// is mounted does not change under a running process, and which group the
// process is in is the key, read again each time (the discovery reads
// /proc/self/mountinfo, a quarter to half a millisecond at each run's and
// each session's start).
var found cgroupsFound

type cgroupsFound struct {
	mu    sync.Mutex
	key   string
	h     *cgroup.Hierarchy
	herr  error
	hDone bool
	byV1  map[string]foundV1
}

type foundV1 struct {
	v   *cgroup.V1
	err error
}

// fresh drops what was found under another group; it holds f.mu.
func (f *cgroupsFound) fresh() bool {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		f.key, f.hDone, f.byV1 = "", false, nil
		return false
	}
	if string(data) != f.key {
		f.key, f.hDone, f.byV1 = string(data), false, nil
	}
	return true
}

func (f *cgroupsFound) v2() (*cgroup.Hierarchy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fresh() {
		return cgroup.Find()
	}
	if !f.hDone {
		f.h, f.herr = cgroup.Find()
		f.hDone = true
	}
	return f.h, f.herr
}

func (f *cgroupsFound) v1(controller string) (*cgroup.V1, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fresh() {
		return cgroup.FindV1(controller)
	}
	r, ok := f.byV1[controller]
	if !ok {
		r.v, r.err = cgroup.FindV1(controller)
		if f.byV1 == nil {
			f.byV1 = map[string]foundV1{}
		}
		f.byV1[controller] = r
	}
	return r.v, r.err
}

// groups are a run's cgroups: the v2 group that kills the tree, and
// enforces the memory and process limits where its controllers are
// delegated, and v1 groups for the limits v2 cannot enforce here.
type groups struct {
	v2 *cgroup.Group
	v1 []*cgroup.V1Group
	// v2Controllers are the controllers the v2 group enforces.
	v2Controllers map[string]bool
	v1ByMount     map[string]*cgroup.V1Group
	// forkedFrom is the thread the sandbox was forked from.
	forkedFrom int
}

// newGroups makes the run's cgroups and sets the memory and process
// limits in them: those of l, which refuse the run where neither cgroup
// version can enforce them, and in place of those l leaves unset, the
// defaults (half the host's memory, DefaultProcesses), applied where a
// cgroup can and dropped where none can. It returns the limits in force.
// A v2 group is made where one can be, for the kill, limits or not.
func newGroups(l Limits, reserve int64, defaults bool) (_ *groups, applied []Applied, eff Limits, err error) {
	g := &groups{v2Controllers: map[string]bool{}, v1ByMount: map[string]*cgroup.V1Group{}}
	defer func() {
		if err != nil {
			g.remove()
		}
	}()
	eff = l
	h, herr := findCgroup()
	if herr == nil {
		if g.v2, herr = newCgroup(h); herr != nil {
			g.v2 = nil
		}
	}
	var v2set cgroup.Limits
	for _, c := range []struct {
		controller, name string
		value, dflt      int64
		dst              *int64
	}{
		{"memory", LimitMemory, l.MemoryBytes, defaultMemory(), &eff.MemoryBytes},
		{"pids", LimitProcesses, l.Processes, DefaultProcesses, &eff.Processes},
	} {
		explicit, value := c.value > 0, c.value
		if !explicit && defaults {
			value = c.dflt
		}
		if value <= 0 {
			continue
		}
		want, v2files, v1files := cgroup.Limits{MemoryBytes: value}, "memory.max, memory.swap.max 0, memory.oom.group 1", "memory.limit_in_bytes and memory.memsw.limit_in_bytes"
		if c.controller == "pids" {
			want = cgroup.Limits{Processes: value + reserve}
			v2files = fmt.Sprintf("pids.max %d", want.Processes)
			v1files = v2files
		}
		note := ""
		if !explicit {
			note = " (the default)"
		}
		v2err := herr
		if g.v2 != nil {
			if v2err = h.Enable(c.controller); v2err == nil {
				g.v2Controllers[c.controller] = true
				v2set.MemoryBytes, v2set.Processes = max(v2set.MemoryBytes, want.MemoryBytes), max(v2set.Processes, want.Processes)
				applied = append(applied, Applied{Limit: c.name, Value: value, Mechanism: "cgroup v2 " + v2files + note})
				*c.dst = value
				continue
			}
		}
		v, v1err := findCgroupV1(c.controller)
		if v1err == nil {
			// One group per hierarchy: a thread is in one group of each,
			// and a host may mount memory and pids together.
			vg := g.v1ByMount[v.Mount]
			if vg == nil {
				if vg, v1err = v.New("rein-run"); v1err == nil {
					g.v1 = append(g.v1, vg)
					g.v1ByMount[v.Mount] = vg
				}
			}
			if v1err == nil {
				v1err = vg.SetLimits(want)
			}
			if v1err == nil && c.controller == "memory" && !vg.SwapBounded() {
				v1files = "memory.limit_in_bytes (this kernel does not account swap: swap is not bounded)"
			}
		}
		if v1err == nil {
			applied = append(applied, Applied{Limit: c.name, Value: value, Mechanism: "cgroup v1 " + v1files + note})
			*c.dst = value
			continue
		}
		if explicit {
			return nil, nil, eff, refuse(Unavailable, "the %s limit cannot be enforced here: it needs the cgroup %s controller, and cgroup v2 cannot give it (%v) nor can cgroup v1 (%v). "+
				"Run rein as root, or in a cgroup v2 group delegated to it (a systemd unit with Delegate=yes) with the %s controller enabled, or drop the limit",
				c.name, c.controller, unwrapUnavailable(v2err), unwrapUnavailable(v1err), c.controller)
		}
	}
	if len(g.v2Controllers) > 0 {
		if err := g.v2.SetLimits(v2set); err != nil {
			return nil, nil, eff, refuse(Unavailable, "setting the run's limits: %v", err)
		}
	}
	return g, applied, eff, nil
}

// defaultMemory is the default memory limit: half the host's memory.
func defaultMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit) / 2
}

func unwrapUnavailable(err error) string {
	if err == nil {
		return "no reason given"
	}
	return strings.TrimPrefix(err.Error(), cgroup.ErrUnavailable.Error()+": ")
}

// start starts cmd inside the groups: born in the v2 group (the caller
// set CgroupFD), and forked from a thread that joined the v1 groups first
// and leaves them as soon as the child exists; the child is then checked
// to be in every group. The forking thread is never the main thread: in
// cgroup v1 a process's memory is charged to its main thread's group, so
// rein's own memory would count against the run and its out-of-memory
// killer could pick rein. It stays locked until done closes, because the
// child's parent-death signal (Pdeathsig) is bound to the thread that
// forked it, and a thread can end under a goroutine that exits locked.
func (g *groups) start(cmd *exec.Cmd, done <-chan struct{}) error {
	errc := make(chan error, 1)
	go g.fork(cmd, done, errc)
	return <-errc
}

func (g *groups) fork(cmd *exec.Cmd, done <-chan struct{}, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// While this goroutine holds the main thread, another one cannot
		// run on it.
		inner := make(chan error, 1)
		go g.fork(cmd, done, inner)
		err := <-inner
		runtime.UnlockOSThread()
		errc <- err
		return
	}
	tid := unix.Gettid()
	g.forkedFrom = tid
	var joined []*cgroup.V1Group
	leave := func() error {
		for _, v := range joined {
			if err := v.Leave(tid); err != nil {
				return err
			}
		}
		return nil
	}
	for _, v := range g.v1 {
		if err := v.AddThread(tid); err != nil {
			if leave() == nil {
				runtime.UnlockOSThread()
			}
			// Otherwise the goroutine ends locked, and the thread with it,
			// leaving the groups.
			errc <- err
			return
		}
		joined = append(joined, v)
	}
	err := cmd.Start()
	if lerr := leave(); lerr != nil {
		if err == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		errc <- lerr
		return
	}
	if err == nil {
		err = g.check(cmd)
	}
	errc <- err
	if err != nil {
		runtime.UnlockOSThread()
		return
	}
	<-done
	runtime.UnlockOSThread()
}

// check confirms that the started child is in every v1 group, and kills
// it when it is not: a limit reported applied must be.
func (g *groups) check(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	for _, v := range g.v1 {
		in, err := v.Holds(pid)
		if err == nil && !in && exited(pid) {
			continue
		}
		if err != nil || !in {
			cmd.Process.Kill()
			cmd.Wait()
			return refuse(Unavailable, "the sandbox did not start in its cgroup %s (%v): its limits would not apply", v.Path, err)
		}
	}
	return nil
}

// exited reports whether pid is a zombie (it has left every group).
func exited(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// events sums what the kernel counted in the groups that enforce limits.
func (g *groups) events() cgroup.Events {
	var e cgroup.Events
	if g.v2 != nil && len(g.v2Controllers) > 0 {
		e = g.v2.Events()
	}
	for _, v := range g.v1 {
		ev := v.Events()
		e.OOMKills += ev.OOMKills
		e.ForksRefused += ev.ForksRefused
	}
	return e
}

// confirmV1 kills what is left in the v1 groups and reports whether they
// are empty; it is the tree's containment where there is no v2 group.
func (g *groups) confirmV1() error {
	for _, v := range g.v1 {
		if err := v.KillAndWait(confirmWait); err != nil {
			return err
		}
	}
	return nil
}

// remove removes the emptied groups.
func (g *groups) remove() {
	if g == nil {
		return
	}
	if g.v2 != nil {
		if err := g.v2.Remove(); err != nil {
			g.v2.KillAndWait(confirmWait)
			g.v2.Remove()
		}
	}
	for _, v := range g.v1 {
		if err := v.Remove(); err != nil {
			v.KillAndWait(confirmWait)
			v.Remove()
		}
	}
}

// limitHit says which limit ended a run that did not end well, and how,
// or "" when none did.
func limitHit(l Limits, ev cgroup.Events, stages []runplan.StageResult) (name, reason string) {
	if ev.OOMKills > 0 {
		return LimitMemory, fmt.Sprintf("killed by the memory limit of %s: the kernel's out-of-memory killer ended %d process(es)", sizeString(l.MemoryBytes), ev.OOMKills)
	}
	for _, st := range stages {
		prog := ""
		if len(st.Argv) > 0 {
			prog = st.Argv[0]
		}
		sig := syscall.Signal(st.ExitCode - 128)
		if st.Signal == "" {
			// A shell that ran the killed program exits 128+signal.
			switch {
			case sig == syscall.SIGXCPU && l.CPUSeconds > 0:
				return LimitCPU, fmt.Sprintf("%s exited %d, as a shell does when a program it ran is killed by SIGXCPU at the CPU time limit of %d s", prog, st.ExitCode, l.CPUSeconds)
			case sig == syscall.SIGXFSZ && l.FileSizeBytes > 0:
				return LimitFileSize, fmt.Sprintf("%s exited %d, as a shell does when a program it ran is killed by SIGXFSZ writing beyond the file size limit of %s", prog, st.ExitCode, sizeString(l.FileSizeBytes))
			}
			continue
		}
		// The signal alone could be sent by the command itself: the limit
		// must be set and, for CPU time, mostly used. rusage samples CPU
		// time by ticks, so the bound is loose.
		switch {
		case (sig == syscall.SIGXCPU || sig == syscall.SIGKILL) && l.CPUSeconds > 0 && st.CPUMS >= l.CPUSeconds*1000/2:
			return LimitCPU, fmt.Sprintf("%s was killed at the CPU time limit of %d s (it used %.1f s)", prog, l.CPUSeconds, float64(st.CPUMS)/1000)
		case sig == syscall.SIGXFSZ && l.FileSizeBytes > 0:
			return LimitFileSize, fmt.Sprintf("%s was killed writing beyond the file size limit of %s", prog, sizeString(l.FileSizeBytes))
		}
	}
	if ev.ForksRefused > 0 {
		return LimitProcesses, fmt.Sprintf("the process limit of %d was reached: the kernel refused %d fork(s)", l.Processes, ev.ForksRefused)
	}
	return "", ""
}

// sizeString prints n bytes in the largest binary unit that divides it.
func sizeString(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d %s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ProbeLimits reports how each limit would be enforced here. It makes a
// group for each cgroup limit and removes it again.
func ProbeLimits() []LimitSupport {
	var out []LimitSupport
	for _, l := range []Limits{{MemoryBytes: 1 << 30}, {Processes: DefaultProcesses}} {
		name := LimitMemory
		if l.Processes > 0 {
			name = LimitProcesses
		}
		g, applied, _, err := newGroups(l, InitTasks, false)
		if err != nil {
			var se *Error
			reason := err.Error()
			if errors.As(err, &se) {
				reason = se.Reason
			}
			out = append(out, LimitSupport{Limit: name, Problem: reason})
			continue
		}
		g.remove()
		for _, a := range applied {
			if a.Limit == name {
				out = append(out, LimitSupport{Limit: name, Mechanism: a.Mechanism})
			}
		}
	}
	return append(out,
		LimitSupport{Limit: LimitCPU, Mechanism: "rlimit RLIMIT_CPU, on every rung"},
		LimitSupport{Limit: LimitOpenFiles, Mechanism: "rlimit RLIMIT_NOFILE, on every rung"},
		LimitSupport{Limit: LimitFileSize, Mechanism: "rlimit RLIMIT_FSIZE, on every rung"},
		LimitSupport{Limit: LimitTmp, Mechanism: "tmpfs size, on the bwrap rung only"},
	)
}
