package tool

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/sandbox"
)

type (
	ownCachesKey struct{}
	gateGrantKey struct{}
	grantedKey   struct{}
)

// GateGrant makes the shell call made with ctx whose line is line
// exactly allowed where the policy would ask: a line rein derives from a
// run's gate, which the policy allows outright (the gate with -json
// added, the build of the standard packages the gate's caches hold), is
// covered by the gate's grant. A deny stays a deny, and opaque code is
// never granted.
func GateGrant(ctx context.Context, line string) context.Context {
	return context.WithValue(ctx, gateGrantKey{}, line)
}

// OwnCaches makes the commands of the calls made with ctx use the
// toolchain caches of cs in place of the workspace's, which every command
// of every run may write: an agent's gate reads no cache that the run it
// checks could have written.
func OwnCaches(ctx context.Context, cs *sandbox.CacheSet) context.Context {
	return context.WithValue(ctx, ownCachesKey{}, cs)
}

// GateCaches are the toolchain caches of one run's gate, kept in rein's
// state directory, which no command of the run sees:
//
//   - the Go standard library's, shared by every run of this user: built
//     by StdBuild's command alone (go build of standard packages, which
//     runs no code of the workspace), read-only to everything else;
//   - the baseline's: the gate's run at the start, before the model's
//     first call, builds into caches of its own, made empty for it, over
//     the standard library's; what it writes comes from the workspace as
//     the run began;
//   - each later attempt's: empty when it starts, removed when it ends
//     (sandbox.CacheSet.Fresh), over the standard library's and the
//     baseline's Go build caches as read-only seeds, what the baseline
//     used laid out beforehand (sandbox.CacheSet.GoUsed), so that what the
//     model did not change is not built again, and nothing an earlier
//     attempt wrote (the model's code under test ran there) is read.
//
// Go modules come from the host's module download cache, then from the
// baseline's and the workspace's, through file:// proxies, and each is
// checked against the workspace's go.sum as it is extracted into the
// attempt's own module cache.
type GateCaches struct {
	dir, ws string
}

// NewGateCaches are the gate caches of the run id in the workspace ws.
func NewGateCaches(runID, ws string) *GateCaches {
	return &GateCaches{dir: filepath.Join(sandbox.CacheDir(), "gate", sandbox.WorkspaceKey(ws), safeName(runID)), ws: ws}
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (g *GateCaches) seed() string { return filepath.Join(g.dir, "baseline") }

// std is the base of the standard library's caches.
func std() string { return filepath.Join(sandbox.CacheDir(), "gate", "go-std") }

// StdBuild makes the calls made with the context it returns build into
// the standard library's shared caches: only for a go build of standard
// packages, which runs nothing of the workspace.
func (g *GateCaches) StdBuild(ctx context.Context) (context.Context, error) {
	if err := os.MkdirAll(std(), 0o700); err != nil {
		return nil, fmt.Errorf("making the standard library's caches: %w", err)
	}
	return OwnCaches(ctx, &sandbox.CacheSet{Dir: std()}), nil
}

// goSeeds are the Go build caches that exist of dirs' go-build.
func goSeeds(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if seed := filepath.Join(d, "go-build"); isDir(seed) {
			out = append(out, seed)
		}
	}
	return out
}

// EmptyBaseline makes the caches of the baseline's run empty.
func (g *GateCaches) EmptyBaseline() error {
	if err := RemoveTree(g.seed()); err != nil {
		return fmt.Errorf("emptying the gate's baseline caches: %w", err)
	}
	// The standard library's Go build cache is the baseline's seed even
	// while empty: it is made before the baseline's caches are named.
	for _, d := range []string{g.seed(), filepath.Join(std(), "go-build")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("making the gate's baseline caches: %w", err)
		}
	}
	return nil
}

// Baseline makes the calls made with the context it returns use the
// caches of the baseline's run (EmptyBaseline empties them).
func (g *GateCaches) Baseline(ctx context.Context) context.Context {
	return OwnCaches(ctx, &sandbox.CacheSet{Dir: g.seed(), GoSeeds: goSeeds(std()), GoModules: g.modules(false)})
}

// Attempt makes the calls made with the context it returns use the
// caches of one gate attempt; the function removes them once it has
// ended.
func (g *GateCaches) Attempt(ctx context.Context) (context.Context, func(), error) {
	cs, done, err := g.attempt()
	if err != nil {
		return nil, nil, err
	}
	return OwnCaches(ctx, cs), done, nil
}

func (g *GateCaches) attempt() (*sandbox.CacheSet, func(), error) {
	// Fresh: made empty in the command's own scratch directory, and gone
	// with it.
	cs := &sandbox.CacheSet{Fresh: true, GoSeeds: goSeeds(std(), g.seed()), GoModules: g.modules(true)}
	// What the baseline's go commands used is laid out in the attempt's
	// own Go build cache before its command starts, which then reads it
	// at native speed (sandbox.CacheSet.GoUsed). A seed the baseline did
	// not leave (a run resumed on another host, or a baseline that built
	// nothing) is none: the attempt builds all.
	if used := filepath.Join(g.seed(), "go-build", "rein-used"); len(cs.GoSeeds) > 0 && isFile(used) {
		cs.GoUsed = used
	}
	return cs, func() {}, nil
}

// modules are the module download caches a gate reads beyond the
// host's: the baseline's (after it), then the workspace's own.
func (g *GateCaches) modules(seeded bool) []string {
	var out []string
	if seeded {
		if d := filepath.Join(g.seed(), "go-mod", "cache", "download"); isDir(d) {
			out = append(out, d)
		}
	}
	if d := filepath.Join(sandbox.ToolchainCacheDir(g.ws), "go-mod", "cache", "download"); isDir(d) {
		out = append(out, d)
	}
	return out
}

// Remove removes every cache of the run's gate.
func (g *GateCaches) Remove() error { return RemoveTree(g.dir) }

func isFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// RemoveTree removes dir and everything in it, opening up first the
// directories a toolchain made read-only (Go's module cache is): each
// real directory, never what a link leads to.
func RemoveTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
