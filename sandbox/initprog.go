//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// initProtocol is bumped when what the init does with a request changes
// without its types changing, so that an init of another build refuses.
const initProtocol = 1

// initProgram is the program started as the sandbox's init, when one was
// chosen with UseInit; this program's own binary otherwise.
var initProgram atomic.Pointer[string]

// UseInit makes the program at path the sandbox's init for every run,
// warm sandbox and session started from now on, instead of this
// program's own binary. It is meant for a small program built from
// cmd/rein-init (any main that calls Main first and nothing else would
// do): it starts in a fraction of the time a large program takes, which a
// cold run pays once per call. rein's own CLI uses the rein-init found
// beside its binary.
//
// The program must be of the same build of rein as this one: each init
// checks, before it reads its request, that its request, plan and report
// types are this program's, and otherwise refuses with exit status 125,
// naming both. Because it runs with the sandbox's authority, path must be
// an absolute path to an executable regular file owned by root or by this
// user and writable by nobody else, below directories none of which
// anyone else can write (unless sticky); anything else is refused. The
// file path leads to when UseInit is called is the one started, not
// whatever a link on the way leads to later. An empty path goes back to this
// program's own binary.
func UseInit(path string) error {
	if path == "" {
		initProgram.Store(nil)
		return nil
	}
	real, err := trustedInit(path)
	if err != nil {
		return err
	}
	// The file the checks were made on, not path: a link on the way to
	// it may be in a directory others can write, and be swapped.
	initProgram.Store(&real)
	return nil
}

// trustedInit is the file path leads to, or why it cannot be the
// sandbox's init. The file and every directory above it must be out of
// others' reach: a directory they can write (one not sticky) lets them
// rename what is below it away and put their own in its place.
func trustedInit(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("sandbox init %q: not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("sandbox init: %w", err)
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := trustedInitPart(real, p); err != nil {
			return "", err
		}
		if p == filepath.Dir(p) {
			return real, nil
		}
	}
}

// trustedInitPart says why p, the init real or a directory above it,
// makes real untrustworthy, or nil.
func trustedInitPart(real, p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	// A sticky directory (/tmp) lets no one else rename what is not
	// theirs; the bit on a file means nothing of the kind.
	sticky := fi.IsDir() && fi.Mode()&os.ModeSticky != 0
	switch {
	case !ok:
		return fmt.Errorf("sandbox init %s: its owner cannot be read", p)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("sandbox init %s: owned by uid %d, neither root nor this user", p, st.Uid)
	case fi.Mode().Perm()&0o022 != 0 && !sticky:
		return fmt.Errorf("sandbox init %s: writable by others (mode %v)", p, fi.Mode().Perm())
	case p == real && !fi.Mode().IsRegular():
		return fmt.Errorf("sandbox init %s: not a regular file", p)
	case p == real && fi.Mode().Perm()&0o100 == 0:
		return fmt.Errorf("sandbox init %s: not executable", p)
	}
	return nil
}

// initExe is the program to start as the init.
func initExe() (string, error) {
	if p := initProgram.Load(); p != nil {
		return *p, nil
	}
	return os.Executable()
}

// wireFingerprint names the shape of what the outer process and the init
// exchange: the request, the warm plan and the report, field by field and
// type by type, with initProtocol. Two builds agree on it only if gob and
// JSON carry the same fields between them, so an init that would drop a
// field it does not know (a confinement it would not apply) refuses.
var wireFingerprint = sync.OnceValue(func() string {
	var b strings.Builder
	fmt.Fprintf(&b, "protocol %d\n", initProtocol)
	seen := map[reflect.Type]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[request](), reflect.TypeFor[warmPlan](), reflect.TypeFor[report]()} {
		describeType(&b, t, seen)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:12])
})

// describeType writes t's shape, and that of every named type it holds,
// once each.
func describeType(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var inner []reflect.Type
	fmt.Fprintf(b, "%s.%s %s", t.PkgPath(), t.Name(), t.Kind())
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(b, " %s:%s:%q", f.Name, f.Type.String(), f.Tag)
			inner = append(inner, f.Type)
		}
	case reflect.Pointer, reflect.Slice, reflect.Array:
		inner = append(inner, t.Elem())
	case reflect.Map:
		inner = append(inner, t.Key(), t.Elem())
	}
	b.WriteString("\n")
	for _, it := range inner {
		describeType(b, it, seen)
	}
}
