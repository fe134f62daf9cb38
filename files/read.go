package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/reinhq/rein/workspace"
)

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	// Path of the file, relative to the workspace root or absolute inside it.
	Path string `json:"path" jsonschema:"the file to read, relative to the workspace root or absolute inside it"`
	// Offset is the first line to return, counting from 1; 0 means 1.
	Offset int `json:"offset,omitempty" jsonschema:"the first line to return, counting from 1; 0 or absent means 1"`
	// Limit is how many lines to return; 0 means to the end of the file.
	Limit int `json:"limit,omitempty" jsonschema:"how many lines to return; 0 or absent means to the end of the file"`
	// LineNumbers prefixes each line with its number and a tab.
	LineNumbers bool `json:"line_numbers,omitempty" jsonschema:"prefix each line with its number and a tab"`
}

// ReadFileResult is what read_file returns.
type ReadFileResult struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// StartLine and EndLine are the lines returned (EndLine is 0 when none
	// were); TotalLines is how many the file has.
	StartLine  int   `json:"start_line"`
	EndLine    int   `json:"end_line"`
	TotalLines int   `json:"total_lines"`
	Size       int64 `json:"size"`
}

// binarySniff is how much of a file is looked at for a NUL byte, as git
// and ripgrep do, to call it binary.
const binarySniff = 8 << 10

// ReadFile returns a text file, whole or a range of its lines. A binary
// file, a file over the size ceiling and a file with several names (a hard
// link, which may be the same file as one outside the workspace) are
// refused rather than read in part.
func (t *Tools) ReadFile(ctx context.Context, a ReadFileArgs) (*ReadFileResult, error) {
	if a.Offset < 0 || a.Limit < 0 {
		return nil, &Error{Kind: BadArgument, Path: a.Path, Message: "offset and limit must not be negative"}
	}
	tg, err := t.resolve(Read, a.Path)
	if err != nil {
		return nil, err
	}
	data, err := t.readTarget(a.Path, tg)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	lines := splitLines(string(data))
	start := max(a.Offset, 1)
	end := len(lines)
	if a.Limit > 0 {
		end = min(end, start-1+a.Limit)
	}
	r := &ReadFileResult{Path: a.Path, TotalLines: len(lines), Size: int64(len(data))}
	if start > len(lines) {
		if len(lines) == 0 && start == 1 {
			return r, nil
		}
		return nil, &Error{Kind: BadArgument, Path: a.Path, Message: fmt.Sprintf("offset %d is past the end of the file, which has %d lines", start, len(lines))}
	}
	var b strings.Builder
	for i := start; i <= end; i++ {
		if a.LineNumbers {
			fmt.Fprintf(&b, "%6d\t", i)
		}
		b.WriteString(lines[i-1])
	}
	r.Content, r.StartLine, r.EndLine = b.String(), start, end
	return r, nil
}

// splitLines splits s after each newline, keeping the newlines, so the
// lines join back to s exactly.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// readTarget reads a resolved regular text file through a handle on its
// directory (checked to be the directory that was resolved) and checks
// that the file opened is the file that was resolved and guarded: a name
// swapped for a link between the two is refused, not followed.
func (t *Tools) readTarget(named string, tg *workspace.Target) ([]byte, error) {
	if !tg.Exists() {
		return nil, &workspace.PathError{Kind: workspace.NotFound, Path: named, Component: tg.Rel, Reason: "no such file"}
	}
	if tg.Info.IsDir() {
		return nil, &Error{Kind: WrongType, Path: named, Message: "a directory: use list_dir or find_files"}
	}
	if !tg.Info.Mode().IsRegular() {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: named, Component: tg.Rel, Reason: "not a regular file (" + tg.Info.Mode().Type().String() + ")"}
	}
	dir, err := tg.OpenParent(false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	f, err := dir.OpenFile(tg.Base(), os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, openError(named, tg, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, tg.Info) || !fi.Mode().IsRegular() {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: named, Component: tg.Rel, Reason: "the file changed while it was being opened; try again"}
	}
	if n := links(fi); n > 1 {
		return nil, &workspace.PathError{Kind: workspace.InvalidPath, Path: named, Component: tg.Rel,
			Reason: fmt.Sprintf("the file has %d names (a hard link), and another of them may be outside the workspace; copy it with the shell if it is yours", n)}
	}
	limit := t.Limits.withDefaults().MaxFileBytes
	if fi.Size() > limit {
		return nil, &Error{Kind: TooLarge, Path: named, Message: fmt.Sprintf("the file is %d bytes, over the %d-byte ceiling: read a part with search_files, or with head or sed through the shell", fi.Size(), limit)}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &Error{Kind: TooLarge, Path: named, Message: fmt.Sprintf("the file grew over the %d-byte ceiling while it was read", limit)}
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil, &Error{Kind: Binary, Path: named, Message: fmt.Sprintf("a binary file (%d bytes): it is not shown as text", len(data))}
	}
	return data, nil
}

// openError turns an error of the root into a refusal: os.Root refuses a
// link that leads out of the root, which means one was swapped in.
func openError(named string, tg *workspace.Target, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &workspace.PathError{Kind: workspace.NotFound, Path: named, Component: tg.Rel, Reason: "no such file"}
	case errors.Is(err, syscall.ELOOP), strings.Contains(err.Error(), "escapes"):
		return &workspace.PathError{Kind: workspace.InvalidPath, Path: named, Component: tg.Rel, Reason: "the path became a link while it was being opened; try again"}
	}
	return err
}
