package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// tampered fails the attempt as tampered when the protected files differ
// from the run's start, and puts them back.
func (d *driver) tampered(a *GateAttempt) bool {
	now, err := hashProtected(d.c.Workspace, d.c.Protect, false)
	if err != nil {
		a.Status, a.Output = GateErrored, err.Error()
		return true
	}
	changed := diffHashes(d.baseline, now)
	if len(changed) == 0 {
		return false
	}
	a.Status, a.Tampered = GateTampered, changed
	a.Output = "these protected files differ from the run's start, changed by a program the policy could not see into: " + strings.Join(changed, ", ") + "; rein put them back as they were"
	if err := restoreProtected(d.c.Workspace, d.c.Protect, d.baseline, now); err != nil {
		a.Output += fmt.Sprintf(" (not all: %v)", err)
	}
	return true
}

// protectedFile is a protected file as the run began: its hash and its
// bytes, to put back.
type protectedFile struct {
	hash string
	data []byte
}

// maxProtectedBytes bounds the protected files a run keeps a copy of,
// and maxProtectedFile each of them.
const (
	maxProtectedBytes = 64 << 20
	maxProtectedFile  = 16 << 20
)

// readBounded reads the file at p of root, at most limit bytes (more is an
// error: the file grew since it was looked at).
func readBounded(root *os.Root, p string, limit int64) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("more than %d bytes", limit)
	}
	return data, err
}

// hashProtected hashes (and, with keep, copies) every entry of ws a
// protect glob matches; with keep (at the run's start) a glob that
// matches nothing is refused, since it would protect nothing.
func hashProtected(ws string, globs []string, keep bool) (map[string]protectedFile, error) {
	out := map[string]protectedFile{}
	if len(globs) == 0 {
		return out, nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("agent: opening the workspace: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	total := 0
	for _, g := range globs {
		if !doublestar.ValidatePattern(g) || strings.HasPrefix(g, "/") {
			return nil, fmt.Errorf("agent: contract: protect %q is not a pattern relative to the workspace", g)
		}
		n := 0
		err := doublestar.GlobWalk(fsys, g, func(p string, e fs.DirEntry) error {
			n++
			if !e.Type().IsRegular() {
				// A link or a directory where a protected file was is a
				// change too.
				out[p] = protectedFile{hash: "not a file: " + e.Type().String()}
				return nil
			}
			info, err := e.Info()
			switch {
			case err != nil:
				out[p] = protectedFile{hash: "unreadable: " + err.Error()}
				return nil
			case info.Size() > maxProtectedFile:
				// Never read whole: a file this size is no test of the
				// run's, and reading it could exhaust memory.
				if keep {
					return fmt.Errorf("%s is %d bytes, more than a protected file may be (%d MiB)", p, info.Size(), maxProtectedFile>>20)
				}
				out[p] = protectedFile{hash: fmt.Sprintf("too large: %d bytes", info.Size())}
				return nil
			}
			data, err := readBounded(root, p, maxProtectedFile)
			if err != nil {
				// Unreadable now is changed: it is put back.
				out[p] = protectedFile{hash: "unreadable: " + err.Error()}
				return nil
			}
			sum := sha256.Sum256(data)
			f := protectedFile{hash: hex.EncodeToString(sum[:])}
			if keep {
				if total += len(data); total > maxProtectedBytes {
					return fmt.Errorf("the protected files pass %d MiB, more than a run keeps a copy of", maxProtectedBytes>>20)
				}
				f.data = data
			}
			out[p] = f
			return nil
		}, doublestar.WithNoFollow())
		if err != nil {
			return nil, fmt.Errorf("agent: hashing what protect %q matches: %w", g, err)
		}
		if n == 0 && keep {
			return nil, fmt.Errorf("agent: contract: protect %q matches no file in %s", g, ws)
		}
	}
	return out, nil
}

// restoreProtected puts the protected files back as the run began, never
// through a link: what replaced one (a link, a directory) is removed
// first, and protected files that appeared since are removed. It writes
// and removes only paths of the workspace that a protect glob matches,
// under directories that are not links.
func restoreProtected(ws string, globs []string, base, now map[string]protectedFile) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, p := range diffHashes(base, now) {
		if err := protectable(root, globs, p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := root.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if f, ok := base[p]; ok {
			if f.data == nil && strings.HasPrefix(f.hash, "not a file") {
				errs = append(errs, fmt.Errorf("%s was not a file when the run began, and is not put back", p))
				continue
			}
			if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := root.WriteFile(p, f.data, 0o644); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// protectable refuses a path restoreProtected may not touch: one outside
// the workspace, one no protect glob matches, or one under a link.
func protectable(root *os.Root, globs []string, p string) error {
	if !filepath.IsLocal(p) || filepath.ToSlash(filepath.Clean(p)) != p {
		return fmt.Errorf("%s is not a path inside the workspace: refused", p)
	}
	if !slices.ContainsFunc(globs, func(g string) bool { ok, _ := doublestar.Match(g, p); return ok }) {
		return fmt.Errorf("%s is matched by no protect glob of the contract: refused", p)
	}
	for dir := filepath.Dir(p); dir != "."; dir = filepath.Dir(dir) {
		fi, err := root.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is under %s, which is not a directory (a link, or a file): refused", p, dir)
		}
	}
	return nil
}

// diffHashes lists the paths whose hash changed, appeared or went.
func diffHashes(a, b map[string]protectedFile) []string {
	return changedKeys(a, b, func(x, y protectedFile) bool { return x.hash == y.hash })
}

// changedKeys lists, sorted, the keys whose value differs in a and b
// (by same), or that one of them lacks.
func changedKeys[V any](a, b map[string]V, same func(x, y V) bool) []string {
	var out []string
	for p, h := range a {
		if g, ok := b[p]; !ok || !same(g, h) {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
