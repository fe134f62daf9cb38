package shell

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var refusableConstructs = []Construct{
	CommandSubstitution, ParameterExpansion, Arithmetic, ProcessSubstitution,
	Subshell, BraceGroup, Heredoc, Background, UnsupportedRedirect,
	CompoundCommand, Glob, Assignment, TildeUser, Comment, Newline,
	ShellBuiltin, ControlCharacter, Syntax,
}

// checkParse checks what Parse returned for line against the contract: a
// plan or a refusal, never both; a well-formed plan; a plan that prints as
// a line that parses back to itself.
func checkParse(line string, l *Line, err error) error {
	if err != nil {
		if l != nil {
			return fmt.Errorf("both a plan %s and an error %v", dumpPlan(l), err)
		}
		var r *Refusal
		if !errors.As(err, &r) {
			return fmt.Errorf("error %T %v is not a *Refusal", err, err)
		}
		if !slices.Contains(refusableConstructs, r.Construct) {
			return fmt.Errorf("refusal names unknown construct %q", r.Construct)
		}
		if r.Offset < 0 || r.Offset > len(line) {
			return fmt.Errorf("refusal offset %d outside the line of %d bytes", r.Offset, len(line))
		}
		if r.Message == "" {
			return fmt.Errorf("refusal %s has no message", r.Construct)
		}
		return nil
	}
	if l == nil {
		return errors.New("neither a plan nor an error")
	}
	if err := checkPlanShape(l, len(line)); err != nil {
		return fmt.Errorf("plan %s: %v", dumpPlan(l), err)
	}
	printed := l.String()
	l2, err := Parser{Home: testHome}.Parse(printed)
	if err != nil {
		return fmt.Errorf("plan %s prints as %q, which is refused: %v", dumpPlan(l), printed, err)
	}
	if !samePlan(l, l2) {
		return fmt.Errorf("plan %s prints as %q, which parses to %s", dumpPlan(l), printed, dumpPlan(l2))
	}
	return nil
}

// checkPlanShape checks the shape of a plan parsed from a line of n bytes.
func checkPlanShape(l *Line, n int) error {
	if len(l.Pipelines) == 0 {
		return errors.New("no pipelines")
	}
	if len(l.Connectors) != len(l.Pipelines)-1 {
		return fmt.Errorf("%d connectors for %d pipelines", len(l.Connectors), len(l.Pipelines))
	}
	for _, c := range l.Connectors {
		if c != Seq && c != And && c != Or {
			return fmt.Errorf("connector %d", c)
		}
	}
	prev := -1
	// An unrolled loop's body is its stages again, at the same offsets.
	unrolled := slices.ContainsFunc(l.Notes, func(n string) bool { return strings.Contains(n, "is unrolled") })
	for i, p := range l.Pipelines {
		if p == nil || len(p.Stages) == 0 {
			return fmt.Errorf("pipeline %d is empty", i)
		}
		for _, s := range p.Stages {
			if s == nil {
				return fmt.Errorf("pipeline %d has a nil stage", i)
			}
			if (s.Offset <= prev && !unrolled) || s.Offset >= n {
				return fmt.Errorf("stage offset %d after %d in a line of %d bytes", s.Offset, prev, n)
			}
			prev = s.Offset
			switch s.Kind {
			case Cd:
				if len(p.Stages) != 1 || len(s.Redirects) != 0 || len(s.Argv) != 0 {
					return errors.New("cd stage in a pipeline, with redirects or with argv")
				}
				if strings.IndexByte(s.Dir, 0) >= 0 {
					return fmt.Errorf("cd directory %q holds a NUL", s.Dir)
				}
			case Command:
				if len(s.Argv) == 0 || s.Argv[0] == "" || s.Dir != "" {
					return fmt.Errorf("command stage argv %q dir %q", s.Argv, s.Dir)
				}
				for _, a := range s.Argv {
					if strings.IndexByte(a, 0) >= 0 {
						return fmt.Errorf("argument %q holds a NUL", a)
					}
				}
			default:
				return fmt.Errorf("stage kind %d", s.Kind)
			}
			for _, r := range s.Redirects {
				ok := false
				switch r.Op {
				case Read:
					ok = r.Fd == 0 && r.Path != ""
				case Truncate, Append:
					ok = (r.Fd == 1 || r.Fd == 2) && r.Path != ""
				case DupStdout:
					ok = r.Fd == 2 && r.Path == ""
				case Input:
					ok = r.Fd == 0 && r.Path == "" && (r.Data == "" || strings.HasSuffix(r.Data, "\n"))
				}
				if !ok || strings.IndexByte(r.Path, 0) >= 0 {
					return fmt.Errorf("redirect %+v", r)
				}
			}
		}
	}
	return nil
}

