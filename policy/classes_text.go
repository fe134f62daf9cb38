package policy

import (
	"fmt"
	"strings"
)

// The class table's refinements for programs that carry a program or an
// expression of their own: sed, awk and find.

var sedArgs = argSpec{values: "efl", optional: "i", long: longs("expression=", "file=", "in-place?", "line-length=",
	"quiet", "silent", "debug", "posix", "sandbox", "follow-symlinks", "regexp-extended", "separate", "unbuffered",
	"null-data", "zero-terminated", "binary", "help", "version")}

// refineSed reads the sed program: without -e or -f the first operand is
// the program, and its e, w, W, r and R commands decide the class.
func refineSed(c *classCall) {
	ws := sedArgs.scan(c.args)
	scripts := ws.values("e", "expression")
	files := ws.values("f", "file")
	ops := ws.operands()
	if len(scripts) == 0 && len(files) == 0 && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	c.inline(scripts...)
	for _, f := range files {
		if f == "-" {
			c.raise(ShellComplex, "sed reads its program from standard input")
			continue
		}
		c.reads(f)
		c.raise(Unknown, "sed runs a program file rein cannot see")
	}
	prog := sedProgram(strings.Join(scripts, "\n"))
	c.reads(prog.reads...)
	switch {
	case !prog.ok:
		c.raise(ShellComplex, "the sed program is not understood")
	case prog.runs:
		c.raise(ShellComplex, "the sed program runs commands")
	case len(prog.writes) > 0:
		c.writes(prog.writes...)
		c.raise(ShellComplex, "the sed program writes files")
	}
	c.reads(ops...)
	if ws.has("i", "in-place") {
		c.writes(ops...)
		c.raise(WorkspaceMutating, "sed -i edits files in place")
	}
}

// sedFacts is what a sed program does besides printing.
type sedFacts struct {
	runs   bool     // e command or s///e: runs shell commands
	writes []string // w, W and s///w files
	reads  []string // r and R files
	ok     bool     // false when the program is not understood
}

