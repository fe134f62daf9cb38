package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/cgroup"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/sandbox/runplan"
)

// Limits bound what a run may use. A zero field sets no limit, but for
// TmpBytes. Every limit set is enforced or the run is refused before it
// starts, naming the missing mechanism.
type Limits struct {
	// MemoryBytes bounds the memory of the whole tree, swap included
	// (a cgroup: v2 memory.max, or v1 memory on a hybrid host). The init
	// and, on the bwrap rung, bubblewrap count towards it (about 15 MiB).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Processes bounds the processes and threads of the command's tree (a
	// cgroup: pids.max). The group's pids.max is Processes plus
	// InitTasks, for the init's own threads and bubblewrap.
	Processes int64 `json:"processes,omitempty"`
	// CPUSeconds bounds the CPU time of each process (RLIMIT_CPU).
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// OpenFiles bounds the descriptors of each process (RLIMIT_NOFILE).
	OpenFiles int64 `json:"open_files,omitempty"`
	// FileSizeBytes bounds the size of any file a process writes
	// (RLIMIT_FSIZE).
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"`
	// TmpBytes is the size of the private /tmp, a memory-backed tmpfs on
	// the bwrap rung; zero is MemoryBytes when that is set, else
	// DefaultTmpBytes. A per-file limit does not stop many files from
	// filling it. The landlock and none rungs have no /tmp of their own:
	// asking for TmpBytes there is refused.
	TmpBytes int64 `json:"tmp_bytes,omitempty"`
}

// Limit names, as results report them.
const (
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitCPU       = "cpu_seconds"
	LimitOpenFiles = "open_files"
	LimitFileSize  = "file_size"
	LimitTmp       = "tmp_size"
	LimitCore      = "core_size"
	LimitTimeout   = "timeout"
)

const (
	// InitTasks is what pids.max allows beyond Limits.Processes, for
	// bubblewrap and the threads of rein's init, which count as tasks: an
	// init that cannot make a thread would die and take the report with
	// it.
	InitTasks = 16
	// DefaultTmpBytes is the size of the bwrap rung's /tmp without a
	// memory limit.
	DefaultTmpBytes = 512 << 20
	// minMemory is the least memory limit accepted: below it the init
	// and bubblewrap alone would not fit.
	minMemory = 32 << 20
	// minOpenFiles is the least open-files limit accepted: the init
	// needs a few descriptors to start the plan.
	minOpenFiles = 16
)

// Applied is one limit as enforced: its value and the mechanism.
type Applied struct {
	Limit     string `json:"limit"`
	Value     int64  `json:"value"`
	Mechanism string `json:"mechanism"`
}

func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
		min  int64
		why  string
	}{
		{LimitMemory, l.MemoryBytes, minMemory, "rein's init and bubblewrap need about 15 MiB of it"},
		{LimitProcesses, l.Processes, 1, ""},
		{LimitCPU, l.CPUSeconds, 1, ""},
		{LimitOpenFiles, l.OpenFiles, minOpenFiles, "the init needs a few descriptors to start the command"},
		{LimitFileSize, l.FileSizeBytes, 1, ""},
		{LimitTmp, l.TmpBytes, 1 << 20, ""},
	} {
		switch {
		case f.v < 0:
			return refuse(Denied, "the %s limit %d is negative", f.name, f.v)
		case f.v > 0 && f.v < f.min:
			msg := fmt.Sprintf("the %s limit %d is below the least accepted, %d", f.name, f.v, f.min)
			if f.why != "" {
				msg += ": " + f.why
			}
			return refuse(Denied, "%s", msg)
		}
	}
	return nil
}

// tmpBytes is the size of the bwrap rung's /tmp.
func (l Limits) tmpBytes() int64 {
	switch {
	case l.TmpBytes > 0:
		return l.TmpBytes
	case l.MemoryBytes > 0:
		return l.MemoryBytes
	}
	return DefaultTmpBytes
}

// rlimits are the per-process limits the init sets.
func (l Limits) rlimits() confine.Rlimits {
	return confine.Rlimits{CPUSeconds: uint64(l.CPUSeconds), OpenFiles: uint64(l.OpenFiles), FileSize: uint64(l.FileSizeBytes)}
}

// perProcess lists the limits the init sets and, on the bwrap rung, the
// size of /tmp.
func (l Limits) perProcess(rung string) []Applied {
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
		out = append(out, Applied{Limit: LimitTmp, Value: l.tmpBytes(), Mechanism: "tmpfs size of the private /tmp"})
	}
	return out
}

