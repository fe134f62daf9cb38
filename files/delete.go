package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/reinhq/rein/workspace"
)

// DeleteFileArgs are the arguments of delete_file.
type DeleteFileArgs struct {
	// Path of the file (or, with recursive, directory) to delete.
	Path string `json:"path" jsonschema:"the file (or, with recursive, directory) to delete, relative to the workspace root or absolute inside it"`
	// Recursive deletes a directory and everything in it. The policy
	// treats a recursive delete as dangerous.
	Recursive bool `json:"recursive,omitempty" jsonschema:"delete a directory and everything in it (the policy treats this as dangerous)"`
}

// maxDeleteDiffBytes bounds the diff a recursive delete returns; the paths
// are always listed in full.
const maxDeleteDiffBytes = 256 << 10

// DeleteFile deletes a file, or a directory with Recursive. Every file a
// recursive delete would remove is guarded first, so a directory that
// holds a protected file is refused as a whole and nothing is deleted.
func (t *Tools) DeleteFile(ctx context.Context, a DeleteFileArgs) (*Change, error) {
	tg, err := t.resolve(Delete, a.Path)
	if err != nil {
		return nil, err
	}
	if !tg.Exists() {
		return nil, &workspace.PathError{Kind: workspace.NotFound, Path: a.Path, Component: tg.Rel, Reason: "no such file or directory"}
	}
	if tg.Rel == "." {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: a.Path, Component: ".", Reason: "that is the workspace root itself"}
	}
	if !tg.Info.IsDir() && !tg.Info.Mode().IsRegular() && tg.Info.Mode()&fs.ModeSymlink == 0 {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: a.Path, Component: tg.Rel, Reason: "not a regular file or directory (" + tg.Info.Mode().Type().String() + "): delete it through the shell"}
	}
	parent, err := tg.OpenParent(false)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	if !tg.Info.IsDir() {
		old, _ := t.readTarget(a.Path, tg) // a diff is shown only for text
		if err := parent.Remove(tg.Base()); err != nil {
			return nil, fmt.Errorf("deleting %s: %w", tg.Rel, err)
		}
		return &Change{Paths: []string{tg.Rel}, Diff: unifiedDiff(tg.Rel, old, nil, true, false)}, nil
	}
	if !a.Recursive {
		return nil, &Error{Kind: WrongType, Path: a.Path, Message: "a directory: set recursive to delete it and everything in it"}
	}
	dir, err := tg.OpenDir()
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var paths, diffs []string
	size := 0
	err = fs.WalkDir(dir.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		p := path.Join(tg.Rel, rel)
		named := path.Join(a.Path, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		sub := &workspace.Target{Root: tg.Root, Rel: p, Path: path.Join(tg.Root.Real, p), Info: info}
		if t.Guard != nil {
			if err := t.Guard(Delete, named, sub); err != nil {
				return err
			}
		}
		if d.IsDir() {
			return nil
		}
		paths = append(paths, p)
		if size < maxDeleteDiffBytes && info.Mode().IsRegular() {
			if old, err := readIn(dir, rel, info, t.Limits.withDefaults().MaxFileBytes); err == nil {
				diff := unifiedDiff(p, old, nil, true, false)
				size += len(diff)
				diffs = append(diffs, diff)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := parent.RemoveAll(tg.Base()); err != nil {
		return nil, fmt.Errorf("deleting %s: %w", tg.Rel, err)
	}
	diff := joinDiffs(diffs)
	if size >= maxDeleteDiffBytes {
		diff += fmt.Sprintf("# diff cut at %d bytes: %d files deleted in all\n", maxDeleteDiffBytes, len(paths))
	}
	return &Change{Paths: append(paths, tg.Rel), Diff: diff}, nil
}

// readIn reads a regular text file under a directory handle for a diff,
// refusing what read_file would refuse.
func readIn(dir *os.Root, name string, info fs.FileInfo, limit int64) ([]byte, error) {
	if info.Size() > limit {
		return nil, errors.New("too large")
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, info) || !fi.Mode().IsRegular() {
		return nil, errors.New("changed")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil || bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil, errors.New("not text")
	}
	return data, nil
}
