//go:build linux

package sandbox

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reinhq/rein/shell"
)

// The bounds of a pool.
const (
	// MaxWarm is how many warm sandboxes a pool keeps at once, one per
	// profile: bubblewrap and an idle init are about 16 MB of resident memory each.
	MaxWarm = 4
	// MaxWarmProcess is how many warm sandboxes all the pools of a
	// process keep at once (rein mcp over HTTP has a pool per session).
	MaxWarmProcess = 8
	// WarmIdle is how long a warm sandbox waits to be used. It holds
	// no place in the workspace's session while it waits; it
	// joins it when it is taken.
	WarmIdle = 10 * time.Second
	// RefillDelay is how long after a run's result the next warm sandbox
	// for its profile starts. A call that comes sooner runs cold, as it
	// would while the next sandbox is being made.
	RefillDelay = 5 * time.Millisecond
)

// Pool starts sandboxes before they are asked for. After a run takes a
// sandbox from the pool, the next one for the same profile is started in
// the background, confined and waiting for its plan; the next Start for
// that profile sends the plan to it instead of starting bubblewrap and
// rein's init again. A warm sandbox is used only if what its view was
// built from still holds when the plan arrives (the files the protected
// set hides, the protected paths and their identities, /etc's masked
// files, the profile): otherwise it is thrown away and a fresh one made.
// Each is used once.
//
// A pool keeps at most MaxWarm sandboxes, and the pools of a process at
// most MaxWarmProcess together. Only the bwrap rung with the network off
// and no process limit is kept warm; every other profile starts cold, as Start does. A pool's sandboxes
// die with the process (bubblewrap's --die-with-parent), at Close, and
// after WarmIdle unused. The zero Pool is not usable: make one with
// NewPool.
type Pool struct {
	mu     sync.Mutex
	warm   map[string]*warmRun
	closed bool
	// filling are the profiles a sandbox is being started for.
	filling map[string]bool
	wg      sync.WaitGroup
	// teardown counts the runs started through the pool whose teardown
	// has not ended.
	teardown sync.WaitGroup
}

type warmRun struct {
	r     *run
	timer *time.Timer
	once  sync.Once
}

// warmCount is how many warm sandboxes the process's pools hold or are
// making.
var warmCount atomic.Int32

// release gives back w's place in the process's count, once.
func (w *warmRun) release() { w.once.Do(func() { warmCount.Add(-1) }) }

// NewPool makes an empty pool.
func NewPool() *Pool {
	return &Pool{warm: map[string]*warmRun{}, filling: map[string]bool{}}
}

// Start is Start through the pool: line runs in the warm sandbox of p's
// profile when there is one whose premises still hold, else in a fresh
// one; either way the next is made ready behind it.
func (pl *Pool) Start(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) (*Handle, error) {
	if err := checkInit(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	p.pool = pl
	watchEtc.Store(true)
	key, ok := warmKey(p)
	if !ok || line == nil || len(line.Pipelines) == 0 {
		return Start(ctx, line, p, stdout, stderr)
	}
	if ctx.Err() != nil {
		// The warm sandbox stays for the next call.
		return nil, cancelledBefore(ctx)
	}
	if w := pl.take(key); w != nil {
		if err := w.r.take(ctx, line, p, stdout, stderr); err == nil {
			h := w.r.handle()
			pl.fillAfter(h, key, p)
			return h, nil
		}
		// Gone before the fresh run starts: the taking joined the
		// workspace's session, which the fresh run must find as a cold
		// run would (begun afresh when no other run holds it).
		w.discard()
	}
	h, err := Start(ctx, line, p, stdout, stderr)
	if err == nil && (h.rung == RungBwrap || h.rung == RungLandlock) {
		pl.fillAfter(h, key, p)
	}
	return h, err
}

// fillAfter starts the next warm sandbox for p RefillDelay after h's
// result is ready: started beside the command, its bubblewrap and init
// would take the CPU the command, its result and the caller's use of it
// need, and the next call comes after those anyway.
func (pl *Pool) fillAfter(h *Handle, key string, p Profile) {
	go func() {
		<-h.done
		if h.rung != RungBwrap {
			// The run's HOME and TMPDIR slot is released at its
			// teardown: the next sandbox takes the same one, as a
			// toolchain that keys its caches on them expects.
			<-h.ended
		}
		// The caller's own use of the result (its record, its answer
		// to an MCP client) has the CPU first.
		time.Sleep(RefillDelay)
		pl.fill(key, p)
	}()
}

// Run is Run through the pool.
func (pl *Pool) Run(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) (*Result, error) {
	h, err := pl.Start(ctx, line, p, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return h.Wait(), nil
}

// Close ends every warm sandbox and stops making new ones; it waits for
// them to be gone.
func (pl *Pool) Close() {
	pl.mu.Lock()
	pl.closed = true
	warm := pl.warm
	pl.warm = map[string]*warmRun{}
	pl.mu.Unlock()
	for _, w := range warm {
		w.discard()
	}
	pl.wg.Wait()
	pl.teardown.Wait()
}

// countTeardown counts a run's teardown for Close to wait for, unless
// Close has begun: a run started through a closed pool is not waited for
// (a WaitGroup's count may not grow while it is waited on).
func (pl *Pool) countTeardown() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return false
	}
	pl.teardown.Add(1)
	return true
}

