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
	if al.atFiles {
		// binutils expands every word that begins with @, an option's
		// value as much as an operand (strings -s @FILE).
		for _, a := range c.args {
			if strings.HasPrefix(a, "@") && len(a) > 1 {
				c.reads(a[1:])
				c.raise(Unknown, fmt.Sprintf("%s reads more arguments from the file %s, which rein cannot see", c.name, a[1:]))
			}
		}
	}
	for _, w := range spec.scan(c.args) {
		if w.opt == "" {
			continue
		}
		if w.unknown {
			c.raise(Unknown, fmt.Sprintf("%s is not an option rein knows %s to have, so %s is not known to be read-only", w.text, c.name, c.name))
			continue
		}
		switch al.kinds[w.opt] {
		case valWord, valCode:
			// A word, or program text the row's refinement reads.
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

// Option parsing.

// optKind says whether a long option takes a value.
type optKind uint8

const (
	optFlag     optKind = iota // --verbose
	optValue                   // --output FILE or --output=FILE
	optOptional                // --in-place or --in-place=SUFFIX, never the next word
)

// longs builds a long option table: a name ending in = takes a value, one
// ending in ? takes an optional attached value.
func longs(names ...string) map[string]optKind {
	m := make(map[string]optKind, len(names))
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "="):
			m[strings.TrimSuffix(n, "=")] = optValue
		case strings.HasSuffix(n, "?"):
			m[strings.TrimSuffix(n, "?")] = optOptional
		default:
			m[n] = optFlag
		}
	}
	return m
}

// argSpec describes a program's options the way getopt_long reads them, so
// that an option's value is never taken for a path. A short option it does
// not list is read as a flag.
type argSpec struct {
	values   string // short options that take a value, attached or as the next word: -n 5, -n5
	optional string // short options whose value, if any, is the rest of the word: sed -i.bak
	digits   string // short options whose value, if any, is the digits that follow: perl -0777, -l
	final    string // short options whose value ends option parsing: python -c CODE ARGS
	long     map[string]optKind
	// posix ends options at the first operand, as a "+" optstring does;
	// otherwise options may follow operands, as GNU tools allow.
	posix bool
	// allow, when set, makes the layout an allowlist: an option it does
	// not list is marked unknown (see options.go).
	allow *allowlist
}

// argWord is one option or operand of a scanned argv.
type argWord struct {
	// opt is the option's name without dashes ("r", "recursive"), an
	// abbreviated long option resolved to its full name; empty for an
	// operand.
	opt      string
	value    string
	hasValue bool
	// text is the word as written; for an operand, the operand.
	text string
	// next is the index in the scanned args just past the word and its
	// value.
	next int
	// unknown marks an option an allowlist does not list, or an
	// ambiguous abbreviation.
	unknown bool
}

type argWords []argWord

// scan splits args into options and operands.
func (s *argSpec) scan(args []string) argWords {
	ws, rest := s.scanHead(args)
	for k := rest; k < len(args); k++ {
		ws = append(ws, argWord{text: args[k], next: k + 1})
	}
	return ws
}

// split is scan for a posix layout, whose operands all come after its
// options: it returns the operands as a slice of args, so that a wrapper
// costs only its own words however long the command it runs.
func (s *argSpec) split(args []string) (argWords, []string) {
	ws, rest := s.scanHead(args)
	return ws, args[rest:]
}

// scanHead reads args up to the point from which every word is an operand
// ("--", the value of a final option, or the first operand of a posix
// layout) and returns what it read and that index.
func (s *argSpec) scanHead(args []string) (argWords, int) {
	var out argWords
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out, i + 1
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			name = s.longName(name)
			w := argWord{opt: name, value: value, hasValue: hasValue, text: a, unknown: !s.knownLong(name)}
			if !hasValue && s.long[name] == optValue && i+1 < len(args) {
				i++
				w.value, w.hasValue = args[i], true
			}
			w.next = i + 1
			out = append(out, w)
		case len(a) > 1 && a[0] == '-':
			final := false
		cluster:
			for j := 1; j < len(a); j++ {
				ch := a[j]
				w := argWord{opt: a[j : j+1], text: a, next: i + 1}
				switch {
				case strings.IndexByte(s.values, ch) >= 0:
					if j+1 < len(a) {
						w.value, w.hasValue = a[j+1:], true
					} else if i+1 < len(args) {
						i++
						w.value, w.hasValue, w.next = args[i], true, i+1
					}
					out = append(out, w)
					final = strings.IndexByte(s.final, ch) >= 0
					break cluster
				case strings.IndexByte(s.optional, ch) >= 0:
					if j+1 < len(a) {
						w.value, w.hasValue = a[j+1:], true
					}
					out = append(out, w)
					break cluster
				case strings.IndexByte(s.digits, ch) >= 0:
					k := j + 1
					for k < len(a) && a[k] >= '0' && a[k] <= '9' {
						k++
					}
					if k > j+1 {
						w.value, w.hasValue = a[j+1:k], true
					}
					out = append(out, w)
					j = k - 1
				case s.allow != nil && s.allow.numeric && ch >= '0' && ch <= '9':
					// -NUM: the rest of the word is the number.
					w.opt, w.value, w.hasValue = "NUM", a[j:], true
					w.unknown = !isDecimal(a[j:])
					out = append(out, w)
					break cluster
				default:
					w.unknown = !s.knownShort(ch)
					out = append(out, w)
				}
			}
			if final {
				return out, i + 1
			}
		case s.posix:
			return out, i
		default:
			out = append(out, argWord{text: a, next: i + 1})
		}
	}
	return out, len(args)
}

// longName resolves an abbreviated long option to the one option it
// abbreviates, as getopt_long does; an unknown or ambiguous name is
// returned as written, since the program would refuse it.
func (s *argSpec) longName(name string) string {
	if _, ok := s.long[name]; ok || name == "" {
		return name
	}
	match := ""
	for full := range s.long {
		if strings.HasPrefix(full, name) {
			if match != "" {
				return name
			}
			match = full
		}
	}
	if match == "" {
		return name
	}
	return match
}

// operands returns the words that are not options, in order.
func (ws argWords) operands() []string {
	var out []string
	for _, w := range ws {
		if w.opt == "" {
			out = append(out, w.text)
		}
	}
	return out
}

// has reports whether any of the named options was given.
func (ws argWords) has(opts ...string) bool {
	for _, w := range ws {
		for _, o := range opts {
			if w.opt != "" && w.opt == o {
				return true
			}
		}
	}
	return false
}

// values returns the values given to any of the named options, in order.
func (ws argWords) values(opts ...string) []string {
	var out []string
	for _, w := range ws {
		for _, o := range opts {
			if w.opt != "" && w.opt == o && w.hasValue {
				out = append(out, w.value)
			}
		}
	}
	return out
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
