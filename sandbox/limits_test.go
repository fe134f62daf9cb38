//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox/cgroup"
	"github.com/reinhq/rein/sandbox/runplan"
	"github.com/reinhq/rein/shell"
)

// requireLimits fails where REIN_REQUIRE_SANDBOX=1 and this host cannot
// enforce memory and process limits, and skips elsewhere.
func requireLimits(t *testing.T) {
	t.Helper()
	g, _, _, err := newGroups(Limits{MemoryBytes: 64 << 20, Processes: 10}, InitTasks, false)
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	g.remove()
}

func applied(res *Result, limit string) *Applied {
	for i := range res.Limits {
		if res.Limits[i].Limit == limit {
			return &res.Limits[i]
		}
	}
	return nil
}

// TestMemoryLimit: a 4 GiB allocation under a 512 MiB limit is killed and
// reported as the memory limit, not as a crash.
func TestMemoryLimit(t *testing.T) {
	requireLimits(t)
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		copyProbe(t, ws)
		res := runLine(t, ws, fmt.Sprintf("./probe alloc %d", int64(4)<<30), Profile{Rung: rung, Limits: Limits{MemoryBytes: 512 << 20}})
		if res.Status != Failed || res.LimitHit != LimitMemory || res.ExitCode != 137 || !strings.Contains(res.Reason, "memory limit of 512 MiB") {
			t.Fatalf("%+v", res)
		}
		if a := applied(res, LimitMemory); a == nil || a.Value != 512<<20 || !strings.HasPrefix(a.Mechanism, "cgroup v") {
			t.Fatalf("applied: %+v", res.Limits)
		}
		// The same allocation fits a larger limit: the limit, not the
		// program, ended it.
		res = runLine(t, ws, fmt.Sprintf("./probe alloc %d", int64(64)<<20), Profile{Rung: rung, Limits: Limits{MemoryBytes: 512 << 20}})
		if res.Status != OK || res.LimitHit != "" {
			t.Fatalf("%+v", res)
		}
	})
}

// TestProcessLimit: a bounded fork bomb under a 100-process limit is
// stopped at the limit and reported, and none of it survives the run.
func TestProcessLimit(t *testing.T) {
	requireLimits(t)
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		copyProbe(t, ws)
		res := runLine(t, ws, "./probe fork 1000", Profile{Rung: rung, Limits: Limits{Processes: 100}})
		var started int
		fmt.Sscanf(res.Stdout.Text, "started %d", &started)
		if res.Status != Failed || res.LimitHit != LimitProcesses || !strings.Contains(res.Reason, "process limit of 100") {
			t.Fatalf("%+v", res)
		}
		// The probe's own threads count too; the init's are the allowance.
		if started < 50 || started > 100+InitTasks+1 {
			t.Fatalf("%d children started under a limit of %d (+%d for the init): %+v", started, 100, InitTasks+1, res)
		}
		if a := applied(res, LimitProcesses); a == nil || a.Value != 100 || !strings.Contains(a.Mechanism, fmt.Sprintf("pids.max %d", 100+InitTasks+1)) {
			t.Fatalf("applied: %+v", res.Limits)
		}
		if res.Poisoned != "" {
			t.Fatalf("poisoned: %s", res.Poisoned)
		}
		t.Logf("%d children started; %s", started, res.Reason)
	})
}

// TestCPULimit: a CPU spin under a 2 s CPU limit is killed after 2 s of
// CPU time and reported as the CPU limit; one that ignores SIGXCPU (as
// every Go program does) is killed a second later.
func TestCPULimit(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		copyProbe(t, ws)
		for _, c := range []struct {
			line     string
			exit     int
			min, max int64
		}{
			// The bounds are loose: rusage splits the CPU time by sampled
			// ticks, and the kernel checks the limit at tick granularity.
			{`sh -c 'while :; do :; done'`, 128 + int(syscall.SIGXCPU), 1000, 4000},
			{"./probe spin", 128 + int(syscall.SIGKILL), 2000, 5000},
		} {
			res := runLine(t, ws, c.line, Profile{Rung: rung, Timeout: 60 * time.Second, Limits: Limits{CPUSeconds: 2}})
			if res.Status != Failed || res.LimitHit != LimitCPU || res.ExitCode != c.exit || len(res.Stages) != 1 {
				t.Fatalf("%s: %+v", c.line, res)
			}
			if cpu := res.Stages[0].CPUMS; cpu < c.min || cpu > c.max {
				t.Fatalf("%s used %d ms of CPU under a 2 s limit", c.line, cpu)
			}
			if a := applied(res, LimitCPU); a == nil || a.Value != 2 || !strings.HasPrefix(a.Mechanism, "rlimit RLIMIT_CPU") {
				t.Fatalf("applied: %+v", res.Limits)
			}
		}
	})
}