// sedProgram reads a GNU sed program command by command. It has to parse
// rather than search: "s/we/they/" holds a w and an e that are neither
// commands nor flags, while "s/a/b/e" runs its result as a command.
func sedProgram(p string) sedFacts {
	var f sedFacts
	i := 0
	skip := func(set string) {
		for i < len(p) && strings.IndexByte(set, p[i]) >= 0 {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(p[i:], '\n')
		if j < 0 {
			j = len(p) - i
		}
		s := p[i : i+j]
		i += j
		return s
	}
	// delimited reads up to the unescaped delimiter d and moves past it. In
	// a regex a bracket expression is read whole, since GNU sed does not end
	// the regex at a delimiter inside one: s/[/]/x/ replaces a slash.
	delimited := func(d byte, regex bool) bool {
		for i < len(p) {
			switch p[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			case '[':
				if regex {
					end := sedBracketEnd(p, i)
					if end < 0 {
						return false
					}
					i = end
					continue
				}
			}
			i++
		}
		return false
	}
	address := func() bool {
		if i >= len(p) {
			return true
		}
		switch ch := p[i]; {
		case ch >= '0' && ch <= '9':
			skip("0123456789")
			if i < len(p) && p[i] == '~' {
				i++
				skip("0123456789")
			}
		case ch == '$':
			i++
		case ch == '/':
			i++
			if !delimited('/', true) {
				return false
			}
			skip("IM")
		case ch == '\\':
			if i+1 >= len(p) {
				return false
			}
			d := p[i+1]
			i += 2
			if !delimited(d, true) {
				return false
			}
			skip("IM")
		}
		return true
	}
	for {
		skip(" \t\n;")
		if i >= len(p) {
			f.ok = true
			return f
		}
		if p[i] == '#' {
			toEOL()
			continue
		}
		if !address() {
			return f
		}
		skip(" \t")
		if i < len(p) && p[i] == ',' {
			i++
			skip(" \t")
			if i < len(p) && (p[i] == '+' || p[i] == '~') {
				i++
				skip("0123456789")
			} else if !address() {
				return f
			}
		}
		skip(" \t!")
		if i >= len(p) {
			return f
		}
		cmd := p[i]
		i++
		switch cmd {
		case '{', '}':
			continue
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			skip(" \t")
			skip("0123456789")
		case 'a', 'i', 'c':
			// Text runs to an unescaped newline.
			for i < len(p) && p[i] != '\n' {
				if p[i] == '\\' {
					i++
				}
				i++
			}
			continue
		case ':', 'b', 't', 'T', 'v':
			// GNU sed ends a label (and v's version) at a blank, a ; or
			// a newline; what follows a blank is the next command
			// (:a e cmd runs cmd).
			skip(" \t")
			for i < len(p) && strings.IndexByte(" \t\n;", p[i]) < 0 {
				i++
			}
			continue
		case 'r', 'R':
			skip(" \t")
			f.reads = append(f.reads, toEOL())
			continue
		case 'w', 'W':
			skip(" \t")
			f.writes = append(f.writes, toEOL())
			continue
		case 'e':
			f.runs = true
			toEOL()
			continue
		case 'y', 's':
			if i >= len(p) || p[i] == '\n' || p[i] == '\\' {
				return f
			}
			d := p[i]
			i++
			// The pattern, then the replacement (or the two sets of y).
			for k := range 2 {
				if !delimited(d, cmd == 's' && k == 0) {
					return f
				}
			}
			if cmd == 's' {
				for i < len(p) && strings.IndexByte("gpiImMe0123456789w", p[i]) >= 0 {
					switch p[i] {
					case 'e':
						f.runs = true
					case 'w':
						i++
						skip(" \t")
						f.writes = append(f.writes, toEOL())
						continue
					}
					i++
				}
			}
		default:
			return f
		}
		skip(" \t")
		if i < len(p) && strings.IndexByte(";\n}#", p[i]) < 0 {
			return f
		}
	}
}

// sedBracketEnd returns the index just past the bracket expression that
// opens at p[start], or -1 when it does not close on its line. As in POSIX,
// a ] right after [ or [^ is a member, a backslash is literal, and [:, [.
// and [= open a class, collating symbol or equivalence class that runs to
// the matching :], .] or =], so that [[:alpha:]/] holds a slash.
func sedBracketEnd(p string, start int) int {
	j := start + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != '\n' {
		switch {
		case p[j] == ']':
			return j + 1
		case p[j] == '[' && j+1 < len(p) && strings.IndexByte(":.=", p[j+1]) >= 0:
			closing := string([]byte{p[j+1], ']'})
			k := strings.Index(p[j+2:], closing)
			if k < 0 || strings.IndexByte(p[j+2:j+2+k], '\n') >= 0 {
				return -1
			}
			j += 2 + k + 2
		default:
			j++
		}
	}
	return -1
}

// gawkOutputs are gawk's options that write a file, with the file each
// writes when none is attached.
var gawkOutputs = map[string]string{"d": "awkvars.out", "dump-variables": "awkvars.out",
	"p": "awkprof.out", "profile": "awkprof.out", "o": "awkprof.out", "pretty-print": "awkprof.out"}

var awkArgs = argSpec{values: "FvfEeilW", optional: "dDop", long: longs("field-separator=", "assign=", "file=",
	"exec=", "include=", "load=", "source=", "dump-variables?", "debug?", "profile?", "pretty-print?",
	"characters-as-bytes", "traditional", "copyright", "gen-pot", "help", "lint?", "bignum", "use-lc-numeric",
	"non-decimal-data", "optimize", "no-optimize", "posix", "re-interval", "sandbox", "lint-old", "version",
	"csv")}

// awkDanger are the words that let an awk program run commands, write
// files or read files rein cannot name: system(), pipes, output
// redirection, getline, gawk's @ directives (@load, @include) and indirect
// calls. The test is on the program text as a whole, so a comparison with >
// or an @ in a string counts too; that errs towards asking.
var awkDanger = []string{"system", "|", ">", "getline", "@", "SYMTAB", "FUNCTAB",
	// Computed file names and calls: ARGV can be rewritten to name other
	// input files, ENVIRON and PROCINFO carry values rein does not see,
	// and gawk's @name() calls whatever function name holds.
	"ARGV", "ENVIRON", "PROCINFO"}

// awkSafeW are the -W words known to print or set a mode only.
var awkSafeW = setOf("version", "v", "usage", "help", "interactive", "i", "posix_space", "posix", "traditional",
	"compat", "sprintf", "random", "re-interval", "lint", "characters-as-bytes", "copyright")

func refineAwk(c *classCall) {
	ws := awkArgs.scan(c.args)
	progs := ws.values("e", "source")
	files := ws.values("f", "file", "E", "exec", "i", "include")
	ops := ws.operands()
	if len(progs) == 0 && len(files) == 0 && len(ops) > 0 {
		progs, ops = ops[:1], ops[1:]
	}
	c.inline(progs...)
	for _, f := range files {
		c.reads(f)
		c.raise(Unknown, "awk runs a program file rein cannot see")
	}
	if ws.has("l", "load") {
		c.raise(ShellComplex, "gawk -l loads a compiled extension")
	}
	// -W takes mawk's and gawk's own option words: only those that print
	// or set a mode are known; exec, source, load, include and the rest
	// read or run programs.
	for _, v := range ws.values("W") {
		name, _, _ := strings.Cut(v, "=")
		if !awkSafeW[name] {
			c.raise(Unknown, fmt.Sprintf("awk -W %s is not an option word rein knows to be read-only", v))
		}
	}
	for _, prog := range progs {
		for _, d := range awkDanger {
			if strings.Contains(prog, d) {
				c.raise(ShellComplex, "the awk program can run commands or write files ("+d+")")
			}
		}
	}
	for _, w := range ws {
		if out, ok := gawkOutputs[w.opt]; ok {
			if w.hasValue {
				out = w.value
			}
			c.writes(out)
			c.raise(WorkspaceMutating, "gawk writes a dump or profile file")
		}
	}
	for _, op := range ops {
		if !isAssignment(op) {
			c.reads(op)
		}
	}
}

// isAssignment reports whether a word is NAME=VALUE with NAME an
// identifier: awk operands, env and sudo words of that form set variables.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if ch != '_' && (ch < 'a' || ch > 'z') && (ch < 'A' || ch > 'Z') && (i == 0 || ch < '0' || ch > '9') {
			return false
		}
	}
	return true
}

