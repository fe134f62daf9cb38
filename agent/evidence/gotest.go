package evidence

import (
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/shell"
)

// flagKind is how a go test flag takes its value.
type flagKind int

const (
	// boolFlag is -f or -f=bool, never -f value.
	boolFlag flagKind = iota
	// valueFlag is -f=value or -f value.
	valueFlag
	// optionalFlag is -f or -f=value, never -f value (-buildvcs).
	optionalFlag
)

// goTestFlags are the flags of `go test` known to leave its -json report
// whole: they choose which tests run and how, and how the packages are
// built. Any other flag refuses the line, among them -json itself, -c and
// -o and -exec (no test runs, or another program runs it), -list, -bench
// and -fuzz (other output), -n, -toolexec, -overlay and -modfile (the
// files built are not the files in the workspace), and -v, which after
// -json overrides the binary's -test.v=test2json with -test.v=true: the
// binary then prints its framing without the ^V marker, and a test that
// prints "--- PASS: TestX" reports TestX passed. GoTestLine therefore
// takes -v (or -v=true, -v=false) out of the line before it adds -json:
// -v changes nothing but what is printed, and the report is verbose.
var goTestFlags = map[string]flagKind{
	"count":        valueFlag,
	"run":          valueFlag,
	"skip":         valueFlag,
	"timeout":      valueFlag,
	"short":        boolFlag,
	"failfast":     boolFlag,
	"shuffle":      valueFlag,
	"parallel":     valueFlag,
	"cpu":          valueFlag,
	"p":            valueFlag,
	"race":         boolFlag,
	"tags":         valueFlag,
	"cover":        boolFlag,
	"covermode":    valueFlag,
	"coverpkg":     valueFlag,
	"coverprofile": valueFlag,
	"vet":          valueFlag,
	"mod":          valueFlag,
	"trimpath":     boolFlag,
	"buildvcs":     optionalFlag,
	"ldflags":      valueFlag,
	"gcflags":      valueFlag,
	"fullpath":     boolFlag,
}

// binaryFlags are the testing package's own flags (-test.name) that may
// follow -args: the same choices of what runs. Any other -test. flag
// refuses the line (-test.v=false silences the report, and
// -test.paniconexit0=false lets a test's os.Exit(0) end the binary as a
// pass); a flag of the test's own passes.
var binaryFlags = map[string]bool{
	"run": true, "skip": true, "count": true, "timeout": true, "short": true,
	"failfast": true, "parallel": true, "cpu": true, "shuffle": true,
}

// GoTestLine returns line with -json added right after `go test` (and
// -count=1 after it when the line sets no -count), and
// true, when line (a line of rein's grammar, parsed with p) is a single
// `go test` whose report -json makes machine-readable without changing
// what runs: one stage, the program go (or a path to it) with "test" as
// its first argument, only flags of a known-compatible list (goTestFlags),
// package patterns, and after -args (or --) anything but a -test. flag
// outside binaryFlags. A redirect of standard output refuses the line (the
// report would not be read); those of standard error and input are kept.
// The line is printed by the grammar's printer, each word quoted with
// shell.Quote where it needs it, so that it parses to line's argv with
// "-json" as its third word. Otherwise GoTestLine returns "" and false,
// and the gate is judged by its exit status alone.
//
//	go test -race ./...    =>  go test -json -race ./...
//	go test -count=1 ./... =>  go test -json '-count=1' ./...
func GoTestLine(p shell.Parser, line string) (string, bool) {
	l, err := p.Parse(line)
	if err != nil || len(l.Pipelines) != 1 || len(l.Pipelines[0].Stages) != 1 {
		return "", false
	}
	st := l.Pipelines[0].Stages[0]
	// Variables set before go (GOFLAGS=-run=X), a venv, or a line run
	// in the background would change what the gate's tests are.
	if l.Background || len(st.Env) > 0 || st.Venv != "" {
		return "", false
	}
	if st.Kind != shell.Command || len(st.Argv) < 2 || !isGo(st.Argv[0]) || st.Argv[1] != "test" {
		return "", false
	}
	args := withoutVerbose(st.Argv[2:])
	if !goTestArgs(args) {
		return "", false
	}
	for _, r := range st.Redirects {
		if r.IsWrite() && r.Fd == 1 {
			return "", false
		}
	}
	added := []string{"-json"}
	if !hasCount(args) {
		// No test result is read from a cache: go test keys the files a
		// test reads by size and time, which the run can set at will.
		added = append(added, "-count=1")
	}
	out := &shell.Stage{
		Kind:      shell.Command,
		Argv:      slices.Concat(st.Argv[:2], added, args),
		Redirects: st.Redirects,
	}
	printed := (&shell.Line{Pipelines: []*shell.Pipeline{{Stages: []*shell.Stage{out}}}}).String()
	// The printer is the grammar's own; a line it prints that does not
	// parse back is not run in place of the gate's.
	back, err := p.Parse(printed)
	if err != nil || len(back.Pipelines) != 1 || len(back.Pipelines[0].Stages) != 1 ||
		!slices.Equal(back.Pipelines[0].Stages[0].Argv, out.Argv) ||
		!slices.Equal(back.Pipelines[0].Stages[0].Redirects, out.Redirects) {
		return "", false
	}
	return printed, true
}