// The cgroup finders, replaced by tests to stand for a host without them.
var (
	findCgroup   = cgroup.Find
	findCgroupV1 = cgroup.FindV1
	newCgroup    = func(h *cgroup.Hierarchy) (*cgroup.Group, error) { return h.New("rein-run") }
)

// groups are a run's cgroups: the v2 group that kills the tree, and
// enforces the memory and process limits where its controllers are
// delegated, and v1 groups for the limits v2 cannot enforce here.
type groups struct {
	v2 *cgroup.Group
	v1 []*cgroup.V1Group
	// v2Controllers are the controllers the v2 group enforces.
	v2Controllers map[string]bool
}

// newGroups makes the run's cgroups and sets l in them. A memory or
// process limit that neither cgroup version can enforce refuses the run.
// Without limits, a v2 group is made where one can be, for the kill.
func newGroups(l Limits) (_ *groups, applied []Applied, err error) {
	g := &groups{v2Controllers: map[string]bool{}}
	defer func() {
		if err != nil {
			g.remove()
		}
	}()
	h, herr := findCgroup()
	if herr == nil {
		if g.v2, herr = newCgroup(h); herr != nil {
			g.v2 = nil
		}
	}
	want := cgroup.Limits{MemoryBytes: l.MemoryBytes}
	if l.Processes > 0 {
		want.Processes = l.Processes + InitTasks
	}
	for _, c := range want.Controllers() {
		name, value, v2files, v1files := LimitMemory, l.MemoryBytes, "memory.max, memory.swap.max 0, memory.oom.group 1", "memory.limit_in_bytes and memory.memsw.limit_in_bytes"
		if c == "pids" {
			name, value, v2files, v1files = LimitProcesses, l.Processes, fmt.Sprintf("pids.max %d", want.Processes), fmt.Sprintf("pids.max %d", want.Processes)
		}
		v2err := herr
		if g.v2 != nil {
			if v2err = h.Enable(c); v2err == nil {
				g.v2Controllers[c] = true
				applied = append(applied, Applied{Limit: name, Value: value, Mechanism: "cgroup v2 " + v2files})
				continue
			}
		}
		v, v1err := findCgroupV1(c)
		var vg *cgroup.V1Group
		if v1err == nil {
			if vg, v1err = v.New("rein-run"); v1err == nil {
				g.v1 = append(g.v1, vg)
				v1err = vg.SetLimits(want)
			}
		}
		if v1err != nil {
			return nil, nil, refuse(Unavailable, "the %s limit cannot be enforced here: it needs the cgroup %s controller, and cgroup v2 cannot give it (%v) nor can cgroup v1 (%v). "+
				"Run rein as root, or in a cgroup v2 group delegated to it (a systemd unit with Delegate=yes) with the %s controller enabled, or drop the limit",
				name, c, unwrapUnavailable(v2err), unwrapUnavailable(v1err), c)
		}
		applied = append(applied, Applied{Limit: name, Value: value, Mechanism: "cgroup v1 " + v1files})
	}
	if len(g.v2Controllers) > 0 {
		var set cgroup.Limits
		if g.v2Controllers["memory"] {
			set.MemoryBytes = want.MemoryBytes
		}
		if g.v2Controllers["pids"] {
			set.Processes = want.Processes
		}
		if err := g.v2.SetLimits(set); err != nil {
			return nil, nil, refuse(Unavailable, "setting the run's limits: %v", err)
		}
	}
	return g, applied, nil
}

func unwrapUnavailable(err error) string {
	if err == nil {
		return "no reason given"
	}
	return strings.TrimPrefix(err.Error(), cgroup.ErrUnavailable.Error()+": ")
}

// start starts cmd inside the groups: born in the v2 group (the caller
// set CgroupFD), and forked from a thread that joined the v1 groups first
// and leaves them as soon as the child exists. The thread must live on:
// the parent-death signal of the child (Pdeathsig) is bound to the thread
// that forked it, not to the process. Were it to stay in the groups,
// their out-of-memory killer could pick rein, and their tree kill would
// list it. If it cannot leave, the child is killed and the thread, locked,
// ends with its goroutine.
func (g *groups) start(cmd *exec.Cmd) error {
	if len(g.v1) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tid := unix.Gettid()
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
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
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
		switch {
		case sig == syscall.SIGXCPU, sig == syscall.SIGKILL && l.CPUSeconds > 0 && st.CPUMS >= l.CPUSeconds*1000:
			return LimitCPU, fmt.Sprintf("%s was killed at the CPU time limit of %d s (it used %.1f s)", prog, l.CPUSeconds, float64(st.CPUMS)/1000)
		case sig == syscall.SIGXFSZ:
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
