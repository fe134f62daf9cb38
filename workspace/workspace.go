package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Kind names why a path was refused. The names are stable: they become
// the status of a tool result.
type Kind string

// The refusal kinds.
const (
	// InvalidPath: the path cannot be used as named (empty, a NUL byte, a
	// dangling link, a file where a directory is needed, a hard link).
	InvalidPath Kind = "invalid_path"
	// NotFound: the path does not exist and the operation needs it to.
	NotFound Kind = "not_found"
	// Protected: the path is in the protected set, or a generated file.
	Protected Kind = "protected"
	// Outside: the path, or what it reaches, lies outside every root.
	Outside Kind = "outside"
)

// PathError is a refused path: its kind, the path as given, the component
// that decided, and a sentence saying why and what to do.
type PathError struct {
	Kind Kind
	// Path is the path as the caller named it.
	Path string
	// Component is the part of the path that was refused (a link, "..",
	// the missing directory), relative to its root where it is inside one.
	Component string
	Reason    string
}

func (e *PathError) Error() string {
	if e.Component != "" && e.Component != e.Path {
		return fmt.Sprintf("%s: %q: at %q: %s", e.Kind, e.Path, e.Component, e.Reason)
	}
	return fmt.Sprintf("%s: %q: %s", e.Kind, e.Path, e.Reason)
}

// Is lets errors.Is(err, &PathError{Kind: k}) test the kind alone.
func (e *PathError) Is(target error) bool {
	t, ok := target.(*PathError)
	return ok && t.Kind == e.Kind && t.Path == "" && t.Component == ""
}

// Root is one directory tree of a workspace.
type Root struct {
	// Path is the root as it was given, made absolute.
	Path string
	// Real is the root's physical path (every link resolved).
	Real string
	fs   *os.Root
}

// FS returns the root's os.Root: every file operation goes through it, so a
// link created or swapped after a path was resolved cannot lead outside.
func (r *Root) FS() *os.Root { return r.fs }

// Workspace is the set of roots an agent may touch.
type Workspace struct {
	roots []*Root
}

// Open opens a workspace of one or more root directories. Relative paths
// named later are relative to the first root.
func Open(roots ...string) (*Workspace, error) {
	if len(roots) == 0 {
		return nil, errors.New("workspace: no root: name at least one directory")
	}
	w := &Workspace{}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: root %q: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: root %q: %w", r, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			w.Close()
			return nil, fmt.Errorf("workspace: root %q is not a directory", r)
		}
		fsys, err := os.OpenRoot(real)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: opening root %q: %w", r, err)
		}
		w.roots = append(w.roots, &Root{Path: abs, Real: real, fs: fsys})
	}
	return w, nil
}

// Close releases the roots.
func (w *Workspace) Close() error {
	var errs []error
	for _, r := range w.roots {
		errs = append(errs, r.fs.Close())
	}
	return errors.Join(errs...)
}

// Roots returns the workspace's roots, the first being where relative
// paths start.
func (w *Workspace) Roots() []*Root { return w.roots }

// Target is where a named path lands inside a root.
type Target struct {
	Root *Root
	// Rel is the slash-separated path inside Root with every link
	// resolved; "." is the root itself. File operations use it through
	// Root.FS().
	Rel string
	// Path is the absolute physical path, Root.Real joined with Rel.
	Path string
	// Info is the Lstat of the target, nil when it does not exist.
	Info fs.FileInfo

	// chain holds the identities of the root and of each directory of the
	// target's parent that existed when it was resolved.
	chain []fileID
}

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// Base is the target's last component ("." for the root).
func (t *Target) Base() string { return path.Base(t.Rel) }

// OpenParent opens the directory the target is in, one component at a
// time and without following any link, and checks that each directory is
// the one Resolve walked through. Operations on the target then go through
// the returned handle by Base(), so a directory swapped for a link (to a
// protected place inside the root, say) after the path was resolved is
// refused rather than entered. With create, the parent's missing
// directories are made, each checked right after it is made. The caller
// closes the handle.
func (t *Target) OpenParent(create bool) (*os.Root, error) {
	refuse := func(comp, why string) error {
		return &PathError{Kind: InvalidPath, Path: t.Rel, Component: comp, Reason: why}
	}
	rootInfo, err := t.Root.fs.Stat(".")
	if err != nil || len(t.chain) == 0 || idOf(rootInfo) != t.chain[0] {
		return nil, refuse(".", "the workspace root changed since the path was resolved; try again")
	}
	d, err := t.Root.fs.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	parent := path.Dir(t.Rel)
	if parent == "." {
		return d, nil
	}
	for i, c := range strings.Split(parent, "/") {
		so := path.Join(strings.Split(parent, "/")[:i+1]...)
		existed := i+1 < len(t.chain)
		if !existed {
			if !create {
				d.Close()
				return nil, &PathError{Kind: NotFound, Path: t.Rel, Component: so, Reason: "the directory does not exist"}
			}
			if err := d.Mkdir(c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				d.Close()
				return nil, refuse(so, "cannot create the directory: "+err.Error())
			}
		}
		fi, err := d.Lstat(c)
		if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || (existed && idOf(fi) != t.chain[i+1]) {
			d.Close()
			return nil, refuse(so, "the directory changed since the path was resolved; try again")
		}
		nd, err := d.OpenRoot(c)
		d.Close()
		if err != nil {
			return nil, refuse(so, "cannot open the directory: "+err.Error())
		}
		if opened, err := nd.Stat("."); err != nil || !os.SameFile(opened, fi) {
			nd.Close()
			return nil, refuse(so, "the directory changed while it was opened; try again")
		}
		d = nd
	}
	return d, nil
}

