//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/sandbox/runplan"
	"github.com/reinhq/rein/shell"
)

// Main runs the sandbox's init when the process was started as one (or
// the Go build cache program a gate's go command starts: goCacheFlag),
// and returns at once otherwise. A program that embeds rein calls it first in
// main; rein's own binary does.
func Main() {
	if len(os.Args) >= 3 && os.Args[1] == goCacheFlag {
		os.Exit(goCacheMain(os.Args[2], os.Args[3:]))
	}
	runCommand()
	if len(os.Args) == 4 && os.Args[1] == guardianFlag {
		os.Exit(guardianMain(os.Args[2], os.Args[3]))
	}
	if len(os.Args) < 3 || os.Args[1] != initFlag {
		mainCalled.Store(true)
		return
	}
	fingerprint := ""
	if len(os.Args) > 3 {
		fingerprint = os.Args[3]
	}
	if fingerprint != wireFingerprint() {
		fmt.Fprintf(os.Stderr, "rein init: this init (%s, wire %s) is of another build of rein than the program that started it (wire %q): install or build them together\n", os.Args[0], wireFingerprint(), fingerprint)
		os.Exit(125)
	}
	os.Exit(initMain(os.Args[2]))
}

// requestFile holds the init's request, gob-encoded (every string kept
// byte for byte).
const requestFile = "request.gob"

// request is what the outer process hands the init.
type request struct {
	Line *shell.Line `json:"line"`
	// NotFound are the stages whose program the sandbox's PATH does not
	// lead to, by index, with why.
	NotFound map[int]string `json:"not_found,omitempty"`
	Dir      string         `json:"dir"`
	Home     string         `json:"home"`
	Env      []string       `json:"env"`
	// Confine is nil on the none rung.
	Confine *confine.Spec `json:"confine,omitempty"`
	// Rlimits are set on every rung, before the confinement.
	Rlimits confine.Rlimits `json:"rlimits"`
	// Subreaper makes the init the reaper of every orphan of its tree, so
	// that it can kill them all: on the rungs without a pid namespace.
	Subreaper bool `json:"subreaper,omitempty"`
	// Lifeline: descriptor 3 is a pipe whose end means rein is gone (or
	// wants the run ended): the init then kills its tree and exits.
	Lifeline bool `json:"lifeline,omitempty"`
	// ReportFD is the pipe the init writes its report to.
	ReportFD int `json:"report_fd"`
	// GoPrefill, when set, is the Go build cache the init lays out
	// before the plan runs (CacheSet.GoUsed).
	GoPrefill *goPrefill `json:"go_prefill,omitempty"`
	// Check, when set, makes this run a preflight.
	Check *check `json:"check,omitempty"`
	// Forwards, on the bwrap rung, are the forwarders the init runs from
	// the sandbox's loopback to rein's sockets: the egress proxy's in
	// network proxy, and a session's services'.
	Forwards []forward `json:"forwards,omitempty"`
	// NetGoFD, in network full, is a pipe on which one byte says that the
	// network is up; the plan waits for it.
	NetGoFD int `json:"net_go_fd,omitempty"`
	// NetUpFD, in network full, is a pipe on which the init says it has
	// started: the namespace is set up, and the network can be attached.
	NetUpFD int `json:"net_up_fd,omitempty"`
	// Session gives the plan the init's own stdin (the caller's, passed
	// through) instead of the null device.
	Session bool `json:"session,omitempty"`
	// SignalFD, in a session, is a pipe on which each byte is a signal
	// the init sends to every other process of its namespace.
	SignalFD int `json:"signal_fd,omitempty"`
	// StdoutFD and StderrFD, on the bwrap rung, are the output pipes,
	// which the init makes its stdout and stderr (bubblewrap's own go
	// elsewhere).
	StdoutFD int `json:"stdout_fd,omitempty"`
	StderrFD int `json:"stderr_fd,omitempty"`
	// PlanFD, in a warm sandbox, is the pipe the plan arrives on once
	// the init is confined, and ReadyFD the one on which it says that it
	// is ("r"), then whether the view still holds what it was built on
	// ("y", or "n" and why). The request then has no Line.
	PlanFD  int `json:"plan_fd,omitempty"`
	ReadyFD int `json:"ready_fd,omitempty"`
}

