package files

import (
	"context"
	"fmt"
	"io/fs"
	"path"

	"github.com/reinhq/rein/workspace"
)

// DeleteFileArgs are the arguments of delete_file.
type DeleteFileArgs struct {
	// Path of the file (or, with recursive, directory) to delete.
	Path string `json:"path"`
	// Recursive deletes a directory and everything in it. The policy
	// treats a recursive delete as dangerous.
	Recursive bool `json:"recursive,omitempty"`
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
	root := tg.Root.FS()
	if !tg.Info.IsDir() {
		old, _ := t.readTarget(a.Path, tg) // a diff is shown only for text
		if err := root.Remove(tg.Rel); err != nil {
			return nil, fmt.Errorf("deleting %s: %w", tg.Rel, err)
		}
		return &Change{Paths: []string{tg.Rel}, Diff: unifiedDiff(tg.Rel, old, nil, true, false)}, nil
	}
	if !a.Recursive {
		return nil, &Error{Kind: WrongType, Path: a.Path, Message: "a directory: set recursive to delete it and everything in it"}
	}
	var paths, diffs []string
	size := 0
	err = fs.WalkDir(root.FS(), tg.Rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == tg.Rel {
			return nil
		}
		named := path.Join(a.Path, p[len(tg.Rel)+1:])
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
			if old, err := t.readTarget(named, sub); err == nil {
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
	if err := root.RemoveAll(tg.Rel); err != nil {
		return nil, fmt.Errorf("deleting %s: %w", tg.Rel, err)
	}
	diff := joinDiffs(diffs)
	if size >= maxDeleteDiffBytes {
		diff += fmt.Sprintf("# diff cut at %d bytes: %d files deleted in all\n", maxDeleteDiffBytes, len(paths))
	}
	return &Change{Paths: append(paths, tg.Rel), Diff: diff}, nil
}
