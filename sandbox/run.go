//go:build linux

package sandbox

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reinhq/rein/sandbox/cgroup"
	"github.com/reinhq/rein/sandbox/runplan"
	"github.com/reinhq/rein/shell"
)

// Grace periods of the lifecycle.
const (
	// killGrace is how long the init of the landlock and none rungs gets
	// to kill its tree once told to, before it is killed itself.
	killGrace = 2 * time.Second
	// confirmWait is how long a killed cgroup may take to empty.
	confirmWait = 5 * time.Second
	// drainWait bounds the reading of output after the tree is dead (or
	// could not be confirmed dead, when a survivor may hold the pipes).
	drainWait = 2 * time.Second
)

// errRunTimeout is the cause of a run's context ending at its timeout.
var errRunTimeout = errors.New("the run's timeout")

// run is one run in progress.
type run struct {
	rung         Rung
	note         string
	p            Profile
	start        time.Time
	cmd          *exec.Cmd
	group        *cgroup.Group // groups.v2, when there is one
	groups       *groups
	applied      []Applied
	limits       Limits            // in force: p.Limits with the defaults applied
	lifeline     *os.File          // write end; closing it tells the init to end
	signals      *os.File          // a session's: write end of the init's signal pipe
	planW        *os.File          // a warm sandbox's: where its plan goes
	planEnc      *gob.Encoder      // on planW, past the warm-up plan
	readyR       *os.File          // a warm sandbox's: where its init says it is ready
	masked       []string          // the system files the view masks
	live         [2]io.Writer      // where the streams go live, besides the result
	early        bool              // the result is ready when the init reports (through a pool, captured streams)
	confirmLater bool              // the groups are confirmed empty after the result
	lostTrack    bool              // confirm found a group not empty
	req          *request          // the init's request, on the bwrap rung
	bwrapErr     *headTail         // bubblewrap's own messages, on the bwrap rung
	bwrapRead    chan struct{}     // closed when they are read
	resultReady  chan struct{}     // closed when res is set
	stop         func() bool       // stops the run's timeout, once begun
	identities   map[string]fileID // a warm sandbox's: the workspace and read paths as its view bound them
	targets      map[string]fileID // a warm sandbox's: what they lead to, links followed
	protected    []string          // the protected paths the view binds (the session's; a warm sandbox's own)
	warm         bool              // the run took a warm sandbox
	reportDone   chan struct{}     // closed when the init's report is read
	reportData   []byte
	scratch      string
	home, tmp    string     // the host's HOME and TMPDIR of the landlock and none rungs
	slot         int        // the session's slot they are in, or -1
	slotOf       *slotTable // whose slot it is
	hostIO       string
	guard        *guard
	saved        [2]*os.File // a warm sandbox's guard.json and repos.json, made empty while it waits
	hidden       []string    // the workspace paths hidden from the command
	repos        *repoMeta   // the repository metadata below the workspace, as it was
	session      *session
	unlock       func()
	outBuf       *headTail
	errBuf       *headTail
	spools       []*spool
	copies       sync.WaitGroup
	readers      []*os.File
	preflight    bool
	notFound     map[int]string // the stages whose program is not found, by index
	egress       *egress        // the proxy, in network proxy
	hostNet      string         // the proxy's and the services' socket directory, on the bwrap rung
	services     []*fdListener  // a session's services' listeners
	full         *fullNet       // the user-mode network, in network full

	// taking is held while a warm sandbox is being taken: its end (an
	// init that died while it waited) is not torn down meanwhile, so the
	// session the taking joins is left by the teardown after it, once.
	taking sync.Mutex
	ending bool // under taking: the teardown has begun, and it cannot be taken

	mu       sync.Mutex
	killedAs Status // why rein ended the run, if it did
	done     chan struct{}
	res      *Result
	cancel   context.CancelFunc
}

