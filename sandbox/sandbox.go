// Package sandbox runs a plan that the decision layer allowed, confined by
// the strongest mechanism the host has, bounded in time and output, with its
// whole process tree under control, and returns one result. It receives a
// plan (shell) and a Profile of plain data and never learns why the plan was
// allowed: it must not import policy, tool or trace.
//
// Three rungs run a plan. On the bwrap rung bubblewrap builds a view of the
// host from nothing (sandbox/bwrap) and rein's own binary is the init, pid 1
// of a new pid namespace; on the landlock rung, for hosts without user
// namespaces, the init runs in the host's namespaces as a child subreaper.
// On both the init confines itself for good (sandbox/confine: Landlock,
// seccomp, rlimits, no capabilities) and runs the plan without a shell
// (sandbox/runplan). The none rung runs the plan unconfined and is only ever
// used when asked for by name. Where a cgroup v2 hierarchy is writable every
// run gets a group of its own (sandbox/cgroup), which kills the tree and
// confirms its death.
//
// The mechanisms are Linux's. The package compiles everywhere, but on any
// other system every run, start, pool and preflight is refused with a
// *Error wrapping ErrUnsupported, before anything starts.
//
// A program that embeds rein must call Main at the top of its main
// function, before anything else, so that its binary can serve as that
// init; a binary that does not is refused with an error saying so.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/sandbox/runplan"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/toolchain"
)

// Status is how a run ended: runplan's, the one status type of rein's
// layers (tool.Status is it too).
type Status = runplan.Status

// The statuses of a result.
const (
	OK          = runplan.OK
	Failed      = runplan.Failed
	Timeout     = runplan.Timeout
	Cancelled   = runplan.Cancelled
	Unavailable = runplan.Unavailable
	Denied      = runplan.Denied
	InvalidPath = runplan.InvalidPath
	NotFound    = runplan.NotFound
)

// Rung is a way of confining a run, from the strongest: RungBwrap
// (namespaces and a view built from nothing, then Landlock and seccomp),
// RungLandlock (Landlock and seccomp over the host's view), RungNone (the
// limits and the plan runner, no confinement). RungAuto, in a Profile,
// asks for the strongest that runs here.
type Rung string

// The rungs.
const (
	RungAuto     Rung = "auto"
	RungBwrap    Rung = "bwrap"
	RungLandlock Rung = "landlock"
	RungNone     Rung = "none"
)

// Defaults of the execution contract.
const (
	DefaultTimeout = 180 * time.Second
	MaxTimeout     = 600 * time.Second
	// DefaultOutputBytes is how much of each stream a result keeps: the
	// head and the tail, with the middle's size stated.
	DefaultOutputBytes = 50_000
	// DefaultSpoolBytes is how much of each stream a spool file keeps, as
	// a background handle's capture does.
	DefaultSpoolBytes = 1 << 30
)

