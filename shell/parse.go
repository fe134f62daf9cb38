package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// MaxLineBytes is the longest line Parse accepts. It is above what execve
// takes for a whole argv (2 MiB on Linux), so no line that could run is
// refused for its length.
const MaxLineBytes = 4 << 20

// maxDepth bounds the nesting of && || | trees that the plan builder walks.
// The tree of a chain is as deep as the chain is long; the bound keeps a
// hostile line from costing more than a refusal.
const maxDepth = 100_000

// Parser parses lines with a given home directory for ~.
type Parser struct {
	// Home is what ~ and ~/x at the start of an unquoted word expand to: the
	// HOME the stages will see when they run. An empty Home refuses ~.
	Home string

	// Dir is the absolute directory the line starts in, as the stages
	// will see it: a relative glob is expanded from there (and from where
	// the line's cds lead), and $PWD is it until the first cd. Empty
	// leaves relative globs and $PWD opaque.
	Dir string

	// Files, when set, lists directories as the stages will see them,
	// and an unquoted glob in a command's arguments is expanded by rein
	// into the words it matches, with bash's rules, when the line is
	// planned: the plan holds the words, so the argv decided is the argv
	// that runs. Without Files a glob is opaque.
	Files Files

	// ShellRuns says a shell, not rein, will run the line, and the plan
	// is only decided (Claude Code's Bash without confinement): what
	// only holds when rein runs the plan stays opaque. A for loop's
	// variable is one: bash assigns it, and hands it to every program if
	// it was exported (for PATH in ...).
	ShellRuns bool

	// Vars are the variables whose values rein fills in where the line
	// reads them ($NAME, ${NAME}): fixed values of the sandbox the line
	// will run in. HOME is Home and PWD is Dir unless Vars sets them; a
	// variable Vars lacks is opaque.
	Vars map[string]string
}

// Files lists directories as the stages of a line will see them. dir is
// absolute; an error that is not fs.ErrNotExist or ENOTDIR (a directory
// outside what the stages may see, say) makes the glob that read it
// opaque, its text the reason.
type Files interface {
	ReadDir(dir string) ([]fs.DirEntry, error)
}

// Parse parses line with the process's $HOME for ~. Callers that run the
// plan in a sandbox with its own HOME use Parser{Home: ...}.Parse instead.
func Parse(line string) (*Line, error) {
	return Parser{Home: os.Getenv("HOME")}.Parse(line)
}

var parsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
}}

// Parse returns the plan of line, or a *Refusal naming the first construct
// (by byte offset) that rein will not run. It never returns both.
func (p Parser) Parse(line string) (*Line, error) {
	if r := prescan(line); r != nil {
		return nil, r
	}
	sp := parsers.Get().(*syntax.Parser)
	f, err := sp.Parse(strings.NewReader(line), "")
	parsers.Put(sp)
	if err != nil {
		return nil, parseErrorRefusal(line, err)
	}
	b := builder{home: p.Home, line: line, p: p, cwd: p.Dir, globBudget: globBudget{reads: maxGlobReads, names: maxGlobNames}}
	b.check(f)
	if len(f.Stmts) == 0 && b.first == nil {
		if len(b.notes) > 0 {
			b.add(refuse(Comment, 0, "the line is only a comment, and runs nothing"))
		} else {
			b.add(malformed(refuse(Syntax, 0, "empty line")))
		}
	}
	if b.first != nil {
		return nil, b.first
	}
	plan := &Line{Notes: b.notes}
	if n := len(f.Stmts); n > 0 && f.Stmts[n-1].Background {
		plan.Background, plan.BackgroundAt = true, off(f.Stmts[n-1].Semicolon)
	}
	for i, st := range f.Stmts {
		if fc, ok := st.Cmd.(*syntax.ForClause); ok {
			b.unroll(plan, fc)
			continue
		}
		if i > 0 && len(plan.Pipelines) > 0 {
			plan.Connectors = append(plan.Connectors, Seq)
		}
		b.list(plan, st, 0)
	}
	if b.first == nil {
		b.activations(plan)
	}
	if b.first != nil {
		return nil, b.first
	}
	return plan, nil
}

// FromArgv builds the plan of one stage that spawns argv verbatim, as the
// exec tool does: a ";" or "*" in argv is just a byte of an argument.
func FromArgv(argv []string) (*Line, error) {
	if len(argv) == 0 {
		return nil, errors.New("shell: empty argv: name the program to run")
	}
	for i, a := range argv {
		if j := strings.IndexByte(a, 0); j >= 0 {
			return nil, fmt.Errorf("shell: argv[%d] holds a NUL byte at %d: a program cannot receive one", i, j)
		}
	}
	if argv[0] == "" {
		return nil, errors.New("shell: argv[0] is empty: name the program to run")
	}
	st := &Stage{Kind: Command, Argv: append([]string(nil), argv...)}
	return &Line{Pipelines: []*Pipeline{{Stages: []*Stage{st}}}}, nil
}

// Stages returns every stage of the line, left to right.
func (l *Line) Stages() []*Stage {
	var out []*Stage
	for _, p := range l.Pipelines {
		out = append(out, p.Stages...)
	}
	return out
}

// prescan refuses what the tokeniser would reject or silently accept: NUL
// bytes (no program can receive one), invalid UTF-8, and overlong lines.
func prescan(line string) *Refusal {
	if len(line) > MaxLineBytes {
		return malformedRefuse(Syntax, MaxLineBytes, fmt.Sprintf("the line is %d bytes, longer than the %d the grammar accepts", len(line), MaxLineBytes))
	}
	if i := strings.IndexByte(line, 0); i >= 0 {
		return malformedRefuse(ControlCharacter, i, "a NUL byte cannot be passed to a program")
	}
	if !utf8.ValidString(line) {
		for i, r := range line {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(line[i:]); n <= 1 {
					return &Refusal{Construct: Syntax, Offset: i, Message: "the line is not valid UTF-8: pass arguments with such bytes through exec's argv", Malformed: true}
				}
			}
		}
	}
	// The tokeniser turns CR LF into LF even inside quotes, where bash
	// keeps both bytes; refusing the pair keeps the argv honest (as
	// opaque code bash reads it as written).
	if i := strings.Index(line, "\r\n"); i >= 0 {
		return &Refusal{Construct: Newline, Offset: i, Message: "a carriage return right before a newline is not supported, even quoted: send one line per call, and pass such bytes through exec's argv"}
	}
	if strings.TrimLeft(line, " \t\n") == "" {
		return malformedRefuse(Syntax, 0, "empty line")
	}
	return nil
}

// parseErrorRefusal turns a tokeniser error into a refusal. Where the error
// sits on a construct the grammar names (an unclosed $( for instance), the
// refusal names that construct rather than a bare syntax error.
func parseErrorRefusal(line string, err error) *Refusal {
	off, text := 0, err.Error()
	var pe syntax.ParseError
	var le syntax.LangError
	switch {
	case errors.As(err, &pe):
		off, text = int(pe.Pos.Offset()), pe.Text
	case errors.As(err, &le):
		off, text = int(le.Pos.Offset()), le.Feature+" is not supported"
	}
	if c, at, ok := firstNamedConstruct(line); ok && at <= off {
		return malformed(refuse(c, at, ""))
	}
	if w := wordAt(line, off); reservedWords[w] {
		return malformed(refuse(CompoundCommand, off, fmt.Sprintf("%q", w)))
	}
	return malformed(refuse(Syntax, off, text))
}

// malformed marks r as a refusal of a line bash would not run either.
func malformed(r *Refusal) *Refusal {
	r.Malformed = true
	return r
}

func malformedRefuse(c Construct, offset int, detail string) *Refusal {
	return malformed(refuse(c, offset, detail))
}

// wordAt returns the bare word starting at off, if any.
func wordAt(line string, off int) string {
	if off < 0 || off >= len(line) {
		return ""
	}
	end := off
	for end < len(line) && !strings.ContainsRune(" \t\n;&|<>()", rune(line[end])) {
		end++
	}
	return line[off:end]
}