// start prepares and starts one run on rung.
func start(ctx context.Context, line *shell.Line, p Profile, rung Rung, preflight bool, stdout, stderr io.Writer) (_ *run, err error) {
	// Not the named result: the error paths return nil, and the deferred
	// cleanup needs the run.
	r := &run{rung: rung, p: p, start: time.Now(), done: make(chan struct{}), resultReady: make(chan struct{}), preflight: preflight, slot: -1}
	// The programs are found once, here, on the sandbox's PATH; the
	// runner executes what was found. A warm sandbox (no line yet) finds
	// them when it is taken.
	if line != nil {
		line, r.notFound = resolved(line, p)
	}
	if err := checkStateOutside(p.Workspace); err != nil {
		return nil, err
	}
	if rung == RungNone && p.Limits != (Limits{}) {
		return nil, refuse(Unavailable, "the none rung cannot hold a command to a limit: unconfined, it can raise its own rlimits (as root) and leave its cgroup; run it on the bwrap or landlock rung")
	}
	// The runs of one workspace, of every rein process, share a session
	// (session.go): the baseline of the protected files and the paths
	// bound read-only. A warm sandbox (no line yet) joins it only when it
	// is taken: it is in no session while it waits, and binds the
	// protected paths that exist as it is made, which the taking checks
	// against the session's, by identity too.
	if line != nil {
		// What the run puts back must not depend on this process
		// surviving it.
		if err := ensureGuardian(); err != nil {
			return nil, err
		}
		if r.session, err = joinSession(ctx, p.Workspace, rung != RungBwrap, !p.ReadOnly); err != nil {
			return nil, err
		}
		r.unlock = r.session.leave
		r.protected = r.session.protected
	} else {
		r.protected = existing(p.Workspace, protectedPaths(p.Workspace))
	}
	defer func() {
		if err != nil {
			r.cleanup()
		}
	}()
	exe, err := initExe()
	if err != nil {
		return nil, refuse(Unavailable, "cannot find this program's binary to run as the sandbox's init: %v", err)
	}
	runs, err := stateDir("runs")
	if err != nil {
		return nil, err
	}
	if r.scratch, err = os.MkdirTemp(runs, fmt.Sprintf("rein-run-%d-", os.Getpid())); err != nil {
		return nil, refuse(Unavailable, "making the run's scratch directory: %v", err)
	}
	r.hostIO = filepath.Join(r.scratch, "io")
	for _, d := range []string{"home", "tmp", "io"} {
		if err := os.Mkdir(filepath.Join(r.scratch, d), 0o700); err != nil {
			return nil, refuse(Unavailable, "making the run's scratch directory: %v", err)
		}
	}
	if rung != RungBwrap {
		// The bwrap rung mounts its HOME and /tmp at fixed paths; the
		// others name host directories, which must not change from run to
		// run either.
		// A warm sandbox takes its slot before it joins the session.
		r.slotOf = slotsOf(p.Workspace)
		if r.slot, r.home, r.tmp, err = r.slotOf.takeSlot(); err != nil {
			return nil, err
		}
	}
	caches, err := toolchainCaches(p.Workspace)
	switch {
	case p.Caches != nil && p.Caches.Fresh:
		caches = filepath.Join(r.scratch, "caches")
		if err = os.Mkdir(caches, 0o700); err != nil {
			err = refuse(Unavailable, "making the run's caches: %v", err)
		}
	case p.Caches != nil:
		caches, err = ownCaches(p.Caches.Dir)
	}
	if err != nil {
		return nil, err
	}
	switch p.Network {
	case NetworkProxy:
		if err := r.startEgress(); err != nil {
			return nil, err
		}
	case NetworkFull:
		if rung != RungBwrap {
			return nil, refuse(Unavailable, "network full needs a network namespace of the sandbox's own, which only the bwrap rung has")
		}
		if r.full, err = r.prepareFull(); err != nil {
			return nil, err
		}
	}
	if err := r.startServices(); err != nil {
		return nil, err
	}
	if err := r.scanStart(); err != nil {
		return nil, err
	}
	if !p.ReadOnly && r.session == nil {
		// A warm sandbox's: made now, empty (the sweep passes an empty
		// one by), and written when it is taken, so that the taking
		// makes no file (a file's creation can wait on the filesystem's
		// journal for milliseconds).
		for i, name := range []string{"guard.json", "repos.json"} {
			f, err := os.OpenFile(filepath.Join(r.scratch, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
			if err != nil {
				return nil, refuse(Unavailable, "making the run's saved files: %v", err)
			}
			r.saved[i] = f
		}
	}
	if !p.ReadOnly && r.session != nil {
		// The session's, for every run alike: a run that starts while
		// another's command has planted takes no plant for the original.
		// Kept on disk too: if rein is killed mid-run, the next run's
		// sweep puts the protected files back from it.
		r.guard, r.repos = r.session.baseline.Guard, r.session.baseline.Repos
		if err := r.guard.save(filepath.Join(r.scratch, "guard.json")); err != nil {
			return nil, refuse(Unavailable, "saving the protected files: %v", err)
		}
		if err := r.repos.save(filepath.Join(r.scratch, "repos.json")); err != nil {
			return nil, refuse(Unavailable, "saving the repository metadata: %v", err)
		}
	}
	var cmd *exec.Cmd
	switch rung {
	case RungBwrap:
		cmd, err = r.bwrapCommand(line, exe, caches)
	default:
		cmd, err = r.hostCommand(line, exe, caches)
	}
	if err != nil {
		return nil, err
	}
	r.cmd = cmd
	if err := r.pipes(); err != nil {
		closeExtra(cmd)
		return nil, err
	}
	ours := r.ownStreams()
	reserve := int64(InitTasks + 1)
	if line != nil {
		reserve = initReserve(line)
	}
	if r.groups, r.applied, r.limits, err = newGroups(p.Limits, reserve, rung != RungNone); err != nil {
		closeExtra(cmd)
		for _, f := range ours {
			f.Close()
		}
		r.lifelineClose()
		return nil, err
	}
	r.applied = append(r.applied, perProcess(p.Limits, rung)...)
	if g := r.groups.v2; g != nil {
		r.group = g
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.FD()
	}
	err = r.groups.start(cmd, r.done)
	closeExtra(cmd)
	for _, f := range ours {
		f.Close()
	}
	if err != nil {
		r.lifelineClose()
		return nil, refuse(Unavailable, "starting the sandbox (%s): %v", filepath.Base(cmd.Path), err)
	}
	if r.full != nil {
		r.full.attaching = true
		go r.full.attach()
	}
	if r.signals != nil {
		go r.passSignals()
	}
	r.live = [2]io.Writer{stdout, stderr}
	r.copies.Add(len(r.readers))
	for i, f := range r.readers {
		go r.copy(f, []*headTail{r.outBuf, r.errBuf}[i], i)
	}
	counted := r.p.pool != nil && r.p.pool.countTeardown()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	go func() {
		// Through a pool, the result is ready once the init has reported
		// (the report pipe ends when it closes it or ends; on the bwrap
		// rung bubblewrap never holds it, nor the output pipes):
		// bubblewrap's or the init's own end and the teardown come after.
		// Without a report, the result waits for the end and its status.
		var waitErr error
		waited := true
		if r.early {
			select {
			case <-r.reportDone:
				waited = false
				if !r.reported() {
					waitErr, waited = <-exited, true
				}
			case waitErr = <-exited:
			}
		} else {
			waitErr = <-exited
		}
		r.taking.Lock()
		r.ending = true
		r.taking.Unlock()
		r.mu.Lock()
		stop, cancel := r.stop, r.cancel
		r.mu.Unlock()
		if stop != nil {
			stop()
		}
		r.finish(waitErr, waited)
		if waited {
			r.cleanup()
			close(r.resultReady)
		} else {
			// Nothing of the command is left (the init confirmed it and
			// ended): the workspace is free for the next run, on any rung,
			// while bubblewrap ends, and the rest is removed after; the
			// pool's Close waits for that.
			r.leave()
			close(r.resultReady)
			<-exited
			r.confirm()
			r.cleanup()
		}
		if counted {
			r.p.pool.teardown.Done()
		}
		if cancel != nil {
			cancel()
		}
		close(r.done)
	}()
	if line != nil {
		r.begin(ctx)
	}
	return r, nil
}

// begin starts the run's own timeout, told apart from a deadline of the
// caller's context, which is a cancellation.
func (r *run) begin(ctx context.Context) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.p.Timeout, errRunTimeout)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), errRunTimeout) {
			r.kill(Timeout)
		} else {
			r.kill(Cancelled)
		}
	})
	r.mu.Lock()
	r.stop, r.cancel = stop, cancel
	r.mu.Unlock()
	select {
	case <-r.done:
		// It ended before its timeout began.
		stop()
		cancel()
	default:
	}
}