// Warm is how many sandboxes are waiting.
func (pl *Pool) Warm() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.warm)
}

func (pl *Pool) take(key string) *warmRun {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	w := pl.warm[key]
	if w == nil {
		return nil
	}
	delete(pl.warm, key)
	if !w.timer.Stop() {
		// Its idle time is up and it is being discarded.
		return nil
	}
	w.release()
	return w
}

// fill starts a warm sandbox for p in the background, unless one is
// waiting or being made, or the pool is full or closed.
func (pl *Pool) fill(key string, p Profile) {
	pl.mu.Lock()
	if pl.closed || pl.warm[key] != nil || pl.filling[key] || len(pl.warm)+len(pl.filling) >= MaxWarm {
		pl.mu.Unlock()
		return
	}
	if warmCount.Add(1) > MaxWarmProcess {
		warmCount.Add(-1)
		pl.mu.Unlock()
		return
	}
	pl.filling[key] = true
	pl.wg.Add(1)
	pl.mu.Unlock()
	go func() {
		defer pl.wg.Done()
		r, err := prepareWarm(p)
		pl.mu.Lock()
		delete(pl.filling, key)
		if err != nil {
			pl.mu.Unlock()
			warmCount.Add(-1)
			return
		}
		if pl.closed || pl.warm[key] != nil {
			pl.mu.Unlock()
			warmCount.Add(-1)
			r.kill(Cancelled)
			<-r.done
			return
		}
		w := &warmRun{r: r}
		w.timer = time.AfterFunc(WarmIdle, func() {
			pl.mu.Lock()
			if pl.warm[key] == w {
				delete(pl.warm, key)
			}
			pl.mu.Unlock()
			w.discard()
		})
		pl.warm[key] = w
		pl.mu.Unlock()
	}()
}

func (w *warmRun) discard() {
	w.release()
	w.timer.Stop()
	w.r.planW.Close()
	w.r.kill(Cancelled)
	<-w.r.done
}

// warmKey is what a warm sandbox for p is made from, as text, and whether
// p can have one: the bwrap rung, the network off, no process limit (the
// group's reserve counts the plan's stages), no session, the workspace's
// caches or fresh ones (caches in a directory of the caller's are made
// for one run alone).
func warmKey(p Profile) (string, bool) {
	if p.Rung != RungBwrap && p.Rung != RungAuto && p.Rung != RungLandlock || p.Network != NetworkOff || p.Session != nil || p.Limits.Processes != 0 || p.Caches != nil && !p.Caches.Fresh {
		return "", false
	}
	k := struct {
		Landlock      bool
		Workspace     string
		ReadOnly      bool
		HostReadPaths []string
		HostWrite     []string
		Env           []string
		HostCaches    any
		Caches        *CacheSet
		OutputBytes   int
		SpoolBytes    int64
		Limits        Limits
		Hidden        bool
	}{p.Rung == RungLandlock, p.Workspace, p.ReadOnly, p.HostReadPaths, p.HostWritePaths, p.Env, p.HostCaches, p.Caches, p.OutputBytes, p.SpoolBytes, p.Limits, p.Hidden != nil}
	data, err := json.Marshal(k)
	return string(data), err == nil
}