// firstNamedConstruct scans line outside single quotes for the first byte
// sequence that opens a refused construct. It only names an error the
// tokeniser already reported; admission never depends on it.
func firstNamedConstruct(line string) (Construct, int, bool) {
	inDouble := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		next := byte(0)
		if i+1 < len(line) {
			next = line[i+1]
		}
		switch {
		case c == '\\':
			i++
		case c == '\'' && !inDouble:
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return "", 0, false
			}
			i += j + 1
		case c == '"':
			inDouble = !inDouble
		case c == '$' && next == '(' && i+2 < len(line) && line[i+2] == '(':
			return Arithmetic, i, true
		case c == '$' && next == '(', c == '`':
			return CommandSubstitution, i, true
		case c == '$' && next == '{':
			return ParameterExpansion, i, true
		case inDouble:
		case c == '<' && next == '<':
			return Heredoc, i, true
		case (c == '<' || c == '>') && next == '(':
			return ProcessSubstitution, i, true
		case c == '(' && next == '(':
			return Arithmetic, i, true
		case c == '(':
			return Subshell, i, true
		}
	}
	return "", 0, false
}

// reservedWords are bash's reserved words and the other tokens that open
// compound commands when they stand in command position.
var reservedWords = map[string]bool{
	"if": true, "then": true, "elif": true, "else": true, "fi": true,
	"for": true, "while": true, "until": true, "do": true, "done": true,
	"case": true, "esac": true, "select": true, "function": true,
	"!": true, "[[": true, "]]": true, "in": true, "coproc": true,
}

// shellBuiltins only make sense inside a shell that keeps their effect.
var shellBuiltins = map[string]bool{
	"export": true, "eval": true, "source": true, ".": true, "alias": true,
	"unalias": true, "set": true, "unset": true, "declare": true,
	"typeset": true, "local": true, "trap": true, "exec": true,
	"readonly": true, "let": true, "shopt": true,
}

// builder walks a parsed file twice: check admits node kinds and bytes, and
// list builds the plan. It keeps the refusal with the smallest offset so
// the caller hears about the first problem in the line.
type builder struct {
	home  string
	line  string
	first *Refusal
	// quoted holds the byte ranges [from, to) inside quotes, comments and
	// here-document bodies; newlines and control bytes are ordinary there.
	quoted [][2]int
	// notes are the line's comments, said in words (Line.Notes).
	notes []string
	// braceWords counts the words the line's brace expansions make.
	braceWords int
	// noAssign turns off the tilde expansion after = and : that bash
	// makes in an argument shaped like an assignment: a word brace
	// expansion made, or a here-string.
	noAssign bool
	// hereString says a here-string's word is read, whose ~ after a :
	// bash expands by rules of its own.
	hereString bool

	// p is the parser, for Files and Vars.
	p Parser
	// cwd is where the stage being built runs, as far as it is known:
	// Parser.Dir moved by the line's cds ("" when not known).
	cwd string
	// afterCd and afterCommand say a cd stage, or a command stage, came
	// before the stage being built: $PWD then no longer is Dir, and a
	// glob may match what an earlier command made or removed.
	afterCd, afterCommand bool
	// globs says how the word being built treats an unquoted glob
	// character: refused (opaque), expanded, or literal (an assignment's
	// value, which bash does not expand).
	globs globMode
	// pat is the word being built as a glob pattern: its quoted and
	// escaped bytes escaped, its unquoted glob characters as they are.
	pat strings.Builder
	// globbed says the word being built holds an unquoted glob character.
	globbed bool
	// globWords counts the words globs made in the line, and
	// globBudget what their expansion may still read.
	globWords  int
	globBudget globBudget
	// loopVars are the values of the for loops' variables while their
	// bodies are built, and iterations counts the iterations unrolled.
	loopVars   map[string]string
	iterations int
}

// globMode is what an unquoted glob character does in a word.
type globMode int

const (
	globRefuse globMode = iota
	globExpand
	globLiteral
)

// maxGlobWords bounds the words globs may make in one line; past it the
// line is opaque.
const maxGlobWords = 10_000

// maxBraceWords bounds the words brace expansion may make in one line;
// past it the line is opaque rather than a plan of thousands of words.
const maxBraceWords = 1000

// add keeps r if it is the first refusal, by offset, of its kind: a
// malformed refusal (one that says rein's tokeniser and bash part ways)
// wins over any other, since no opaque plan may rest on that reading.
func (b *builder) add(r *Refusal) {
	switch {
	case r == nil:
	case b.first == nil,
		r.Malformed && !b.first.Malformed,
		r.Malformed == b.first.Malformed && r.Offset < b.first.Offset:
		b.first = r
	}
}

func off(p syntax.Pos) int { return int(p.Offset()) }

// check is the allowlist over node kinds: what is not listed here is
// refused by name.
func (b *builder) check(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			return true // Walk's end-of-children call
		}
		switch n := n.(type) {
		case *syntax.File, *syntax.Word, *syntax.Lit:
		case *syntax.Stmt:
			switch {
			case n.Negated:
				b.add(refuse(CompoundCommand, off(n.Position), "! negates a status"))
			case n.Background && b.backgroundOK(f, n):
				// One command ended by & at the end of the line.
			case n.Background:
				b.add(refuse(Background, off(n.Semicolon), "only one command ended by & at the end of the line runs in the background"))
			case n.Coprocess, n.Disown:
				b.add(refuse(Background, off(n.Semicolon), ""))
			}
		case *syntax.CallExpr:
			for _, a := range n.Assigns {
				switch {
				case len(n.Args) == 0:
					b.add(refuse(Assignment, off(a.Pos()), "an assignment with no command sets a shell variable for the rest of the line"))
					return false
				case a.Append || a.Naked || a.Index != nil || a.Array != nil:
					b.add(refuse(Assignment, off(a.Pos()), "only NAME=value is read before a command"))
					return false
				}
			}
		case *syntax.Assign:
			// NAME=value before a command: its value is checked as a
			// word is.
		case *syntax.BinaryCmd:
			if n.Op == syntax.PipeAll {
				b.add(refuse(UnsupportedRedirect, off(n.OpPos), "|& pipes stderr too: write 2>&1 | instead"))
			} else if n.Op != syntax.AndStmt && n.Op != syntax.OrStmt && n.Op != syntax.Pipe {
				b.add(refuse(Syntax, off(n.OpPos), n.Op.String()+" is not supported"))
			}
		case *syntax.TimeClause:
			// time is spawned as a program (a wrapper the policy knows),
			// never as bash's keyword.
		case *syntax.SglQuoted:
			b.quoted = append(b.quoted, [2]int{off(n.Left), off(n.Right) + 1})
			if n.Dollar {
				b.add(refuse(ParameterExpansion, off(n.Left), "$'...'"))
			}
		case *syntax.DblQuoted:
			b.quoted = append(b.quoted, [2]int{off(n.Left), off(n.Right) + 1})
			if n.Dollar {
				b.add(refuse(ParameterExpansion, off(n.Left), `$"..."`))
			}
		case *syntax.Redirect:
			b.add(checkRedirect(n))
			if (n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc) && n.Word != nil {
				if end := off(n.Word.End()); end < len(b.line) && strings.IndexByte(" \t\n;&|<>()", b.line[end]) < 0 {
					// bash reads the delimiter up to a blank or an
					// operator ('EOF'# is EOF#); the tokeniser stops at
					// the # and reads a comment. An empty body too.
					b.add(malformed(refuse(Heredoc, off(n.Word.Pos()), "a here-document delimiter the tokeniser ends before bash does: put a blank after it")))
				}
			}
			if n.Hdoc != nil {
				if _, ok := b.heredocBody(n); !ok {
					b.add(heredocTorn(n))
				}
				// The body is data, checked when the stage is built;
				// its newlines are not separators.
				b.quoted = append(b.quoted, [2]int{off(n.Hdoc.Pos()), off(n.Hdoc.End())})
				b.add(b.checkWord(n.Word))
				return false
			}
		case *syntax.Comment:
			at := off(n.Hash)
			end := at + 1 + len(n.Text)
			if strings.Contains(n.Text, "\n") {
				// bash ends a comment at the newline; the tokeniser
				// reads a backslash before it as joining the next line
				// to the command before the comment.
				b.add(malformed(refuse(Comment, at, "a comment that ends with a backslash before a newline, which rein's tokeniser and bash read differently: drop the backslash")))
			}
			b.quoted = append(b.quoted, [2]int{at, end})
			b.notes = append(b.notes, fmt.Sprintf("the text from byte %d on (%s) is a comment and does not run", at, shortText(b.line[at:end])))
		case *syntax.CmdSubst:
			b.add(refuse(CommandSubstitution, off(n.Pos()), ""))
			return false
		case *syntax.ParamExp:
			// $NAME and ${NAME}: whether rein knows the value is
			// settled where the word is built (a loop's variable
			// only inside its body).
			if !simpleParam(n) {
				b.add(refuse(ParameterExpansion, off(n.Pos()), ""))
			}
			return false
		case *syntax.ArithmExp, *syntax.ArithmCmd:
			b.add(refuse(Arithmetic, off(n.Pos()), ""))
			return false
		case *syntax.ProcSubst:
			b.add(refuse(ProcessSubstitution, off(n.Pos()), ""))
			return false
		case *syntax.Subshell:
			b.add(refuse(Subshell, off(n.Pos()), ""))
			return false
		case *syntax.Block:
			b.add(refuse(BraceGroup, off(n.Pos()), ""))
			return false
		case *syntax.ExtGlob:
			b.add(refuse(Glob, off(n.Pos()), "extended glob"))
			return false
		case *syntax.BraceExp:
			b.add(refuse(BraceGroup, off(n.Pos()), ""))
			return false
		case *syntax.ForClause:
			why := forRefusal(f, n)
			if why == "" && b.p.ShellRuns {
				why = "a for loop in a line a shell runs, whose variable reaches the programs if it was exported"
			}
			if why != "" {
				b.add(refuse(CompoundCommand, off(n.Pos()), why))
				return false
			}
			// Unrolled: its words and its body are checked as the
			// line's own.
		case *syntax.WordIter:
		case *syntax.IfClause, *syntax.WhileClause,
			*syntax.CaseClause, *syntax.FuncDecl, *syntax.TestClause,
			*syntax.CoprocClause, *syntax.TestDecl:
			b.add(refuse(CompoundCommand, off(n.Pos()), ""))
			return false
		case *syntax.DeclClause:
			b.add(refuse(ShellBuiltin, off(n.Pos()), fmt.Sprintf("%q", n.Variant.Value)))
			return false
		case *syntax.LetClause:
			b.add(refuse(ShellBuiltin, off(n.Pos()), `"let"`))
			return false
		default:
			b.add(refuse(Syntax, off(n.Pos()), fmt.Sprintf("%T is not supported", n)))
			return false
		}
		return true
	})
	b.scanUnquoted()
}