func (r *run) handle() *Handle {
	h := &Handle{rung: r.rung, done: make(chan struct{}), ended: r.done, kill: r.kill}
	go func() {
		<-r.resultReady
		r.res.RungNote = r.note
		h.res = r.res
		close(h.done)
	}()
	return h
}

// pipes connects the init's stdout and stderr to pipes rein reads itself,
// so that waiting for the init never waits for a survivor holding them. A
// session's streams are its caller's own, passed straight through: its
// pid namespace, not a pipe's end, says that its tree is gone.
func (r *run) pipes() error {
	limit := r.p.OutputBytes
	if limit <= 0 {
		limit = DefaultOutputBytes
	}
	r.outBuf, r.errBuf = newHeadTail(limit), newHeadTail(limit)
	if s := r.p.Session; s != nil {
		r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = orNil(s.Stdin), orNil(s.Stdout), orNil(s.Stderr)
		return nil
	}
	var writers [2]*os.File
	for i, name := range []string{"stdout", "stderr"} {
		rd, wr, err := os.Pipe()
		if err != nil {
			return refuse(Unavailable, "making the output pipes: %v", err)
		}
		r.readers, writers[i] = append(r.readers, rd), wr
		var sp *spool
		if r.p.SpoolDir != "" {
			var err error
			if sp, err = newSpool(filepath.Join(r.p.SpoolDir, name), r.p.spoolBytes(), r.p.SpoolOverflow); err != nil {
				return refuse(Unavailable, "opening the spool file: %v", err)
			}
		}
		r.spools = append(r.spools, sp)
	}
	// Through a pool, the result is ready once the init has reported
	// that its tree is dead; the teardown follows, and the pool's Close
	// waits for it.
	r.early = !r.preflight && r.p.pool != nil
	if r.req == nil {
		r.cmd.Stdout, r.cmd.Stderr = writers[0], writers[1]
		return nil
	}
	// bubblewrap passes its extra files to the init and keeps none of
	// them itself, but it keeps its own stdout and stderr until it ends:
	// the init takes the streams from extra files, so that their end
	// comes with the init's, and bubblewrap's own messages go to a pipe
	// of their own.
	r.cmd.ExtraFiles = append(r.cmd.ExtraFiles, writers[0], writers[1])
	r.req.StdoutFD, r.req.StderrFD = 1+len(r.cmd.ExtraFiles), 2+len(r.cmd.ExtraFiles)
	if err := writeRequest(r.hostIO, *r.req); err != nil {
		return err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return refuse(Unavailable, "making bubblewrap's message pipe: %v", err)
	}
	r.cmd.Stderr = wr
	r.bwrapErr, r.bwrapRead = newHeadTail(4096), make(chan struct{})
	go func() {
		defer close(r.bwrapRead)
		defer rd.Close()
		io.Copy(r.bwrapErr, rd)
	}()
	return nil
}