// TestFileSizeLimit: a 3 GiB write under a 1 GiB file size limit stops at
// exactly 1 GiB and is reported as the file size limit.
func TestFileSizeLimit(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, fmt.Sprintf("head -c %d /dev/zero > big", int64(3)<<30), Profile{Rung: rung, Limits: Limits{FileSizeBytes: 1 << 30}})
		fi, err := os.Stat(filepath.Join(ws, "big"))
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(ws, "big"))
		if res.Status != Failed || res.LimitHit != LimitFileSize || res.ExitCode != 128+int(syscall.SIGXFSZ) {
			t.Fatalf("%+v", res)
		}
		if fi.Size() != 1<<30 {
			t.Fatalf("the file is %d bytes under a 1 GiB limit", fi.Size())
		}
	})
}

// TestRlimitsReachTheCommand: the open-files limit and the disabled core
// dumps are what the command sees, on both confining rungs; the none rung,
// which cannot hold the command to them, refuses them, but still disables
// core dumps.
func TestRlimitsReachTheCommand(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, `sh -c 'ulimit -n; ulimit -c; ulimit -t'`, Profile{Rung: rung, Limits: Limits{OpenFiles: 64, CPUSeconds: 30}})
		if res.Status != OK || res.Stdout.Text != "64\n0\n30\n" {
			t.Fatalf("%+v", res)
		}
	})
	ws := workspaceDir(t)
	l, _ := shell.Parse("true")
	_, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungNone, Limits: Limits{OpenFiles: 64}}, nil, nil)
	var se *Error
	if !errors.As(err, &se) || se.Status != Unavailable || !strings.Contains(se.Reason, "the none rung cannot hold a command to a limit") {
		t.Fatalf("a limit on the none rung: %v", err)
	}
	res := runLine(t, ws, `sh -c 'ulimit -c'`, Profile{Rung: RungNone})
	if res.Status != OK || res.Stdout.Text != "0\n" || applied(res, LimitMemory) != nil || applied(res, LimitProcesses) != nil {
		t.Fatalf("%+v", res)
	}
}

// TestTmpSize: the bwrap rung's /tmp holds what --tmp-size says, by
// default the memory limit; the other rungs refuse the limit.
func TestTmpSize(t *testing.T) {
	requireRung(t, RungBwrap)
	requireLimits(t)
	ws := workspaceDir(t)
	res := runLine(t, ws, "head -c 3000000 /dev/zero > /tmp/x", Profile{Rung: RungBwrap, Limits: Limits{TmpBytes: 2 << 20}})
	if res.Status != Failed || !strings.Contains(res.Stderr.Text, "No space left on device") {
		t.Fatalf("%+v", res)
	}
	res = runLine(t, ws, `sh -c 'df -B1 /tmp | tail -1'`, Profile{Rung: RungBwrap, Limits: Limits{MemoryBytes: 256 << 20}})
	if f := strings.Fields(res.Stdout.Text); res.Status != OK || len(f) < 2 || f[1] != fmt.Sprint(256<<20) {
		t.Fatalf("/tmp under a 256 MiB memory limit: %+v", res)
	}
	if a := applied(res, LimitTmp); a == nil || a.Value != 256<<20 {
		t.Fatalf("applied: %+v", res.Limits)
	}
	requireRung(t, RungLandlock)
	l, _ := shell.Parse("true")
	_, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungLandlock, Limits: Limits{TmpBytes: 2 << 20}}, nil, nil)
	var se *Error
	if !errors.As(err, &se) || se.Status != Unavailable || !strings.Contains(se.Reason, "needs the bwrap rung") {
		t.Fatalf("tmp size on the landlock rung: %v", err)
	}
}