// Profile is what the sandbox is asked to grant, as plain data.
type Profile struct {
	// Workspace is the absolute host directory the plan works in.
	Workspace string
	// ReadOnly makes the workspace read-only.
	ReadOnly bool
	// Dir is where the plan starts (inside the workspace); empty is the
	// workspace itself.
	Dir string
	// HostReadPaths are extra absolute host paths the plan may read, at
	// their own path. The caller vets them (never a protected path).
	HostReadPaths []string
	// HostWritePaths are host directories, each inside one of
	// HostReadPaths, the plan may also write, at their own path: a child
	// agent run's view of its repository (the objects, its worktree's
	// administrative directory), the rest of it read-only. The caller
	// vets them; a read-only plan (ReadOnly) writes none of them.
	HostWritePaths []string
	// Env is the plan's environment (built by the caller, never
	// inherited). Its PATH is the caller's: the sandbox keeps the
	// directories of it that the view exposes read-only (SearchPath), or
	// uses a fixed system PATH when there is none. HOME, TMPDIR, the
	// toolchain caches' variables and the toolchain table's fixed ones
	// are set by the sandbox when absent.
	Env []string
	// Hidden, when set, reports whether the workspace entry at an
	// absolute path is one the command must not read (the caller's
	// protected set): every run lists the workspace when it starts, and
	// hides each such file, and each such directory whole, from the
	// command. A symbolic link is never asked about: what it leads to is
	// asked about on its own. It must be safe to call from several runs at
	// once.
	Hidden func(path string) bool
	// HostCaches are the user's own toolchain caches exposed read-only
	// and served to their toolchains (toolchain.HostCaches lists those of
	// this host). The caller vets them, as it does HostReadPaths: never
	// a protected path.
	HostCaches []toolchain.HostCache
	// Caches, when set, are the run's toolchain caches in place of the
	// workspace's (ToolchainCacheDir, kept between runs and writable by
	// every command of every run): an agent's gate reads no cache that a
	// command it checks could have written.
	Caches *CacheSet
	// Timeout bounds the whole run; zero is DefaultTimeout, and more than
	// MaxTimeout is refused.
	Timeout time.Duration
	// Rung is "auto" (or empty), "bwrap", "landlock" or "none". Auto takes
	// the strongest rung whose preflight passes here; "none" runs
	// unconfined and is never chosen by auto.
	Rung Rung
	// OutputBytes bounds what the result keeps of each stream; zero is
	// DefaultOutputBytes.
	OutputBytes int
	// SpoolDir, when set, receives the full bytes of both streams, as
	// files named stdout and stderr, whatever OutputBytes keeps in
	// memory, up to SpoolBytes each. It must exist and lie outside the
	// workspace.
	SpoolDir string
	// SpoolBytes bounds each spool file; zero is DefaultSpoolBytes, and a
	// smaller Limits.FileSizeBytes bounds it too (the spool is a file the
	// command writes, through rein). What goes past it is dropped and
	// counted in the stream's Output.Dropped.
	SpoolBytes int64
	// SpoolOverflow spools only a stream that outgrows what OutputBytes
	// keeps in memory: its file is made then, holding every byte from the
	// first. A stream that fits has no file, and its Output.Text is whole.
	SpoolOverflow bool
	// Limits bound what the run may use; each one set is enforced or the
	// run is refused.
	Limits Limits
	// Network is NetworkOff (or empty), NetworkProxy or NetworkFull.
	Network Network
	// Egress decides and records every connection in proxy mode, where it
	// is required: the sandbox asks it about each target and never learns
	// why one was allowed.
	Egress netproxy.Policy
	// Session, when set, makes the run an interactive session of one
	// program (an agent's CLI): its streams are the caller's own, signals
	// are passed on, and it may run up to MaxSessionTimeout. Only the
	// bwrap rung runs one: a session needs a pid namespace of its own, so
	// that its whole tree ends with it.
	Session *Session

	// pool is the pool a run is started through, which takes its result
	// once the init has reported (bwrap rung) and waits at Close for the
	// teardown that follows; without one a run's result waits for its
	// teardown.
	pool *Pool
}

// CacheSet is a run's own toolchain caches.
type CacheSet struct {
	// Dir holds the run's caches, one directory per cache name (made by
	// each toolchain when it first writes there), writable by the
	// command: an existing directory outside the workspace. Removing it
	// is the caller's.
	Dir string
	// Fresh, in place of Dir, makes the run's caches in its own scratch
	// directory, which nothing else sees and which goes with the run:
	// empty for the command by construction. A sandbox can then be made
	// ready for the command before it is asked for, as for any other.
	Fresh bool
	// GoSeeds are Go build caches (GOCACHE's layout) that the go command
	// reads beneath Dir's own, in order, read-only: rein's init serves
	// them as one cache through GOCACHEPROG (Go 1.24 and later; an older
	// go reads Dir's alone, and builds what it lacks). What the command
	// builds goes to Dir; nothing of a seed is written, not even its
	// times.
	GoSeeds []string
	// GoUsed, when set, lists the actions (one hex action ID a line, as
	// rein's cache program writes them to rein-used in the directory it
	// fills) to lay out from GoSeeds before the command starts: rein's
	// init gives each listed action a seed holds a copy of its index
	// entry and a link to its output in the seed, in a Go build cache of
	// the command's own in the sandbox's /tmp (in memory), which the go
	// command then uses at native speed, without GOCACHEPROG. What is not
	// listed is built there. On the bwrap rung only: on the others TMPDIR
	// is a directory on the host's disk, where making the files costs
	// more than the program's round trips, and the program serves the
	// seeds.
	GoUsed string
	// GoModules are Go module download caches (a module proxy's layout)
	// served read-only, as file:// GOPROXY entries after the host's, in
	// order: the go command checks each module it takes from there
	// against the workspace's go.sum, as from any proxy.
	GoModules []string
}