// reported reports whether the init left a report of the plan.
func (r *run) reported() bool {
	var rep report
	return json.Unmarshal(r.reportData, &rep) == nil && rep.Plan != nil
}

// orNil is f as a command's stream, nil (the null device) when f is.
func orNil(f *os.File) io.ReadWriter {
	if f == nil {
		return nil
	}
	return f
}

// ownStreams are the write ends of the output pipes, which the init holds
// once started: rein closes its own copies. A session's are its caller's.
func (r *run) ownStreams() []*os.File {
	switch {
	case r.p.Session != nil:
		return nil
	case r.req != nil:
		// The output pipes are extra files, closed with them.
		return []*os.File{r.cmd.Stderr.(*os.File)}
	}
	return []*os.File{r.cmd.Stdout.(*os.File), r.cmd.Stderr.(*os.File)}
}

// passSignals passes each signal of the session on to the init, which
// sends it to every process of the sandbox, until the run ends.
func (r *run) passSignals() {
	defer r.signals.Close()
	for {
		select {
		case <-r.done:
			return
		case sig, ok := <-r.p.Session.Signals:
			if !ok {
				return
			}
			if n, ok := sig.(syscall.Signal); ok && n > 0 && n < 256 {
				r.signals.Write([]byte{byte(n)})
			}
		}
	}
}