// findScan is what a find expression does besides listing names.
type findScan struct {
	execs   [][]string // -exec, -execdir, -ok, -okdir commands with their arguments, {} kept
	deletes bool       // -delete
	writes  []string   // -fprint, -fprint0, -fprintf, -fls files
	reads   []string   // starting points, -files0-from and reference files
	// unknown says why the expression is not known to be read-only: a
	// word find has that rein does not know, or starting points from a
	// file.
	unknown string
}

// findOneArg are find's primaries that take one argument, which must not
// be read as a primary itself (find . -name -delete deletes nothing).
// findNoArg are find's options, tests, actions and operators that take no
// argument; findReference are the tests that name a file whose times or
// identity they compare.
var (
	findNoArg = setOf("-daystart", "-depth", "-d", "-follow", "-ignore_readdir_race", "-noignore_readdir_race",
		"-mount", "-noleaf", "-xdev", "-warn", "-nowarn", "-empty", "-executable", "-false", "-nogroup", "-nouser",
		"-readable", "-writable", "-true", "-print", "-print0", "-ls", "-prune", "-quit", "-delete", "-a", "-and",
		"-o", "-or", "-not", "-help", "--help", "-version", "--version")
	findReference = setOf("-newer", "-anewer", "-cnewer", "-samefile")
)

var findOneArg = setOf("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-lname", "-ilname", "-type", "-xtype", "-user", "-group", "-uid", "-gid", "-perm", "-size", "-mtime",
	"-atime", "-ctime", "-mmin", "-amin", "-cmin", "-newer", "-anewer", "-cnewer", "-samefile", "-inum",
	"-links", "-used", "-maxdepth", "-mindepth", "-fstype", "-context", "-printf", "-regextype")

func scanFind(args []string) findScan {
	var s findScan
	i := 0
	// Leading options, then starting points up to the first word that
	// begins an expression.
	for i < len(args) {
		switch a := args[i]; {
		case a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O"):
			i++
		case a == "-D":
			i += 2
		default:
			goto points
		}
	}
points:
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == ")" || a == "!" || a == "," {
			break
		}
		// A starting point is read: find prints the names, sizes and
		// times of what is beneath it.
		s.reads = append(s.reads, a)
		i++
	}
	for i < len(args) {
		a := args[i]
		i++
		switch {
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			var cmd []string
			for i < len(args) {
				w := args[i]
				i++
				// ";" always ends the command; "+" only right after "{}".
				if w == ";" || w == "+" && len(cmd) > 0 && cmd[len(cmd)-1] == "{}" {
					break
				}
				cmd = append(cmd, w)
			}
			if len(cmd) > 0 {
				s.execs = append(s.execs, cmd)
			}
		case a == "-delete":
			s.deletes = true
		case a == "-fprint" || a == "-fprint0" || a == "-fls" || a == "-fprintf":
			if i < len(args) {
				s.writes = append(s.writes, args[i])
			}
			i++
			if a == "-fprintf" {
				i++
			}
		case a == "-files0-from":
			if i < len(args) {
				s.reads = append(s.reads, args[i])
			}
			s.unknown = "find -files0-from reads its starting points from a file rein cannot see"
			i++
		case findReference[a] || strings.HasPrefix(a, "-newer") && len(a) == len("-newerXY"):
			// The file's times or identity are read.
			if i < len(args) && !(len(a) == len("-newerXY") && a[len(a)-1] == 't') {
				s.reads = append(s.reads, args[i])
			}
			i++
		case findOneArg[a]:
			i++
		case findNoArg[a] || a == "(" || a == ")" || a == "!" || a == ",":
		default:
			if s.unknown == "" {
				s.unknown = a + " is not a find expression rein knows, so find is not known to be read-only"
			}
		}
	}
	return s
}

func refineFind(c *classCall) {
	s := scanFind(c.args)
	c.reads(s.reads...)
	if s.unknown != "" {
		c.raise(Unknown, s.unknown)
	}
	if len(s.writes) > 0 {
		c.writes(s.writes...)
		c.raise(WorkspaceMutating, "find -fprint writes a file")
	}
	if len(s.execs) > 0 {
		c.raise(ShellComplex, "find -exec runs a command on every file")
		runs := make([]innerRun, len(s.execs))
		for i, cmd := range s.execs {
			runs[i] = innerRun{argv: cmd, perFile: true}
		}
		c.absorb(runs)
	}
	if s.deletes {
		c.raise(Dangerous, "find -delete deletes every file it finds")
	}
}
