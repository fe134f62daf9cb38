package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/reinhq/rein/workspace"
)

// ApplyPatchArgs are the arguments of apply_patch.
type ApplyPatchArgs struct {
	// Patch is a unified diff (git's or the traditional --- +++ form) of
	// one or more files: changes, new files, deletions and renames.
	Patch string `json:"patch" jsonschema:"a unified diff (git's or the --- +++ form) of one or more files: changes, new files, deletions and renames, applied all or nothing"`
}

// step is one file's part of a patch, computed before anything is written.
type step struct {
	named   string
	target  *workspace.Target
	old     []byte
	new     []byte
	existed bool
	delete  bool
}

// ApplyPatch applies a unified diff to one or more files, all or nothing:
// every hunk of every file is applied in memory first, and only when all
// of them apply are the files written, each atomically. If a write fails
// part way, the files already written are put back.
func (t *Tools) ApplyPatch(ctx context.Context, a ApplyPatchArgs) (*Change, error) {
	parsed, _, err := gitdiff.Parse(strings.NewReader(a.Patch))
	if err != nil {
		return nil, &Error{Kind: BadArgument, Message: "the patch does not parse: " + err.Error()}
	}
	if len(parsed) == 0 {
		return nil, &Error{Kind: BadArgument, Message: "the patch holds no file changes: give a unified diff with --- and +++ headers and @@ hunks"}
	}
	var steps []*step
	seen := map[string]bool{}
	for _, f := range parsed {
		oldName, newName := t.patchNames(f)
		if f.IsBinary {
			return nil, &Error{Kind: BadArgument, Path: newName, Message: "binary patches are not supported"}
		}
		var src *step
		if !f.IsNew {
			if src, err = t.patchSource(oldName, f.IsDelete || f.IsRename); err != nil {
				return nil, err
			}
		}
		var out bytes.Buffer
		var input []byte
		if src != nil {
			input = src.old
		}
		if err := gitdiff.Apply(&out, bytes.NewReader(input), f); err != nil {
			var conflict *gitdiff.Conflict
			msg := err.Error()
			if errors.As(err, &conflict) {
				msg = "a hunk does not match the file: " + msg
			}
			return nil, &Error{Kind: PatchFailed, Path: oldName + newName, Message: msg + "; nothing was changed"}
		}
		switch {
		case f.IsDelete:
			src.delete = true
			steps = append(steps, src)
		case f.IsRename || f.IsNew || f.IsCopy:
			dst, err := t.resolve(Write, newName)
			if err != nil {
				return nil, err
			}
			if dst.Exists() && !(f.IsRename && dst.Rel == src.target.Rel) {
				return nil, &Error{Kind: PatchFailed, Path: newName, Message: "the patch creates a file that already exists; nothing was changed"}
			}
			if f.IsRename {
				src.delete = true
				steps = append(steps, src)
			}
			steps = append(steps, &step{named: newName, target: dst, new: out.Bytes()})
		default:
			src.new = out.Bytes()
			steps = append(steps, src)
		}
	}
	for _, s := range steps {
		key := s.target.Root.Real + "\x00" + s.target.Rel
		if seen[key] && !s.delete {
			return nil, &Error{Kind: BadArgument, Path: s.named, Message: "the patch changes the same file twice; merge its hunks into one file section"}
		}
		seen[key] = true
	}
	// A file the patch writes must not be a directory of another it
	// writes: that clash would only show part way through the writes.
	for _, a := range steps {
		for _, b := range steps {
			if !a.delete && !b.delete && a != b && a.target.Root == b.target.Root && strings.HasPrefix(b.target.Rel, a.target.Rel+"/") {
				return nil, &Error{Kind: BadArgument, Path: a.named, Message: fmt.Sprintf("the patch writes %s as a file and also %s under it; nothing was changed", a.target.Rel, b.target.Rel)}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.commit(steps); err != nil {
		return nil, err
	}
	ch := &Change{}
	var diffs []string
	for _, s := range steps {
		ch.Paths = append(ch.Paths, s.target.Rel)
		if s.delete {
			diffs = append(diffs, unifiedDiff(s.target.Rel, s.old, nil, true, false))
		} else {
			diffs = append(diffs, unifiedDiff(s.target.Rel, s.old, s.new, s.existed, true))
		}
	}
	ch.Diff = joinDiffs(diffs)
	return ch, nil
}

// patchNames returns the file's names as paths in the workspace. git's own
// header has its a/ and b/ prefixes dropped already; a traditional diff
// keeps them, so a name starting with a/ or b/ loses that component when
// the name does not exist as written (as patch -p1 would guess).
func (t *Tools) patchNames(f *gitdiff.File) (string, string) {
	return t.patchName(f.OldName, !f.IsNew), t.patchName(f.NewName, !f.IsNew && !f.IsRename && !f.IsCopy)
}

func (t *Tools) patchName(name string, exists bool) string {
	if !strings.HasPrefix(name, "a/") && !strings.HasPrefix(name, "b/") {
		return name
	}
	present := func(p string) bool {
		tg, err := t.WS.Resolve(p)
		return err == nil && tg.Exists()
	}
	switch {
	case present(name):
		return name
	case exists:
		// Prefer the stripped name unless it is cleanly missing, so a
		// refusal (outside, protected) is reported on the name meant.
		if tg, err := t.WS.Resolve(name[2:]); err != nil || tg.Exists() {
			return name[2:]
		}
		return name
	case present(name[:1]):
		// A new file under a real directory named a or b.
		return name
	}
	return name[2:]
}

// patchSource resolves and reads a file the patch changes.
func (t *Tools) patchSource(name string, deleting bool) (*step, error) {
	access := Write
	if deleting {
		access = Delete
	}
	tg, err := t.resolve(access, name)
	if err != nil {
		return nil, err
	}
	old, err := t.readForChange(name, tg)
	if err != nil {
		return nil, err
	}
	return &step{named: name, target: tg, old: old, existed: true}, nil
}

// commit writes every step, undoing the written ones if one fails.
func (t *Tools) commit(steps []*step) error {
	for i, s := range steps {
		var err error
		if s.delete {
			err = removeTarget(s.target)
		} else {
			err = writeAtomic(s.target, s.new)
		}
		if err != nil {
			undo := t.rollback(steps[:i])
			return errors.Join(fmt.Errorf("applying the patch to %s: %w", s.target.Rel, err), undo)
		}
	}
	return nil
}

// rollback puts back the files of the steps already committed.
func (t *Tools) rollback(done []*step) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		switch {
		case s.existed:
			restored := *s.target
			errs = append(errs, writeAtomic(&restored, s.old))
		default:
			errs = append(errs, removeTarget(s.target))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("putting the files back also failed, the workspace may hold part of the patch: %w", err)
	}
	return nil
}

// removeTarget removes a file through a checked handle on its directory.
func removeTarget(tg *workspace.Target) error {
	d, err := tg.OpenParent(false)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(tg.Base())
}