// spoolBytes is the bound of each spool file.
func (p Profile) spoolBytes() int64 {
	n := p.SpoolBytes
	if n <= 0 {
		n = DefaultSpoolBytes
	}
	if l := p.Limits.FileSizeBytes; l > 0 && l < n {
		n = l
	}
	return n
}

func (r *run) copy(f *os.File, h *headTail, i int) {
	defer r.copies.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			// A warm sandbox's writers are set when it is taken, before
			// its plan is sent: nothing is printed before that.
			r.mu.Lock()
			sp, live := r.spools[i], r.live[i]
			r.mu.Unlock()
			if sp != nil {
				sp.take(h, buf[:n])
			}
			h.Write(buf[:n])
			if live != nil {
				live.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// kill ends the run's whole tree; the first reason given is the one
// reported.
func (r *run) kill(why Status) {
	r.mu.Lock()
	if r.killedAs != "" {
		r.mu.Unlock()
		return
	}
	r.killedAs = why
	r.mu.Unlock()
	if r.group != nil {
		r.group.Kill()
	}
	switch r.rung {
	case RungBwrap:
		// Killing bubblewrap kills the init (--die-with-parent), pid 1,
		// and with it every process of the namespace.
		r.cmd.Process.Kill()
	default:
		// The init kills its tree when its lifeline closes, and is killed
		// itself if it has not ended after the grace.
		r.lifelineClose()
		time.AfterFunc(killGrace, func() {
			select {
			case <-r.done:
			default:
				r.cmd.Process.Kill()
			}
		})
	}
}

func (r *run) lifelineClose() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lifeline != nil {
		r.lifeline.Close()
		r.lifeline = nil
	}
}

// finish confirms the tree is dead, reads the output and the init's
// report, puts protected files back and builds the result.
func (r *run) finish(waitErr error, waited bool) {
	res := &Result{Rung: r.rung}
	var rep report
	// haveReport: the init ran the plan and said how it ended; swept: it
	// saw its whole tree dead (at the plan's end, or when it was told to
	// end the run).
	haveReport, swept := false, false
	// The init and bubblewrap, the only holders of the report pipe's write
	// end, are gone: the read ends now, but is bounded all the same.
	select {
	case <-r.reportDone:
		if json.Unmarshal(r.reportData, &rep) == nil {
			haveReport, swept = rep.Plan != nil, rep.Swept
		}
	case <-time.After(drainWait):
	}
	// Confirm that nothing of the run is left.
	switch {
	case !waited && haveReport && rep.Swept:
		// The init, pid 1 of the namespace or the subreaper of the tree,
		// saw every process of it dead: the groups (which hold bubblewrap
		// or the init too, until it ends) are confirmed empty after the
		// result, and a failure poisons the sandbox for the runs after.
		res.Containment = "pid namespace"
		if r.rung != RungBwrap {
			res.Containment = "subreaper"
		}
		r.confirmLater = true
	case r.group != nil:
		res.Containment = "cgroup"
		if err := r.group.KillAndWait(confirmWait); err != nil {
			res.Poisoned = err.Error()
		}
	case len(r.groups.v1) > 0:
		res.Containment = "cgroup v1"
		if err := r.groups.confirmV1(); err != nil {
			res.Poisoned = err.Error()
		}
	case r.rung == RungBwrap:
		// The kernel kills a pid namespace whole when its init dies, and
		// bubblewrap's child is that init.
		res.Containment = "pid namespace"
	default:
		res.Containment = "subreaper"
		if !swept {
			res.Poisoned = "the init ended before it confirmed that its tree was dead, and no cgroup can confirm it: processes the command started may still run"
		}
	}
	if res.Poisoned == "" && res.Containment != "cgroup v1" && !r.confirmLater {
		// The v1 groups must be empty before they can go; the tree is dead,
		// so this only confirms it.
		if err := r.groups.confirmV1(); err != nil {
			res.Poisoned = err.Error()
		}
	}
	res.Limits = r.applied
	res.Network = r.p.Network
	r.stopEgress(res)
	var netErr error
	if r.full != nil {
		r.full.stop()
		netErr = r.full.err
	}
	hit, hitReason := limitHit(r.limits, r.groups.events(), rep.planStages())
	r.lifelineClose()
	// Read what is left in the pipes; a survivor could hold them open
	// forever, so the wait is bounded once the tree is gone or lost.
	drained := make(chan struct{})
	go func() { r.copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainWait):
		for _, f := range r.readers {
			f.Close()
		}
		<-drained
	}
	for _, f := range r.readers {
		f.Close()
	}
	res.Stdout, res.Stderr = r.outBuf.output(), r.errBuf.output()
	for i, sp := range r.spools {
		if sp != nil {
			sp.close([]*Output{&res.Stdout, &res.Stderr}[i])
		}
	}
	var planted []string
	if r.guard != nil {
		planted = r.session.restore()
	}
	if haveReport {
		res.Stages, res.ExitCode = rep.Plan.Stages, rep.Plan.ExitCode
	}
	// The init's own exit status is the line's: it is what the kernel
	// reports, whatever the result file says.
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) && haveReport {
		res.ExitCode = ee.ExitCode()
	} else if waitErr == nil && haveReport && waited {
		res.ExitCode = 0
	}
	r.mu.Lock()
	killed := r.killedAs
	r.mu.Unlock()
	switch {
	case killed == Timeout:
		res.Status, res.ExitCode, res.Reason = Timeout, 124, fmt.Sprintf("killed with its whole process tree after %s", r.p.Timeout)
		res.LimitHit = LimitTimeout
	case killed != "":
		res.Status, res.ExitCode, res.Reason = Cancelled, 130, "killed with its whole process tree: cancelled"
	case !haveReport && netErr != nil:
		res.Status, res.ExitCode, res.Reason = Unavailable, 125, "network full: "+netErr.Error()
	case !haveReport && hit == LimitMemory:
		// memory.oom.group ends the init with the command.
		res.Status, res.ExitCode, res.LimitHit, res.Reason = Failed, 137, hit, hitReason
	case !haveReport:
		res.Status, res.ExitCode = Unavailable, 125
		said := res.Stderr.Text
		if r.bwrapErr != nil {
			select {
			case <-r.bwrapRead:
			case <-time.After(drainWait):
			}
			said += r.bwrapErr.output().Text
		}
		res.Reason = "the sandbox did not run the plan: " + lastLine(said)
		if ee != nil {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				// On the landlock rung the command shares a domain with its
				// init and can kill it; that is the command's failure.
				res.Status, res.ExitCode = Failed, 128+int(ws.Signal())
				res.Reason = fmt.Sprintf("the sandbox's init was killed by signal %d (%s) before it reported", int(ws.Signal()), ws.Signal())
			}
		}
		if strings.TrimSpace(said) == "" && res.Status == Unavailable {
			res.Reason = fmt.Sprintf("the sandbox's init ended (%v) without a report and printed nothing: %v", waitErr, ErrNoInit)
		}
	case len(planted) > 0:
		res.Status = Failed
		res.Reason = r.plantedReason(planted)
	case res.ExitCode == 0:
		res.Status = OK
	default:
		res.Status = Failed
		for _, st := range res.Stages {
			if st.Status == runplan.Unavailable {
				res.Status, res.Reason = Unavailable, fmt.Sprintf("%s: %s", st.Argv[0], st.Error)
			}
		}
	}
	// What was put back is named whatever ended the run (a timeout, a
	// cancel, an init killed before it reported): a command that plants
	// and then outlives its timeout must not hide its plant.
	if len(planted) > 0 {
		res.PutBack = planted
		if res.Status != Failed || !strings.HasPrefix(res.Reason, "protected files were changed") {
			res.Reason += "; " + r.plantedReason(planted)
		}
	}
	// A limit that ended a process is named even when the line went on
	// to succeed: a pipeline's status is its last stage's.
	if hit != "" && res.LimitHit == "" && res.Status != Timeout && res.Status != Cancelled {
		res.LimitHit = hit
		if res.Reason == "" {
			res.Reason = hitReason
		}
	}
	if res.Poisoned != "" {
		poison(r.rung, r.p.Workspace, res.Poisoned)
	}
	if haveReport && r.preflight && res.Status == OK {
		res.Reason = strings.Join(rep.Problems, "; ")
	}
	res.DurationMS = float64(time.Since(r.start).Microseconds()) / 1000
	r.mu.Lock()
	res.Warm = r.warm
	r.mu.Unlock()
	r.res = res
}

