// Package files owns rein's file tools: read_file, list_dir, find_files,
// search_files, write_file, edit_file, apply_patch and delete_file, as
// functions with typed arguments and results that the tool router
// registers.
//
// Every path an agent names goes through workspace.Resolve, every file
// operation through the root's os.Root (so a link swapped after the check
// cannot lead outside), and every target through the caller's Guard (the
// protected set and generated files). Every mutation is atomic and returns
// the changed paths with a unified diff.
//
// files imports workspace and nothing else of rein: the decision it needs
// comes in as a Guard, so it never imports policy, sandbox or tool.
package files

import (
	"fmt"

	"github.com/reinhq/rein/workspace"
)

// Access is what a tool does to a target, for the Guard.
type Access string

// The accesses.
const (
	Read   Access = "read"
	Write  Access = "write"
	Delete Access = "delete"
)

// Guard decides whether an access to a resolved target may happen. It gets
// the path as the agent wrote it and the target it reaches, and returns nil
// or a *workspace.PathError (kind protected, usually). A nil Guard allows
// every target inside the workspace.
type Guard func(access Access, written string, t *workspace.Target) error

// Limits bound what one call reads and returns; zero values take the
// defaults below.
type Limits struct {
	// MaxFileBytes is the size ceiling of read_file, edit_file and
	// apply_patch; a larger file is refused naming both sizes.
	MaxFileBytes int64
	// MaxEntries bounds list_dir and find_files results.
	MaxEntries int
	// MaxMatches bounds search_files matches.
	MaxMatches int
	// MaxOutputBytes bounds the text search_files returns.
	MaxOutputBytes int
	// MaxSearchFileBytes: search_files skips larger files, saying so.
	MaxSearchFileBytes int64
}

// The defaults.
const (
	DefaultMaxFileBytes       = 4 << 20
	DefaultMaxEntries         = 1000
	DefaultMaxMatches         = 500
	DefaultMaxOutputBytes     = 256 << 10
	DefaultMaxSearchFileBytes = 16 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxMatches <= 0 {
		l.MaxMatches = DefaultMaxMatches
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxSearchFileBytes <= 0 {
		l.MaxSearchFileBytes = DefaultMaxSearchFileBytes
	}
	return l
}

// Tools runs the file tools over one workspace.
type Tools struct {
	WS     *workspace.Workspace
	Guard  Guard
	Limits Limits
}

// ErrorKind names why a tool refused a request that named a usable path.
type ErrorKind string

// The error kinds.
const (
	TooLarge    ErrorKind = "too_large"    // the file is over the size ceiling
	Binary      ErrorKind = "binary"       // the file is not text
	NoMatch     ErrorKind = "no_match"     // edit_file's old text is not in the file
	Ambiguous   ErrorKind = "ambiguous"    // edit_file's old text is there more than once
	PatchFailed ErrorKind = "patch_failed" // a hunk of apply_patch does not apply
	BadArgument ErrorKind = "bad_argument" // an argument is malformed (a bad glob or regexp, a negative offset)
	WrongType   ErrorKind = "wrong_type"   // a directory where a file is needed, or the reverse
)

// Error is a tool's refusal of a request on a usable path.
type Error struct {
	Kind    ErrorKind
	Path    string
	Message string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Kind, e.Message)
	}
	return fmt.Sprintf("%s: %q: %s", e.Kind, e.Path, e.Message)
}

// Change is what a mutating tool did: the paths it changed (relative to
// their root, as the agent named them where it could) and one unified diff
// of all of it.
type Change struct {
	Paths []string `json:"paths"`
	Diff  string   `json:"diff"`
}

// resolve resolves p and asks the guard about the access.
func (t *Tools) resolve(access Access, p string) (*workspace.Target, error) {
	tg, err := t.WS.Resolve(p)
	if err != nil {
		return nil, err
	}
	if t.Guard != nil {
		if err := t.Guard(access, p, tg); err != nil {
			return nil, err
		}
	}
	return tg, nil
}
