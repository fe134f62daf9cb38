package sandbox

// The types, constants and host-side paths of the API that every system
// compiles; the mechanisms behind them are Linux's (the files with a linux
// build tag), and elsewhere every run is refused (sandbox_other.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/limits"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// hostPATH is the PATH of a profile whose environment sets none.
const hostPATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

// Limits bound what a run may use: the one type the policy file's limits
// are read into and the sandbox enforces (limits.Limits).
type Limits = limits.Limits

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
	// bubblewrap and the threads of rein's init, which count as tasks,
	// with one more per stage of the line (the init waits for each on a
	// thread of its own): an init that cannot make a thread would die and
	// take the report with it.
	InitTasks = 16
	// DefaultProcesses is the process limit of a run that sets none,
	// applied where a cgroup can enforce it: enough for a parallel build,
	// too few for a fork bomb to starve the host.
	DefaultProcesses = 4096
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

func validateLimits(l Limits) error {
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

// LimitSupport is how this host would enforce one limit, or why it
// cannot.
type LimitSupport struct {
	Limit     string
	Mechanism string
	// Problem says why the limit cannot be enforced here, with the fix;
	// a run that asks for it is refused.
	Problem string
}

// Network is what a run may reach: NetworkOff, NetworkProxy or
// NetworkFull.
type Network string

// The network modes of a Profile.
const (
	// NetworkOff reaches nothing: an empty network namespace on the bwrap
	// rung; Landlock and seccomp refusing every inet socket on the
	// landlock rung.
	NetworkOff Network = "off"
	// NetworkProxy reaches what Profile.Egress allows, through rein's
	// egress proxy and nothing else.
	NetworkProxy Network = "proxy"
	// NetworkFull reaches what the host reaches but its loopback, through
	// user-mode networking (slirp4netns) attached to the sandbox's own
	// network namespace: the bwrap rung only.
	NetworkFull Network = "full"
)

// PreflightResult says whether a rung can run in a workspace on this host,
// as a real minimal run found, and if not, why and what to do.
type PreflightResult struct {
	Rung Rung `json:"rung"`
	OK   bool `json:"ok"`
	// Problem and Fix say why the rung cannot run and what would let it.
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Terminal failures (the mechanism is absent, cannot be executed or
	// is refused by the kernel) are remembered, so that a broken host is
	// not probed on every call.
	Terminal bool      `json:"terminal,omitempty"`
	At       time.Time `json:"at"`
	// Key identifies what the result was found for: the rung, the
	// workspace, rein's binary, bubblewrap's, the kernel and the user.
	Key string `json:"key"`
}

// StateDir is rein's state directory name (under CacheDir), made if
// missing and checked as runs check theirs: for callers that keep run
// artefacts (spooled output, result stores) outside the workspace.
func StateDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00"+string(filepath.Separator)) || name == "." || name == ".." {
		return "", refuse(InvalidPath, "state directory name %q", name)
	}
	return stateDir(name)
}

// stateDir is the rein-owned directory runs keep their scratch
// directories and locks in: under CacheDir, never a directory others can
// write (a shared /tmp would let any user plant the state a later run
// trusts), and refused unless it is a real directory of this user's that
// nobody else may write.
func stateDir(name string) (string, error) {
	d := filepath.Join(CacheDir(), name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", refuse(Unavailable, "making rein's state directory: %v", err)
	}
	if err := privateDir(d); err != nil {
		return "", err
	}
	return d, nil
}

// cacheDirSet is the directory SetCacheDir chose; nil or "" for none.
var cacheDirSet atomic.Pointer[string]

// SetCacheDir sets, for this process, the directory rein keeps its
// host-side state in (CacheDir): the library's way to choose it, where
// the rein command reads REIN_CACHE_DIR. dir must be absolute; "" undoes
// the choice. It is the process's, like the state it names (the locks,
// leases and warm sandboxes of a workspace are shared by every process
// that uses one directory): set it once, before the first run. What it
// holds must stay outside every workspace rein runs commands in, which
// the sandbox checks.
func SetCacheDir(dir string) error {
	if dir != "" && !filepath.IsAbs(dir) {
		return refuse(InvalidPath, "rein's cache directory %q is not an absolute path", dir)
	}
	if dir != "" {
		dir = filepath.Clean(dir)
	}
	cacheDirSet.Store(&dir)
	return nil
}

// CacheDir is the directory rein keeps its host-side state in: preflight
// results, the toolchain caches of each workspace, the state directories
// (StateDir). In order: the directory SetCacheDir set; else the absolute
// path REIN_CACHE_DIR names (the rein command's way, a relative one is
// ignored); else rein/ under the user's cache directory
// (os.UserCacheDir, ~/.cache/rein); else rein-cache-UID in the
// temporary directory.
func CacheDir() string {
	if d := cacheDirSet.Load(); d != nil && *d != "" {
		return *d
	}
	if d := os.Getenv("REIN_CACHE_DIR"); d != "" && filepath.IsAbs(d) {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "rein")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("rein-cache-%d", os.Getuid()))
}

// WorkspaceKey names a workspace in rein's state directories (its locks,
// caches and trace store): a hash of its path.
func WorkspaceKey(ws string) string { return workspaceKey(ws) }

func workspaceKey(ws string) string {
	sum := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(sum[:12])
}

// ToolchainCacheDir is the host directory that holds the workspace's
// per-workspace toolchain caches, one directory per cache name; the bwrap
// rung mounts it at /var/cache/rein.
func ToolchainCacheDir(ws string) string {
	return filepath.Join(CacheDir(), "toolchain", workspaceKey(ws))
}

// systemDirs are the host's system directories that exist here.
func systemDirs() []string {
	var out []string
	for _, d := range bwrap.DefaultSystemDirs {
		if _, err := os.Lstat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// KeyPath is the user's trace key, which keys the trace's hash chain and
// seals the sandbox's shared session state: REIN_TRACE_KEY when set, else
// trace.key in rein's state directory.
func KeyPath() (string, error) {
	if p := os.Getenv("REIN_TRACE_KEY"); p != "" {
		if !filepath.IsAbs(p) {
			return "", refuse(InvalidPath, "REIN_TRACE_KEY %q is not an absolute path", p)
		}
		return filepath.Clean(p), nil
	}
	dir, err := stateDir("keys")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "trace.key"), nil
}

// Worktree is one git worktree rein made for a workspace.
type Worktree struct {
	// Name is rein's name for it, the name of its directory.
	Name string `json:"name"`
	// Admin is the name of its administrative directory under the
	// workspace's .git/worktrees (git's choice: Name, or Name with a
	// number when that was taken).
	Admin string `json:"admin"`
	// Path is where it is checked out (WorktreeDir's Name).
	Path string `json:"path"`
	// Branch is the branch it was made on.
	Branch string `json:"branch"`
	// Run is the run that made it, when one did.
	Run  string    `json:"run,omitempty"`
	Made time.Time `json:"made"`
}