// plantedReason says what of the protected files was put back (or kept
// as the session's new baseline) after the run.
func (r *run) plantedReason(planted []string) string {
	var back, kept []string
	for _, p := range planted {
		if strings.HasSuffix(p, keptNote+")") {
			kept = append(kept, p)
		} else {
			back = append(back, p)
		}
	}
	var said []string
	if len(back) > 0 {
		said = append(said, "rein put them back: "+strings.Join(back, ", "))
	}
	if len(kept) > 0 {
		said = append(said, "rein kept, since they may be the host's: "+strings.Join(kept, ", "))
	}
	reason := "protected files were changed while the command ran, which the host would obey; " + strings.Join(said, "; ")
	if r.session.shared() {
		reason += " (other runs shared the workspace meanwhile, so the change may be theirs)"
	}
	return reason
}

// cleanup removes what the run made on the host and releases the
// workspace. Without a confirmed death the cgroups are kept for the next
// sweep, once this process is gone, and the HOME and TMPDIR slot is
// marked and never used again.
func (r *run) cleanup() {
	if r.res == nil {
		// A run that never started.
		r.stopEgress(nil)
		if r.full != nil {
			r.full.stop()
		}
	}
	if r.res == nil || (r.res.Poisoned == "" && !r.lostTrack) {
		r.groups.remove()
	}
	r.lifelineClose()
	for _, f := range r.saved {
		if f != nil {
			f.Close()
		}
	}
	if r.scratch != "" {
		// The bwrap rung's HOME and /tmp are in it: the command may have
		// made directories there that not even their owner can empty
		// (chmod 000), which removeTree opens up once every process of
		// the run is dead. Without a confirmed death one may still swap
		// an entry for a link under the walk: what can go goes.
		if r.res == nil || (r.res.Poisoned == "" && !r.lostTrack) {
			removeTree(r.scratch)
		} else {
			os.RemoveAll(r.scratch)
		}
	}
	if r.slot >= 0 && r.slotOf != nil {
		// A run that lost track of a process after its result (confirm)
		// keeps its slot as a poisoned one does: the process may still
		// write there.
		r.slotOf.releaseSlot(r.slot, r.res != nil && (r.res.Poisoned != "" || r.lostTrack))
	}
	r.leave()
}

// confirm is the check of the run's groups put off until after its
// result: they must be empty; a group that is not poisons the sandbox
// of its rung and workspace for the rest of the process.
func (r *run) confirm() {
	if !r.confirmLater {
		return
	}
	err := r.groups.confirmV1()
	if r.group != nil {
		if gerr := r.group.KillAndWait(confirmWait); gerr != nil {
			err = gerr
		}
	}
	if err != nil {
		// The result is out: the groups are kept, as for a poisoned run,
		// and the sandbox refuses network work from now on.
		r.lostTrack = true
		poison(r.rung, r.p.Workspace, err.Error())
	}
}

// leave ends the run's part in the workspace's session, once.
func (r *run) leave() {
	if r.unlock != nil {
		r.unlock()
		r.unlock = nil
	}
}

func closeExtra(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		if f != nil {
			f.Close()
		}
	}
	cmd.ExtraFiles = nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
