// Package workspace owns the boundary between what an agent may touch and
// the rest of the machine: the workspace roots and the physical resolution
// of the paths an agent names.
//
// It must not import any other rein package; the decision layer (policy) and
// the execution layer (sandbox) both build on it.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel's own limit (40) does, so a link loop is an error and not a hang.
const maxLinks = 40

// ErrLinkLoop is returned when resolving a path follows too many symlinks.
var ErrLinkLoop = errors.New("too many levels of symbolic links")

// Physical returns the absolute path that p reaches on disk when p is
// interpreted relative to dir: every existing component is resolved through
// its symlinks, and so is a final component that is itself a link, whether
// its target exists or not (a write through a dangling link creates the
// target). Components past the first missing one are joined lexically: no
// link can hide in a directory that does not exist.
//
// The result says where an operation would land at the time of the call;
// it does not make the operation safe against a link swapped afterwards.
func Physical(dir, p string) (string, error) {
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("workspace: resolving %q: base directory %q is not absolute", p, dir)
		}
		p = dir + "/" + p
	}
	links := 0
	return walk("/", p, &links)
}

// PhysicalIn is Physical for a base directory that is already physical
// (a result of Physical, or of filepath.EvalSymlinks): a relative p is
// resolved from dir without resolving dir again, which saves a system call
// per component of dir on every path of a line.
func PhysicalIn(dir, p string) (string, error) {
	if filepath.IsAbs(p) {
		return Physical(dir, p)
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("workspace: resolving %q: base directory %q is not absolute", p, dir)
	}
	links := 0
	return walk(filepath.Clean(dir), p, &links)
}

// walk resolves the components of rel (absolute or relative) onto base,
// which is already physical.
func walk(base, rel string, links *int) (string, error) {
	if strings.HasPrefix(rel, "/") {
		base = "/"
	}
	cur := base
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing past here exists (or can be seen): the rest is lexical.
			return filepath.Join(append([]string{cur}, parts[i:]...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("workspace: resolving %q: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		*links++
		if *links > maxLinks {
			return "", fmt.Errorf("workspace: resolving %q: %w", next, ErrLinkLoop)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("workspace: reading link %q: %w", next, err)
		}
		cur, err = walk(cur, target, links)
		if err != nil {
			return "", err
		}
	}
	return cur, nil
}

// Within reports whether the physical path p is root or lies under it.
// Both must be clean absolute paths.
func Within(root, p string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
