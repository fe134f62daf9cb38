package policy

import (
	"strings"
)

// The class table's refinements for interpreters and shells: the scripts and program text they run.

// Interpreters.

// interpreter describes how a script interpreter takes program text.
type interpreter struct {
	args argSpec
	// code are the options whose value is program text (python -c).
	code []string
	// complex are options that make it run code the matcher cannot see
	// (python -m, perl -M); the spec names -c, -e and -m for every one.
	complex []string
	// script are options whose value names the script file (php -f).
	script []string
	// lines are options that make the operands input files (perl -n).
	lines []string
	// inPlace are options that rewrite those input files (perl -i).
	inPlace []string
	// info are options that only print (--version).
	info []string
}

var pythonInterp = interpreter{
	args:    argSpec{values: "cmWX", final: "cm", posix: true, long: longs("check-hash-based-pycs=", "help", "help-env", "help-xoptions", "help-all", "version")},
	code:    []string{"c"},
	complex: []string{"m"},
	info:    []string{"V", "version", "h", "help", "?", "help-env", "help-xoptions", "help-all"},
}

var perlInterp = interpreter{
	args: argSpec{values: "eEIMm", optional: "iFxdDCV", digits: "0l", posix: true,
		long: longs("help", "version")},
	code:    []string{"e", "E"},
	complex: []string{"c", "M", "m", "d"},
	lines:   []string{"n", "p"},
	inPlace: []string{"i"},
	info:    []string{"v", "version", "h", "help", "V"},
}

var rubyInterp = interpreter{
	args: argSpec{values: "eIrCE", optional: "iFxWTK", digits: "0", posix: true,
		long: longs("enable=", "disable=", "encoding=", "external-encoding=", "internal-encoding=", "dump=",
			"backtrace-limit=", "crash-report=", "version", "help", "verbose", "copyright", "jit", "yjit")},
	code:    []string{"e"},
	complex: []string{"c", "r", "m"},
	lines:   []string{"n", "p"},
	inPlace: []string{"i"},
	info:    []string{"v", "version", "h", "help", "copyright"},
}

var phpInterp = interpreter{
	args: argSpec{values: "rBREFfcdzSt", posix: true,
		long: longs("ini", "rf=", "rc=", "re=", "rz=", "ri=", "help", "version")},
	code: []string{"r", "B", "R", "E"},
	// -c names an ini file, -d sets an ini value and -z loads an extension:
	// each can make php run code (auto_prepend_file) rein cannot see.
	complex: []string{"c", "e", "m", "a", "d", "z"},
	script:  []string{"f", "F", "S"},
	info:    []string{"v", "version", "h", "help", "i", "ini", "rf", "rc", "re", "rz", "ri"},
}

// pythonModules are the modules python -m runs that are decided as the
// program of the same name: the test runners and tools whose entry point
// the module is. A module the working directory shadows (a pytest.py or
// pytest/ there, which Python imports first) is the workspace's code.
var pythonModules = map[string]string{
	"pytest": "pytest", "unittest": "pytest", "pip": "pip", "pip3": "pip",
	"mypy": "mypy", "ruff": "ruff", "black": "black", "flake8": "flake8", "pylint": "pylint",
	"isort": "isort", "coverage": "coverage", "tox": "tox", "nox": "nox",
}

// pythonModuleOptions are the python options that may stand before -m
// MODULE without changing which code runs: output, bytecode, warnings,
// optimisation and isolation switches.
var pythonModuleOptions = setOf("u", "B", "q", "s", "E", "I", "P", "O", "OO", "W", "b", "bb", "v")

// pythonModule is the program python -m MODULE ARGS... is decided as, with
// its arguments, or nil.
func pythonModule(ws argWords) []string {
	mods := ws.values("m")
	if len(mods) != 1 {
		return nil
	}
	prog, ok := pythonModules[mods[0]]
	if !ok {
		return nil
	}
	for _, w := range ws {
		if w.opt != "" && w.opt != "m" && !pythonModuleOptions[w.opt] {
			return nil
		}
	}
	if mods[0] == "unittest" {
		// python -m unittest runs the workspace's tests, as pytest
		// does; its arguments are test names, not pytest's options.
		return []string{prog}
	}
	return append([]string{prog}, ws.operands()...)
}