// warmPlan is what a warm sandbox's init receives when it is taken: the
// plan, and what its view must still show for it to run.
type warmPlan struct {
	Line     *shell.Line
	NotFound map[int]string
	Dir      string
	// Covered are the sandbox paths that must each be a read-only mount of
	// their own: the protected paths with the identity the host sees at
	// them now (so that the mount covers what is at the name, not what was
	// renamed away), the masks with none.
	Covered []covered
}

// covered is a path the view covers with a read-only mount.
type covered struct {
	Path     string
	Dev, Ino uint64
	// Any: a mask, whose identity is the mask's own.
	Any bool
	// Writable: the workspace, a mount of its own but not read-only.
	Writable bool
}

// check is what a preflight asserts from inside the confinement.
type check struct {
	Workspace string  `json:"workspace"`
	ReadOnly  bool    `json:"read_only"`
	Home      string  `json:"home"`
	Tmp       string  `json:"tmp"`
	Network   Network `json:"network"`
}

// report is what the init leaves for the outer process.
type report struct {
	Plan *runplan.Result `json:"plan"`
	// Swept: every process of the tree was dead when the init ended.
	Swept    bool     `json:"swept"`
	Problems []string `json:"problems,omitempty"`
}

// planStages are the stages of the report's plan, if it has one.
func (r report) planStages() []runplan.StageResult {
	if r.Plan == nil {
		return nil
	}
	return r.Plan.Stages
}