// TestLimitsFailClosed: where no cgroup can enforce a memory or process
// limit, the run is refused before anything starts, naming the mechanism
// and how to get it; without such limits it runs.
func TestLimitsFailClosed(t *testing.T) {
	requireRung(t, RungBwrap)
	oldV2, oldV1 := findCgroup, findCgroupV1
	defer func() { findCgroup, findCgroupV1 = oldV2, oldV1 }()
	findCgroup = func() (*cgroup.Hierarchy, error) {
		return nil, fmt.Errorf("%w: cgroup2 is mounted nowhere (test)", cgroup.ErrUnavailable)
	}
	findCgroupV1 = func(c string) (*cgroup.V1, error) {
		return nil, fmt.Errorf("%w: no cgroup v1 hierarchy has the %s controller mounted (test)", cgroup.ErrUnavailable, c)
	}
	ws := workspaceDir(t)
	marker := filepath.Join(ws, "ran")
	l, _ := shell.Parse("touch " + marker)
	for _, lim := range []Limits{{MemoryBytes: 512 << 20}, {Processes: 100}} {
		_, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap, Limits: lim}, nil, nil)
		var se *Error
		if !errors.As(err, &se) || se.Status != Unavailable || !strings.Contains(se.Reason, "cannot be enforced here") ||
			!strings.Contains(se.Reason, "cgroup v2 cannot give it (cgroup2 is mounted nowhere (test))") || !strings.Contains(se.Reason, "Delegate=yes") {
			t.Fatalf("%+v: %v", lim, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran although its limit could not be enforced")
		}
	}
	// The rlimits need no cgroup, and the default cgroup limits are
	// dropped where no cgroup can enforce them.
	res := runLine(t, ws, "touch "+marker, Profile{Rung: RungBwrap, Limits: Limits{CPUSeconds: 10, FileSizeBytes: 1 << 20}})
	if res.Status != OK || res.Containment != "pid namespace" || applied(res, LimitMemory) != nil || applied(res, LimitProcesses) != nil || applied(res, LimitCPU) == nil {
		t.Fatalf("%+v", res)
	}
}

func TestLimitsValidate(t *testing.T) {
	ws := workspaceDir(t)
	l, _ := shell.Parse("true")
	for lim, want := range map[Limits]string{
		{MemoryBytes: -1}:   "the memory limit -1 is negative",
		{MemoryBytes: 1024}: "below the least accepted",
		{OpenFiles: 3}:      "the open_files limit 3 is below the least accepted, 16",
		{TmpBytes: 10}:      "tmp_size",
		{Processes: -5}:     "the processes limit -5 is negative",
	} {
		_, err := Run(context.Background(), l, Profile{Workspace: ws, Limits: lim}, nil, nil)
		var se *Error
		if !errors.As(err, &se) || se.Status != Denied || !strings.Contains(se.Reason, want) {
			t.Errorf("%+v: %v, want %q", lim, err, want)
		}
	}
}