// withoutVerbose is the arguments after `go test` without its -v flag
// (-v, --v, or either with a boolean value), read as cmd/go reads them:
// the value of a flag that takes one is kept whatever it is, and the test
// binary's arguments after -args or -- are kept whole. What cannot be
// read (-v=test2json, an unknown flag) is kept, for goTestArgs to refuse.
func withoutVerbose(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" || a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
			if name == "v" {
				if !hasValue {
					continue
				}
				if _, err := strconv.ParseBool(value); err == nil {
					continue
				}
			}
			if goTestFlags[name] == valueFlag && name != "v" && !hasValue && i+1 < len(args) {
				out = append(out, a, args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// isGo reports whether argv0 names the go command: go alone, found on
// the sandbox's PATH, which holds no directory the run can write. A path
// to a program named go is not taken for it: it may be the run's own,
// printing any report it likes.
func isGo(argv0 string) bool {
	return argv0 == "go"
}

// hasCount reports whether go test's own flags (before -args) set
// -count, which keeps go test from reading a cached result.
func hasCount(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" || a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "count" {
			return true
		}
		if goTestFlags[name] == valueFlag && !hasValue {
			i++ // its value, whatever it looks like
		}
	}
	return false
}

// goTestArgs reports whether the arguments after `go test` are all known
// to be compatible with -json, as cmd/go's testFlags reads them: flags and
// package patterns, then after -args or -- the test binary's arguments.
func goTestArgs(args []string) bool {
	pkgs, pkgsEnded := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-args" || a == "--args" || a == "--":
			return binaryArgs(args[i+1:])
		case a == "-":
			return false
		case !strings.HasPrefix(a, "-") && pkgsEnded:
			// A word after the package list and a flag is no package:
			// go test passes it, and all after it, to the binary.
			return false
		case !strings.HasPrefix(a, "-"):
			pkgs = true
			continue
		}
		pkgsEnded = pkgs
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		kind, known := goTestFlags[name]
		switch {
		case !known:
			return false
		case kind == boolFlag && hasValue:
			if _, err := strconv.ParseBool(value); err != nil {
				return false
			}
		case kind == valueFlag && !hasValue:
			if i+1 == len(args) {
				return false
			}
			i++
		}
	}
	return true
}

// binaryArgs reports whether the arguments go test passes to the test
// binary leave its report whole.
func binaryArgs(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, ok := strings.CutPrefix(strings.TrimPrefix(a[1:], "-"), "test.")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !binaryFlags[name] {
			return false
		}
	}
	return true
}
