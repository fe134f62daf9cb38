package files

import (
	"context"
	"fmt"
	"strings"
)

// EditFileArgs are the arguments of edit_file.
type EditFileArgs struct {
	// Path of the file to edit.
	Path string `json:"path" jsonschema:"the file to edit, relative to the workspace root or absolute inside it"`
	// Old is the exact text to replace, whitespace and newlines included.
	Old string `json:"old" jsonschema:"the exact text to replace, whitespace and newlines included; it must occur exactly once unless replace_all"`
	// New is the text to put in its place.
	New string `json:"new" jsonschema:"the text to put in its place"`
	// ReplaceAll replaces every occurrence of Old; without it, Old must
	// occur exactly once.
	ReplaceAll bool `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old instead of requiring exactly one"`
}

// EditFile replaces Old by New in a file, atomically. Old must occur
// exactly once unless ReplaceAll: an edit that could land in two places is
// refused rather than guessed.
func (t *Tools) EditFile(ctx context.Context, a EditFileArgs) (*Change, error) {
	if a.Old == "" {
		return nil, &Error{Kind: BadArgument, Path: a.Path, Message: "old is empty: name the exact text to replace, or use write_file"}
	}
	if a.Old == a.New {
		return nil, &Error{Kind: BadArgument, Path: a.Path, Message: "old and new are the same text: nothing would change"}
	}
	tg, err := t.resolve(Write, a.Path)
	if err != nil {
		return nil, err
	}
	old, err := t.readForChange(a.Path, tg)
	if err != nil {
		return nil, err
	}
	n := strings.Count(string(old), a.Old)
	switch {
	case n == 0:
		return nil, &Error{Kind: NoMatch, Path: a.Path, Message: "old does not occur in the file: read the file and copy the text exactly, whitespace included"}
	case n > 1 && !a.ReplaceAll:
		return nil, &Error{Kind: Ambiguous, Path: a.Path, Message: fmt.Sprintf("old occurs %d times: include more surrounding text so it occurs once, or set replace_all", n)}
	}
	// The result is bounded like any file a tool reads: replace_all of a
	// short text by a long one must not grow a file without limit.
	limit := t.Limits.withDefaults().MaxFileBytes
	if size := int64(len(old)) + int64(n)*(int64(len(a.New))-int64(len(a.Old))); size > limit {
		return nil, &Error{Kind: TooLarge, Path: a.Path, Message: fmt.Sprintf("the edited file would be %d bytes, over the %d-byte ceiling", size, limit)}
	}
	updated := []byte(strings.ReplaceAll(string(old), a.Old, a.New))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := writeAtomic(tg, updated); err != nil {
		return nil, err
	}
	return &Change{Paths: []string{tg.Rel}, Diff: unifiedDiff(tg.Rel, old, updated, true, true)}, nil
}