// inQuoted reports whether byte i lies in a quoted range, a comment or a
// here-document body.
func (b *builder) inQuoted(i int) bool {
	for _, q := range b.quoted {
		if q[0] <= i && i < q[1] {
			return true
		}
	}
	return false
}

// checkWord refuses what a here-document's delimiter word may not hold:
// anything but literal text and quotes.
func (b *builder) checkWord(w *syntax.Word) *Refusal {
	if w == nil {
		return nil
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			if p.Dollar {
				return refuse(ParameterExpansion, off(p.Pos()), "$'...' as a here-document delimiter")
			}
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				if _, ok := dp.(*syntax.Lit); !ok || p.Dollar {
					return refuse(Heredoc, off(p.Pos()), "an expansion in a here-document delimiter")
				}
			}
		default:
			return refuse(Heredoc, off(part.Pos()), "an expansion in a here-document delimiter")
		}
	}
	return nil
}

// shortText is s on one line and at most 40 bytes, for a note.
func shortText(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// scanUnquoted refuses carriage returns and control bytes that stand
// outside quotes, comments and here-document bodies. A newline there is a
// separator (or, after a backslash, nothing), as the tokeniser reads it
// and bash does.
func (b *builder) scanUnquoted() {
	slices.SortFunc(b.quoted, func(x, y [2]int) int { return x[0] - y[0] })
	if n := len(b.line); n > 0 && b.line[n-1] == '\\' && !escaped(b.line, n-1) && !b.inQuoted(n-1) && strings.Contains(b.line, "\n") {
		// bash drops a backslash that ends input of several lines (and
		// keeps the one ending a single line); the tokeniser keeps it.
		b.add(malformed(refuse(Syntax, n-1, "the line ends with a backslash: drop it, or quote it")))
	}
	q := 0
	for i := 0; i < len(b.line); i++ {
		for q < len(b.quoted) && b.quoted[q][1] <= i {
			q++
		}
		if q < len(b.quoted) && b.quoted[q][0] <= i {
			i = b.quoted[q][1] - 1
			continue
		}
		switch c := b.line[i]; {
		case c == '\n':
		case c == '\r':
			b.add(refuse(Newline, i, "a carriage return"))
			return
		case c < 0x20 && c != '\t', c == 0x7f:
			b.add(refuse(ControlCharacter, i, fmt.Sprintf("byte 0x%02x", c)))
			return
		}
	}
}

func checkRedirect(r *syntax.Redirect) *Refusal {
	at := off(r.OpPos)
	if r.N != nil {
		at = off(r.N.Pos())
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		if r.N == nil {
			return nil
		}
		return refuse(Heredoc, at, fmt.Sprintf("%q feeds a descriptor other than standard input", redirText(r)))
	case syntax.RdrOut, syntax.AppOut:
		if r.N == nil || r.N.Value == "2" {
			return nil
		}
	case syntax.RdrIn:
		if r.N == nil {
			return nil
		}
	case syntax.DplOut:
		if r.N != nil && r.N.Value == "2" && len(r.Word.Parts) == 1 {
			if l, ok := r.Word.Parts[0].(*syntax.Lit); ok && l.Value == "1" {
				return nil
			}
		}
	}
	return refuse(UnsupportedRedirect, at, fmt.Sprintf("%q", redirText(r)))
}

func redirText(r *syntax.Redirect) string {
	s := r.Op.String()
	if r.N != nil {
		s = r.N.Value + s
	}
	return s
}

// list appends the pipelines of an && / || tree to plan. The tree is left
// associative, so its left spine is walked iteratively and only pipelines
// recurse.
func (b *builder) list(plan *Line, st *syntax.Stmt, depth int) {
	var spine []*syntax.BinaryCmd
	for {
		bc, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || (bc.Op != syntax.AndStmt && bc.Op != syntax.OrStmt) {
			break
		}
		spine = append(spine, bc)
		st = bc.X
	}
	plan.Pipelines = append(plan.Pipelines, b.pipeline(st))
	for i := len(spine) - 1; i >= 0; i-- {
		c := And
		if spine[i].Op == syntax.OrStmt {
			c = Or
		}
		plan.Connectors = append(plan.Connectors, c)
		y := spine[i].Y
		if bc, ok := y.Cmd.(*syntax.BinaryCmd); ok && bc.Op != syntax.Pipe {
			if depth >= maxDepth {
				b.add(refuse(Syntax, off(y.Pos()), "the line nests too deeply"))
				return
			}
			b.list(plan, y, depth+1)
			continue
		}
		plan.Pipelines = append(plan.Pipelines, b.pipeline(y))
	}
}

func (b *builder) pipeline(st *syntax.Stmt) *Pipeline {
	p := &Pipeline{}
	var walk func(st *syntax.Stmt)
	walk = func(st *syntax.Stmt) {
		if bc, ok := st.Cmd.(*syntax.BinaryCmd); ok && bc.Op == syntax.Pipe {
			walk(bc.X)
			walk(bc.Y)
			return
		}
		p.Stages = append(p.Stages, b.stage(st))
	}
	walk(st)
	if len(p.Stages) > 1 {
		for _, s := range p.Stages {
			if s != nil && s.Kind == Cd {
				b.add(refuse(Syntax, s.Offset, "cd inside a pipeline has no effect: put it before the pipeline and join with && or ;"))
			}
		}
	}
	return p
}

func (b *builder) stage(st *syntax.Stmt) *Stage {
	s := &Stage{Offset: off(st.Position)}
	var words []*syntax.Word
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		words = c.Args
	case *syntax.TimeClause:
		words = b.timeWords(c)
		if c.Stmt != nil {
			st = &syntax.Stmt{Redirs: append(append([]*syntax.Redirect(nil), st.Redirs...), c.Stmt.Redirs...)}
		}
	case nil:
	default:
		b.add(refuse(Syntax, s.Offset, fmt.Sprintf("%T is not supported", c)))
		return s
	}
	if len(words) == 0 {
		b.add(refuse(Syntax, s.Offset, "empty stage: name a program to run"))
		return s
	}
	// Where each word starts, and where the stage ends, are taken before
	// brace expansion rewrites the words.
	pos := make([]int, len(words))
	for i, w := range words {
		pos[i] = off(w.Pos())
	}
	end := off(words[len(words)-1].End())
	for _, r := range st.Redirs {
		if r.Word != nil {
			end = max(end, off(r.Word.End()))
		}
	}
	if begin := min(s.Offset, pos[0]); begin <= end && end <= len(b.line) {
		s.Source = b.line[begin:end]
	}
	if c, ok := st.Cmd.(*syntax.CallExpr); ok {
		b.globs = globLiteral
		for _, a := range c.Assigns {
			s.Env = append(s.Env, a.Name.Value+"="+b.assignValue(a))
		}
		b.globs = globRefuse
	}
	s.Argv = make([]string, 0, len(words))
	for i, w := range words {
		if i > 0 && words[0].Lit() != "cd" {
			b.globs = globExpand
		}
		s.Argv = b.appendWords(s.Argv, w)
	}
	b.globs = globRefuse
	for _, r := range st.Redirs {
		s.Redirects = append(s.Redirects, b.redirect(r))
	}
	at := pos[0]
	if len(s.Argv) == 0 {
		b.add(refuse(Syntax, at, "the words expand to nothing: name a program to run"))
		return s
	}
	if len(s.Env) > 0 && (s.Argv[0] == "cd" || shellBuiltins[s.Argv[0]]) {
		b.add(refuse(Assignment, s.Offset, fmt.Sprintf("an assignment before %q, which is no program", s.Argv[0])))
	}
	defer func() {
		if s.Kind == Cd {
			b.afterCd = true
			switch {
			case s.Dir == "" || b.cwd == "":
				b.cwd = ""
			case strings.HasPrefix(s.Dir, "/"):
				b.cwd = s.Dir
			default:
				// As rein's runner moves: the kernel resolves the
				// joined path.
				b.cwd = b.cwd + "/" + s.Dir
			}
		} else {
			b.afterCommand = true
		}
	}()
	switch name := s.Argv[0]; {
	case name == "":
		b.add(refuse(Syntax, at, "the program name is empty"))
	case name == "cd":
		b.cd(s, pos)
	case strings.HasPrefix(name, "%"):
		b.add(refuse(ShellBuiltin, at, fmt.Sprintf("%q names a job to bash, not a program", name)))
	case (name == "source" || name == ".") && b.activation(s):
		// A workspace venv's activation: what it sets is applied to the
		// stages after it (activations).
	case shellBuiltins[name]:
		b.add(refuse(ShellBuiltin, at, fmt.Sprintf("%q", name)))
	case name == "deactivate":
		b.add(refuse(ShellBuiltin, at, "deactivate is the function a venv's activation defines in a shell"))
	case loopWords[name]:
		b.add(refuse(CompoundCommand, at, fmt.Sprintf("%q acts on a loop or a function, which rein unrolls or does not run", name)))
	case reservedWords[name] || name == "{" || name == "}":
		b.add(refuse(CompoundCommand, at, fmt.Sprintf("%q", name)))
	}
	return s
}

