package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// OpaqueShell is the program an opaque line runs under: bash, found on the
// sandbox's PATH like any other program, given the line with -c.
const OpaqueShell = "bash"

// Plan returns the plan of line: the exact plan Parse makes when the line
// is inside the grammar, or else, for a line bash would run, its opaque
// plan: one stage, bash -c with the line as written, and Line.Opaque
// naming the construct that made it opaque. The caller decides an opaque
// plan as it decides bash -c (its deny rules and hard denies still see
// the commands SimpleCommands can read), asks, and runs it confined. The
// error is a *Refusal only for a line bash would reject too, or that no
// program could receive (Refusal.Malformed).
func (p Parser) Plan(line string) (*Line, error) {
	plan, err := p.Parse(line)
	if err == nil {
		return plan, nil
	}
	var r *Refusal
	if !errors.As(err, &r) || r.Malformed {
		return nil, err
	}
	return Opaque(line, r), nil
}

// Opaque is the plan that runs line as opaque shell code: bash -c LINE,
// with r the construct that kept it outside the grammar.
func Opaque(line string, r *Refusal) *Line {
	st := &Stage{Kind: Command, Argv: []string{OpaqueShell, "-c", line}, Source: line}
	return &Line{Pipelines: []*Pipeline{{Stages: []*Stage{st}}}, Opaque: r}
}

// SimpleCommands returns the simple commands rein can read in text, a line
// outside the grammar (opaque code), in the order they are written: each a
// Command stage whose Argv is its words up to the first one rein cannot
// know before it runs (an expansion, a glob), with the redirects whose
// targets it can know; a cd to a directory it can know is a Cd stage.
// Commands nested in loops, conditions, subshells and substitutions are
// found too. It is what the policy's deny rules, hard denies and
// protected paths still see of an opaque line; it is not a plan, and
// nothing runs from it. Text the tokeniser cannot read yields nothing.
func (p Parser) SimpleCommands(text string) []*Stage {
	// A CR LF pair, which the tokeniser folds into LF, moves no command
	// boundary: such text is still read.
	if r := prescan(strings.ReplaceAll(text, "\r\n", "\n")); r != nil {
		return nil
	}
	sp := parsers.Get().(*syntax.Parser)
	f, err := sp.Parse(strings.NewReader(text), "")
	parsers.Put(sp)
	if err != nil {
		return nil
	}
	// Where the tokeniser and bash part ways (a comment a backslash
	// continues, a here-document's lines a backslash joins), nothing it
	// read can be trusted.
	torn := false
	tb := builder{line: text}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Comment:
			torn = torn || strings.Contains(n.Text, "\n")
		case *syntax.Redirect:
			if n.Hdoc != nil {
				_, ok := tb.heredocBody(n)
				torn = torn || !ok
			}
		}
		return !torn
	})
	if torn {
		return nil
	}
	// The statements are gathered first: reading their words rewrites
	// them (brace expansion), which the walk must not see.
	var stmts []*syntax.Stmt
	syntax.Walk(f, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok {
			if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				stmts = append(stmts, st)
			}
		}
		return true
	})
	var out []*Stage
	for _, st := range stmts {
		call := st.Cmd.(*syntax.CallExpr)
		b := builder{home: p.Home, line: text}
		s := &Stage{Kind: Command, Offset: off(st.Pos())}
		for _, w := range call.Args {
			if !literalWord(w) {
				break
			}
			argv := b.appendWords(s.Argv, w)
			if b.first != nil {
				break
			}
			s.Argv = argv
		}
		for _, r := range st.Redirs {
			b.first = nil
			var ops []RedirectOp
			switch r.Op {
			case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll:
				ops = []RedirectOp{Truncate}
			case syntax.AppOut, syntax.AppAll:
				ops = []RedirectOp{Append}
			case syntax.RdrIn:
				ops = []RedirectOp{Read}
			case syntax.RdrInOut:
				// <> opens the file for reading and writing.
				ops = []RedirectOp{Read, Append}
			case syntax.DplOut, syntax.DplIn:
				// >&WORD with a WORD that is not a descriptor is
				// >WORD 2>&1; a descriptor (or -) names no path.
				if l := r.Word.Lit(); l != "" && (l == "-" || strings.Trim(l, "0123456789-") == "") {
					continue
				}
				ops = []RedirectOp{Truncate}
			case syntax.Hdoc, syntax.DashHdoc:
				// A here-document is the program of a reader of
				// standard input: the policy reads it as such.
				// An unquoted body is read as written, its expansions
				// not made: enough for what it names.
				if data, ok := tb.heredocBody(r); ok && (r.N == nil || r.N.Value == "0") {
					s.Redirects = append(s.Redirects, Redirect{Op: Input, Data: data})
				}
				continue
			case syntax.WordHdoc:
				if (r.N == nil || r.N.Value == "0") && literalWord(r.Word) {
					if w := b.single(r.Word); b.first == nil {
						s.Redirects = append(s.Redirects, Redirect{Op: Input, Data: w + "\n"})
					}
				}
				continue
			}
			if len(ops) == 0 || !literalWord(r.Word) {
				continue
			}
			path := b.single(r.Word)
			if b.first != nil || path == "" {
				continue
			}
			for _, op := range ops {
				fd := 1
				switch {
				case op == Read:
					fd = 0
				case r.N != nil && r.N.Value == "2":
					fd = 2
				}
				s.Redirects = append(s.Redirects, Redirect{Fd: fd, Op: op, Path: path})
			}
		}
		switch {
		case len(s.Argv) == 0 || s.Argv[0] == "":
		case s.Argv[0] == "cd" && len(s.Argv) == 2 && len(call.Args) == 2:
			out = append(out, &Stage{Kind: Cd, Dir: s.Argv[1], Offset: s.Offset})
		default:
			out = append(out, s)
		}
	}
	return out
}

