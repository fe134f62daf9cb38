//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/reinhq/rein/shell"
)

// Elsewhere than on Linux the sandbox has no mechanism to confine with:
// every run, start, preflight and pool refuses with ErrUnsupported, and
// nothing is started. The rest of the package (the types, the program
// lookup, the state directories) works, so that callers compile and
// report the refusal.

// unsupported is the refusal of every run on this system.
var unsupported = unsupportedOn(runtime.GOOS, runtime.GOARCH)

// Main returns at once: there is no init to run on this system.
func Main() { mainCalled.Store(true) }

// initProgram stays nil: there is no init to choose here.
var initProgram atomic.Pointer[string]

// UseInit refuses: see ErrUnsupported.
func UseInit(string) error { return checkPlatform() }

func start(context.Context, *shell.Line, Profile, Rung, bool, io.Writer, io.Writer) (*run, error) {
	return nil, checkPlatform()
}

// run stands for the Linux run state, which start never makes here.
type run struct{ note string }

func (r *run) handle() *Handle { return nil }

func preflightFor(_ context.Context, rung Rung, _ Network, _ string) PreflightResult {
	return Preflight(context.Background(), rung, "", false)
}

// Preflight reports that no rung can run on this system.
func Preflight(_ context.Context, rung Rung, _ string, _ bool) PreflightResult {
	return PreflightResult{Rung: rung, Problem: unsupported, Fix: "run rein on a Linux host (5.13 or later, with bubblewrap for the bwrap rung)", Terminal: true}
}

// PreflightFull reports that no rung can run on this system.
func PreflightFull(ctx context.Context, workspace string, fresh bool) PreflightResult {
	return Preflight(ctx, RungBwrap, workspace, fresh)
}

// ProbeLimits reports every limit unenforceable on this system.
func ProbeLimits() []LimitSupport {
	var out []LimitSupport
	for _, l := range []string{LimitMemory, LimitProcesses, LimitCPU, LimitOpenFiles, LimitFileSize, LimitTmp} {
		out = append(out, LimitSupport{Limit: l, Problem: unsupported})
	}
	return out
}

// SlirpPath fails: user-mode networking is for the bwrap rung's network
// namespace.
func SlirpPath() (string, error) {
	return "", fmt.Errorf("slirp4netns: %w", ErrUnsupported)
}

// Pool would keep sandboxes warm; on this system it refuses every run.
type Pool struct{}

// NewPool makes a pool that refuses every run on this system.
func NewPool() *Pool { return &Pool{} }

// Start refuses: see ErrUnsupported.
func (pl *Pool) Start(context.Context, *shell.Line, Profile, io.Writer, io.Writer) (*Handle, error) {
	return nil, checkPlatform()
}

// Run refuses: see ErrUnsupported.
func (pl *Pool) Run(context.Context, *shell.Line, Profile, io.Writer, io.Writer) (*Result, error) {
	return nil, checkPlatform()
}

// Close does nothing: a pool here holds nothing.
func (pl *Pool) Close() {}

// Warm is zero: no sandbox waits here.
func (pl *Pool) Warm() int { return 0 }

// WorktreeDir refuses: see ErrUnsupported.
func WorktreeDir(string) (string, error) { return "", checkPlatform() }

// WorktreePath refuses: see ErrUnsupported.
func WorktreePath(string, string) (string, error) { return "", checkPlatform() }

// Worktrees refuses: see ErrUnsupported.
func Worktrees(string) ([]Worktree, error) { return nil, checkPlatform() }

// WithWorktrees refuses: see ErrUnsupported.
func WithWorktrees(context.Context, string, func([]Worktree) ([]Worktree, error)) error {
	return checkPlatform()
}