// initMain is the init inside the sandbox: it confines itself for good,
// runs the plan, kills what the plan left running, and leaves the report
// for the outer process.
func initMain(dir string) int {
	// One P: the init does little, and each thread it makes is a task
	// that a process limit counts.
	runtime.GOMAXPROCS(1)
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "rein init: %v\n", err)
		return 125
	}
	// Catching (not ignoring, which exec would pass on to the command)
	// every signal the command could send: pid 1 of a namespace gets only
	// the signals it handles, so on the bwrap rung the command cannot end
	// the init early and fake "the sandbox did not start".
	// Each signal costs a round trip to the runtime's signal thread, about
	// a millisecond for them all: done alongside the reading and the
	// confinement, and waited for before anything else runs.
	sigs, caught := make(chan os.Signal, 16), make(chan struct{})
	go func() {
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1,
			syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
			syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGTRAP, syscall.SIGWINCH, syscall.SIGIO,
			// The synchronous signals too: sent with kill, the Go runtime
			// would otherwise crash on them (a real fault still does).
			syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGABRT, syscall.SIGSYS,
			syscall.SIGSTKFLT, syscall.SIGPWR)
		close(caught)
		for range sigs {
		}
	}()
	data, err := os.ReadFile(filepath.Join(dir, requestFile))
	if err != nil {
		return fail(err)
	}
	var req request
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&req); err != nil {
		return fail(err)
	}
	if req.StdoutFD >= 3 && req.StderrFD >= 3 {
		for _, d := range [][2]int{{req.StdoutFD, 1}, {req.StderrFD, 2}} {
			if err := unix.Dup3(d[0], d[1], 0); err != nil {
				return fail(fmt.Errorf("taking the output pipes: %w", err))
			}
			unix.Close(d[0])
		}
	}
	if req.Subreaper {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fail(fmt.Errorf("becoming the subreaper of the run: %w", err))
		}
	}
	var lifeline *os.File
	if req.Lifeline {
		lifeline = os.NewFile(3, "lifeline")
		syscall.CloseOnExec(3)
	}
	// Nothing but 0, 1 and 2 (and the lifeline, kept from the command)
	// reaches the plan.
	if err := bwrap.CloseOnExecFrom(3); err != nil {
		return fail(err)
	}
	// The report goes back through a pipe, which the command cannot reach
	// (close-on-exec, and the init is not dumpable) and which no
	// RLIMIT_FSIZE bounds; the confinement leaves the io directory out of
	// reach, so the command cannot read the request either.
	if req.ReportFD < 3 {
		return fail(fmt.Errorf("no report descriptor in the request"))
	}
	resultFile := os.NewFile(uintptr(req.ReportFD), "report")
	defer resultFile.Close()
	// The report is written once: by the end of the plan, or by the
	// lifeline's end, whichever comes first.
	var reportOnce sync.Once
	writeReport := func(rep report) (err error) {
		reportOnce.Do(func() {
			var out []byte
			if out, err = json.Marshal(rep); err == nil {
				_, err = resultFile.Write(out)
			}
			resultFile.Close()
		})
		return err
	}
	runtime.LockOSThread()
	// The command must not read the init's memory through /proc/PID/mem
	// (the request, the environment it was built from).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(err)
	}
	if err := confine.SetRlimits(req.Rlimits); err != nil {
		return fail(err)
	}
	if req.NetUpFD >= 3 {
		up := os.NewFile(uintptr(req.NetUpFD), "network up")
		up.Write([]byte{1})
		up.Close()
	}
	if req.NetGoFD >= 3 {
		// rein writes one byte once slirp4netns has brought the
		// namespace's network up, and closes the pipe without one when
		// it could not.
		goPipe := os.NewFile(uintptr(req.NetGoFD), "network")
		var b [1]byte
		n, _ := goPipe.Read(b[:])
		goPipe.Close()
		if n != 1 {
			return fail(fmt.Errorf("the sandbox's network did not come up"))
		}
	}
	for _, f := range req.Forwards {
		// Bound before the confinement, which refuses binding.
		l, err := f.listen()
		if err != nil {
			return fail(err)
		}
		go f.serve(l)
	}
	if req.GoPrefill != nil {
		// Before the confinement, whose checks of each path would cost
		// more than the work: the init reads only the read-only seeds and
		// writes only the command's own TMPDIR. Best effort: what is not
		// laid out is built.
		req.GoPrefill.run()
	}
	if req.Confine != nil {
		if err := confine.Apply(*req.Confine); err != nil {
			return fail(err)
		}
	}
	if lifeline != nil {
		go func() {
			// Nobody ever writes: the read ends when rein closes its end
			// or dies.
			var b [1]byte
			lifeline.Read(b[:])
			// Said to rein, which has no cgroup to confirm it with where
			// an ordinary user runs the landlock rung.
			writeReport(report{Swept: killTree(5 * time.Second)})
			os.Exit(137)
		}()
	}
	<-caught
	if req.PlanFD >= 3 {
		if code, ok := waitForPlan(&req); !ok {
			return code
		}
	}
	if req.SignalFD >= 3 {
		sigPipe := os.NewFile(uintptr(req.SignalFD), "signals")
		go passOn(sigPipe)
	}
	var stdin *os.File
	if req.Session {
		stdin = os.Stdin
	}
	rep := report{}
	if req.Check != nil {
		rep.Problems = req.Check.run(req)
	}
	if req.Home != bwrap.SandboxHome {
		homeAt(req.Line, req.Home)
	}

	res, err := runplan.Run(context.Background(), req.Line, runplan.Options{
		Dir: req.Dir, Home: req.Home, Env: req.Env, Stdin: stdin, Stdout: os.Stdout, Stderr: os.Stderr, NotFound: req.NotFound,
	})
	if err != nil {
		return fail(err)
	}
	rep.Plan = res
	// The end of the plan is the end of everything it started.
	rep.Swept = killTree(5 * time.Second)
	if rep.Swept {
		// Nothing else holds the output pipes now: they end here rather
		// than at the init's exit, and so does the report, so that rein's
		// result need not wait for this process to go.
		if null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.Dup3(null, 1, 0)
			unix.Dup3(null, 2, 0)
			unix.Close(null)
		}
	}
	if err := writeReport(rep); err != nil {
		return fail(err)
	}
	return res.ExitCode
}