// timeWords rebuilds "time [-p] cmd args" as the argv of the time program.
func (b *builder) timeWords(c *syntax.TimeClause) []*syntax.Word {
	words := []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: c.Time, Value: "time"}}}}
	if c.PosixFormat {
		words = append(words, &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: c.Time, Value: "-p"}}})
	}
	if c.Stmt == nil {
		return words
	}
	call, ok := c.Stmt.Cmd.(*syntax.CallExpr)
	if !ok {
		b.add(refuse(Syntax, off(c.Stmt.Pos()), "time takes one simple command here"))
		return words
	}
	if len(call.Assigns) > 0 {
		b.add(refuse(Assignment, off(call.Assigns[0].Pos()), "an assignment after time"))
	}
	return append(words, call.Args...)
}

func (b *builder) cd(s *Stage, words []int) {
	s.Kind = Cd
	switch {
	case len(s.Argv) != len(words):
		b.add(refuse(Syntax, s.Offset, "cd takes one directory, and its braces make another number of words"))
	case len(words) > 2:
		b.add(refuse(Syntax, words[2], "cd takes one directory"))
	case len(s.Redirects) > 0:
		b.add(refuse(Syntax, s.Offset, "cd takes no redirects"))
	case len(words) == 2 && s.Argv[1] == "":
		b.add(refuse(Syntax, words[1], "cd to an empty directory name"))
	case len(words) == 2 && strings.HasPrefix(s.Argv[1], "-"):
		b.add(refuse(Syntax, words[1], "cd takes no options and no -: name the directory"))
	case len(words) == 2:
		s.Dir = s.Argv[1]
	}
	s.Argv = nil
}

func (b *builder) redirect(r *syntax.Redirect) Redirect {
	out := Redirect{}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		return Redirect{Op: Input, Data: b.heredoc(r)}
	case syntax.WordHdoc:
		// bash expands a here-string's leading ~, but not one after an
		// = or a : as it does in an argument.
		b.digitTarget(r.Word)
		b.noAssign, b.hereString = true, true
		data := b.single(r.Word)
		b.noAssign, b.hereString = false, false
		return Redirect{Op: Input, Data: data + "\n"}
	case syntax.RdrIn:
		out.Op = Read
	case syntax.RdrOut:
		out.Fd, out.Op = 1, Truncate
	case syntax.AppOut:
		out.Fd, out.Op = 1, Append
	case syntax.DplOut:
		return Redirect{Fd: 2, Op: DupStdout}
	default:
		return out // refused by check
	}
	if r.N != nil && r.N.Value == "2" {
		out.Fd = 2
	}
	at := off(r.Word.Pos())
	b.digitTarget(r.Word)
	out.Path = b.single(r.Word)
	if out.Path == "" {
		b.add(refuse(Syntax, at, "the redirect target is empty"))
	}
	return out
}

// appendWords performs brace expansion as bash does, then quote removal and
// tilde expansion on each word it makes, refusing every byte that a shell
// would expand otherwise, and appends the words to out. A word without a
// brace expansion is one word.
func (b *builder) appendWords(out []string, w *syntax.Word) []string {
	at := off(w.Pos())
	split := syntax.SplitBraces(w)
	if r := braceLeft(w, at); r != nil {
		b.add(r)
		return out
	}
	if !split {
		return b.globWord(out, b.word(w), at)
	}
	if r := checkBraces(w, at); r != nil {
		b.add(r)
		return out
	}
	for x, err := range expand.BracesSeq(nil, w) {
		b.braceWords++
		if err != nil || b.braceWords > maxBraceWords {
			b.add(refuse(BraceGroup, at, fmt.Sprintf("brace expansion makes more than %d words in the line", maxBraceWords)))
			return out
		}
		// bash drops a word the expansion left empty, unless quotes
		// made it; in a word it made, only a leading ~ is expanded.
		b.noAssign = true
		v := b.word(x)
		b.noAssign = false
		if v != "" || hasQuotes(x) {
			out = b.globWord(out, v, at)
		}
	}
	return out
}

// braceLeft refuses a word in which an unquoted { that the tokeniser
// left as text has an unquoted , or .. after it: bash's own scan may
// find a brace expansion there that the tokeniser's does not ({x},a} is
// x} a to bash), and rein does not second-guess either.
func braceLeft(w *syntax.Word, at int) *Refusal {
	open := false
	var walk func(parts []syntax.WordPart) bool
	walk = func(parts []syntax.WordPart) bool {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.Lit:
				v := p.Value
				for j := 0; j < len(v); j++ {
					switch {
					case v[j] == '\\':
						j++
					case v[j] == '{':
						open = true
					case open && (v[j] == ',' || v[j] == '.' && j+1 < len(v) && v[j+1] == '.'):
						return true
					}
				}
			case *syntax.BraceExp:
				for _, e := range p.Elems {
					if walk(e.Parts) {
						return true
					}
				}
			}
		}
		return false
	}
	if walk(w.Parts) {
		return refuse(BraceGroup, at, "a brace left unexpanded with a , or .. after it, which bash may read as an expansion")
	}
	return nil
}

