package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/aymanbagabas/go-udiff"

	"github.com/reinhq/rein/workspace"
)

// WriteFileArgs are the arguments of write_file.
type WriteFileArgs struct {
	// Path of the file to create or replace; missing parent directories
	// inside the workspace are created.
	Path string `json:"path" jsonschema:"the file to create or replace, relative to the workspace root or absolute inside it; missing parent directories are created"`
	// Content is the whole new content of the file.
	Content string `json:"content" jsonschema:"the whole new content of the file"`
}

// WriteFile creates or replaces a file atomically: the content goes to a
// temporary file in the same directory, which is renamed over the target,
// so a reader sees the old file or the new one and never half of either. A
// replaced file keeps its mode.
func (t *Tools) WriteFile(ctx context.Context, a WriteFileArgs) (*Change, error) {
	tg, err := t.resolve(Write, a.Path)
	if err != nil {
		return nil, err
	}
	var old []byte
	if tg.Exists() {
		if old, err = t.readForChange(a.Path, tg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := writeAtomic(tg, []byte(a.Content)); err != nil {
		return nil, err
	}
	return &Change{Paths: []string{tg.Rel}, Diff: unifiedDiff(tg.Rel, old, []byte(a.Content), tg.Exists(), true)}, nil
}

// readForChange reads a file about to be changed: it must be a regular
// text file under the ceiling, like one read_file would show.
func (t *Tools) readForChange(named string, tg *workspace.Target) ([]byte, error) {
	if tg.Exists() && tg.Info.IsDir() {
		return nil, &Error{Kind: WrongType, Path: named, Message: "a directory, not a file"}
	}
	return t.readTarget(named, tg)
}

// writeAtomic writes data to the target through its root: a temporary file
// beside it, then a rename over it. The rename replaces the name, never
// the inode behind it, so a hard link or a link swapped in by someone else
// is not written through.
func writeAtomic(tg *workspace.Target, data []byte) error {
	mode := fs.FileMode(0o644)
	if tg.Exists() {
		mode = tg.Info.Mode().Perm()
	}
	base := tg.Base()
	// The temporary file and the rename are relative to one open handle on
	// the directory, opened component by component and checked to be the
	// directory that was resolved: a directory swapped for a link (into
	// .git/hooks, say) after the check is refused, never written into.
	d, err := tg.OpenParent(true)
	if err != nil {
		return err
	}
	defer d.Close()
	tmp := ".rein-" + randomSuffix() + ".tmp"
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return swapped(tg, fmt.Errorf("writing %s: %w", tg.Rel, err))
	}
	fail := func(err error) error {
		f.Close()
		d.Remove(tmp)
		return fmt.Errorf("writing %s: %w", tg.Rel, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	// The umask may have narrowed the mode the file was created with. A
	// replaced file keeps its owner where the process may set it (as
	// root); setuid and setgid bits are not carried over.
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if tg.Exists() {
		if uid, gid, ok := owner(tg.Info); ok && os.Geteuid() == 0 {
			if err := f.Chown(uid, gid); err != nil {
				return fail(err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		d.Remove(tmp)
		return fmt.Errorf("writing %s: %w", tg.Rel, err)
	}
	if err := d.Rename(tmp, base); err != nil {
		d.Remove(tmp)
		return swapped(tg, fmt.Errorf("writing %s: %w", tg.Rel, err))
	}
	return nil
}

// swapped reports an error caused by a path component turning into a link
// (or a file) after the path was resolved as a refusal of that path:
// os.Root refused to follow it, and nothing was written elsewhere.
func swapped(tg *workspace.Target, err error) error {
	// ENOENT here means the directory itself was removed or replaced
	// after it was opened.
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOENT) || strings.Contains(err.Error(), "escapes from parent") {
		return &workspace.PathError{Kind: workspace.InvalidPath, Path: tg.Rel, Component: tg.Rel, Reason: "a directory on the path changed while it was being written (" + err.Error() + "); try again"}
	}
	return err
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// unifiedDiff is the change from old to new as a git-style unified diff.
// existed and exists say whether the file was there before and after.
func unifiedDiff(rel string, old, new []byte, existed, exists bool) string {
	from, to := "a/"+rel, "b/"+rel
	if !existed {
		from = "/dev/null"
	}
	if !exists {
		to = "/dev/null"
	}
	d := udiff.Unified(from, to, string(old), string(new))
	if d == "" {
		return ""
	}
	return "diff --git a/" + rel + " b/" + rel + "\n" + d
}

// joinDiffs joins the diffs of several files.
func joinDiffs(diffs []string) string {
	var b strings.Builder
	for _, d := range diffs {
		b.WriteString(d)
	}
	return b.String()
}