// waitForPlan is a warm init's wait: it says it is ready, reads the plan,
// checks that the view still covers what the plan needs covered, and says
// so. Without a plan (the sandbox was not used) it exits quietly.
func waitForPlan(req *request) (int, bool) {
	ready := os.NewFile(uintptr(req.ReadyFD), "ready")
	defer ready.Close()
	planPipe := os.NewFile(uintptr(req.PlanFD), "plan")
	defer planPipe.Close()
	// The warm-up plan first (see warmUpPlan), then the plan.
	dec := gob.NewDecoder(io.LimitReader(planPipe, maxReport))
	var plan warmPlan
	if err := dec.Decode(&plan); err != nil {
		return 0, false
	}
	if _, err := ready.Write([]byte{'r'}); err != nil {
		return 0, false
	}
	plan = warmPlan{}
	if err := dec.Decode(&plan); err != nil || plan.Line == nil {
		if errors.Is(err, io.EOF) {
			// Not taken.
			return 0, false
		}
		ready.Write([]byte("nthe plan could not be read"))
		return 125, false
	}
	for _, c := range plan.Covered {
		if why := c.check(); why != "" {
			ready.Write([]byte("n" + why))
			return 125, false
		}
	}
	if _, err := ready.Write([]byte{'y'}); err != nil {
		return 125, false
	}
	req.Line, req.NotFound, req.Dir = plan.Line, plan.NotFound, plan.Dir
	return 0, true
}

// check says why c is not covered as the plan needs, or "".
func (c covered) check() string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, c.Path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &st); err != nil {
		return fmt.Sprintf("%s: %v", c.Path, err)
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || st.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return c.Path + " is no longer covered by its mount (it was renamed or replaced on the host)"
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(c.Path, &fs); err != nil || (fs.Flags&unix.ST_RDONLY == 0 && !c.Writable) {
		return c.Path + " is not read-only"
	}
	if !c.Any && (unix.Mkdev(st.Dev_major, st.Dev_minor) != c.Dev || st.Ino != c.Ino) {
		return c.Path + " is another file than the host has at that name now"
	}
	return ""
}

// passOn sends each signal read from the session's pipe to every other
// process of the sandbox: the init is pid 1 of its namespace, where
// kill(-1) reaches all of them but itself. It ends with the pipe.
func passOn(f *os.File) {
	defer f.Close()
	var b [1]byte
	for {
		if n, err := f.Read(b[:]); n != 1 || err != nil {
			return
		}
		unix.Kill(-1, syscall.Signal(b[0]))
	}
}