// hasQuotes reports whether a word holds a quoted part.
func hasQuotes(w *syntax.Word) bool {
	return slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		switch p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		}
		return false
	})
}

// checkBraces refuses the brace expansions whose words rein does not make
// as bash does: a letter sequence that crosses from upper to lower case
// (bash makes the punctuation between them, some of it quoted).
func checkBraces(w *syntax.Word, at int) *Refusal {
	var bad *Refusal
	var walk func(parts []syntax.WordPart)
	walk = func(parts []syntax.WordPart) {
		for _, p := range parts {
			br, ok := p.(*syntax.BraceExp)
			if !ok || bad != nil {
				continue
			}
			if br.Sequence {
				from, to := br.Elems[0].Lit(), br.Elems[1].Lit()
				if len(from) == 1 && len(to) == 1 && isLetter(from[0]) && isLetter(to[0]) && isUpper(from[0]) != isUpper(to[0]) {
					bad = refuse(BraceGroup, at, fmt.Sprintf("the sequence {%s..%s} crosses between upper and lower case", from, to))
				}
			}
			for _, e := range br.Elems {
				walk(e.Parts)
			}
		}
	}
	walk(w.Parts)
	return bad
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }

// heredoc returns the bytes a here-document feeds to standard input, as
// bash makes them: <<- strips the leading tabs of every line; with the
// delimiter unquoted, \$ \` \\ lose their backslash and a backslash-newline
// joins two lines, and anything that would expand is refused by name.
func (b *builder) heredoc(r *syntax.Redirect) string {
	raw, ok := b.heredocBody(r)
	if !ok {
		b.add(heredocTorn(r))
		return ""
	}
	if r.Hdoc != nil {
		for _, p := range r.Hdoc.Parts {
			if _, ok := p.(*syntax.Lit); !ok {
				b.add(refuse(expansionOf(p), off(p.Pos()), "in a here-document body"))
				return ""
			}
		}
	}
	if quotedDelimiter(r.Word) {
		return raw
	}
	base := 0
	if r.Hdoc != nil {
		base = off(r.Hdoc.Pos())
	}
	var sb strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		next := byte(0)
		if i+1 < len(raw) {
			next = raw[i+1]
		}
		switch {
		case c == '\\' && next != 0 && strings.IndexByte("$`\\", next) >= 0:
			sb.WriteByte(next)
			i++
		case c == '\\' && next != 0:
			// Any other escape stays as written, both bytes.
			sb.WriteString(raw[i : i+2])
			i++
		case c == '$' && !literalDollar(next):
			b.add(refuse(ParameterExpansion, base+i, "in a here-document body whose delimiter is unquoted: quote the delimiter (<<'EOF') to keep the body as it is"))
			return ""
		case c == '`':
			b.add(refuse(CommandSubstitution, base+i, "in a here-document body whose delimiter is unquoted: quote the delimiter (<<'EOF') to keep the body as it is"))
			return ""
		case c == 0x01 || c == 0x7f:
			b.add(refuse(ControlCharacter, base+i, fmt.Sprintf("byte 0x%02x in a here-document body whose delimiter is unquoted, which bash may double: quote the delimiter", c)))
			return ""
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// heredocBody reads a here-document's body from the line as bash does:
// the lines after the one that holds the redirect, up to the first line
// that is the delimiter. With the delimiter unquoted, a backslash-newline
// joins a line to the next before that comparison (a backslash escaped by
// another does not), keeping the next line's leading tabs; <<- then strips
// the leading tabs of each joined line. raw is the body with the joins
// made and the tabs stripped, its other escapes still in place. The body
// is read a second way, from the tokeniser's parts, and the two must end
// at the same place, or ok is false.
func (b *builder) heredocBody(r *syntax.Redirect) (raw string, ok bool) {
	if r.Hdoc == nil || len(r.Hdoc.Parts) == 0 {
		return "", true
	}
	delim := delimiterText(r.Word)
	quoted := quotedDelimiter(r.Word)
	var body, logical strings.Builder
	at := min(off(r.Hdoc.Pos()), len(b.line))
	// A body starts right after a newline; the tokeniser places one that
	// starts with a backslash-newline a byte late.
	switch {
	case at > 0 && b.line[at-1] == '\n':
	case at > 1 && b.line[at-1] == '\\' && b.line[at-2] == '\n':
		at--
	default:
		return "", false
	}
	for {
		// One line as bash reads it: up to a newline no backslash joins.
		rest := b.line[at:]
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		l := rest[:i]
		if !quoted && strings.IndexByte(l, '\\') >= 0 {
			logical.Reset()
			for i = 0; i < len(rest) && rest[i] != '\n'; i++ {
				switch {
				case rest[i] != '\\' || i+1 >= len(rest):
					logical.WriteByte(rest[i])
				case rest[i+1] == '\n':
					i++ // a join
				default:
					logical.WriteString(rest[i : i+2])
					i++
				}
			}
			l = logical.String()
		}
		if r.Op == syntax.DashHdoc {
			l = strings.TrimLeft(l, "\t")
		}
		switch {
		case l == delim:
			// The tokeniser must end the body on the same line, or the
			// rest of the line is not what bash runs.
			return body.String(), at+i == off(r.Hdoc.End())
		case i >= len(rest):
			return "", false // bash warns and takes the end of input
		}
		body.WriteString(l + "\n")
		at += i + 1
	}
}

// delimiterText is a here-document's delimiter after quote removal.
func delimiterText(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			for i := 0; i < len(p.Value); i++ {
				if p.Value[i] == '\\' && i+1 < len(p.Value) {
					i++
				}
				sb.WriteByte(p.Value[i])
			}
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				if l, ok := dp.(*syntax.Lit); ok {
					sb.WriteString(l.Value)
				}
			}
		}
	}
	return sb.String()
}

// digitTarget refuses a redirect's word of digits written right before a
// < or >: bash reads 2>x there as a redirect of descriptor 2 (and rejects
// the line), where the tokeniser reads a target named 2.
func (b *builder) digitTarget(w *syntax.Word) {
	lit := w.Lit()
	if end := off(w.End()); lit != "" && strings.Trim(lit, "0123456789") == "" && end < len(b.line) && strings.IndexByte("<>", b.line[end]) >= 0 {
		b.add(malformed(refuse(Syntax, off(w.Pos()), "a redirect target of digits right before < or >, which bash reads as a descriptor")))
	}
}

// heredocTorn is the refusal of a here-document whose body the tokeniser
// and bash read differently.
func heredocTorn(r *syntax.Redirect) *Refusal {
	return malformed(refuse(Heredoc, off(r.OpPos), "rein's tokeniser ends or starts this here-document elsewhere than bash does (a backslash joining its lines, or no closing delimiter): write the body without a trailing backslash, or quote the delimiter (<<'EOF')"))
}

// quotedDelimiter reports whether a here-document's delimiter has any
// quoting, which keeps bash from expanding anything in the body.
func quotedDelimiter(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.IndexByte(p.Value, '\\') >= 0 {
				return true
			}
		}
	}
	return false
}

// expansionOf names the construct of a word part that expands.
func expansionOf(p syntax.WordPart) Construct {
	switch p.(type) {
	case *syntax.CmdSubst:
		return CommandSubstitution
	case *syntax.ArithmExp:
		return Arithmetic
	case *syntax.ProcSubst:
		return ProcessSubstitution
	}
	return ParameterExpansion
}