// TestLimitsHygiene: a thousand runs under limits, some killed by them
// and some whose rein was killed, leave no cgroup, process or scratch
// directory behind.
func TestLimitsHygiene(t *testing.T) {
	requireLimits(t)
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	copyProbe(t, ws)
	lim := Limits{MemoryBytes: 64 << 20, Processes: 20, CPUSeconds: 5, FileSizeBytes: 1 << 20}
	// A first run sweeps what earlier, killed processes left, so that
	// what is counted is this test's.
	runLine(t, ws, "true", Profile{Rung: RungBwrap, Limits: lim})
	before := groupDirs(t)
	const total = 1000
	killed := 0
	for i := 0; i < total; i++ {
		rung := rungs[i%len(rungs)]
		var line string
		switch {
		case i%100 == 1:
			line = fmt.Sprintf("./probe alloc %d", int64(256)<<20)
		case i%100 == 2:
			line = "./probe fork 100"
		case i%100 == 3:
			line = "head -c 2000000 /dev/zero > big"
		case i%100 == 4:
			// A helper process runs this one and is killed with SIGKILL.
			killRunner(t, ws, rung, lim)
			killed++
			continue
		default:
			line = "true"
		}
		res := runLine(t, ws, line, Profile{Rung: rung, Limits: lim})
		if res.Poisoned != "" {
			t.Fatalf("run %d: poisoned: %s", i, res.Poisoned)
		}
		if line != "true" && res.LimitHit == "" {
			t.Fatalf("run %d (%s): no limit reported: %+v", i, line, res)
		}
	}
	// The next run sweeps what the killed runners left.
	runLine(t, ws, "true", Profile{Rung: RungBwrap, Limits: lim})
	for _, g := range groupDirs(t) {
		if !slices.Contains(before, g) && !othersLive(g) {
			t.Fatalf("a cgroup was left behind: %s (before the runs: %v)", g, before)
		}
	}
	left, _ := filepath.Glob(filepath.Join(CacheDir(), "runs", "rein-run-*"))
	left = slices.DeleteFunc(left, othersLive)
	if len(left) > 0 {
		t.Fatalf("scratch directories left behind: %v", left)
	}
	if left := append(testenv.ProcessesWith("/bin/sleep\x0060\x00"), testenv.ProcessesWith("./probe\x00")...); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
	t.Logf("%d runs, %d of them with their rein killed", total, killed)
}

// groupDirs lists the rein-run groups in every hierarchy rein uses.
func groupDirs(t *testing.T) []string {
	t.Helper()
	var out []string
	if h, err := cgroup.Find(); err == nil {
		m, _ := filepath.Glob(filepath.Join(h.Parent, "rein-run-*"))
		out = append(out, m...)
	}
	for _, c := range []string{"memory", "pids"} {
		if v, err := cgroup.FindV1(c); err == nil {
			m, _ := filepath.Glob(filepath.Join(v.Parent, "rein-run-*"))
			out = append(out, m...)
		}
	}
	return out
}

// killRunner runs a sleeping line in a helper process under lim and kills
// the helper with SIGKILL once the line runs.
func killRunner(t *testing.T, ws string, rung Rung, lim Limits) {
	t.Helper()
	marker := fmt.Sprintf("rein-hygiene-%d", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REIN_TEST_SANDBOX_WS="+ws, "REIN_TEST_SANDBOX_RUNG="+string(rung),
		fmt.Sprintf("REIN_TEST_SANDBOX_LIMITS=%d,%d", lim.MemoryBytes, lim.Processes),
		"REIN_TEST_SANDBOX_LINE=sh -c 'sleep 1000; :' "+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(testenv.ProcessesWith(marker)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the helper's line never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline = time.Now().Add(5 * time.Second); len(testenv.ProcessesWith(marker)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the line outlived its killed rein: %v", testenv.ProcessesWith(marker))
		}
	}
}

