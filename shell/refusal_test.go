package shell

import (
	"errors"
	"strings"
	"testing"
)

// refusalCases lists lines the grammar refuses, each with the construct it
// names and the byte offset where that construct starts.
var refusalCases = []struct {
	line      string
	construct Construct
	offset    int
}{
	// command substitution, also inside double quotes
	{"cmd $(ls)", CommandSubstitution, 4},
	{"$(ls)", CommandSubstitution, 0},
	{`cmd "$(ls)"`, CommandSubstitution, 5},
	{`cmd "a $(ls) b"`, CommandSubstitution, 7},
	{"cmd `ls`", CommandSubstitution, 4},
	{"cmd \"a`ls`\"", CommandSubstitution, 6},
	{"cmd a$(b)c", CommandSubstitution, 5},
	{"cmd > $(x)", CommandSubstitution, 6},

	// parameter expansion
	{"cmd $FOO", ParameterExpansion, 4},
	{`cmd "$FOO"`, ParameterExpansion, 5},
	{`cmd "x$FOO"`, ParameterExpansion, 6},
	{"cmd ${HOME:-x}", ParameterExpansion, 4},
	{"cmd ${#HOME}", ParameterExpansion, 4},
	{"cmd $HOME$FOO", ParameterExpansion, 9},
	{"cmd ${x}", ParameterExpansion, 4},
	{`cmd "${x}"`, ParameterExpansion, 5},
	{"cmd $'a'", ParameterExpansion, 4},
	{`cmd $"a"`, ParameterExpansion, 4},
	{"cmd $1 $?", ParameterExpansion, 4},
	{"cmd a$_", ParameterExpansion, 5},
	{"cmd $[1+1]", Arithmetic, 4},
	{`cmd "a$@"`, ParameterExpansion, 6},
	{"cmd a=$x", ParameterExpansion, 6},
	{"cmd > $f", ParameterExpansion, 6},
	{"cd $FOO", ParameterExpansion, 3},

	// arithmetic
	{"$((1))", Arithmetic, 0},
	{"cmd $((1+2))", Arithmetic, 4},
	{`cmd "$((1))"`, Arithmetic, 5},
	{"((x))", Arithmetic, 0},
	{"cmd && ((x++))", Arithmetic, 7},

	// process substitution
	{"cat <(x)", ProcessSubstitution, 4},
	{"cmd >(x)", ProcessSubstitution, 4},
	{"diff <(a) <(b)", ProcessSubstitution, 5},

	// subshell
	{"( a )", Subshell, 0},
	{"(a; b) | c", Subshell, 0},
	{"cmd && (a)", Subshell, 7},

	// braces
	{"{ a; }", BraceGroup, 0},
	{"cmd && { a; }", BraceGroup, 7},

	// braces bash expands where one word is needed, or into too many
	{"cmd > {a,b}", BraceGroup, 6},
	{"cmd {A..z}", BraceGroup, 4},
	{"cmd {1..2000}", BraceGroup, 4},
	{"cd {a,b}", Syntax, 0},
	// a brace the tokeniser leaves as text, with a , or .. after it,
	// which bash's own scan may expand
	{"git --namespace {x},push}", BraceGroup, 16},
	{"cat {x},~/.ssh/config}", BraceGroup, 4},
	{"cmd {a..{b,c}}", BraceGroup, 4},
	{"cmd {a,b", BraceGroup, 4},

	// here-documents: on another descriptor, or with a body that expands
	{"a 3<<EOF\nx\nEOF", Heredoc, 2},
	{"a 0<<<x", Heredoc, 2},
	{"cat <<$X\nx\n$X", Heredoc, 4}, // the tokeniser takes no expansion there
	{"cat <<EOF\n$HOME\nEOF", ParameterExpansion, 10},
	{"cat <<EOF\na ${x} b\nEOF", ParameterExpansion, 12},
	{"cat <<EOF\n`ls`\nEOF", CommandSubstitution, 10},
	{"cat <<EOF\n$(ls)\nEOF", CommandSubstitution, 10},
	{"cat <<-EOF\n\t$HOME\n\tEOF", ParameterExpansion, 12},

	// background
	{"a & b", Background, 2},
	{"a; b &", Background, 5},
	{"a | b &", Background, 6},
	{"a && b &", Background, 7},

	// unsupported redirects
	{"a &> f", UnsupportedRedirect, 2},
	{"a &>> f", UnsupportedRedirect, 2},
	{"a |& b", UnsupportedRedirect, 2},
	{"a >&f", UnsupportedRedirect, 2},
	{"a >&2", UnsupportedRedirect, 2},
	{"a 1>&2", UnsupportedRedirect, 2},
	{"a 2>&3", UnsupportedRedirect, 2},
	{"a 1> f", UnsupportedRedirect, 2},
	{"a 3> f", UnsupportedRedirect, 2},
	{"a 22>f", UnsupportedRedirect, 2},
	{"a 0< f", UnsupportedRedirect, 2},
	{"a 2< f", UnsupportedRedirect, 2},
	{"a >| f", UnsupportedRedirect, 2},
	{"a <> f", UnsupportedRedirect, 2},
	{"a <&0", UnsupportedRedirect, 2},
	{"a x 1>>f", UnsupportedRedirect, 4},
	{"cmd 0>out", UnsupportedRedirect, 4},
	{"cmd 1<in", UnsupportedRedirect, 4},
	{"cmd >&1", UnsupportedRedirect, 4},

	// compound commands and reserved words in command position
	{"if true; then x; fi", CompoundCommand, 0},
	{"x && for x in a b; do y; done", CompoundCommand, 5},
	{"for x in a b; do y; done > f", CompoundCommand, 0},
	{"for x in a b; do for y in c; do z; done; done", CompoundCommand, 17},
	{"for x in a b; do continue; done", CompoundCommand, 17},
	{"while a; do b; done", CompoundCommand, 0},
	{"until a; do b; done", CompoundCommand, 0},
	{"case x in a) b;; esac", CompoundCommand, 0},
	{"select x in a; do b; done", CompoundCommand, 0},
	{"function f { a; }", CompoundCommand, 0},
	{"f() { a; }", CompoundCommand, 0},
	{"! x", CompoundCommand, 0},
	{"cmd; ! x", CompoundCommand, 5},
	{"[[ a ]]", CompoundCommand, 0},
	{"cmd && [[ -f x ]]", CompoundCommand, 7},
	{"done", CompoundCommand, 0},
	{"fi", CompoundCommand, 0},
	{"then x", CompoundCommand, 0},
	{"cmd && if a; then b; fi", CompoundCommand, 7},

	// globs
	{"echo *.go", Glob, 5},
	{"ls [ab]", Glob, 3},
	{"cmd a?", Glob, 5},
	{`cmd "a"*`, Glob, 7},
	{"cmd arr[0]", Glob, 7},
	{"cmd a[b]c", Glob, 5},
	{"echo @(a|b)", Glob, 5},
	{"cmd +(a)", Glob, 4},
	{"cmd > *.txt", Glob, 6},

	// assignments in command position
	{"FOO=1", Assignment, 0},
	{"cmd; A=b", Assignment, 5},
	{"A+=x cmd", Assignment, 0},
	{"A=1 export B", Assignment, 0},
	{"A=1 cd /tmp", Assignment, 0},
	{"time A=1 ls", Assignment, 5},
	{"cmd | X=$(id) y", CommandSubstitution, 8},

	// ~user and friends
	{"cmd ~root", TildeUser, 4},
	{"cmd ~+", TildeUser, 4},
	{"cmd ~-", TildeUser, 4},
	{`cmd ~"x"`, TildeUser, 4},
	{"cmd ~''", TildeUser, 4},
	{"cd ~root", TildeUser, 3},
	{"cmd a=~root", TildeUser, 6},
	{"cmd > ~root/x", TildeUser, 6},
	{"cat <<< a=b:~/c", TildeUser, 12},

	// comments
	{"# x", Comment, 0},
	{"#x\n  # y\n", Comment, 0},

	// unquoted newlines and carriage returns
	{"a\rb", Newline, 1},
	{"cmd a\r\n", Newline, 5},

	// other control bytes
	{"a\x01b", ControlCharacter, 1},
	{"cmd \x1b", ControlCharacter, 4},
	{"cmd \x7f", ControlCharacter, 4},
	{"cmd \x0b x", ControlCharacter, 4},
	{"cmd \x0c", ControlCharacter, 4},
	{"cmd \"\\\x01\x7f\"!", ControlCharacter, 6},
	{"cat <<E\n\x01\nE", ControlCharacter, 8},
	{"cmd \x00", ControlCharacter, 4},
	{"cmd '\x00'", ControlCharacter, 5},
	{"\x00", ControlCharacter, 0},

	// builtins that need a shell to hold their effect
	{"export X=1", ShellBuiltin, 0},
	{"'export' X=1", ShellBuiltin, 0},
	{`"eval" x`, ShellBuiltin, 0},
	{"eval x", ShellBuiltin, 0},
	{`\eval x`, ShellBuiltin, 0},
	{". f", ShellBuiltin, 0},
	{"source f", ShellBuiltin, 0},
	{"alias a=b", ShellBuiltin, 0},
	{"set -e", ShellBuiltin, 0},
	{"unset X", ShellBuiltin, 0},
	{"declare -x A", ShellBuiltin, 0},
	{"typeset A", ShellBuiltin, 0},
	{"local A", ShellBuiltin, 0},
	{"trap x EXIT", ShellBuiltin, 0},
	{"exec cmd", ShellBuiltin, 0},
	{"readonly A", ShellBuiltin, 0},
	{"let x=1", ShellBuiltin, 0},
	{"cmd && exec x", ShellBuiltin, 7},
	{"cmd | source f", ShellBuiltin, 6},
	{"%a b", ShellBuiltin, 0},

	// syntax: empty stages, dangling operators, missing targets, quotes
	{"", Syntax, 0},
	{"   ", Syntax, 0},
	{"\t \t", Syntax, 0},
	{"a |", Syntax, 2},
	{"| a", Syntax, 0},
	{"a &&", Syntax, 2},
	{"a ||", Syntax, 2},
	{"&& a", Syntax, 0},
	{";", Syntax, 0},
	{"; a", Syntax, 0},
	{"a ;; b", Syntax, 2},
	{"a ; ; b", Syntax, 4},
	{"a >", Syntax, 2},
	{"a 2>", Syntax, 3}, // the tokeniser reports where the missing word should start

	// lines that are not valid UTF-8 (such arguments go through FromArgv)
	{"cmd \xff", Syntax, 4},
	{"cmd '\xff\xfe'", Syntax, 5},
	{"cmd \"\xc3\x28\"", Syntax, 5},
	{"cmd a\x80b", Syntax, 5},
	{"cmd \xe2\x82", Syntax, 4},
	{"cmd \\\xff", Syntax, 5},

	// a CR right before an LF, which tokenisers fold into LF even in quotes
	{"cmd 'a\r\nb'", Newline, 6},
	{"cmd 'a\r' '\r\n'", Newline, 10},
	{"cmd \"a\r\nb\"", Newline, 6},
	{"a <", Syntax, 2},
	{"a > ''", Syntax, 4},
	{"'unterminated", Syntax, 0},
	{`cmd "unterminated`, Syntax, 4},
	{`"unterminated`, Syntax, 0},
	{"cmd 'a", Syntax, 4},
	{"cd a b", Syntax, 5},
	{"cd a b c", Syntax, 5},
	{"cd a | b", Syntax, 0},
	{"cmd | cd a", Syntax, 6},
	{"cd a > f", Syntax, 0},
	{"'' a", Syntax, 0},

	// where rein's tokeniser and bash part ways: refused outright, since
	// no reading of the line, opaque or not, can be trusted
	{"echo ok # \\\nrm -rf /", Comment, 8},
	{"ls $X # \\\nrm -rf ~", Comment, 6},
	{"cat <<EOF\nhello\nEO\\\nF\ngit push --force origin main\nEOF", Heredoc, 4},
	{"cat <<-EOF\n\tx\\\n\tEOF\ncat <<'Z'\nEOF\ngit push origin main\nZ", Heredoc, 4},
	{"cat <<A\nA\\\n\ncmd\nA", Heredoc, 4},
	{"cat <<EOF\n$X\nEO\\\nF\ngit push origin main\nrm -rf ~\nEOF", Heredoc, 4},
	{"a $x; cat <<EOF\nEO\\\nF\ngit push\nEOF", Heredoc, 10},
	{"a 'x\ny'\\", Syntax, 7},
	{"cat <<<'\n' .env\\", Syntax, 15},
	{"cm >>2>out2", Syntax, 5},
	{"cm <<<2>x", Syntax, 6},
	{"python3 <<'EOF'#\nimport sys\nEOF", Heredoc, 10},
	{"b<<\"E\"#x\nE#x\n", Heredoc, 1},
}