// word performs rein's quote removal and tilde expansion on one word and
// refuses every byte that a shell would expand. A brace expansion in it
// (a redirect's target, say) is refused: bash would make several words of
// one that must be one.
func (b *builder) word(w *syntax.Word) string {
	var sb strings.Builder
	b.pat.Reset()
	b.globbed = false
	assign := assignmentLike(w) && !b.noAssign
	glob := bracketGlob(w) && b.globs != globLiteral
	if glob && b.globs == globExpand && (hasQuotes(w) || hasEscape(w)) {
		// Inside [...] a quoted or escaped byte is literal to bash
		// where the same byte unquoted is an operator ([!a] and ["!"a]).
		b.add(refuse(Glob, off(w.Pos()), "a bracket expression in a word that also holds quotes or escapes"))
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.unquoted(&sb, p, i == 0, i == len(w.Parts)-1, assign, glob, nextByte(w.Parts, i))
		case *syntax.SglQuoted:
			b.lit(&sb, p.Value)
		case *syntax.DblQuoted:
			for j, dp := range p.Parts {
				switch dp := dp.(type) {
				case *syntax.Lit:
					b.doubleQuoted(&sb, dp, nextByte(p.Parts, j))
				case *syntax.ParamExp:
					if v, ok := b.fixedVar(dp); ok {
						b.lit(&sb, v)
					} else {
						b.add(refuse(ParameterExpansion, off(dp.Pos()), ""))
					}
				}
			}
		case *syntax.ParamExp:
			v, ok := b.fixedVar(p)
			switch {
			case !ok:
				b.add(refuse(ParameterExpansion, off(p.Pos()), ""))
			case v == "" || strings.ContainsAny(v, " \t\n*?[]\\"):
				// Unquoted, bash splits the value into words and globs
				// them; rein fills in only a value that stays one word.
				b.add(refuse(ParameterExpansion, off(p.Pos()), fmt.Sprintf("unquoted $%s, whose value bash would split or glob: quote it", p.Param.Value)))
			default:
				b.lit(&sb, v)
			}
		}
	}
	return sb.String()
}

// lit writes bytes that stand for themselves: to the word, and escaped to
// its glob pattern.
func (b *builder) lit(sb *strings.Builder, v string) {
	sb.WriteString(v)
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(`*?[]\`, v[i]) >= 0 {
			b.pat.WriteByte('\\')
		}
		b.pat.WriteByte(v[i])
	}
}

// litByte is lit for one byte.
func (b *builder) litByte(sb *strings.Builder, c byte) {
	sb.WriteByte(c)
	if strings.IndexByte(`*?[]\`, c) >= 0 {
		b.pat.WriteByte('\\')
	}
	b.pat.WriteByte(c)
}

// fixedVar returns the value of $NAME or ${NAME} when rein fills it in:
// HOME (Parser.Home), PWD (Parser.Dir, until a cd) and what
// Parser.Vars sets. Anything else, and any other form of expansion, is
// not filled in.
func (b *builder) fixedVar(pe *syntax.ParamExp) (string, bool) {
	if !simpleParam(pe) {
		return "", false
	}
	name := pe.Param.Value
	if v, ok := b.loopVars[name]; ok {
		return v, true
	}
	if v, ok := b.p.Vars[name]; ok {
		if name == "PWD" && b.afterCd {
			return "", false
		}
		return v, true
	}
	switch {
	case name == "HOME" && b.p.Home != "":
		return b.p.Home, true
	case name == "PWD" && b.p.Dir != "" && !b.afterCd:
		return b.p.Dir, true
	}
	return "", false
}

// hasEscape reports whether an unquoted literal of w holds a backslash.
func hasEscape(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '\\') >= 0 {
			return true
		}
	}
	return false
}

// single is word for a place that takes one word (a redirect's target, a
// here-string): a brace expansion there, which bash would make several
// words of, is refused.
func (b *builder) single(w *syntax.Word) string {
	at := off(w.Pos())
	if syntax.SplitBraces(w) || braceLeft(w, at) != nil {
		b.add(refuse(BraceGroup, at, "brace expansion where one word is needed"))
		return ""
	}
	return b.word(w)
}

// nextByte is the first byte of the part after parts[i] when it is
// literal text, 0 when there is none, and 0xff when it is something else.
func nextByte(parts []syntax.WordPart, i int) byte {
	if i+1 >= len(parts) {
		return 0
	}
	if l, ok := parts[i+1].(*syntax.Lit); ok && l.Value != "" {
		return l.Value[0]
	}
	return 0xff
}

// dollar refuses the $ at v[j] unless bash leaves it literal; after is
// the byte that follows v, as nextByte gives it.
func (b *builder) dollar(v string, j int, after byte, base int, detail string) {
	next := after
	if j+1 < len(v) {
		next = v[j+1]
	}
	if !literalDollar(next) {
		b.add(refuse(ParameterExpansion, base+j, detail))
	}
}

// literalDollar reports whether a $ followed by next (0 for nothing) is a
// literal $ to bash: only before the end of a word, a blank, or one of a
// few bytes that start no expansion.
func literalDollar(next byte) bool {
	return next == 0 || strings.IndexByte(" \t\n/.,:%+=]}~^", next) >= 0
}

// bracketGlob reports whether w holds an unquoted [ with an unquoted ]
// after it: bash globs such a word, and leaves a lone [ or ] as it is.
func bracketGlob(w *syntax.Word) bool {
	open := false
	for _, part := range w.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		for j := 0; j < len(l.Value); j++ {
			switch l.Value[j] {
			case '\\':
				j++
			case '[':
				open = true
			case ']':
				if open {
					return true
				}
			}
		}
	}
	return false
}

// assignmentLike reports whether w starts with NAME= unquoted; bash expands
// ~ after its = and after each : in such a word, even as an argument.
func assignmentLike(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	eq := strings.IndexByte(l.Value, '=')
	return eq > 0 && syntax.ValidName(strings.TrimSuffix(l.Value[:eq], "+"))
}

func (b *builder) unquoted(sb *strings.Builder, l *syntax.Lit, wordStart, lastPart, assign, glob bool, after byte) {
	v, base := l.Value, off(l.Pos())
	// In an assignment-like word bash also expands a tilde right after the
	// first = and after any later unquoted :.
	eq := -1
	if assign && wordStart {
		eq = strings.IndexByte(v, '=')
	}
	for j := 0; j < len(v); j++ {
		c := v[j]
		tildeHere := c == '~' && ((wordStart && j == 0) ||
			(assign && j > 0 && (j-1 == eq || (v[j-1] == ':' && (eq < 0 || j-1 > eq))) && !escaped(v, j-1)))
		switch {
		case b.hereString && c == '~' && j > 0 && v[j-1] == ':' && !escaped(v, j-1):
			// A here-string's ~ after a : is expanded by rules of its
			// own; rein does not model them.
			b.add(refuse(TildeUser, base+j, "a ~ after a : in a here-string"))
		case tildeHere:
			j += b.tilde(sb, v[j:], base+j, lastPart, assign) - 1
		case c == '\\' && j+1 < len(v) && v[j+1] == '\n':
			// A backslash-newline the tokeniser kept (after an escaped
			// backslash) joins lines, as bash reads it.
			j++
		case c == '\\':
			if j+1 < len(v) {
				j++
				b.litByte(sb, v[j])
			} else {
				b.litByte(sb, c)
			}
		case c == '$':
			b.dollar(v, j, after, base, "")
			b.litByte(sb, c)
		case c == '`':
			b.add(refuse(CommandSubstitution, base+j, ""))
		case (c == '*' || c == '?' || (glob && (c == '[' || c == ']'))) && b.globs == globLiteral:
			b.litByte(sb, c)
		case c == '*' || c == '?' || (glob && (c == '[' || c == ']')):
			if b.globs != globExpand || b.p.Files == nil {
				b.add(refuse(Glob, base+j, fmt.Sprintf("unquoted %q", c)))
			}
			sb.WriteByte(c)
			b.pat.WriteByte(c)
			b.globbed = true
		case c == '#' && wordStart && j == 0:
			b.add(refuse(Comment, base+j, ""))
		case c == '\n' || c == '\r':
			b.add(refuse(Newline, base+j, ""))
		case c < 0x20 || c == 0x7f:
			b.add(refuse(ControlCharacter, base+j, fmt.Sprintf("byte 0x%02x", c)))
		case glob:
			// Inside a bracket expression the other bytes (! ^ -) are
			// the pattern's own.
			sb.WriteByte(c)
			b.pat.WriteByte(c)
		default:
			b.litByte(sb, c)
		}
	}
}

