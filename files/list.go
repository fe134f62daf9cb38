package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/reinhq/rein/workspace"
)

// ListDirArgs are list_dir's arguments.
type ListDirArgs struct {
	// Path is the directory to list, relative to the first workspace root
	// or absolute inside a root; the default is the first root.
	Path string `json:"path" jsonschema:"the directory to list, relative to the first workspace root or absolute inside a root; empty means the first root"`
}

// Entry is one entry of a directory.
type Entry struct {
	// Name is the entry's name in its directory.
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" (never followed) or "other" (a
	// device, a FIFO, a socket).
	Type string `json:"type"`
	// Size is a file's size in bytes; 0 for the other types.
	Size int64 `json:"size"`
}

// ListDirResult is a directory's listing.
type ListDirResult struct {
	// Path names the directory listed, as the other tools take it.
	Path string `json:"path"`
	// Entries are the entries sorted by name (byte order), at most
	// Limits.MaxEntries of them.
	Entries []Entry `json:"entries"`
	// Total is how many entries the directory has.
	Total int `json:"total"`
	// Truncated says Entries holds only the first of Total entries.
	Truncated bool `json:"truncated"`
}

// listBatch is how many entries list_dir reads from the directory at once.
const listBatch = 512

// ListDir lists the directory a.Path: every entry, hidden and ignored ones
// included, with its type and, for a file, its size. A symbolic link is
// reported as a link and not followed. The first Limits.MaxEntries entries
// by name come back, and Total says how many there are, so a huge directory
// costs memory for the limit, not for the directory.
//
// A missing path is a *workspace.PathError of kind not_found, and a path
// that is not a directory an *Error of kind wrong_type.
func (t *Tools) ListDir(ctx context.Context, a ListDirArgs) (*ListDirResult, error) {
	lim := t.Limits.withDefaults()
	p := a.Path
	if p == "" {
		p = "."
	}
	tg, err := t.resolveDir(p)
	if err != nil {
		return nil, err
	}
	dir, err := tg.OpenDir()
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: p, Reason: "cannot open the directory: " + err.Error()}
	}
	defer f.Close()

	byName := func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
	var kept []fs.DirEntry
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := f.ReadDir(listBatch)
		total += len(batch)
		kept = append(kept, batch...)
		if len(kept) > 2*lim.MaxEntries+listBatch {
			slices.SortFunc(kept, byName)
			kept = slices.Clip(kept[:lim.MaxEntries])
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: p, Reason: "cannot list the directory: " + err.Error()}
		}
	}
	slices.SortFunc(kept, byName)
	res := &ListDirResult{
		Path:      t.display(tg.Root, tg.Rel),
		Entries:   make([]Entry, 0, min(len(kept), lim.MaxEntries)),
		Total:     total,
		Truncated: total > lim.MaxEntries,
	}
	for _, e := range kept[:min(len(kept), lim.MaxEntries)] {
		ent := Entry{Name: e.Name(), Type: entryType(e.Type())}
		if ent.Type == "file" {
			// The listing of a directory opened through os.Root has its
			// entries' Lstat already, taken relative to the directory.
			if fi, err := e.Info(); err == nil {
				ent.Size = fi.Size()
			}
		}
		res.Entries = append(res.Entries, ent)
	}
	return res, nil
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "other"
	}
}
