// Package sandbox runs a plan that the decision layer allowed, confined by
// the strongest mechanism it knows, bounded in time and output, and returns
// one result. It receives a plan (shell) and a Profile of plain data and
// never learns why the plan was allowed: it must not import policy, tool or
// trace.
//
// The bwrap rung runs rein's own binary as the sandbox's init: bubblewrap
// builds the view (sandbox/bwrap), the init confines itself (sandbox/confine:
// Landlock, seccomp, rlimits, no capabilities) and runs the plan without a
// shell (sandbox/runplan). A program that embeds rein must call Main at the
// top of its main function, before anything else, so that its binary can
// serve as that init.
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
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

// Status is how a run ended.
type Status string

// The statuses of a result.
const (
	OK          Status = "ok"
	Failed      Status = "failed"
	Timeout     Status = "timeout"
	Cancelled   Status = "cancelled"
	Unavailable Status = "unavailable"
	Denied      Status = "denied"
)

// Defaults of the execution contract.
const (
	DefaultTimeout = 180 * time.Second
	MaxTimeout     = 600 * time.Second
	// DefaultOutputBytes is how much of each stream a result keeps: the
	// head and the tail, with the middle's size stated.
	DefaultOutputBytes = 50_000
)

// Profile is what the sandbox is asked to grant, as plain data.
type Profile struct {
	// Workspace is the absolute host directory the plan works in.
	Workspace string
	// ReadOnly mounts the workspace read-only.
	ReadOnly bool
	// Dir is where the plan starts (inside the workspace); empty is the
	// workspace itself.
	Dir string
	// Env is the plan's environment (built by the caller, never
	// inherited). PATH, HOME and TMPDIR are set by the sandbox when absent.
	Env []string
	// Timeout bounds the whole run; zero is DefaultTimeout, and more than
	// MaxTimeout is refused.
	Timeout time.Duration
	// Rung is "auto" or "bwrap". The landlock rung is not built yet, and
	// "none" is never chosen here: both are refused by name.
	Rung string
	// OutputBytes bounds what the result keeps of each stream; zero is
	// DefaultOutputBytes.
	OutputBytes int
}

// Result is how a run ended.
type Result struct {
	Status   Status                `json:"status"`
	ExitCode int                   `json:"exit_code"`
	Rung     string                `json:"rung"`
	Stages   []runplan.StageResult `json:"stages"`
	Stdout   Output                `json:"stdout"`
	Stderr   Output                `json:"stderr"`
	// Reason says why a run was refused, failed to start or was killed.
	Reason string `json:"reason,omitempty"`
}

// Output is a stream as kept: the head and tail, and how many bytes of
// the middle were elided.
type Output struct {
	Text   string `json:"text"`
	Elided int64  `json:"elided_bytes"`
}

// Error is a run the sandbox refused before starting, with its cause.
type Error struct {
	Status Status
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("sandbox: %s: %s", e.Status, e.Reason) }

const (
	initFlag = "--rein-sandbox-init"
	ioDir    = "/rein/io"
)

// Main runs the sandbox's init when the process was started as one, and
// returns at once otherwise. A program that embeds rein calls it first in
// main; rein's own binary does.
func Main() {
	if len(os.Args) < 3 || os.Args[1] != initFlag {
		return
	}
	os.Exit(initMain(os.Args[2]))
}

// request is what the outer process hands the init.
type request struct {
	Line    *shell.Line  `json:"line"`
	Dir     string       `json:"dir"`
	Home    string       `json:"home"`
	Env     []string     `json:"env"`
	Confine confine.Spec `json:"confine"`
}