func TestRefusals(t *testing.T) {
	for _, c := range refusalCases {
		t.Run(c.line, func(t *testing.T) {
			l, err := Parser{Home: testHome}.Parse(c.line)
			if l != nil {
				t.Errorf("Parse(%q) returned a plan %s", c.line, dumpPlan(l))
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Parse(%q) = %v, want a *Refusal naming %s at %d", c.line, err, c.construct, c.offset)
			}
			if r.Construct != c.construct || r.Offset != c.offset {
				t.Errorf("Parse(%q) refused %s at %d, want %s at %d (%s)", c.line, r.Construct, r.Offset, c.construct, c.offset, r.Message)
			}
			if r.Message == "" {
				t.Errorf("Parse(%q): refusal has no message", c.line)
			}
			if !strings.Contains(r.Error(), string(r.Construct)) {
				t.Errorf("Parse(%q): Error() %q does not name %s", c.line, r.Error(), r.Construct)
			}
		})
	}
}

// TestRefusalTableCoverage makes sure each refused construct is exercised
// at least twice.
func TestRefusalTableCoverage(t *testing.T) {
	seen := map[Construct]int{}
	for _, c := range refusalCases {
		seen[c.construct]++
	}
	for _, c := range []Construct{
		CommandSubstitution, ParameterExpansion, Arithmetic, ProcessSubstitution,
		Subshell, BraceGroup, Heredoc, Background, UnsupportedRedirect,
		CompoundCommand, Glob, Assignment, TildeUser, Comment, Newline,
		ShellBuiltin, ControlCharacter, Syntax,
	} {
		if seen[c] < 2 {
			t.Errorf("%s appears %d times in the refusal table, want at least 2", c, seen[c])
		}
	}
}

