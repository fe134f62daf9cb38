package shell

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testHome = "/home/rein-test"

func cmdStage(off int, argv ...string) *Stage {
	return &Stage{Kind: Command, Argv: argv, Offset: off}
}

func cdStage(off int, dir string) *Stage {
	return &Stage{Kind: Cd, Dir: dir, Offset: off}
}

func redirected(s *Stage, r ...Redirect) *Stage {
	s.Redirects = append(s.Redirects, r...)
	return s
}

func pipeOf(stages ...*Stage) *Pipeline { return &Pipeline{Stages: stages} }

func lineOf(first *Pipeline, rest ...any) *Line {
	l := &Line{Pipelines: []*Pipeline{first}}
	for i := 0; i < len(rest); i += 2 {
		l.Connectors = append(l.Connectors, rest[i].(Connector))
		l.Pipelines = append(l.Pipelines, rest[i+1].(*Pipeline))
	}
	return l
}

func rOut(path string) Redirect    { return Redirect{Fd: 1, Op: Truncate, Path: path} }
func rApp(path string) Redirect    { return Redirect{Fd: 1, Op: Append, Path: path} }
func rIn(path string) Redirect     { return Redirect{Fd: 0, Op: Read, Path: path} }
func rErrOut(path string) Redirect { return Redirect{Fd: 2, Op: Truncate, Path: path} }
func rErrApp(path string) Redirect { return Redirect{Fd: 2, Op: Append, Path: path} }

var rDupErr = Redirect{Fd: 2, Op: DupStdout}

func rData(data string) Redirect { return Redirect{Op: Input, Data: data} }