func refineInterpreter(in *interpreter) func(*classCall) {
	return func(c *classCall) {
		ws := in.args.scan(c.args)
		ops := ws.operands()
		if in == &pythonInterp {
			if argv := pythonModule(ws); argv != nil {
				// python -m pytest is pytest, unless the working
				// directory shadows the module (checkCommand looks).
				c.set(ReadOnly, "")
				c.absorb([]innerRun{{argv: argv}})
				c.f.PythonModule = ws.values("m")[0]
				return
			}
		}
		code := ws.values(in.code...)
		c.inline(code...)
		switch {
		case len(code) > 0:
			c.set(ShellComplex, c.name+" runs program text given on the command line")
		case ws.has(in.complex...):
			c.set(ShellComplex, c.name+" runs code the matcher cannot see (a module or configuration)")
		case len(ws.values(in.script...)) > 0:
			c.set(Unknown, c.name+" runs a script")
			return
		case len(ops) == 0 && ws.has(in.info...):
			c.set(Unknown, c.name+" prints information")
			return
		case len(ops) == 0 || ops[0] == "-" || isStdinPath(ops[0]):
			c.set(ShellComplex, c.name+" reads its program from standard input")
			c.f.ProgramFromStdin = true
			return
		default:
			c.set(Unknown, c.name+" runs a script")
			return
		}
		// With program text on the command line the operands are its
		// arguments, or its input files under -n and -p.
		if ws.has(in.lines...) {
			c.reads(ops...)
			if ws.has(in.inPlace...) {
				c.writes(ops...)
			}
		}
	}
}

// nodeValueOptions take the next word as their value. Node does not
// cluster short options, so each word is read whole.
var nodeValueOptions = setOf("-C", "--conditions", "--input-type", "--title", "--redirect-warnings",
	"--test-reporter", "--test-reporter-destination", "--test-name-pattern", "--watch-path",
	"--disable-warning", "--inspect-port", "--debug-port", "--icu-data-dir", "--openssl-config",
	"--diagnostic-dir", "--report-dir", "--secure-heap", "--heapsnapshot-signal", "--experimental-config-file")

func refineNode(c *classCall) {
	args := c.args
	info := false
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			i++
			break options
		case a == "-" || !strings.HasPrefix(a, "-"):
			break options
		case name == "-e" || name == "--eval" || name == "-p" || name == "--print" || name == "-pe":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.inline(value)
			c.raise(ShellComplex, "node runs program text given on the command line")
		case name == "-r" || name == "--require" || name == "--import" || name == "--loader" ||
			name == "--experimental-loader":
			if !hasValue {
				i++
			}
			c.raise(ShellComplex, "node "+name+" preloads code the matcher cannot see")
		case name == "-c" || name == "--check" || name == "-i" || name == "--interactive":
			c.raise(ShellComplex, "node "+name+" runs code the matcher cannot see")
		case name == "--env-file" || name == "--env-file-if-exists":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.reads(value)
		case nodeValueOptions[name]:
			if !hasValue {
				i++
			}
		case name == "-v" || name == "--version" || name == "-h" || name == "--help" || name == "--v8-options":
			info = true
		}
	}
	if c.f.Class == ShellComplex {
		return
	}
	switch {
	case i < len(args) && args[i] != "-" && !isStdinPath(args[i]):
		c.set(Unknown, "node runs a script")
	case info:
		c.set(Unknown, "node prints information")
	default:
		c.set(ShellComplex, "node reads its program from standard input")
		c.f.ProgramFromStdin = true
	}
}

// Shells.

// shellPrograms are the shells whose -c STRING is parsed and whose
// invocation without a script reads commands from standard input.
var shellPrograms = []string{"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "rbash", "yash", "fish", "csh", "tcsh"}

func refineShell(c *classCall) {
	inv := parseShellArgs(c.args)
	switch {
	case inv.hasCommand:
		c.inline(inv.command)
		c.set(ShellComplex, c.name+" -c runs a command string")
		c.absorb(shellStringRuns(inv.command, c.perFile))
	case inv.flagC:
		c.set(ShellComplex, c.name+" -c runs a command string")
	case inv.stdin:
		c.set(ShellComplex, c.name+" reads commands from standard input")
		c.f.ProgramFromStdin = true
	case inv.info:
		c.set(Unknown, c.name+" prints information")
	default:
		c.set(Unknown, c.name+" runs a script")
	}
}