// literalWord reports whether w holds only text and quotes: no expansion
// the tokeniser found in it.
func literalWord(w *syntax.Word) bool {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			if p.Dollar {
				return false
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return false
			}
			for _, dp := range p.Parts {
				if _, ok := dp.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// Differs says how plan b differs from plan a, or "" when they are the
// same plan: the same pipelines, stages, argv, redirects, bytes and
// opaque construct (byte offsets, notes and the words as written aside).
func Differs(a, b *Line) string {
	if a == nil || b == nil {
		return "a plan is missing"
	}
	type stage struct {
		Kind      StageKind
		Env       []string
		Venv      string
		Argv      []string
		Program   string
		Programs  map[string]string
		Dir       string
		Redirects []Redirect
	}
	flat := func(l *Line) (out [][]stage) {
		for _, p := range l.Pipelines {
			var ps []stage
			for _, s := range p.Stages {
				ps = append(ps, stage{s.Kind, s.Env, s.Venv, s.Argv, s.Program, s.Programs, s.Dir, s.Redirects})
			}
			out = append(out, ps)
		}
		return out
	}
	enc := func(l *Line) string {
		var construct Construct
		if l.Opaque != nil {
			construct = l.Opaque.Construct
		}
		data, _ := json.Marshal(struct {
			P  [][]stage
			C  []Connector
			O  Construct
			BG bool
		}{flat(l), l.Connectors, construct, l.Background})
		return string(data)
	}
	if x, y := enc(a), enc(b); x != y {
		if len(a.Stages()) != len(b.Stages()) {
			return fmt.Sprintf("%d stages against %d", len(a.Stages()), len(b.Stages()))
		}
		for i, s := range a.Stages() {
			if t := b.Stages()[i]; fmt.Sprint(s.Argv, s.Dir) != fmt.Sprint(t.Argv, t.Dir) {
				return fmt.Sprintf("stage %d is %q, not %q", i, t.Argv, s.Argv)
			}
		}
		return "their redirects, connectors or programs differ"
	}
	return ""
}