// initMain is the init inside the sandbox: it confines itself for good,
// runs the plan, and leaves the result for the outer process.
func initMain(dir string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "rein init: %v\n", err)
		return 125
	}
	// pid 1 of a namespace gets only the signals it handles, so catching
	// (not ignoring, which exec would pass on to the command) every signal
	// the command could send makes the init unkillable from inside: the
	// command cannot end it early and fake "the sandbox did not start".
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGTRAP, syscall.SIGWINCH, syscall.SIGIO)
	go func() {
		for range sigs {
		}
	}()
	data, err := os.ReadFile(filepath.Join(dir, "request.json"))
	if err != nil {
		return fail(err)
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		return fail(err)
	}
	// The result file is opened before the confinement, which then leaves
	// the io directory out of reach: the command can neither read the
	// request nor forge the result.
	resultFile, err := os.OpenFile(filepath.Join(dir, "result.json"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fail(err)
	}
	defer resultFile.Close()
	runtime.LockOSThread()
	// The command must not read the init's memory through /proc/1/mem
	// (the request, the environment it was built from).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(err)
	}
	if err := confine.Apply(req.Confine); err != nil {
		return fail(err)
	}
	res, err := runplan.Run(context.Background(), req.Line, runplan.Options{
		Dir: req.Dir, Home: req.Home, Env: req.Env, Stdout: os.Stdout, Stderr: os.Stderr,
	})
	if err != nil {
		return fail(err)
	}
	out, err := json.Marshal(res)
	if err == nil {
		_, err = resultFile.Write(out)
	}
	if err != nil {
		return fail(err)
	}
	return res.ExitCode
}