var planCases = []struct {
	line string
	want *Line
}{
	{"cmd", lineOf(pipeOf(cmdStage(0, "cmd")))},
	{"  cmd  a  ", lineOf(pipeOf(cmdStage(2, "cmd", "a")))},
	{"\tcmd\ta", lineOf(pipeOf(cmdStage(1, "cmd", "a")))},
	{`grep -n 'a b' "c\"d"`, lineOf(pipeOf(cmdStage(0, "grep", "-n", "a b", `c"d`)))},
	{"go build ./... && go test ./... ; git status", lineOf(
		pipeOf(cmdStage(0, "go", "build", "./...")),
		And, pipeOf(cmdStage(18, "go", "test", "./...")),
		Seq, pipeOf(cmdStage(34, "git", "status")))},
	{"a | b | c", lineOf(pipeOf(cmdStage(0, "a"), cmdStage(4, "b"), cmdStage(8, "c")))},
	{"a|b|c", lineOf(pipeOf(cmdStage(0, "a"), cmdStage(2, "b"), cmdStage(4, "c")))},
	{"a || b && c", lineOf(pipeOf(cmdStage(0, "a")), Or, pipeOf(cmdStage(5, "b")), And, pipeOf(cmdStage(10, "c")))},
	{"a && b || c", lineOf(pipeOf(cmdStage(0, "a")), And, pipeOf(cmdStage(5, "b")), Or, pipeOf(cmdStage(10, "c")))},
	{"a; b && c || d; e", lineOf(
		pipeOf(cmdStage(0, "a")), Seq, pipeOf(cmdStage(3, "b")), And, pipeOf(cmdStage(8, "c")),
		Or, pipeOf(cmdStage(13, "d")), Seq, pipeOf(cmdStage(16, "e")))},
	{"a | b && c | d", lineOf(pipeOf(cmdStage(0, "a"), cmdStage(4, "b")), And, pipeOf(cmdStage(9, "c"), cmdStage(13, "d")))},
	{"a;", lineOf(pipeOf(cmdStage(0, "a")))},
	{"a ; b ;", lineOf(pipeOf(cmdStage(0, "a")), Seq, pipeOf(cmdStage(4, "b")))},
	{"cmd > out 2>&1", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rOut("out"), rDupErr)))},
	{"cmd 2>&1 > out", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rDupErr, rOut("out"))))},
	{"cmd < in >> log 2>> err", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rIn("in"), rApp("log"), rErrApp("err"))))},
	{"cmd 2> err > out < in", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rErrOut("err"), rOut("out"), rIn("in"))))},
	{"> out cmd arg", lineOf(pipeOf(redirected(cmdStage(0, "cmd", "arg"), rOut("out"))))},
	{"cmd a > out b", lineOf(pipeOf(redirected(cmdStage(0, "cmd", "a", "b"), rOut("out"))))},
	{"cmd >out<in", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rOut("out"), rIn("in"))))},
	{"cmd a2>out", lineOf(pipeOf(redirected(cmdStage(0, "cmd", "a2"), rOut("out"))))},
	{"cmd x 2 > out", lineOf(pipeOf(redirected(cmdStage(0, "cmd", "x", "2"), rOut("out"))))},
	{`cmd "2">out`, lineOf(pipeOf(redirected(cmdStage(0, "cmd", "2"), rOut("out"))))},
	{`cmd \2>out`, lineOf(pipeOf(redirected(cmdStage(0, "cmd", "2"), rOut("out"))))},
	{"cmd 2>out2", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rErrOut("out2"))))},
	{"cmd > 'a b' 2> \"c d\"", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rOut("a b"), rErrOut("c d"))))},
	{"cmd > ~/out < ~/in", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rOut(testHome+"/out"), rIn(testHome+"/in"))))},
	{"cmd > /dev/null 2>&1", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rOut("/dev/null"), rDupErr)))},
	{"cmd 2>&1 | grep x > out", lineOf(pipeOf(redirected(cmdStage(0, "cmd"), rDupErr), redirected(cmdStage(11, "grep", "x"), rOut("out"))))},
	{"cd src && go test", lineOf(pipeOf(cdStage(0, "src")), And, pipeOf(cmdStage(10, "go", "test")))},
	{"cd", lineOf(pipeOf(cdStage(0, "")))},
	{"cd; cmd", lineOf(pipeOf(cdStage(0, "")), Seq, pipeOf(cmdStage(4, "cmd")))},
	{"cd ~", lineOf(pipeOf(cdStage(0, testHome)))},
	{"cd ~/x", lineOf(pipeOf(cdStage(0, testHome+"/x")))},
	{"cd 'a b'", lineOf(pipeOf(cdStage(0, "a b")))},
	{`"cd" x`, lineOf(pipeOf(cdStage(0, "x")))},
	{"cd ..; cd /srv; ls", lineOf(pipeOf(cdStage(0, "..")), Seq, pipeOf(cdStage(7, "/srv")), Seq, pipeOf(cmdStage(16, "ls")))},
	{"cmd ~ ~/x a=~/x --foo=~/x HEAD~1 x~", lineOf(pipeOf(cmdStage(0, "cmd",
		testHome, testHome+"/x", "a="+testHome+"/x", "--foo=~/x", "HEAD~1", "x~")))},
	{"cmd a=x:~/y:~ 1a=~/x 'a'=~/x", lineOf(pipeOf(cmdStage(0, "cmd",
		"a=x:"+testHome+"/y:"+testHome, "1a=~/x", "a=~/x")))},
	{"cmd '~' \"~\" \\~", lineOf(pipeOf(cmdStage(0, "cmd", "~", "~", "~")))},
	{"make CC=gcc", lineOf(pipeOf(cmdStage(0, "make", "CC=gcc")))},
	{"cmd ';' '*' '$HOME' '{}' '#'", lineOf(pipeOf(cmdStage(0, "cmd", ";", "*", "$HOME", "{}", "#")))},
	{`cmd \; \* \  \' \" \\ \$x`, lineOf(pipeOf(cmdStage(0, "cmd", ";", "*", " ", "'", `"`, `\`, "$x")))},
	{`cmd "\"\\\` + "`" + `\$\n\a"`, lineOf(pipeOf(cmdStage(0, "cmd", "\"\\`$\\n\\a")))},
	{"cmd 'a\\b' 'it'\\''s'", lineOf(pipeOf(cmdStage(0, "cmd", `a\b`, "it's")))},
	{"cmd '' \"\" a''b", lineOf(pipeOf(cmdStage(0, "cmd", "", "", "ab")))},
	{"cmd 'a\nb' \"c\td\"", lineOf(pipeOf(cmdStage(0, "cmd", "a\nb", "c\td")))},
	{"cmd \"a\\\nb\"", lineOf(pipeOf(cmdStage(0, "cmd", "ab")))},
	{`\rm -f x`, lineOf(pipeOf(cmdStage(0, "rm", "-f", "x")))},
	{"cmd a#b HEAD~1 50% a@b", lineOf(pipeOf(cmdStage(0, "cmd", "a#b", "HEAD~1", "50%", "a@b")))},
	{"cmd héllo '日本'", lineOf(pipeOf(cmdStage(0, "cmd", "héllo", "日本")))},
	{"'my cmd' x", lineOf(pipeOf(cmdStage(0, "my cmd", "x")))},

	// a lone [ and ], a literal $, braces bash leaves alone or expands
	{"[ -f x ] && cmd", lineOf(pipeOf(cmdStage(0, "[", "-f", "x", "]")), And, pipeOf(cmdStage(12, "cmd")))},
	{"grep -n foo$ a$/b", lineOf(pipeOf(cmdStage(0, "grep", "-n", "foo$", "a$/b")))},
	{"git stash show -p stash@{0}", lineOf(pipeOf(cmdStage(0, "git", "stash", "show", "-p", "stash@{0}")))},
	{"find . -exec grep -l x {} \\;", lineOf(pipeOf(cmdStage(0, "find", ".", "-exec", "grep", "-l", "x", "{}", ";")))},
	{"cmd a{b,c}d {1..3} ~/{x,y}", lineOf(pipeOf(cmdStage(0, "cmd", "abd", "acd", "1", "2", "3", testHome+"/x", testHome+"/y")))},

	// here-documents and here-strings
	{"cat <<'EOF' > f\na $b\nEOF", lineOf(pipeOf(redirected(cmdStage(0, "cat"), rData("a $b\n"), rOut("f"))))},
	{"python3 <<EOF\nprint(1)\nEOF\ncmd", lineOf(pipeOf(redirected(cmdStage(0, "python3"), rData("print(1)\n"))), Seq, pipeOf(cmdStage(27, "cmd")))},
	{"cat <<-EOF\n\ta\n\t\tb\n\tEOF", lineOf(pipeOf(redirected(cmdStage(0, "cat"), rData("a\nb\n"))))},
	{"cat <<< 'x y'", lineOf(pipeOf(redirected(cmdStage(0, "cat"), rData("x y\n"))))},
	{"cat <<EOF\n\\$x \\\\ \\q\nEOF", lineOf(pipeOf(redirected(cmdStage(0, "cat"), rData("$x \\ \\q\n"))))},

	// newlines, comments
	{"cmd a\ncmd b\n", lineOf(pipeOf(cmdStage(0, "cmd", "a")), Seq, pipeOf(cmdStage(6, "cmd", "b")))},
	{"curl x \\\n  -H y", lineOf(pipeOf(cmdStage(0, "curl", "x", "-H", "y")))},
	{"git checkout a.py  # revert", lineOf(pipeOf(cmdStage(0, "git", "checkout", "a.py")))},
}