// prepareWarm starts a sandbox for p whose init confines itself and waits
// for its plan; it returns once the init says it is ready.
func prepareWarm(p Profile) (*run, error) {
	rung, _, err := chooseRung(context.Background(), p)
	if err != nil || rung != RungBwrap && (rung != RungLandlock || p.Rung != RungLandlock) {
		return nil, fmt.Errorf("not a rung kept warm")
	}
	// The spool directory and the timeout are the call's, set when taken.
	p.SpoolDir = ""
	// The workspace and the read paths as they are before the view binds
	// them: the taking finds them the same on the host and, from inside,
	// bound.
	ids := map[string]fileID{p.Workspace: identity(p.Workspace)}
	for _, h := range p.HostReadPaths {
		ids[h] = identity(h)
	}
	// And what they lead to: a path that is a link is granted (Landlock,
	// which holds the inode wherever it moves) or bound (bwrap) as the
	// directory it led to at the start. That directory moved aside and
	// another made in its place, the link itself unchanged, a cold run
	// has the new one and no reach to the old.
	targets := map[string]fileID{}
	for path := range ids {
		targets[path] = target(path)
	}
	r, err := start(context.Background(), nil, p, rung, false, nil, nil)
	if err != nil {
		return nil, err
	}
	r.identities, r.targets = ids, targets
	// The plan goes as the second value of one gob stream, whose first
	// (a plan of every kind of field, never run) the init decodes while
	// it waits: gob compiles its decoder for a type at the type's first
	// value, a few hundred microseconds in a fresh process, which are
	// then not on the call's path; the stream's type descriptions are
	// sent once, too.
	r.planEnc = gob.NewEncoder(r.planW)
	if err := r.planEnc.Encode(warmUpPlan); err != nil {
		r.planW.Close()
		r.kill(Cancelled)
		<-r.done
		return nil, fmt.Errorf("sending the warm-up plan: %v", err)
	}
	ready := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := r.readyR.Read(b[:])
		ready <- n == 1 && b[0] == 'r'
	}()
	select {
	case ok := <-ready:
		if ok {
			return r, nil
		}
	case <-time.After(10 * time.Second):
	}
	r.planW.Close()
	r.kill(Cancelled)
	<-r.done
	return nil, fmt.Errorf("the warm sandbox's init never said it was ready")
}

// warmUpPlan is the first value of a warm sandbox's plan stream: every
// field of a plan set, so that the init's decoder is compiled for all of
// them. The init decodes it and waits for the next.
var warmUpPlan = warmPlan{
	Line: &shell.Line{
		Pipelines: []*shell.Pipeline{{Stages: []*shell.Stage{
			{Kind: shell.Command, Argv: []string{"true"}, Program: "true", Redirects: []shell.Redirect{{Fd: 1, Op: shell.Truncate, Path: "/dev/null"}}},
			{Kind: shell.Cd, Dir: "/"},
		}}},
		Connectors: []shell.Connector{shell.And},
	},
	NotFound: map[int]string{0: "warm-up"},
	Dir:      "/",
	Covered:  []covered{{Path: "/", Dev: 1, Ino: 1, Any: true, Writable: true}},
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// identity is path's device and inode, links not followed; zero when it
// cannot be read.
func identity(path string) fileID {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return fileID{}
	}
	return fileID{st.Dev, st.Ino}
}

// target is the device and inode of what path leads to, links followed;
// zero when it cannot be read.
func target(path string) fileID {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}
	}
	return fileID{st.Dev, st.Ino}
}

// existing are the paths of rels that exist in ws.
func existing(ws string, rels []string) []string {
	var out []string
	for _, rel := range rels {
		if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
			out = append(out, rel)
		}
	}
	return out
}