// MaxSessionTimeout is the ceiling of a session's timeout.
const MaxSessionTimeout = 24 * time.Hour

// Session is what a session run takes from its caller.
type Session struct {
	// Stdin, Stdout and Stderr are the program's streams, passed straight
	// through (a terminal stays a terminal): nothing is captured, so the
	// result's Stdout and Stderr are empty. Nil is the null device.
	Stdin, Stdout, Stderr *os.File
	// Signals passes each signal sent on it to every process of the
	// sandbox (SIGINT, SIGTERM, SIGHUP, SIGWINCH, ...). Ending the session
	// for good is Kill's.
	Signals <-chan os.Signal
	// HomeFiles maps paths relative to the private HOME to host files or
	// directories bound there read-only, with each directory between
	// bound over itself so that none can be renamed and replaced: the
	// session's settings, a bundle, a socket's directory. The caller vets
	// them, as it does HostReadPaths.
	HomeFiles map[string]string
	// Services are ports on the session's own loopback whose connections
	// rein's process serves (a model gateway): the init listens on each
	// and hands every connection, the socket itself, to rein, which
	// accepts it from the listener Serve is given. No process outside the
	// session can reach one, and the session reaches rein no other way.
	Services []Service
}

// sandboxProxyPort is the port of the forwarder rein's init runs on the
// sandbox's own loopback for the egress proxy, on the bwrap rung.
const sandboxProxyPort = 3128

// Service is one port of a session's loopback served by rein's process.
type Service struct {
	// Port is the port on 127.0.0.1 inside the session; not the egress
	// proxy's (3128).
	Port uint16
	// Serve serves the port's connections from l until l is closed, when
	// the session ends.
	Serve func(l net.Listener)
}

// Result is how a run ended.
type Result struct {
	Status   Status                `json:"status"`
	ExitCode int                   `json:"exit_code"`
	Rung     Rung                  `json:"rung"`
	Stages   []runplan.StageResult `json:"stages"`
	Stdout   Output                `json:"stdout"`
	Stderr   Output                `json:"stderr"`
	// Reason says why a run was refused, failed to start or was killed.
	Reason string `json:"reason,omitempty"`
	// PutBack names what the command changed that the host would obey
	// (git's hooks and config, rein's own files, repository metadata
	// below the workspace that runs a program) and rein put back, each
	// with how; the run then failed. A change found while runs went on
	// for longer than a session keeps a baseline (10 minutes) is kept,
	// since it may be the host's, and named as kept.
	PutBack []string `json:"put_back,omitempty"`
	// RungNote says why auto did not take a stronger rung.
	RungNote string `json:"rung_note,omitempty"`
	// Containment is how the tree was killed and its death confirmed:
	// "cgroup", "pid namespace" or "subreaper".
	Containment string `json:"containment"`
	// Poisoned is set when the death of every process could not be
	// confirmed: something the command started may still run.
	Poisoned string `json:"poisoned,omitempty"`
	// Limits are the limits enforced, each with its mechanism.
	Limits []Applied `json:"limits"`
	// LimitHit names the limit that ended the run or one of its
	// processes: memory, processes (a fork refused), cpu_seconds,
	// file_size or timeout. Reason then says how.
	LimitHit string `json:"limit_hit,omitempty"`
	// Network is the network mode the run had.
	Network Network `json:"network"`
	// Egress lists the connections through the proxy (at most 256; the
	// rest are counted in EgressDropped), each as it ended.
	Egress        []netproxy.Event `json:"egress,omitempty"`
	EgressDropped int              `json:"egress_dropped,omitempty"`
	// DurationMS is the wall time of the run in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Warm says the run took a sandbox a Pool had started before it was
	// asked for (its view re-checked when the plan arrived).
	Warm bool `json:"warm,omitempty"`
}

