//go:build unix

package launch

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// SystemPath reports whether dir is inside the system directories every
// sandbox shows.
func SystemPath(dir string) bool {
	for _, s := range bwrap.DefaultSystemDirs {
		if dir == s || strings.HasPrefix(dir, s+"/") {
			return true
		}
	}
	return false
}

// MaxProgramDir bounds the entries of a program's directory rein vets: a
// package tree the size of Pi's (about 21,250 files, 0.73.1) and twice
// that, no more.
const MaxProgramDir = 50_000

// VetProgramDir says why the directory d of the session's program cannot
// be bound read-only into the session: it holds a home directory, rein's
// state or the workspace ws, or something the protected set forbids
// reading (a key, a .env), or more entries than rein lists to know.
func VetProgramDir(pol *policy.Policy, ws, d string) error {
	for _, held := range []string{pol.Home, "/home", "/root", sandbox.CacheDir(), ws} {
		if held != "" && (d == held || strings.HasPrefix(held, d+"/") || d == "/") {
			return fmt.Errorf("its directory %s holds %s", d, held)
		}
	}
	if a := pol.Protection(policy.ActRead, d, d); a != nil {
		return fmt.Errorf("its directory %s is protected (%s)", d, a.Rule)
	}
	if a := pol.ProtectedWithin(d); a != nil {
		return fmt.Errorf("its directory %s holds a protected path (%s)", d, a.Rule)
	}
	n := 0
	return filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("listing %s: %v", path, err)
		}
		if n++; n > MaxProgramDir {
			return fmt.Errorf("its directory %s holds more than %d entries", d, MaxProgramDir)
		}
		if a := pol.Protection(policy.ActRead, path, path); a != nil {
			return fmt.Errorf("its directory holds %s, which is protected (%s)", path, a.Rule)
		}
		return nil
	})
}