// OpenDir opens the target itself as a directory, checked to be the one
// Resolve saw. The caller closes the handle.
func (t *Target) OpenDir() (*os.Root, error) {
	if t.Info == nil || !t.Info.IsDir() {
		return nil, &PathError{Kind: InvalidPath, Path: t.Rel, Component: t.Rel, Reason: "not a directory"}
	}
	if t.Rel == "." {
		return t.Root.fs.OpenRoot(".")
	}
	p, err := t.OpenParent(false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	d, err := p.OpenRoot(t.Base())
	if err != nil {
		return nil, &PathError{Kind: InvalidPath, Path: t.Rel, Component: t.Rel, Reason: "cannot open the directory: " + err.Error()}
	}
	if opened, err := d.Stat("."); err != nil || !os.SameFile(opened, t.Info) {
		d.Close()
		return nil, &PathError{Kind: InvalidPath, Path: t.Rel, Component: t.Rel, Reason: "the directory changed since the path was resolved; try again"}
	}
	return d, nil
}

// Exists reports whether the target exists.
func (t *Target) Exists() bool { return t.Info != nil }

// maxPathBytes bounds a named path, as PATH_MAX does.
const maxPathBytes = 4096

// Resolve finds where the path p (relative to the first root, or absolute
// inside a root) lands, following links physically one component at a
// time. It refuses, as a *PathError:
//   - an empty path, a NUL byte, a path longer than 4096 bytes (invalid_path);
//   - .. that climbs out of the root, an absolute path outside every root,
//     a link at any depth whose target leaves the root (outside);
//   - a link at any depth whose target does not exist, since a write
//     through it would create its target wherever it points, and a file
//     used as a directory (invalid_path).
//
// A missing final component (or missing parents) is not an error: the
// target says it does not exist, and a write may create it.
func (w *Workspace) Resolve(p string) (*Target, error) {
	refuse := func(k Kind, comp, why string) (*Target, error) {
		return nil, &PathError{Kind: k, Path: p, Component: comp, Reason: why}
	}
	switch {
	case p == "":
		return refuse(InvalidPath, "", "the path is empty: name a file or directory")
	case strings.IndexByte(p, 0) >= 0:
		return refuse(InvalidPath, "", "the path holds a NUL byte")
	case len(p) > maxPathBytes:
		return refuse(InvalidPath, "", fmt.Sprintf("the path is %d bytes, longer than %d", len(p), maxPathBytes))
	}
	root, rel := w.roots[0], p
	if filepath.IsAbs(p) {
		// The root's part of the path is matched component by component
		// and never cleaned: /ws/link/../x must go through the link as the
		// kernel would, so the .. stays in what is walked.
		root = nil
		for _, r := range w.roots {
			for _, base := range []string{r.Real, r.Path} {
				if rest, ok := underBase(base, p); ok && root == nil {
					root, rel = r, rest
				}
			}
		}
		if root == nil {
			return refuse(Outside, p, "the path is outside the workspace: name a path under "+w.rootList())
		}
	}
	return w.walk(root, p, rel)
}

// underBase returns what follows base in the absolute path p, comparing
// whole components and skipping empty and "." ones, or false when p does
// not start with base.
func underBase(base, p string) (string, bool) {
	comps := func(s string) []string {
		var out []string
		for _, c := range strings.Split(s, "/") {
			if c != "" && c != "." {
				out = append(out, c)
			}
		}
		return out
	}
	b, c := comps(base), comps(p)
	if len(c) < len(b) {
		return "", false
	}
	for i := range b {
		if b[i] != c[i] {
			return "", false
		}
	}
	return strings.Join(c[len(b):], "/"), true
}

func (w *Workspace) rootList() string {
	names := make([]string, len(w.roots))
	for i, r := range w.roots {
		names[i] = r.Path
	}
	return strings.Join(names, ", ")
}

// walk resolves rel inside root. It holds an open handle on every
// directory it has entered and looks at each component relative to its
// directory's handle, never by a longer name, so a link swapped into the
// middle of the path meanwhile cannot make it look at another file. The
// queue holds the components still to visit; a link's target is spliced in
// front of them, and splices marks where each splice ends so that a missing
// component inside one is known to be a dangling link.
func (w *Workspace) walk(root *Root, named, rel string) (*Target, error) {
	refuse := func(k Kind, comp, why string) (*Target, error) {
		return nil, &PathError{Kind: k, Path: named, Component: comp, Reason: why}
	}
	queue := strings.Split(rel, "/")
	var stack []string  // resolved components, link-free
	var dirs []*os.Root // dirs[i] is the handle of stack[:i+1] while it exists
	var ids []fileID    // ids[i] is the identity of dirs[i]
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	rootInfo, err := root.fs.Stat(".")
	if err != nil {
		return refuse(InvalidPath, ".", "cannot look at the workspace root: "+err.Error())
	}
	cur := func() *os.Root {
		if len(dirs) == 0 {
			return root.fs
		}
		return dirs[len(dirs)-1]
	}
	type splice struct {
		end  int // queue length when the splice is consumed
		link string
	}
	var splices []splice
	links := 0
	missing := false
	var last fs.FileInfo // the last component looked at, when it exists
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for len(splices) > 0 && len(queue) < splices[len(splices)-1].end {
			splices = splices[:len(splices)-1]
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if missing {
				// The kernel cannot go up out of a directory that does not
				// exist, and neither does the walk.
				return refuse(NotFound, path.Join(stack...), "the directory does not exist, so .. after it leads nowhere")
			}
			if len(stack) == 0 {
				if len(splices) > 0 {
					l := splices[len(splices)-1].link
					return refuse(Outside, l, "the link leads out of the workspace root "+root.Path)
				}
				return refuse(Outside, "..", "the path climbs out of the workspace root "+root.Path)
			}
			if len(dirs) < len(stack) {
				// The last component was a file: .. after it is not a way up.
				return refuse(InvalidPath, path.Join(stack...), "a file is used as a directory")
			}
			stack = stack[:len(stack)-1]
			dirs[len(dirs)-1].Close()
			dirs, ids = dirs[:len(dirs)-1], ids[:len(ids)-1]
			last = nil
			continue
		}
		curRel := path.Join(append(append([]string{}, stack...), c)...)
		if missing {
			stack = append(stack, c)
			continue
		}
		if len(dirs) < len(stack) {
			return refuse(InvalidPath, path.Join(stack...), "a file is used as a directory")
		}
		fi, err := cur().Lstat(c)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if len(splices) > 0 {
				return refuse(InvalidPath, splices[len(splices)-1].link, "the link is dangling: its target "+curRel+" does not exist, and a write through it would create the target")
			}
			missing, last = true, nil
			stack = append(stack, c)
			continue
		case err != nil:
			return refuse(InvalidPath, curRel, err.Error())
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			links++
			if links > maxLinks {
				return refuse(InvalidPath, curRel, "too many levels of symbolic links")
			}
			target, err := cur().Readlink(c)
			if err != nil {
				return refuse(InvalidPath, curRel, "cannot read the link: "+err.Error())
			}
			if strings.HasPrefix(target, "/") {
				// An absolute target must land in this root, by its real
				// path or the path it was given by.
				inside, ok := "", false
				for _, base := range []string{root.Real, root.Path} {
					if rest, in := underBase(base, target); in {
						inside, ok = rest, true
						break
					}
				}
				if !ok {
					return refuse(Outside, curRel, "the link points to "+target+", outside the workspace")
				}
				for _, d := range dirs {
					d.Close()
				}
				stack, dirs, ids = nil, nil, nil
				target = inside
			}
			parts := strings.Split(target, "/")
			queue = append(parts, queue...)
			splices = append(splices, splice{end: len(queue) - len(parts), link: curRel})
			last = nil
		case fi.IsDir():
			d, err := cur().OpenRoot(c)
			if err != nil {
				return refuse(InvalidPath, curRel, "cannot open the directory: "+err.Error())
			}
			if opened, err := d.Stat("."); err != nil || !os.SameFile(opened, fi) {
				d.Close()
				return refuse(InvalidPath, curRel, "the directory changed while the path was resolved; try again")
			}
			stack, dirs, ids = append(stack, c), append(dirs, d), append(ids, idOf(fi))
			last = fi
		default:
			stack = append(stack, c)
			last = fi
		}
	}
	relOut := path.Join(stack...)
	if relOut == "" {
		relOut = "."
	}
	t := &Target{Root: root, Rel: relOut, Path: path.Join(root.Real, relOut)}
	switch {
	case missing:
	case relOut == ".":
		t.Info = rootInfo
	default:
		t.Info = last
	}
	// The parent's chain of identities lets a tool open the parent later
	// and know it is the directory that was resolved here.
	t.chain = append([]fileID{idOf(rootInfo)}, ids...)
	if !missing && t.Info != nil && t.Info.IsDir() && relOut != "." {
		t.chain = t.chain[:len(t.chain)-1]
	}
	return t, nil
}