// Output is a stream as kept: the head and tail, how many bytes of the
// middle were elided, the whole size, where the bytes were spooled, and
// how many of them the spool dropped past its bound (File then holds the
// first Bytes - Dropped).
type Output struct {
	Text    string `json:"text"`
	Elided  int64  `json:"elided_bytes"`
	Bytes   int64  `json:"bytes"`
	File    string `json:"file,omitempty"`
	Dropped int64  `json:"dropped_bytes,omitempty"`
}

// Error is a run the sandbox refused before starting, with its cause.
type Error struct {
	Status Status
	Reason string
	// Err is the cause, when there is one to test for with errors.Is or
	// errors.As: ErrNoInit, ErrUnsupported, or the error a step of the
	// preparation failed with (a *fs.PathError, exec.ErrNotFound).
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("sandbox: %s: %s", e.Status, e.Reason) }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// refuse is the refusal with status s and the reason format says. An
// error among args, the last when there are several, is kept as its
// cause: the reason reads as before and errors.Is and errors.As still
// reach what failed.
// cancelledBefore is the refusal of a run whose context ended before
// anything of it started: nothing of the plan may run then (a fast command
// would finish before the kill reached it).
func cancelledBefore(ctx context.Context) error {
	return refuse(Cancelled, "the run was cancelled before it started: %v", context.Cause(ctx))
}

func refuse(s Status, format string, args ...any) error {
	e := &Error{Status: s, Reason: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
		}
	}
	return e
}

