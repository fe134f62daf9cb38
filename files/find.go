package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/workspace"
)

// FindFilesArgs are find_files' arguments.
type FindFilesArgs struct {
	// Pattern is a glob matched against each file's path relative to Path:
	// * and ? within one path component, ** across any number of them,
	// [abc] and {a,b} alternatives. Example: "**/*_test.go".
	Pattern string `json:"pattern" jsonschema:"a glob matched against each file's path relative to path: * and ? within one path component, ** across any number of them, such as **/*_test.go"`
	// Path is the directory to search under, relative to the first
	// workspace root or absolute inside a root; the default is the first
	// root.
	Path string `json:"path,omitempty" jsonschema:"the directory to search under, relative to the first workspace root or absolute inside a root; absent means the first root"`
}

// FindFilesResult is what find_files found.
type FindFilesResult struct {
	// Paths are the matching files, slash-separated, in walk order: each
	// directory's entries sorted by name, a directory's contents right
	// after it. They are relative to the first root (absolute under any
	// other root), so each can be passed back to another tool as it is.
	Paths []string `json:"paths"`
	// Truncated says more files matched than the entry limit let through.
	Truncated bool `json:"truncated"`
	// Unlisted are the directories that could not be listed (or were
	// deeper than the walk goes), so files in them may be missing.
	Unlisted []string `json:"unlisted,omitempty"`
}

