package policy

import (
	"fmt"
	"strings"
)

// This file holds the option allowlists of the programs the class table
// calls read-only. A program is read-only only with options rein knows:
// each option is listed with what its value is, and an option not listed,
// an ambiguous abbreviation, or a value rein cannot read (program text, a
// file of more arguments) makes the stage unknown. A list of dangerous
// options would miss the next one; a list of known ones cannot.

// valKind says what an option's value is to the policy.
type valKind uint8

const (
	// valWord is a number, a pattern, a name or a format: nothing the
	// program opens.
	valWord valKind = iota
	// valRead is a path the program reads: decided as a read.
	valRead
	// valWrite is a path the program writes: decided as a write, and the
	// stage is at least workspace-mutating.
	valWrite
	// valCode is program text the row's refinement reads itself (sed's
	// -e, awk's --source).
	valCode
	// valProgram is program text, or a file or directory of it, that the
	// policy cannot read (awk -f, less's lesskey files, jq's library
	// path): the stage is unknown.
	valProgram
	// valArgs is a file of more arguments (binutils' @FILE): its path is
	// decided as a read and the stage is unknown, since the arguments
	// are not seen.
	valArgs
	// valNever marks an option rein knows and will not call read-only
	// whatever its value (a program it runs, a network query).
	valNever
)

// allowlist is a program's known options, on top of the layout its
// argSpec gives for telling values from operands.
type allowlist struct {
	// flags are the short options that take no value.
	flags string
	// kinds says what the value of an option (a short letter or a long
	// name) is; an option with a value that is absent here is valWord.
	// A flag listed here with valNever is known and never read-only.
	kinds map[string]valKind
	// numeric accepts -NUM (head -5, grep -3).
	numeric bool
	// atFiles reads an operand @FILE as a file of arguments.
	atFiles bool
}

// checkOptions reads c's words with spec and its allowlist: values that
// are paths are recorded, and an option the list does not know, or a value
// rein cannot read, makes the stage unknown.
func checkOptions(c *classCall, spec *argSpec) {
	al := spec.allow
	if al == nil {
		return
	}
	for _, w := range spec.scan(c.args) {
		if w.opt == "" {
			if al.atFiles && strings.HasPrefix(w.text, "@") && len(w.text) > 1 {
				c.reads(w.text[1:])
				c.raise(Unknown, fmt.Sprintf("%s reads more arguments from the file %s, which rein cannot see", c.name, w.text[1:]))
			}
			continue
		}
		if w.unknown {
			c.raise(Unknown, fmt.Sprintf("%s is not an option rein knows %s to have, so %s is not known to be read-only", w.text, c.name, c.name))
			continue
		}
		switch al.kinds[w.opt] {
		case valRead:
			if w.hasValue {
				c.reads(w.value)
			}
		case valWrite:
			if w.hasValue {
				c.writes(w.value)
			}
			c.raise(WorkspaceMutating, fmt.Sprintf("%s %s writes a file", c.name, dashed(w.opt)))
		case valProgram:
			if w.hasValue {
				c.reads(w.value)
			}
			c.raise(Unknown, fmt.Sprintf("%s %s reads program text or settings from a file rein cannot see", c.name, dashed(w.opt)))
		case valArgs:
			if w.hasValue {
				c.reads(w.value)
			}
			c.raise(Unknown, fmt.Sprintf("%s %s reads more arguments from a file rein cannot see", c.name, dashed(w.opt)))
		case valNever:
			c.raise(Unknown, fmt.Sprintf("%s %s is not read-only", c.name, dashed(w.opt)))
		}
	}
}

// dashed writes an option's name as it is given: -k, --lesskey-file.
func dashed(opt string) string {
	if len(opt) == 1 {
		return "-" + opt
	}
	return "--" + opt
}

// knownShort reports whether a short option letter is one the spec knows.
func (s *argSpec) knownShort(ch byte) bool {
	if s.allow == nil {
		return true
	}
	return strings.IndexByte(s.allow.flags, ch) >= 0 || strings.IndexByte(s.values, ch) >= 0 ||
		strings.IndexByte(s.optional, ch) >= 0 || strings.IndexByte(s.digits, ch) >= 0
}

// knownLong reports whether a resolved long option name is one the spec
// knows.
func (s *argSpec) knownLong(name string) bool {
	if s.allow == nil {
		return true
	}
	_, ok := s.long[name]
	return ok
}

// optionNames lists every option a spec knows, written with its dashes,
// for the drift test.
func (s *argSpec) optionNames() map[string]bool {
	names := map[string]bool{}
	for _, set := range []string{s.values, s.optional, s.digits} {
		for i := 0; i < len(set); i++ {
			names["-"+set[i:i+1]] = true
		}
	}
	if s.allow != nil {
		for i := 0; i < len(s.allow.flags); i++ {
			names["-"+s.allow.flags[i:i+1]] = true
		}
	}
	for n := range s.long {
		names["--"+n] = true
	}
	return names
}