// TestV2Delegated: on a host whose cgroup v2 hierarchy delegates the
// memory and pids controllers (laid out here in a directory, as this host
// has none), the limits go to the v2 group and no v1 group is made.
func TestV2Delegated(t *testing.T) {
	oldV2, oldV1, oldNew := findCgroup, findCgroupV1, newCgroup
	defer func() { findCgroup, findCgroupV1, newCgroup = oldV2, oldV1, oldNew }()
	root := t.TempDir()
	files := map[string]string{"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "", "memory.max": "max", "memory.swap.max": "max",
		"memory.oom.group": "0", "pids.max": "max", "memory.events": "oom_kill 0\n", "pids.events": "max 3\n"}
	for name, content := range files {
		os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)
	}
	findCgroup = func() (*cgroup.Hierarchy, error) { return &cgroup.Hierarchy{Mount: root, Parent: root}, nil }
	findCgroupV1 = func(c string) (*cgroup.V1, error) { t.Fatalf("v1 consulted for %s", c); return nil, nil }
	newCgroup = func(h *cgroup.Hierarchy) (*cgroup.Group, error) { return cgroup.Open(root) }
	g, got, _, err := newGroups(Limits{MemoryBytes: 512 << 20, Processes: 100}, InitTasks, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Applied{
		{LimitMemory, 512 << 20, "cgroup v2 memory.max, memory.swap.max 0, memory.oom.group 1"},
		{LimitProcesses, 100, fmt.Sprintf("cgroup v2 pids.max %d", 100+InitTasks)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(g.v1) != 0 {
		t.Fatalf("applied %+v, v1 %v", got, g.v1)
	}
	for file, want := range map[string]string{"memory.max": "536870912", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": fmt.Sprint(100 + InitTasks), "cgroup.subtree_control": "+pids"} {
		if data, _ := os.ReadFile(filepath.Join(root, file)); string(data) != want {
			t.Errorf("%s = %q, want %q", file, data, want)
		}
	}
	if name, reason := limitHit(Limits{Processes: 100}, g.events(), nil); name != LimitProcesses || !strings.Contains(reason, "refused 3 fork(s)") {
		t.Fatalf("%s %s", name, reason)
	}
}

// TestLimitHit names the limit from the kernel's counts and the stages'
// ends, and nothing for an ordinary failure.
func TestLimitHit(t *testing.T) {
	l := Limits{MemoryBytes: 1 << 30, CPUSeconds: 2, FileSizeBytes: 1 << 20, Processes: 10}
	st := func(exit int, signal string, cpu int64) []runplan.StageResult {
		return []runplan.StageResult{{Argv: []string{"prog"}, ExitCode: exit, Signal: signal, CPUMS: cpu}}
	}
	for _, c := range []struct {
		ev     cgroup.Events
		stages []runplan.StageResult
		want   string
	}{
		{cgroup.Events{OOMKills: 1, ForksRefused: 2}, st(137, "killed", 10), LimitMemory},
		{cgroup.Events{}, st(152, "CPU time limit exceeded", 2000), LimitCPU},
		{cgroup.Events{}, st(137, "killed", 3000), LimitCPU},
		{cgroup.Events{}, st(137, "killed", 100), ""},
		{cgroup.Events{}, st(153, "file size limit exceeded", 0), LimitFileSize},
		{cgroup.Events{}, st(153, "", 0), LimitFileSize},
		{cgroup.Events{}, st(152, "", 0), LimitCPU},
		{cgroup.Events{ForksRefused: 1}, st(2, "", 0), LimitProcesses},
		{cgroup.Events{}, st(1, "", 0), ""},
	} {
		if got, _ := limitHit(l, c.ev, c.stages); got != c.want {
			t.Errorf("%+v %+v: %q, want %q", c.ev, c.stages, got, c.want)
		}
	}
	// Without the limit, an exit of 153 is only an exit.
	if got, _ := limitHit(Limits{}, cgroup.Events{}, st(153, "", 0)); got != "" {
		t.Errorf("153 without a file size limit: %q", got)
	}
}

// The main goroutine stays on the main thread, for forkFromMain.
func init() { runtime.LockOSThread() }

func forkFromMain() int {
	if unix.Gettid() != os.Getpid() {
		fmt.Println("not on the main thread")
		return 4
	}
	g, _, _, err := newGroups(Limits{MemoryBytes: 64 << 20}, InitTasks, false)
	if err != nil {
		fmt.Println(err)
		return 3
	}
	defer g.remove()
	cmd := exec.Command("/bin/true")
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { cmd.Wait(); close(done) }()
	g.fork(cmd, done, errc)
	if err := <-errc; err != nil {
		fmt.Println(err)
		return 3
	}
	<-done
	if g.forkedFrom == os.Getpid() || g.forkedFrom == 0 {
		fmt.Println("forked from the main thread", g.forkedFrom)
		return 1
	}
	fmt.Println("forked from thread", g.forkedFrom)
	return 0
}

// TestNotFromMainThread: an embedding program that starts runs from its
// main thread never has that thread join a run's cgroup v1 groups, where
// the whole process's memory would be charged to the run (and rein could
// be the run's out-of-memory victim).
func TestNotFromMainThread(t *testing.T) {
	requireLimits(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REIN_TEST_FORK_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s", out)
}

// othersLive reports whether the cgroup or scratch directory g
// (rein-run-PID-...) belongs to
// another process that is still running: another test binary's run
// (go test runs packages side by side), not one this test left behind. A
// group of this process, or of a process that is gone, is never another's.
func othersLive(g string) bool {
	var pid int
	if _, err := fmt.Sscanf(filepath.Base(g), "rein-run-%d-", &pid); err != nil || pid == os.Getpid() {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