// TestPlanOpaque checks which lines Plan runs as opaque code, which it
// still refuses, and what an opaque plan holds.
func TestPlanOpaque(t *testing.T) {
	cases := []struct {
		line      string
		construct Construct // "" for an exact plan
		refused   bool      // a line bash would reject: no plan at all
	}{
		{"go test ./...", "", false},
		{"cat > f <<EOF\n$HOME\nEOF", ParameterExpansion, false},
		{"for f in a b; do echo $f; done", "", false},
		{"for f in a b; do echo $f; done | cat", CompoundCommand, false},
		{"ls *.py", Glob, false},
		{"FOO=1 cmd", "", false},
		{"FOO=1", Assignment, false},
		{"cmd &", "", false},
		{"a && cmd &", Background, false},
		{"# only a comment", Comment, false},
		{"cd a b", Syntax, false},
		{"a\rb", Newline, false},
		{"cmd 'unterminated", Syntax, true},
		{"a &&", Syntax, true},
		{"", Syntax, true},
		{"cmd \x00", ControlCharacter, true},
		{"cmd \xff", Syntax, true},
		{"cat <<EOF\nno end", Heredoc, true},
		// where the tokeniser and bash part ways: no reading is trusted
		{"echo ok # \\\nrm -rf /", Comment, true},
		{"ls $X # \\\nrm -rf ~", Comment, true},
		{"cat <<EOF\nhello\nEO\\\nF\ngit push origin main\nEOF", Heredoc, true},
		{"cat <<EOF\n$X\nEO\\\nF\nrm -rf ~\nEOF", Heredoc, true},
		{"cat <<-EOF\n\tx\\\n\tEOF\ncat <<'Z'\nEOF\ngit push\nZ", Heredoc, true},
		{"true\r\ngit push", Newline, false},
	}
	for _, c := range cases {
		l, err := Parser{Home: testHome}.Plan(c.line)
		switch {
		case c.refused:
			var r *Refusal
			if l != nil || !errors.As(err, &r) || !r.Malformed || r.Construct != c.construct {
				t.Errorf("Plan(%q) = %s, %v; want a malformed refusal naming %s", c.line, dumpPlan(l), err, c.construct)
			}
		case err != nil:
			t.Errorf("Plan(%q): %v", c.line, err)
		case c.construct == "":
			if l.Opaque != nil {
				t.Errorf("Plan(%q) is opaque (%v), want an exact plan", c.line, l.Opaque)
			}
		default:
			st := l.Stages()
			if l.Opaque == nil || l.Opaque.Construct != c.construct || len(st) != 1 ||
				!slices.Equal(st[0].Argv, []string{"bash", "-c", c.line}) || len(st[0].Redirects) != 0 {
				t.Errorf("Plan(%q) = %s opaque %v, want bash -c LINE naming %s", c.line, dumpPlan(l), l.Opaque, c.construct)
			}
		}
	}
}