// killTree kills every descendant of the init and reaps them, until none
// is left or the time is up; it reports whether none is left. As pid 1 of
// a namespace or as a child subreaper the init inherits every orphan of its
// tree, so its children are, in turn, all that is left of it.
func killTree(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		// Reap what is dead; ECHILD means no child at all, dead or alive.
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if errors.Is(err, unix.ECHILD) {
				return true
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return false
			}
			if pid <= 0 {
				break
			}
		}
		kids := children()
		for _, pid := range kids {
			// An unreaped child's pid cannot be reused, so signalling
			// it by number is exact; a pidfd would be no safer.
			unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return false
		}
		if len(kids) == 0 {
			time.Sleep(time.Millisecond)
		} else {
			// Give the killed time to die before the next reap.
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// children lists the init's children: those of each of its threads, or,
// where the kernel lacks that file, every process whose parent it is.
func children() []int {
	var out []int
	tasks, err := os.ReadDir("/proc/self/task")
	if err == nil {
		ok := true
		for _, t := range tasks {
			data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
			if err != nil {
				ok = false
				break
			}
			for _, f := range strings.Fields(string(data)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
		if ok {
			return out
		}
	}
	out = out[:0]
	self := os.Getpid()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold anything.
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			fields := strings.Fields(s[i+1:])
			if len(fields) > 1 {
				if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == self {
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

// run asserts, from inside the confinement, what the sandbox promises:
// the working directory, the workspace's writability, HOME, TMPDIR, and no
// network.
func (c *check) run(req request) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if wd, err := os.Getwd(); err != nil || wd != req.Dir {
		bad("the working directory is %q (%v), not %s", wd, err, req.Dir)
	}
	// A name of its own: preflights of other processes run beside this
	// one, each init pid 1 of its namespace.
	f, err := os.CreateTemp(c.Workspace, ".rein-preflight-")
	if err == nil {
		f.Close()
		os.Remove(f.Name())
	}
	switch {
	case c.ReadOnly && err == nil:
		bad("the workspace is writable, though read-only was asked for")
	case !c.ReadOnly && err != nil:
		bad("the workspace is not writable: %v", err)
	}
	for _, d := range [][2]string{{"HOME", c.Home}, {"TMPDIR", c.Tmp}} {
		if v := envValue(req.Env, d[0]); v != d[1] {
			bad("%s is %q, not %s", d[0], v, d[1])
		}
		f, err := os.CreateTemp(d[1], ".rein-preflight-")
		if err != nil {
			bad("%s (%s) is not writable: %v", d[0], d[1], err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
	if req.Confine != nil && req.Confine.MetadataBeneathReadWrite {
		if err := childChmod(c.Tmp); err != nil {
			bad("a command cannot chmod its own files in TMPDIR (%s) through the supervisor: %v", c.Tmp, err)
		}
	}
	switch c.Network {
	case NetworkFull:
		if !defaultRoute() {
			bad("network full: the sandbox's namespace has no default route (slirp4netns did not configure it)")
		}
	default:
		if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			bad("an inet socket could be made with the network off")
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:1", 100*time.Millisecond); err == nil {
			c.Close()
			bad("the host's loopback is reachable with the network off")
		}
	}
	return problems
}

// childChmod has a child process chmod a file in dir and checks the
// mode: the supervisor must read another process's memory, which a
// ptrace restriction (Yama's ptrace_scope 2 or 3) would refuse.
func childChmod(dir string) error {
	f, err := os.CreateTemp(dir, ".rein-preflight-")
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(f.Name())
	if out, err := exec.Command("chmod", "640", f.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	fi, err := os.Stat(f.Name())
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o640 {
		return fmt.Errorf("the mode is %v after chmod 640", fi.Mode().Perm())
	}
	return nil
}

// defaultRoute reports whether the namespace has an IPv4 default route on
// an interface other than loopback.
func defaultRoute() bool {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) > 2 && f[0] != "lo" && f[1] == "00000000" {
			return true
		}
	}
	return false
}

func envValue(env []string, k string) string {
	for _, e := range env {
		if n, v, _ := strings.Cut(e, "="); n == k {
			return v
		}
	}
	return ""
}

// homeAt moves the sandbox's HOME in a plan to home. A line's ~ is the
// sandbox's HOME, which the policy decided as bwrap.SandboxHome; on the
// rungs that cannot mount it there (landlock, none), HOME is a private
// directory of rein's instead, and the words, redirects and cds that name
// the one name the other.
func homeAt(line *shell.Line, home string) {
	at := func(p string) string {
		if p != bwrap.SandboxHome && !strings.HasPrefix(p, bwrap.SandboxHome+"/") {
			return p
		}
		// The policy decided the path as written, its .. taken lexically
		// from /run/rein/home: the path is cleaned first, so that a .. climbs
		// out of the same place here (~/../../x is /x, as decided, not a
		// path beside the private HOME).
		c := path.Clean(p)
		if c == bwrap.SandboxHome || strings.HasPrefix(c, bwrap.SandboxHome+"/") {
			return home + strings.TrimPrefix(c, bwrap.SandboxHome)
		}
		return c
	}
	for _, pl := range line.Pipelines {
		for _, st := range pl.Stages {
			for i, w := range st.Argv {
				if i > 0 || !strings.Contains(w, "/") || st.Program == "" {
					st.Argv[i] = at(w)
				}
			}
			st.Dir = at(st.Dir)
			for i, e := range st.Env {
				n, v, _ := strings.Cut(e, "=")
				st.Env[i] = n + "=" + at(v)
			}
			for i := range st.Redirects {
				st.Redirects[i].Path = at(st.Redirects[i].Path)
			}
		}
	}
}