// take makes the warm run r the run of line under p, or says why it
// cannot: the view no longer holds what it was built from, or the init is
// gone.
func (r *run) take(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) error {
	r.taking.Lock()
	defer r.taking.Unlock()
	if r.ending {
		return fmt.Errorf("the warm sandbox ended")
	}
	hiddenAt := r.hidden
	r.p.Timeout, r.p.Dir, r.p.SpoolDir, r.p.SpoolOverflow, r.p.Hidden = p.Timeout, p.Dir, p.SpoolDir, p.SpoolOverflow, p.Hidden
	line, r.notFound = resolved(line, p)
	// The workspace's session, as a cold run joins it: its baseline of
	// the protected files, taken now when the session begins now.
	if err := ensureGuardian(); err != nil {
		return err
	}
	sess, err := joinSession(ctx, p.Workspace, r.rung != RungBwrap, !p.ReadOnly)
	if err != nil {
		return err
	}
	r.session, r.unlock = sess, sess.leave
	// What the view was built from, listed again under the lock: the
	// workspace and read paths themselves, the hidden files (and the
	// repository metadata to compare with after the run), the protected
	// paths (those that exist, and the session's), /etc's private files.
	for path, id := range r.identities {
		if identity(path) != id || target(path) != r.targets[path] {
			return fmt.Errorf("%s was replaced", path)
		}
	}
	if err := r.scanStart(); err != nil {
		return err
	}
	if !slices.Equal(hiddenAt, r.hidden) {
		return fmt.Errorf("the files the protected set hides changed")
	}
	if !slices.Equal(r.protected, existing(p.Workspace, protectedPaths(p.Workspace))) || !slices.Equal(r.protected, sess.protected) {
		return fmt.Errorf("the protected paths changed")
	}
	if masked, err := systemMasks(r.rung); err != nil || !slices.Equal(masked, r.masked) {
		return fmt.Errorf("/etc's private files changed")
	}
	if !p.ReadOnly {
		r.guard, r.repos = sess.baseline.Guard, sess.baseline.Repos
		err := writeSaved(r.saved[0], r.guard)
		r.saved[0] = nil
		if err != nil {
			return fmt.Errorf("saving the protected files: %v", err)
		}
		if r.repos != nil {
			err := writeSaved(r.saved[1], r.repos)
			r.saved[1] = nil
			if err != nil {
				return fmt.Errorf("saving the repository metadata: %v", err)
			}
		}
	}
	var spools []*spool
	if p.SpoolDir != "" {
		for _, name := range []string{"stdout", "stderr"} {
			sp, err := newSpool(filepath.Join(p.SpoolDir, name), p.spoolBytes(), p.SpoolOverflow)
			if err != nil {
				closeSpools(spools)
				return fmt.Errorf("opening the spool file: %v", err)
			}
			spools = append(spools, sp)
		}
	}
	plan := warmPlan{Line: line, NotFound: r.notFound, Dir: p.Dir}
	if plan.Dir == "" {
		plan.Dir = p.Workspace
	}
	if r.rung == RungLandlock {
		// No mounts to check inside: Landlock's grants hold the inodes
		// checked above. The HOME and TMPDIR must still be as emptied.
		for _, d := range []string{r.home, r.tmp} {
			if entries, err := os.ReadDir(d); err != nil || len(entries) > 0 {
				closeSpools(spools)
				return fmt.Errorf("the run's %s is no longer empty", d)
			}
		}
	} else {
		plan.Covered = r.covered(p)
	}
	if err := ctx.Err(); err != nil {
		// Ended before the plan is sent: nothing of it may run.
		closeSpools(spools)
		return err
	}
	r.mu.Lock()
	if spools != nil {
		r.spools = spools
	}
	r.live = [2]io.Writer{stdout, stderr}
	r.warm = true
	r.mu.Unlock()
	r.start = time.Now()
	err = r.planEnc.Encode(plan)
	r.planW.Close()
	if err != nil {
		return fmt.Errorf("sending the plan: %v", err)
	}
	// One read: the answer is one write of the init's, and bubblewrap
	// holds the pipe open after it. An init that does not answer
	// (stopped, say) holds neither the call past its context nor the
	// workspace's session for good: the read ends, and the sandbox is
	// discarded, its session put back and left by its teardown.
	answer := make([]byte, 4096)
	r.readyR.SetReadDeadline(time.Now().Add(answerWait))
	unwatch := context.AfterFunc(ctx, func() { r.readyR.SetReadDeadline(time.Now()) })
	n, _ := r.readyR.Read(answer)
	unwatch()
	r.readyR.Close()
	if n == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	if n == 0 || answer[0] != 'y' {
		return fmt.Errorf("the warm sandbox's view no longer holds: %s", answer[min(n, 1):n])
	}
	r.begin(ctx)
	return nil
}

// answerWait bounds the wait for a warm sandbox's answer to its plan,
// which its init gives within milliseconds.
const answerWait = 10 * time.Second

// writeSaved writes v into f, one of a warm sandbox's saved files, made
// empty when it was started, and closes it.
func writeSaved(f *os.File, v any) error {
	if f == nil {
		return fmt.Errorf("the file was not made")
	}
	data, err := json.Marshal(v)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// covered is what a warm bwrap sandbox's init checks is still covered by
// a read-only mount of its own before the plan runs.
func (r *run) covered(p Profile) []covered {
	var out []covered
	for path, id := range r.identities {
		out = append(out, covered{Path: path, Dev: id.dev, Ino: id.ino, Writable: path == p.Workspace && !p.ReadOnly})
	}
	for _, rel := range r.protected {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(p.Workspace, rel), &st); err == nil {
			out = append(out, covered{Path: filepath.Join(p.Workspace, rel), Dev: st.Dev, Ino: st.Ino})
		}
	}
	for _, rel := range r.hidden {
		out = append(out, covered{Path: filepath.Join(p.Workspace, rel), Any: true})
	}
	for _, m := range r.masked {
		out = append(out, covered{Path: m, Any: true})
	}
	return out
}

func closeSpools(spools []*spool) {
	for _, sp := range spools {
		if sp.f != nil {
			sp.f.Close()
		}
	}
}