// TestNotesAndSource checks that a comment is said in the plan's notes and
// that each stage keeps the words it was written with.
func TestNotesAndSource(t *testing.T) {
	l, err := Parser{Home: testHome}.Parse("rm -rf ~  # tidy up\ncat <<'EOF' > f\nbody\nEOF")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"the text from byte 10 on (# tidy up) is a comment and does not run"}
	if !slices.Equal(l.Notes, want) {
		t.Errorf("Notes = %q, want %q", l.Notes, want)
	}
	st := l.Stages()
	if st[0].Source != "rm -rf ~" || st[0].Argv[2] != testHome {
		t.Errorf("stage 0 Source %q Argv %q", st[0].Source, st[0].Argv)
	}
	if st[1].Source != "cat <<'EOF' > f" {
		t.Errorf("stage 1 Source %q, want the stage without its body", st[1].Source)
	}
}

func TestParsePlans(t *testing.T) {
	for _, c := range planCases {
		t.Run(c.line, func(t *testing.T) {
			got, err := Parser{Home: testHome}.Parse(c.line)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.line, err)
			}
			if dumpPlan(got) != dumpPlan(c.want) {
				t.Errorf("Parse(%q)\n got  %s\n want %s", c.line, dumpPlan(got), dumpPlan(c.want))
			}
			gs, ws := got.Stages(), c.want.Stages()
			for i := range min(len(gs), len(ws)) {
				if gs[i].Offset != ws[i].Offset {
					t.Errorf("Parse(%q): stage %d at offset %d, want %d", c.line, i, gs[i].Offset, ws[i].Offset)
				}
			}
		})
	}
}

// TestStageOffsets checks, over the whole bash corpus, that each stage's
// offset is where a token starts and that stages come left to right.
func TestStageOffsets(t *testing.T) {
	for _, e := range readCorpus(t, filepath.Join("testdata", "bash_corpus.txt")) {
		l, err := Parser{Home: testHome}.Parse(e.line)
		if err != nil {
			continue
		}
		prev := -1
		unrolled := slices.ContainsFunc(l.Notes, func(n string) bool { return strings.Contains(n, "is unrolled") })
		for i, s := range l.Stages() {
			o := s.Offset
			switch {
			case (o <= prev && !unrolled) || o >= len(e.line):
				t.Errorf("line %q: stage %d at offset %d after %d", e.line, i, o, prev)
			case strings.IndexByte(" \t\n;|&", e.line[o]) >= 0:
				t.Errorf("line %q: stage %d offset %d is on %q", e.line, i, o, e.line[o])
			case o > 0 && strings.IndexByte(" \t\n;|&", e.line[o-1]) < 0:
				t.Errorf("line %q: stage %d offset %d is inside a word", e.line, i, o)
			}
			prev = o
		}
	}
}

func TestParseUsesHOME(t *testing.T) {
	t.Setenv("HOME", "/home/from-env")
	l, err := Parse("cd ~/src && cmd ~ > ~/out")
	if err != nil {
		t.Fatal(err)
	}
	want := lineOf(pipeOf(cdStage(0, "/home/from-env/src")), And,
		pipeOf(redirected(cmdStage(12, "cmd", "/home/from-env"), rOut("/home/from-env/out"))))
	if dumpPlan(l) != dumpPlan(want) {
		t.Errorf("got  %s\nwant %s", dumpPlan(l), dumpPlan(want))
	}
}

func TestStages(t *testing.T) {
	l, err := Parse("a | b && c; d | e | f")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range l.Stages() {
		names = append(names, s.Argv[0])
	}
	if got := strings.Join(names, " "); got != "a b c d e f" {
		t.Errorf("Stages() = %s, want a b c d e f", got)
	}
}

func TestFromArgv(t *testing.T) {
	for _, argv := range [][]string{
		{"ls"},
		{"grep", "-n", "a;b", "*.go", "$HOME", "`x`", "~", "", "a b", "\n"},
		{"git", "commit", "-m", "it's \"done\""},
	} {
		l, err := FromArgv(argv)
		if err != nil {
			t.Fatalf("FromArgv(%q): %v", argv, err)
		}
		want := lineOf(pipeOf(cmdStage(0, argv...)))
		if dumpPlan(l) != dumpPlan(want) {
			t.Errorf("FromArgv(%q) = %s, want %s", argv, dumpPlan(l), dumpPlan(want))
		}
		l2, err := Parser{Home: testHome}.Parse(l.String())
		if err != nil {
			t.Fatalf("FromArgv(%q).String() = %q: %v", argv, l.String(), err)
		}
		if dumpPlan(l2) != dumpPlan(want) {
			t.Errorf("FromArgv(%q).String() = %q parses to %s", argv, l.String(), dumpPlan(l2))
		}
	}
	argv := []string{"a", "b"}
	l, _ := FromArgv(argv)
	argv[1] = "changed"
	if l.Pipelines[0].Stages[0].Argv[1] != "b" {
		t.Error("FromArgv keeps a reference to the caller's slice")
	}
}