// escaped reports whether v[i] is preceded by an odd run of backslashes.
func escaped(v string, i int) bool {
	n := 0
	for k := i - 1; k >= 0 && v[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// tilde expands the ~ at the start of s (an unquoted literal) and returns
// how many bytes of s it consumed. Only ~ ending the word, or followed by /
// (or by : inside an assignment-like word) means HOME; every other tilde
// prefix names a user or a directory stack entry and is refused.
func (b *builder) tilde(sb *strings.Builder, s string, at int, lastPart, assign bool) int {
	end := len(s) == 1 && lastPart
	if end || (len(s) > 1 && (s[1] == '/' || (assign && s[1] == ':'))) {
		if b.home == "" {
			b.add(refuse(TildeUser, at, "HOME is not known here"))
			return 1
		}
		b.lit(sb, b.home)
		return 1
	}
	n := 1
	for n < len(s) && s[n] != '/' && s[n] != ':' {
		n++
	}
	b.add(refuse(TildeUser, at, fmt.Sprintf("%q", s[:n])))
	return 1
}

// doubleQuoted removes the quoting inside "...": \" \\ \` \$ are escapes,
// backslash-newline disappears, every other backslash stays. The bytes
// 0x01 and 0x7f after a backslash, which bash (which marks its own
// quoting with them) doubles there, are refused.
func (b *builder) doubleQuoted(sb *strings.Builder, l *syntax.Lit, after byte) {
	v, base := l.Value, off(l.Pos())
	for j := 0; j < len(v); j++ {
		c := v[j]
		switch {
		case c == '\\' && j+1 < len(v) && strings.IndexByte("\"\\`$", v[j+1]) >= 0:
			j++
			b.litByte(sb, v[j])
		case c == '\\' && j+1 < len(v) && v[j+1] == '\n':
			j++
		case c == '$':
			b.dollar(v, j, after, base, "inside double quotes")
			b.litByte(sb, c)
		case (c == 0x01 || c == 0x7f) && j > 0 && v[j-1] == '\\':
			b.add(refuse(ControlCharacter, base+j, fmt.Sprintf("byte 0x%02x after a backslash inside double quotes, which bash doubles", c)))
			b.litByte(sb, c)
		case c == '`':
			b.add(refuse(CommandSubstitution, base+j, "inside double quotes"))
		default:
			b.litByte(sb, c)
		}
	}
}

// assignValue is the value of NAME=value before a command, as bash makes
// it: quote removal, ~ expanded at its start and after each :, and no
// brace expansion, globbing or splitting. It is read as the word
// NAME=value is, from where NAME starts, so that offsets hold.
func (b *builder) assignValue(a *syntax.Assign) string {
	lead := a.Name.Value + "="
	parts := []syntax.WordPart{&syntax.Lit{ValuePos: a.Name.ValuePos, Value: lead}}
	if a.Value != nil {
		parts = append(parts, a.Value.Parts...)
		if l, ok := a.Value.Parts[0].(*syntax.Lit); ok {
			parts = append([]syntax.WordPart{&syntax.Lit{ValuePos: a.Name.ValuePos, Value: lead + l.Value}}, a.Value.Parts[1:]...)
		}
	}
	return strings.TrimPrefix(b.word(&syntax.Word{Parts: parts}), lead)
}

// globWord appends the word v to out, or, when it holds an unquoted glob
// character, the paths its pattern matches as bash would (sorted by
// bytes, dot files only for a pattern that starts with a dot), or v
// itself when nothing matches.
func (b *builder) globWord(out []string, v string, at int) []string {
	if !b.globbed || b.globs != globExpand || b.p.Files == nil || b.first != nil {
		// (A line already refused is opaque whatever its globs match.)
		return append(out, v)
	}
	b.globbed = false
	pat := b.pat.String()
	switch {
	case b.afterCommand:
		b.add(refuse(Glob, at, "a glob after another command of the line, which may change what it matches: run it in a line of its own"))
		return append(out, v)
	case !strings.HasPrefix(pat, "/") && b.cwd == "":
		b.add(refuse(Glob, at, "a relative glob where the working directory is not known"))
		return append(out, v)
	}
	matches, err := globPaths(b.p.Files, b.cwd, pat, &b.globBudget)
	if err != nil {
		b.add(refuse(Glob, at, err.Error()))
		return append(out, v)
	}
	if len(matches) == 0 {
		return append(out, v)
	}
	b.globWords += len(matches)
	if b.globWords > maxGlobWords {
		b.add(refuse(Glob, at, fmt.Sprintf("globs make more than %d words in the line", maxGlobWords)))
		return append(out, v)
	}
	return append(out, matches...)
}

// globPaths expands pat, a bash pattern whose literal bytes are escaped,
// from dir: each component with a glob character is matched against the
// names ReadDir lists, the others taken as they are and checked to
// exist.
func globPaths(files Files, dir, pat string, budget *globBudget) ([]string, error) {
	if len(pat) > maxGlobPattern {
		return nil, fmt.Errorf("a glob pattern of more than %d bytes", maxGlobPattern)
	}
	if strings.Contains(pat, "//") {
		// bash folds some runs of slashes in what it matches and keeps
		// others; rein does not guess which.
		return nil, fmt.Errorf("a glob pattern with // in it")
	}
	parts := strings.Split(pat, "/")
	cur := []string{""}
	if parts[0] == "" {
		cur, parts = []string{"/"}, parts[1:]
	}
	at := func(p string) string {
		switch {
		case strings.HasPrefix(p, "/"):
			return p
		case p == "":
			return dir
		}
		return dir + "/" + p
	}
	join := func(p, name string) string {
		if p == "" || strings.HasSuffix(p, "/") {
			return p + name
		}
		return p + "/" + name
	}
	readDir := func(p string) ([]fs.DirEntry, bool, error) {
		switch budget.reads--; {
		case budget.names <= 0:
			return nil, false, fmt.Errorf("the line's globs look at more than %d names", maxGlobNames)
		case budget.reads < 0:
			return nil, false, fmt.Errorf("the line's globs read more than %d directories", maxGlobReads)
		}
		ents, err := files.ReadDir(at(p))
		if budget.names -= len(ents); budget.names < 0 {
			return nil, false, fmt.Errorf("the line's globs look at more than %d names", maxGlobNames)
		}
		switch {
		case err == nil:
			return ents, true, nil
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil, false, nil
		}
		return nil, false, err
	}
	for i, part := range parts {
		last := i == len(parts)-1
		var next []string
		switch {
		case part == "" && last:
			// A trailing / keeps only directories.
			for _, p := range cur {
				if _, ok, err := readDir(p); err != nil {
					return nil, err
				} else if ok {
					next = append(next, p+"/")
				}
			}
		case !pattern.HasMeta(part, 0):
			name := unescapeGlob(part)
			for _, p := range cur {
				if name == "" || name == "." || name == ".." || !last {
					next = append(next, join(p, name))
					continue
				}
				ents, _, err := readDir(p)
				if err != nil {
					return nil, err
				}
				for _, e := range ents {
					if e.Name() == name {
						next = append(next, join(p, name))
						break
					}
				}
			}
		default:
			expr, err := pattern.Regexp(bytesAsRunes(part), pattern.Filenames|pattern.EntireString)
			if err != nil {
				return nil, fmt.Errorf("the pattern %q: %v", part, err)
			}
			re, err := regexp.Compile(expr)
			// bash in the C locale matches bytes: ? is one byte, not
			// one character. Names and pattern are matched as Latin-1,
			// each byte one rune.
			if err != nil {
				return nil, fmt.Errorf("the pattern %q: %v", part, err)
			}
			dots := strings.HasPrefix(part, ".") || strings.HasPrefix(part, `\.`)
			for _, p := range cur {
				ents, _, err := readDir(p)
				if err != nil {
					return nil, err
				}
				for _, e := range ents {
					n := e.Name()
					if (n[0] == '.' && !dots) || !re.MatchString(bytesAsRunes(n)) {
						continue
					}
					if !last && !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
						continue
					}
					next = append(next, join(p, n))
					if len(next) > maxGlobWords {
						return nil, fmt.Errorf("the pattern matches more than %d paths", maxGlobWords)
					}
				}
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, nil
		}
		if len(cur) > maxGlobWords {
			return nil, fmt.Errorf("the pattern matches more than %d paths", maxGlobWords)
		}
	}
	sort.Strings(cur)
	return cur, nil
}

// A line's globs are bounded in what they may read, so that no line costs
// more to plan than a refusal: directories read, names looked at, and a
// pattern's length (PATH_MAX).
const (
	maxGlobReads   = 2_000
	maxGlobNames   = 200_000
	maxGlobPattern = 4096
)

// globBudget is what a line's globs may still read.
type globBudget struct{ reads, names int }

// unescapeGlob removes the backslashes lit put before glob characters.
func unescapeGlob(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var sb strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		sb.WriteByte(p[i])
	}
	return sb.String()
}

// bytesAsRunes maps each byte of s to the rune of the same value, so that
// a regular expression matches bytes, as bash does in the C locale.
func bytesAsRunes(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// backgroundOK reports whether st, a statement ended by &, is what rein
// runs in the background: the line's only statement, one simple command
// (a list or a pipeline before & stays opaque: which part would run in the
// background is bash's to say).
func (b *builder) backgroundOK(f *syntax.File, st *syntax.Stmt) bool {
	if len(f.Stmts) != 1 || f.Stmts[0] != st || st.Coprocess || st.Disown || st.Negated {
		return false
	}
	_, ok := st.Cmd.(*syntax.CallExpr)
	return ok
}

// loopWords act on the loop or function they are in: a program of that
// name is not what bash runs.
var loopWords = map[string]bool{"break": true, "continue": true, "return": true}

// maxIterations bounds the iterations of the for loops rein unrolls in
// one line.
const maxIterations = 64

// loopName reports whether a for loop's variable can be unrolled: a
// lower-case name, as the environment's variables (which bash would hand
// the loop's programs the new value of) are not, but for the proxies' and
// npm's own.
func loopName(n string) bool {
	if !syntax.ValidName(n) || strings.HasSuffix(n, "proxy") || strings.HasPrefix(n, "npm_") {
		return false
	}
	for i := 0; i < len(n); i++ {
		if 'A' <= n[i] && n[i] <= 'Z' {
			return false
		}
	}
	return true
}

// forRefusal says why a for loop is not unrolled, or "" when it is: a
// for NAME in WORDS loop standing as a statement of its own (not inside
// a list, a pipeline or another loop), with no redirect, not in the
// background.
func forRefusal(f *syntax.File, fc *syntax.ForClause) string {
	wi, ok := fc.Loop.(*syntax.WordIter)
	switch {
	case fc.Select:
		return "select"
	case !ok:
		return "an arithmetic for loop"
	case !wi.InPos.IsValid():
		return "a for loop over the positional parameters"
	case !loopName(wi.Name.Value):
		return fmt.Sprintf("a for loop whose variable %q may name one of the environment's: use a lower-case name", wi.Name.Value)
	}
	for _, st := range f.Stmts {
		if st.Cmd == syntax.Command(fc) {
			if len(st.Redirs) > 0 || st.Background || st.Negated || st.Coprocess || st.Disown {
				return "a for loop with a redirect, & or !"
			}
			return ""
		}
	}
	return "a for loop inside a list, a pipeline or another loop"
}

// unroll appends a for loop's iterations to plan: its words expanded (as
// a command's arguments are), then for each, the body with the variable
// set to it, all joined by ;.
func (b *builder) unroll(plan *Line, fc *syntax.ForClause) {
	wi := fc.Loop.(*syntax.WordIter)
	var words []string
	b.globs = globExpand
	for _, w := range wi.Items {
		words = b.appendWords(words, w)
	}
	b.globs = globRefuse
	at := off(fc.Pos())
	b.iterations += len(words)
	switch {
	case len(words) == 0:
		b.add(refuse(CompoundCommand, at, "a for loop over no words runs nothing"))
		return
	case b.iterations > maxIterations:
		b.add(refuse(CompoundCommand, at, fmt.Sprintf("for loops of more than %d iterations in a line", maxIterations)))
		return
	}
	name := wi.Name.Value
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = Quote(w)
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("the for loop at byte %d is unrolled: its body runs for %s = %s", at, name, shortText(strings.Join(quoted, " "))))
	if b.loopVars == nil {
		b.loopVars = map[string]string{}
	}
	for _, v := range words {
		b.loopVars[name] = v
		for _, st := range fc.Do {
			if len(plan.Pipelines) > 0 {
				plan.Connectors = append(plan.Connectors, Seq)
			}
			b.list(plan, st, 0)
		}
	}
	// After the loop bash keeps the variable at its last value, which
	// rein does not model: a later use is opaque.
	delete(b.loopVars, name)
}

// simpleParam reports whether pe is $NAME or ${NAME} of a variable's
// name: no operator, no special parameter.
func simpleParam(pe *syntax.ParamExp) bool {
	return pe.Param != nil && pe.Flags == nil && !pe.Excl && !pe.Length && !pe.Width && !pe.IsSet &&
		pe.NestedParam == nil && pe.Index == nil && len(pe.Modifiers) == 0 && pe.Slice == nil &&
		pe.Repl == nil && pe.Names == 0 && pe.Exp == nil && syntax.ValidName(pe.Param.Value)
}

// activation makes s, a source or . stage, the activation of a workspace
// virtual environment and reports true, when it is one: the script
// .venv/bin/activate or venv/bin/activate, relative to the directory the
// line is in or by an absolute path, with no .. in it, which exists (as
// Files shows it), sourced with no other argument, redirect or
// assignment.
func (b *builder) activation(s *Stage) bool {
	if b.p.Files == nil || len(s.Argv) != 2 || len(s.Redirects) > 0 || len(s.Env) > 0 {
		return false
	}
	script := s.Argv[1]
	root, ok := strings.CutSuffix(script, "/bin/activate")
	if !ok || slices.Contains(strings.Split(script, "/"), "..") {
		return false
	}
	if base := path.Base(root); base != ".venv" && base != "venv" {
		return false
	}
	if !path.IsAbs(root) {
		if b.cwd == "" {
			return false
		}
		root = path.Join(b.cwd, root)
	}
	ents, err := b.p.Files.ReadDir(root + "/bin")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() == "activate" && e.Type().IsRegular() {
			s.Kind, s.Dir, s.Argv = activate, root, nil
			return true
		}
	}
	return false
}