func FuzzParse(f *testing.F) {
	for _, e := range readCorpus(f, filepath.Join("testdata", "bash_corpus.txt")) {
		f.Add(e.line)
	}
	for _, c := range refusalCases {
		f.Add(c.line)
	}
	for _, c := range planCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if err := parseWithin(line, hangAfter); err != nil {
			t.Fatalf("Parse(%q): %v", line, err)
		}
	})
}

// hangAfter is far beyond any honest parse; the fuzz engine itself never
// gives up on an input that loops.
const hangAfter = 10 * time.Second

// parseWithin parses line and checks the result with checkParse, failing
// if that takes longer than limit or panics.
func parseWithin(line string, limit time.Duration) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		l, err := Parser{Home: testHome}.Parse(line)
		done <- checkParse(line, l, err)
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("no answer after %v", limit)
	}
}

// lineProgramNames are programs that a line cannot name: cd is the
// builtin, the others are refused in command position.
var lineProgramNames = []string{
	"cd",
	"export", "eval", "source", ".", "alias", "unalias", "set", "unset",
	"declare", "typeset", "local", "trap", "exec", "readonly", "let", "shopt",
	"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done",
	"case", "esac", "select", "function", "!", "[[", "]]", "in", "coproc",
	"{", "}",
}

func FuzzFromArgv(f *testing.F) {
	for _, argv := range fromArgvCases {
		f.Add(strings.Join(argv, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		l, err := FromArgv(argv)
		if err != nil {
			if argv[0] == "" {
				return
			}
			t.Fatalf("FromArgv(%q): %v", argv, err)
		}
		st := l.Stages()
		if len(l.Pipelines) != 1 || len(st) != 1 || st[0].Kind != Command ||
			len(st[0].Redirects) != 0 || !slices.Equal(st[0].Argv, argv) {
			t.Fatalf("FromArgv(%q) = %s", argv, dumpPlan(l))
		}
		if slices.Contains(lineProgramNames, argv[0]) {
			return
		}
		printed := l.String()
		l2, err := Parser{Home: testHome}.Parse(printed)
		if !utf8.ValidString(joined) {
			// Lines are UTF-8; such an argv prints, but only exec runs it.
			var r *Refusal
			if !errors.As(err, &r) || r.Construct != Syntax {
				t.Fatalf("FromArgv(%q) prints as %q, which must be refused as syntax, got %v", argv, printed, err)
			}
			return
		}
		if strings.HasPrefix(argv[0], "%") {
			// A program whose name bash reads as a job, quoted or not: only
			// exec runs it, and its printed line is refused, naming why.
			var r *Refusal
			if !errors.As(err, &r) || r.Construct != ShellBuiltin {
				t.Fatalf("FromArgv(%q) prints as %q, which must be refused as a job, got %v", argv, printed, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("FromArgv(%q) prints as %q, which is refused: %v", argv, printed, err)
		}
		if st2 := l2.Stages(); len(l2.Pipelines) != 1 || len(st2) != 1 || st2[0].Kind != Command ||
			len(st2[0].Redirects) != 0 || !slices.Equal(st2[0].Argv, argv) {
			t.Fatalf("FromArgv(%q) prints as %q, which parses to %s", argv, printed, dumpPlan(l2))
		}
	})
}

// TestParseHostileInputs feeds Parse lines built to exhaust a parser. Each
// must come back, within a generous bound, as a plan or a refusal.
func TestParseHostileInputs(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name string
		line string
	}{
		{"invalid-utf8-unquoted", "cmd \xff\xfe \xc3( \xed\xa0\x80"},
		{"invalid-utf8-single-quoted", "cmd '\xff\xfe' '\xc0\xaf'"},
		{"invalid-utf8-double-quoted", "cmd \"\xff\" \"\xe2\x82\""},
		{"nul", "\x00"},
		{"nul-in-word", "cmd a\x00b"},
		{"nul-quoted", "cmd '\x00' \"\x00\""},
		{"nul-after-comment-quote", "cmd '#\x00"},
		{"words-1mib", "cmd" + strings.Repeat(" word", mib/5)},
		{"single-quoted-1mib", "cmd '" + strings.Repeat("a b;|&$`\\\"", mib/10) + "'"},
		{"double-quoted-1mib", `cmd "` + strings.Repeat(`a b;|&\$\`+"`"+`\\\"`, mib/16) + `"`},
		{"unterminated-1mib", "cmd '" + strings.Repeat("x", mib)},
		{"and-10000", "a" + strings.Repeat(" && a", 10000)},
		{"or-and-10000", "a" + strings.Repeat(" || a && b", 5000)},
		{"seq-10000", strings.Repeat("a; ", 10000)},
		{"pipe-10000", "a" + strings.Repeat(" | a", 10000)},
		{"pipe-and-10000", "a" + strings.Repeat(" | b && c", 5000)},
		{"cmdsubst-nested-10000", strings.Repeat("$(", 10000) + "x" + strings.Repeat(")", 10000)},
		{"cmdsubst-open-10000", "cmd " + strings.Repeat("$(", 10000)},
		{"cmdsubst-quoted-10000", strings.Repeat(`"$(`, 10000) + "x" + strings.Repeat(`)"`, 10000)},
		{"backquote-10000", "cmd " + strings.Repeat("`", 10000)},
		{"subshell-10000", strings.Repeat("(", 10000) + "a" + strings.Repeat(")", 10000)},
		{"brace-10000", strings.Repeat("{ ", 10000) + "a" + strings.Repeat("; }", 10000)},
		{"arith-10000", "cmd $((" + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + "))"},
		{"param-10000", "cmd " + strings.Repeat("${x:-", 10000) + strings.Repeat("}", 10000)},
		{"quotes-alternating", "cmd " + strings.Repeat(`"'"'`, 50000)},
		{"quotes-empty", "cmd " + strings.Repeat(`''""`, 100000)},
		{"quotes-unbalanced", "cmd " + strings.Repeat(`"'`, 50000)},
		{"backslashes", "cmd " + strings.Repeat(`\`, 100001)},
		{"redirects-10000", "cmd" + strings.Repeat(" > f 2>&1 < g", 10000)},
		{"heredoc-10000", "cmd" + strings.Repeat(" <<EOF", 10000)},
		{"heredoc-bodies-10000", "cmd" + strings.Repeat(" <<E", 10000) + strings.Repeat("\nx\nE", 10000)},
		{"heredoc-1mib-body", "cat <<'EOF'\n" + strings.Repeat("line of text $x `y`\n", mib/20) + "EOF"},
		{"heredoc-unquoted-backslashes", "cat <<EOF\n" + strings.Repeat("\\\\\\$\\\n", mib/8) + "EOF"},
		{"brace-bomb", "cmd {1..1000}{1..1000}{1..1000}"},
		{"brace-nested-10000", "cmd " + strings.Repeat("{a,", 10000) + strings.Repeat("}", 10000)},
		{"brace-empty", "{,} {,,,} x{,}"},
		{"comments-10000", strings.Repeat("cmd # c\n", 10000)},
		{"if-10000", strings.Repeat("if a; then ", 10000) + "b" + strings.Repeat("; fi", 10000)},
		{"tildes", "cmd" + strings.Repeat(" ~/a a=~:~:~", 10000)},
		{"newlines", strings.Repeat("a\n", 100000)},
		{"control-bytes", strings.Repeat("\x01\x02\x1b", 100000)},
		{"over-4mib", "cmd " + strings.Repeat("a", 5*mib)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if err := parseWithin(c.line, 20*time.Second); err != nil {
				t.Fatalf("Parse(%s, %d bytes): %v", c.name, len(c.line), clip(err.Error(), 500))
			}
		})
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// FuzzPlan checks Plan's contract on any input: an exact plan (Parse's),
// or an opaque plan that runs the line as written under bash -c, or a
// refusal only of a line bash would reject too; and SimpleCommands reads
// any text without failing.
func FuzzPlan(f *testing.F) {
	for _, e := range readCorpus(f, filepath.Join("testdata", "bash_corpus.txt")) {
		f.Add(e.line)
	}
	for _, c := range refusalCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p := Parser{Home: testHome}
		l, err := p.Plan(line)
		exact, perr := p.Parse(line)
		var r *Refusal
		switch {
		case err != nil:
			if !errors.As(err, &r) || !r.Malformed || l != nil || perr == nil {
				t.Fatalf("Plan(%q) = %s, %v: an error must be a malformed refusal, and Parse must refuse too", line, dumpPlan(l), err)
			}
		case l.Opaque == nil:
			if perr != nil || !samePlan(l, exact) {
				t.Fatalf("Plan(%q) = %s, exact, but Parse gives %s, %v", line, dumpPlan(l), dumpPlan(exact), perr)
			}
		default:
			st := l.Stages()
			if perr == nil || !errors.As(perr, &r) || r.Malformed || l.Opaque.Construct != r.Construct ||
				len(st) != 1 || !slices.Equal(st[0].Argv, []string{OpaqueShell, "-c", line}) || len(st[0].Redirects) != 0 {
				t.Fatalf("Plan(%q) = %s opaque %v; Parse: %v", line, dumpPlan(l), l.Opaque, perr)
			}
		}
		for _, s := range p.SimpleCommands(line) {
			if s.Kind == Command && (len(s.Argv) == 0 || s.Argv[0] == "") {
				t.Fatalf("SimpleCommands(%q) holds an empty command", line)
			}
		}
	})
}