// Run runs line under p and returns its result. stdout and stderr, when
// not nil, receive the streams live as well.
func Run(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) (*Result, error) {
	timeout := p.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultTimeout
	case timeout < 0 || timeout > MaxTimeout:
		return nil, &Error{Status: Denied, Reason: fmt.Sprintf("timeout %s is above the %s ceiling", timeout, MaxTimeout)}
	}
	switch p.Rung {
	case "", "auto", "bwrap":
	case "landlock":
		return nil, &Error{Status: Unavailable, Reason: "the landlock rung is not built yet: use --rung bwrap"}
	case "none":
		return nil, &Error{Status: Denied, Reason: "running unconfined is not offered by this command"}
	default:
		return nil, &Error{Status: Denied, Reason: fmt.Sprintf("unknown rung %q: use auto or bwrap", p.Rung)}
	}
	if !filepath.IsAbs(p.Workspace) {
		return nil, &Error{Status: Denied, Reason: fmt.Sprintf("workspace %q is not absolute", p.Workspace)}
	}
	bw, err := bwrap.Find()
	if err != nil {
		return nil, &Error{Status: Unavailable, Reason: err.Error()}
	}
	// One run at a time per workspace: a command still running could swap
	// a protected path for a link while the next run's view is being
	// built, and the view would mount the link's target.
	unlock, err := lockWorkspace(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	defer unlock()
	exe, err := os.Executable()
	if err != nil {
		return nil, &Error{Status: Unavailable, Reason: "cannot find rein's own binary to run as the init: " + err.Error()}
	}
	sweepScratch()
	scratch, err := os.MkdirTemp("", fmt.Sprintf("rein-run-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	home, hostIO := filepath.Join(scratch, "home"), filepath.Join(scratch, "io")
	for _, d := range []string{home, hostIO} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	dir := p.Dir
	if dir == "" {
		dir = p.Workspace
	}
	env := withDefaults(p.Env, map[string]string{
		"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": bwrap.SandboxHome, "TMPDIR": "/tmp",
	})
	rw := []string{"/tmp", bwrap.SandboxHome, "/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
	if !p.ReadOnly {
		rw = append(rw, p.Workspace)
	}
	ro := []string{"/usr", "/etc", "/proc", "/dev/urandom", "/dev/random", bwrap.SandboxInit}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if _, err := os.Lstat(d); err == nil {
			ro = append(ro, d)
		}
	}
	if p.ReadOnly {
		ro = append(ro, p.Workspace)
	}
	req := request{Line: line, Dir: dir, Home: bwrap.SandboxHome, Env: env, Confine: confine.Spec{
		ReadOnly: ro, ReadWrite: rw, ScopeSignals: true, ScopeAbstractUnix: true,
	}}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(hostIO, "request.json"), data, 0o600); err != nil {
		return nil, err
	}
	// A repository without a hooks directory would let the command create
	// one and plant a hook the host runs at the next commit: protection
	// binds only what exists, so the directory is made first.
	if fi, err := os.Lstat(filepath.Join(p.Workspace, ".git")); err == nil && fi.IsDir() {
		if err := os.Mkdir(filepath.Join(p.Workspace, ".git", "hooks"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, &Error{Status: Unavailable, Reason: "creating .git/hooks to protect it: " + err.Error()}
		}
	}
	// Running as root, the command would read what only root can read
	// under the read-only system directories (/etc/shadow, keys).
	masked, err := bwrap.PrivateFiles("/etc")
	if err != nil {
		return nil, &Error{Status: Unavailable, Reason: "listing the private files of /etc: " + err.Error()}
	}
	before := snapshotGit(p.Workspace)
	// Kept on disk too: if rein is killed mid-run, the next run's sweep
	// puts git's control files back from it.
	if data, err := json.Marshal(savedGit{Workspace: p.Workspace, Before: before}); err == nil {
		os.WriteFile(filepath.Join(scratch, "git.json"), data, 0o600)
	}
	view := bwrap.View{
		SystemMasked: masked,
		Workspace:    p.Workspace, ReadOnlyWorkspace: p.ReadOnly,
		Protected:  protectedPaths(p.Workspace),
		Home:       home,
		Caches:     map[string]string{hostIO: ioDir},
		SystemDirs: bwrap.DefaultSystemDirs,
		Network:    bwrap.NetworkOff,
		Env:        env,
		Chdir:      dir,
		InitPath:   exe,
	}
	cmd, err := bwrap.Command(bw, view, []string{initFlag, ioDir})
	if err != nil {
		return nil, &Error{Status: Denied, Reason: err.Error()}
	}
	limit := p.OutputBytes
	if limit <= 0 {
		limit = DefaultOutputBytes
	}
	outBuf, errBuf := newHeadTail(limit), newHeadTail(limit)
	cmd.Stdout, cmd.Stderr = tee(outBuf, stdout), tee(errBuf, stderr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cmd.Start(); err != nil {
		bwrap.CloseFiles(cmd)
		return nil, &Error{Status: Unavailable, Reason: "starting bubblewrap: " + err.Error()}
	}
	bwrap.CloseFiles(cmd)
	// bubblewrap runs the init as pid 1 of its own pid namespace: killing
	// bubblewrap kills pid 1, and with it every process of the namespace,
	// daemons included.
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	waitErr := cmd.Wait()
	stop()
	res := &Result{Rung: "bwrap", Stdout: outBuf.output(), Stderr: errBuf.output()}
	// Every process of the run is dead: what it left in git's control
	// files is put back before the host's git can read it.
	planted := restoreGit(p.Workspace, before)
	var rr runplan.Result
	if data, err := os.ReadFile(filepath.Join(hostIO, "result.json")); err == nil && json.Unmarshal(data, &rr) == nil {
		res.Stages, res.ExitCode = rr.Stages, rr.ExitCode
	}
	// The init's own exit status is the line's: it is what the kernel
	// reports, whatever the result file says.
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) && res.Stages != nil {
		res.ExitCode = ee.ExitCode()
	} else if waitErr == nil && res.Stages != nil {
		res.ExitCode = 0
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Status, res.ExitCode, res.Reason = Timeout, 124, fmt.Sprintf("killed with its whole process tree after %s", timeout)
	case ctx.Err() != nil:
		res.Status, res.ExitCode, res.Reason = Cancelled, 130, "cancelled"
	case res.Stages == nil:
		res.Status, res.Reason = Unavailable, "the sandbox did not start the plan: "+lastLine(errBuf.output().Text)
		if errors.As(waitErr, &ee) {
			res.ExitCode = ee.ExitCode()
		}
	case len(planted) > 0:
		res.Status = Failed
		res.Reason = "the command changed git's control files, which the host's git would obey; rein put them back: " + strings.Join(planted, ", ")
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
	return res, nil
}

func lastLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.LastIndexByte([]byte(s), '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// withDefaults sets the variables of defs that env does not set.
func withDefaults(env []string, defs map[string]string) []string {
	out := append([]string(nil), env...)
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		found := false
		for _, e := range env {
			if len(e) > len(k) && e[:len(k)+1] == k+"=" {
				found = true
			}
		}
		if !found {
			out = append(out, k+"="+defs[k])
		}
	}
	return out
}

func tee(w io.Writer, also io.Writer) io.Writer {
	if also == nil {
		return w
	}
	return io.MultiWriter(w, also)
}

// headTail keeps the first and last half of a limit of bytes written to
// it, and counts what fell in between: bounded memory whatever the size.
// The tail is a ring, so a long stream costs one copy per byte.
type headTail struct {
	mu     sync.Mutex
	half   int
	head   []byte
	ring   []byte // the tail, len == half once allocated
	pos    int    // next write position in ring
	filled int    // bytes of ring in use
	total  int64  // bytes that went past the head
}

func newHeadTail(limit int) *headTail { return &headTail{half: max(limit/2, 1)} }

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	if room := h.half - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if h.ring == nil {
		h.ring = make([]byte, h.half)
	}
	h.total += int64(len(p))
	if len(p) > h.half {
		p = p[len(p)-h.half:]
	}
	for len(p) > 0 {
		c := copy(h.ring[h.pos:], p)
		p = p[c:]
		h.pos = (h.pos + c) % h.half
		h.filled = min(h.filled+c, h.half)
	}
	return n, nil
}

func (h *headTail) output() Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail := make([]byte, 0, h.filled)
	if h.filled == h.half {
		tail = append(append(tail, h.ring[h.pos:]...), h.ring[:h.pos]...)
	} else {
		tail = append(tail, h.ring[:h.filled]...)
	}
	return Output{Text: string(h.head) + string(tail), Elided: h.total - int64(h.filled)}
}

// lockWorkspace takes the workspace's run lock, a file outside the
// workspace (where the command cannot remove it), waiting until it is
// free or ctx ends.
func lockWorkspace(ctx context.Context, ws string) (func(), error) {
	dir := filepath.Join(os.TempDir(), "rein-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &Error{Status: Unavailable, Reason: "creating the lock directory: " + err.Error()}
	}
	sum := sha256.Sum256([]byte(ws))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:12])+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &Error{Status: Unavailable, Reason: "opening the workspace lock: " + err.Error()}
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, &Error{Status: Unavailable, Reason: "locking the workspace: " + err.Error()}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, &Error{Status: Cancelled, Reason: "another run holds the workspace"}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// protectedPaths are the workspace paths bound read-only: git's hooks and
// config, those of its submodules, and rein's own directory.
func protectedPaths(ws string) []string {
	out := []string{".git/hooks", ".git/config", ".rein"}
	mods, _ := filepath.Glob(filepath.Join(ws, ".git", "modules", "*"))
	for _, m := range mods {
		rel, err := filepath.Rel(ws, m)
		if err == nil {
			out = append(out, filepath.Join(rel, "hooks"), filepath.Join(rel, "config"))
		}
	}
	return out
}