// activations takes the venv activations out of plan and gives their
// venv to every command stage after them. An activation must stand as a
// pipeline of its own, joined to what is before and after it with ; or
// && (it always succeeds, so the pipelines around it are joined with &&
// only when both joins were &&), and have a stage after it.
func (b *builder) activations(plan *Line) {
	venv := ""
	var pipes []*Pipeline
	var conns []Connector
	var joined *Connector // the join an activation left for the next pipeline
	for i, pl := range plan.Pipelines {
		in := Seq
		if i > 0 {
			in = plan.Connectors[i-1]
		}
		if joined != nil {
			in = *joined
		}
		if len(pl.Stages) == 1 && pl.Stages[0].Kind == activate {
			act := pl.Stages[0]
			out := Seq
			if i < len(plan.Connectors) {
				out = plan.Connectors[i]
			}
			if in == Or || out == Or || i == len(plan.Pipelines)-1 {
				b.add(refuse(ShellBuiltin, act.Offset, "a venv's activation joined with ||, or with nothing after it"))
				return
			}
			c := Seq
			if in == And && out == And {
				c = And
			}
			joined, venv = &c, act.Dir
			plan.Notes = append(plan.Notes, fmt.Sprintf("the virtual environment %s is activated for the stages after byte %d: programs are looked up in its bin first", act.Dir, act.Offset))
			continue
		}
		for _, st := range pl.Stages {
			switch {
			case st.Kind == activate:
				b.add(refuse(ShellBuiltin, st.Offset, "a venv's activation inside a pipeline has no effect"))
				return
			case st.Kind == Command && venv != "":
				st.Venv = venv
			}
		}
		if len(pipes) > 0 {
			conns = append(conns, in)
		}
		pipes = append(pipes, pl)
		joined = nil
	}
	plan.Pipelines, plan.Connectors = pipes, conns
}