func TestRefusalMessages(t *testing.T) {
	_, err := Parse("cat $(ls)")
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("Parse: %v, want a *Refusal", err)
	}
	if !strings.Contains(r.Message, "run the inner command first") {
		t.Errorf("command substitution message %q does not tell the caller to run the inner command first", r.Message)
	}
	if want := "command-substitution at offset 4: "; !strings.HasPrefix(r.Error(), want) {
		t.Errorf("Error() = %q, want prefix %q", r.Error(), want)
	}

	// Every construct has its own advice, distinct from the others.
	byMessage := map[string]Construct{}
	for _, c := range refusalCases {
		_, err := Parser{Home: testHome}.Parse(c.line)
		if !errors.As(err, &r) || r.Construct != c.construct {
			continue
		}
		for other, oc := range byMessage {
			if oc != c.construct && other == r.Message {
				t.Errorf("%s and %s share the message %q", oc, c.construct, r.Message)
			}
		}
		byMessage[r.Message] = c.construct
	}
}

func TestFromArgvRefusesEmpty(t *testing.T) {
	for _, argv := range [][]string{nil, {}} {
		if l, err := FromArgv(argv); err == nil {
			t.Errorf("FromArgv(%q) = %s, want an error", argv, dumpPlan(l))
		}
	}
}