// gitControl are the paths that redirect git to other config and hooks
// than the protected ones: a planted commondir or alternates, or a whole
// .git where there was none, would make the host's git run the command's
// code.
var gitControl = []string{".git", ".git/commondir", ".git/objects/info/alternates", ".git/config.worktree"}

// gitSnapshot is what those paths held before a run: nil for absent, the
// content of a regular file, an empty slice for anything else.
type gitSnapshot map[string][]byte

func snapshotGit(ws string) gitSnapshot {
	s := gitSnapshot{}
	for _, rel := range gitControl {
		p := filepath.Join(ws, rel)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			s[rel] = nil
		case rel == ".git" || !fi.Mode().IsRegular():
			s[rel] = []byte{}
		default:
			data, _ := os.ReadFile(p)
			s[rel] = append([]byte{}, data...)
		}
	}
	return s
}

// restoreGit puts git's control files back as they were and names what it
// put back. A .git that did not exist before the run is removed whole.
func restoreGit(ws string, before gitSnapshot) []string {
	after := snapshotGit(ws)
	var fixed []string
	for _, rel := range gitControl {
		was, now := before[rel], after[rel]
		if (was == nil) == (now == nil) && bytes.Equal(was, now) {
			continue
		}
		p := filepath.Join(ws, rel)
		switch {
		case was == nil:
			os.RemoveAll(p)
		case rel == ".git":
			continue
		default:
			os.RemoveAll(p)
			os.WriteFile(p, was, 0o644)
		}
		fixed = append(fixed, rel)
		if rel == ".git" {
			break
		}
	}
	return fixed
}

// sweepScratch removes the scratch directories (private HOME, request and
// result) of runs whose rein died without cleaning up, killed by SIGKILL
// for instance: their name carries the pid that made them.
func sweepScratch() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "rein-run-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "rein-run-%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			var saved savedGit
			if data, err := os.ReadFile(filepath.Join(d, "git.json")); err == nil && json.Unmarshal(data, &saved) == nil && saved.Workspace != "" {
				restoreGit(saved.Workspace, saved.Before)
			}
			os.RemoveAll(d)
		}
	}
}

// savedGit is a run's git snapshot as kept in its scratch directory.
type savedGit struct {
	Workspace string      `json:"workspace"`
	Before    gitSnapshot `json:"before"`
}