// Run runs line under p and returns its result. stdout and stderr, when
// not nil, receive the streams live as well.
func Run(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) (*Result, error) {
	h, err := Start(ctx, line, p, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return h.Wait(), nil
}

// Handle is a run in progress.
type Handle struct {
	rung Rung
	done chan struct{}
	// ended is closed when the run's teardown has ended too.
	ended <-chan struct{}
	res   *Result
	kill  func(reason Status)
}

// Start starts line under p and returns at once; Wait gives the result.
// The whole tree ends at the timeout, when ctx ends, at Kill, or when the
// calling process dies. While a handle runs, other runs in the same
// workspace wait for it.
func Start(ctx context.Context, line *shell.Line, p Profile, stdout, stderr io.Writer) (*Handle, error) {
	if err := checkInit(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if line == nil || len(line.Pipelines) == 0 {
		return nil, refuse(Denied, "an empty plan")
	}
	if err := ctx.Err(); err != nil {
		return nil, cancelledBefore(ctx)
	}
	rung, note, err := chooseRung(ctx, p)
	if err != nil {
		return nil, err
	}
	if why := poisonedWhy(rung, p.Workspace); why != "" && p.Network != NetworkOff {
		return nil, refuse(Unavailable, "network %s is refused to the %s sandbox of %s for the rest of this process: it lost track of a process earlier (%s)", p.Network, rung, p.Workspace, why)
	}
	r, err := start(ctx, line, p, rung, false, stdout, stderr)
	if err != nil {
		return nil, err
	}
	r.note = note
	return r.handle(), nil
}

// Rung is the rung the run is on.
func (h *Handle) Rung() Rung { return h.rung }

// Done is closed when the run has ended and its result is ready.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Wait waits for the run to end and returns its result.
func (h *Handle) Wait() *Result {
	<-h.done
	return h.res
}

// Kill ends the run and its whole process tree; Wait then reports it
// cancelled.
func (h *Handle) Kill() { h.kill(Cancelled) }

func (p *Profile) validate() error {
	ceiling := MaxTimeout
	if p.Session != nil {
		ceiling = MaxSessionTimeout
	}
	switch {
	case p.Timeout == 0:
		p.Timeout = DefaultTimeout
	case p.Timeout < 0:
		return refuse(Denied, "timeout %s is negative", p.Timeout)
	case p.Timeout > ceiling:
		return refuse(Denied, "timeout %s is above the %s ceiling", p.Timeout, ceiling)
	}
	if s := p.Session; s != nil {
		if p.Rung == "" || p.Rung == RungAuto {
			p.Rung = RungBwrap
		}
		if p.Rung != RungBwrap {
			return refuse(Unavailable, "a session runs only on the bwrap rung (its own pid namespace ends its whole tree), not on %q", p.Rung)
		}
		if p.SpoolDir != "" {
			return refuse(Denied, "a session's streams are its caller's: it has no spool")
		}
		for rel, host := range s.HomeFiles {
			if !filepath.IsAbs(host) || filepath.Clean(host) != host {
				return refuse(InvalidPath, "home file %s: %q is not a clean absolute path", rel, host)
			}
			if rel == "" || filepath.IsAbs(rel) || filepath.Clean(rel) != rel || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				return refuse(InvalidPath, "home file %q is not a clean path inside the home directory", rel)
			}
			if within(host, p.Workspace) || within(p.Workspace, host) {
				return refuse(InvalidPath, "home file %s overlaps the workspace", host)
			}
			if _, err := os.Stat(host); err != nil {
				return refuse(NotFound, "home file %s: %v", rel, err)
			}
		}
		seen := map[uint16]bool{sandboxProxyPort: true}
		for _, svc := range s.Services {
			if svc.Port == 0 || seen[svc.Port] || svc.Serve == nil {
				return refuse(Denied, "service port %d: a port of its own (not 0, not %d, not twice) with a server", svc.Port, sandboxProxyPort)
			}
			seen[svc.Port] = true
		}
		if len(s.Services) > 0 && p.Network == NetworkFull {
			return refuse(Denied, "a session's services need a network namespace holding only loopback (network off or proxy), not full")
		}
	}
	if err := validateLimits(p.Limits); err != nil {
		return err
	}
	switch p.Rung {
	case "":
		p.Rung = RungAuto
	case RungAuto, RungBwrap, RungLandlock, RungNone:
	default:
		return refuse(Denied, "unknown rung %q: use auto, bwrap, landlock or none", p.Rung)
	}
	switch p.Network {
	case "":
		p.Network = NetworkOff
	case NetworkOff, NetworkFull:
	case NetworkProxy:
		if p.Egress == nil {
			return refuse(Denied, "network proxy needs an egress policy to decide each connection")
		}
	default:
		return refuse(Denied, "unknown network mode %q: use off, proxy or full", p.Network)
	}
	if p.Network != NetworkOff && p.Rung == RungNone {
		return refuse(Denied, "the none rung confines nothing, the network included: network %s needs the bwrap or landlock rung", p.Network)
	}
	if p.Network == NetworkFull && p.Rung == RungLandlock {
		return refuse(Unavailable, "network full needs a network namespace of the sandbox's own, which only the bwrap rung has")
	}
	if !filepath.IsAbs(p.Workspace) || filepath.Clean(p.Workspace) != p.Workspace {
		return refuse(InvalidPath, "workspace %q is not a clean absolute path", p.Workspace)
	}
	if real, err := filepath.EvalSymlinks(p.Workspace); err != nil {
		return refuse(NotFound, "workspace %s: %v", p.Workspace, err)
	} else if real != p.Workspace {
		return refuse(InvalidPath, "workspace %s has a symbolic link in it (it is %s)", p.Workspace, real)
	}
	if fi, err := os.Stat(p.Workspace); err != nil || !fi.IsDir() {
		return refuse(NotFound, "workspace %s is not a directory", p.Workspace)
	}
	if p.Workspace == "/" {
		return refuse(InvalidPath, "the workspace cannot be /")
	}
	if p.Dir != "" && !within(p.Dir, p.Workspace) {
		return refuse(InvalidPath, "directory %q is not inside the workspace", p.Dir)
	}
	state := CacheDir()
	for _, h := range p.HostReadPaths {
		if !filepath.IsAbs(h) || filepath.Clean(h) != h {
			return refuse(InvalidPath, "host read path %q is not a clean absolute path", h)
		}
		if real, err := filepath.EvalSymlinks(h); err == nil && (within(real, state) || within(state, real)) {
			// Every workspace's caches, results and scratch directories.
			return refuse(Denied, "host read path %s overlaps rein's state directory %s", h, state)
		}
		if _, err := os.Stat(h); err != nil {
			return refuse(NotFound, "host read path %s: %v", h, err)
		}
	}
	for _, h := range p.HostWritePaths {
		if !filepath.IsAbs(h) || filepath.Clean(h) != h || !slices.ContainsFunc(p.HostReadPaths, func(r string) bool { return within(h, r) }) {
			return refuse(InvalidPath, "host write path %q is not a clean absolute path inside a host read path", h)
		}
		if fi, err := os.Lstat(h); err != nil || !fi.IsDir() {
			return refuse(NotFound, "host write path %s is not a directory", h)
		}
		// A link anywhere on the way would be followed by the mount and
		// the grant: the directory written must be the one named.
		if real, err := filepath.EvalSymlinks(h); err != nil || real != h {
			return refuse(InvalidPath, "host write path %s leads elsewhere (%s) through a symbolic link", h, real)
		}
		if within(p.Workspace, h) || within(h, p.Workspace) {
			return refuse(InvalidPath, "host write path %s overlaps the workspace", h)
		}
	}
	if c := p.Caches; c != nil {
		if err := checkCacheSet(c, p.Workspace); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for _, h := range p.HostCaches {
		switch {
		case !filepath.IsAbs(h.Path) || filepath.Clean(h.Path) != h.Path:
			return refuse(InvalidPath, "host cache %q is not a clean absolute path", h.Path)
		case h.Name == "" || strings.ContainsAny(h.Name, "/\x00") || h.Name == "." || h.Name == ".." || names[h.Name]:
			return refuse(Denied, "host cache %s: the name %q is empty, not one path element or used twice", h.Path, h.Name)
		case h.Env == "" || strings.ContainsAny(h.Env, "=\x00"):
			return refuse(Denied, "host cache %s: %q is not a variable name", h.Path, h.Env)
		case within(h.Path, p.Workspace) || within(p.Workspace, h.Path):
			return refuse(InvalidPath, "host cache %s overlaps the workspace", h.Path)
		case within(h.Path, state) || within(state, h.Path):
			return refuse(Denied, "host cache %s overlaps rein's state directory %s", h.Path, state)
		}
		if fi, err := os.Stat(h.Path); err != nil || !fi.IsDir() {
			return refuse(NotFound, "host cache %s is not a directory", h.Path)
		}
		names[h.Name] = true
	}
	if p.SpoolDir != "" {
		if !filepath.IsAbs(p.SpoolDir) {
			return refuse(InvalidPath, "spool directory %q is not absolute", p.SpoolDir)
		}
		if real, err := filepath.EvalSymlinks(p.SpoolDir); err != nil {
			return refuse(NotFound, "spool directory %s: %v", p.SpoolDir, err)
		} else if within(real, p.Workspace) {
			return refuse(InvalidPath, "spool directory %s is inside the workspace, where the command could replace its files", p.SpoolDir)
		}
	}
	return nil
}

// within reports whether p is dir or beneath it.
// checkCacheSet refuses a run's own caches that are not clean absolute
// directories, or that overlap the workspace.
func checkCacheSet(c *CacheSet, ws string) error {
	type dir struct{ what, path string }
	var dirs []dir
	switch {
	case c.Fresh && c.Dir != "":
		return refuse(InvalidPath, "the run's caches are both fresh and %s", c.Dir)
	case !c.Fresh:
		dirs = append(dirs, dir{"caches", c.Dir})
	}
	for _, g := range c.GoSeeds {
		dirs = append(dirs, dir{"Go build seed", g})
	}
	for _, m := range c.GoModules {
		dirs = append(dirs, dir{"Go module cache", m})
	}
	if c.GoUsed != "" && (!filepath.IsAbs(c.GoUsed) || filepath.Clean(c.GoUsed) != c.GoUsed) {
		return refuse(InvalidPath, "the run's list of Go actions %q is not a clean absolute path", c.GoUsed)
	}
	for _, d := range dirs {
		switch {
		case !filepath.IsAbs(d.path) || filepath.Clean(d.path) != d.path:
			return refuse(InvalidPath, "the run's %s %q is not a clean absolute path", d.what, d.path)
		case within(d.path, ws) || within(ws, d.path):
			return refuse(InvalidPath, "the run's %s %s overlaps the workspace", d.what, d.path)
		}
		if fi, err := os.Stat(d.path); err != nil || !fi.IsDir() {
			return refuse(NotFound, "the run's %s %s is not a directory", d.what, d.path)
		}
	}
	return nil
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// ChooseRung is the rung a run under p would take here, after the same
// preflight a run makes (cached), with why auto did not take a stronger
// one; or why none can run.
func ChooseRung(ctx context.Context, p Profile) (rung Rung, note string, err error) {
	if err := checkPlatform(); err != nil {
		return "", "", err
	}
	if err := p.validate(); err != nil {
		return "", "", err
	}
	return chooseRung(ctx, p)
}

// chooseRung picks the rung p asks for, preflighted. Auto takes bwrap,
// then landlock; none is taken only by name.
func chooseRung(ctx context.Context, p Profile) (rung Rung, note string, err error) {
	switch p.Rung {
	case RungNone:
		return RungNone, "", nil
	case RungBwrap, RungLandlock:
		if pf := preflightFor(ctx, p.Rung, p.Network, p.Workspace); !pf.OK {
			return "", "", refuse(Unavailable, "the %s rung cannot run here: %s", p.Rung, pf.Problem)
		}
		return p.Rung, "", nil
	}
	var why []string
	for _, r := range []Rung{RungBwrap, RungLandlock} {
		if r == RungLandlock && p.Network == NetworkFull {
			why = append(why, "landlock: network full needs a network namespace of the sandbox's own")
			break
		}
		pf := preflightFor(ctx, r, p.Network, p.Workspace)
		if pf.OK {
			return r, strings.Join(why, "; "), nil
		}
		why = append(why, string(r)+": "+pf.Problem)
	}
	return "", "", refuse(Unavailable, "no rung can run here (%s); rein doctor says how to fix them", strings.Join(why, "; "))
}

// poisoned holds the (rung, workspace) pairs whose containment failed in
// this process, with the reason.
var poisoned sync.Map

// poisonedWhy reports why the sandbox of rung and workspace lost track of a
// process in this process's lifetime, or "" when it never did. A poisoned
// sandbox is refused network work for the rest of the process's life.
func poisonedWhy(rung Rung, workspace string) string {
	if v, ok := poisoned.Load(string(rung) + "\x00" + workspace); ok {
		return v.(string)
	}
	return ""
}

func poison(rung Rung, workspace, reason string) {
	poisoned.LoadOrStore(string(rung)+"\x00"+workspace, reason)
}

// ErrNoInit is the cause of every refusal to run in a program that has not
// called Main: the sandbox's init is this program started again, and
// without Main it would run the program's own main instead (which may
// start a sandbox again, and again).
var ErrNoInit = errors.New("this program cannot serve as rein's sandbox init: call sandbox.Main() first thing in its main function, before flags are parsed or anything else runs")

// ErrUnsupported is the cause of every refusal to run on a system other
// than Linux: the mechanisms the rungs confine with (bubblewrap's
// namespaces, Landlock, seccomp, cgroups) are Linux's, and rein does not
// run a plan unconfined unless asked to. The shell grammar, the policy,
// the workspace boundary and the file tools work everywhere.
var ErrUnsupported = errors.New("rein's sandbox needs Linux (bubblewrap or Landlock)")

// checkPlatform refuses on a system without the mechanisms; on Linux,
// the preflight says whether this host has them.
func checkPlatform() error { return platformError(runtime.GOOS, runtime.GOARCH) }

// platformError is the refusal of every run on goos/goarch, or nil on
// Linux.
func platformError(goos, goarch string) error {
	if goos == "linux" {
		return nil
	}
	return &Error{Status: Unavailable, Reason: unsupportedOn(goos, goarch), Err: ErrUnsupported}
}

// unsupportedOn says why nothing runs on goos/goarch and what to do.
func unsupportedOn(goos, goarch string) string {
	return fmt.Sprintf("%v; this is %s/%s: run rein on a Linux host or in a Linux virtual machine", ErrUnsupported, goos, goarch)
}

// mainCalled is set by Main in a program that is not an init.
var mainCalled atomic.Bool

// checkInit refuses, before anything is started again, in a program that
// has not called Main and has chosen no other init (UseInit).
func checkInit() error {
	if err := checkPlatform(); err != nil {
		return err
	}
	if !mainCalled.Load() && initProgram.Load() == nil {
		return &Error{Status: Unavailable, Reason: ErrNoInit.Error(), Err: ErrNoInit}
	}
	return nil
}