// FindFiles lists the regular files under a.Path whose path relative to it
// matches the glob a.Pattern. The walk skips what git would not track (the
// rules of every .gitignore from the workspace root down, nested ones
// applying to their subtree) and .git directories, and it does not follow
// symbolic links: a link, to a file or a directory, is never listed or
// entered, so nothing outside the tree it walks can appear. At most
// Limits.MaxEntries paths come back, with Truncated set when there were more.
func (t *Tools) FindFiles(ctx context.Context, a FindFilesArgs) (*FindFilesResult, error) {
	lim := t.Limits.withDefaults()
	pattern := a.Pattern
	for strings.HasPrefix(pattern, "./") {
		pattern = strings.TrimLeft(pattern[2:], "/")
	}
	switch {
	case pattern == "":
		return nil, &Error{Kind: BadArgument, Message: `the pattern is empty: give a glob such as "**/*.go"`}
	case strings.HasPrefix(pattern, "/"):
		return nil, &Error{Kind: BadArgument, Message: fmt.Sprintf("the pattern %q is absolute: it is matched relative to path, so put the directory in path and the glob in pattern", a.Pattern)}
	case !doublestar.ValidatePattern(pattern):
		return nil, &Error{Kind: BadArgument, Message: fmt.Sprintf("the pattern %q is not a valid glob: check its brackets and braces, and escape a literal *, ?, [ or { with a backslash", a.Pattern)}
	}
	tg, err := t.resolveDir(a.Path)
	if err != nil {
		return nil, err
	}
	prune := newGlobPruner(pattern)
	res := &FindFilesResult{Paths: []string{}}
	err = t.walk(ctx, tg, walkVisitor{
		dir: func(sub string) bool { return prune.mayHold(sub) },
		file: func(f walkFile) bool {
			if !doublestar.MatchUnvalidated(pattern, f.sub) {
				return true
			}
			if len(res.Paths) == lim.MaxEntries {
				res.Truncated = true
				return false
			}
			res.Paths = append(res.Paths, t.display(tg.Root, f.rel))
			return true
		},
		unreadable: func(rel string) bool {
			if len(res.Unlisted) < lim.MaxEntries {
				res.Unlisted = append(res.Unlisted, t.display(tg.Root, rel))
			}
			return true
		},
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// resolveDir resolves p (the first root when empty) for reading and makes
// sure it is a directory that exists.
func (t *Tools) resolveDir(p string) (*workspace.Target, error) {
	if p == "" {
		p = "."
	}
	tg, err := t.resolve(Read, p)
	if err != nil {
		return nil, err
	}
	if !tg.Exists() {
		return nil, notFound(p)
	}
	if !tg.Info.IsDir() {
		return nil, &Error{Kind: WrongType, Path: p, Message: "not a directory: name the directory that holds it, or read it with read_file"}
	}
	return tg, nil
}

func notFound(p string) error {
	return &workspace.PathError{Kind: workspace.NotFound, Path: p, Reason: "nothing is there: list the parent directory with list_dir to see what is"}
}

// display is how a result names a file: relative to the first root, where
// relative paths start, and absolute under any other root, so that the
// agent can name it again.
func (t *Tools) display(root *workspace.Root, rel string) string {
	if roots := t.WS.Roots(); len(roots) > 0 && roots[0] == root {
		return rel
	}
	return path.Join(root.Path, rel)
}

// globPruner tells which directories can hold a match of a glob, so that a
// find for "cmd/*/main.go" does not walk the whole tree. It only looks at
// the components before the first **; a pattern with {alternatives} (which
// may hold a slash) is not pruned at all.
type globPruner struct {
	parts []string
}

func newGlobPruner(pattern string) globPruner {
	if strings.Contains(pattern, "{") {
		return globPruner{}
	}
	return globPruner{parts: strings.Split(pattern, "/")}
}

// mayHold reports whether the directory sub (relative to the walk's start)
// may hold a file that matches.
func (g globPruner) mayHold(sub string) bool {
	if g.parts == nil {
		return true
	}
	for i, c := range strings.Split(sub, "/") {
		switch {
		case i >= len(g.parts):
			return false
		case g.parts[i] == "**":
			return true
		case i == len(g.parts)-1:
			// The last part names files, and this directory's files are
			// one level deeper.
			return false
		case !doublestar.MatchUnvalidated(g.parts[i], c):
			return false
		}
	}
	return true
}

// dirHandle is an open directory of a walk. Its entries are opened by name
// through its own os.Root, one openat each instead of one per component of
// the path, and that root keeps every open inside the directory even if an
// entry is swapped for a link after it was listed. Search jobs hold a
// reference to it until their file is read; the last one out closes it.
type dirHandle struct {
	root *os.Root
	refs atomic.Int32
}

func (d *dirHandle) retain() { d.refs.Add(1) }

func (d *dirHandle) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// walkVisitor is what a walk calls. dir is asked before a subdirectory is
// entered (sub is its path relative to the walk's start) and may prune it;
// file gets each regular file and stops the walk by returning false.
// unreadable, when set, hears of each directory that could not be listed.
type walkVisitor struct {
	dir        func(sub string) bool
	file       func(f walkFile) bool
	unreadable func(rel string) bool
}

// walkFile is a regular file met by a walk.
type walkFile struct {
	dir  *dirHandle // the directory holding it
	name string
	rel  string // relative to the root
	sub  string // relative to the walk's start
	// info is its Lstat from the listing (os.Root lists with fstatat, so
	// no path outside the root is used).
	info fs.FileInfo
}

// walk visits the tree under the directory tg depth first, each directory's
// entries sorted by name (so the order is deterministic and a directory's
// contents follow it). It skips .git, what .gitignore files ignore,
// symbolic links (never followed) and anything that is not a regular file
// or a directory (a FIFO would block a reader). It goes only through os.Root
// handles opened one component at a time from the workspace root, never
// through an absolute path, so no link created during the walk can lead it
// outside the directory it is in.
//
// Memory grows with the depth of the tree and the size of the largest
// directory on the current path, not with the size of the tree.
func (t *Tools) walk(ctx context.Context, tg *workspace.Target, v walkVisitor) error {
	r, err := tg.OpenDir()
	if err != nil {
		return err
	}
	d := &dirHandle{root: r}
	d.refs.Store(1)
	defer d.release()
	var comps []string
	if tg.Rel != "." {
		comps = strings.Split(tg.Rel, "/")
	}
	w := &walker{ctx: ctx, v: v}
	w.dir(d, tg.Rel, "", comps, ancestorIgnores(tg.Root.FS(), tg.Rel))
	return w.err
}

type walker struct {
	ctx     context.Context
	v       walkVisitor
	err     error
	stopped bool
}

// maxWalkDepth bounds how deep a walk goes: it holds one open directory
// per level, and a tree deeper than this would spend the process's file
// descriptors. A deeper directory is reported as not listed.
const maxWalkDepth = 128

// dir walks the directory d at rel (relative to the root; sub relative to
// the start, "" for the start itself; comps the components of rel).
func (w *walker) dir(d *dirHandle, rel, sub string, comps []string, rules *ignoreRules) {
	if strings.Count(sub, "/") >= maxWalkDepth {
		w.unreadable(rel)
		return
	}
	f, err := d.root.Open(".")
	if err != nil {
		w.unreadable(rel)
		return
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		w.unreadable(rel)
		return
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			rules = rules.with(readIgnore(d.root, ".gitignore", comps))
			break
		}
	}
	// comps is extended in place for each entry: the patterns copy what
	// they keep, and the walk is sequential.
	comps = slices.Clip(comps)
	for _, e := range entries {
		if w.stopped {
			return
		}
		if err := w.ctx.Err(); err != nil {
			w.err, w.stopped = err, true
			return
		}
		name, typ := e.Name(), e.Type()
		if name == ".git" || !(typ.IsRegular() || typ.IsDir()) {
			continue
		}
		childComps := append(comps, name)
		if rules.ignored(childComps, typ.IsDir()) {
			continue
		}
		childRel, childSub := joinRel(rel, name), joinRel(sub, name)
		if typ.IsRegular() {
			info, err := e.Info()
			if err != nil {
				w.unreadable(childRel)
				continue
			}
			if !w.v.file(walkFile{dir: d, name: name, rel: childRel, sub: childSub, info: info}) {
				w.stopped = true
			}
			continue
		}
		if w.v.dir != nil && !w.v.dir(childSub) {
			continue
		}
		cr, err := openSubdir(d.root, e)
		if err != nil {
			w.unreadable(childRel)
			continue
		}
		cd := &dirHandle{root: cr}
		cd.refs.Store(1)
		w.dir(cd, childRel, childSub, childComps, rules)
		cd.release()
	}
}

// openSubdir opens the directory entry e of dir as a root of its own. The
// entry was a directory when it was listed; os.Root would follow a link
// swapped in since (within dir), so what was opened is checked to be the
// directory that was listed.
func openSubdir(dir *os.Root, e fs.DirEntry) (*os.Root, error) {
	listed, err := e.Info()
	if err != nil {
		return nil, err
	}
	r, err := dir.OpenRoot(e.Name())
	if err != nil {
		return nil, err
	}
	opened, err := r.Stat(".")
	if err == nil && !os.SameFile(opened, listed) {
		err = errChanged
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// errChanged says a file or directory was replaced while it was being
// opened.
var errChanged = errors.New("replaced while it was being opened")

func (w *walker) unreadable(rel string) {
	if w.v.unreadable != nil && !w.v.unreadable(rel) {
		w.stopped = true
	}
}

// joinRel joins a slash-separated directory path ("." or "" for none) and a
// name.
func joinRel(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}
