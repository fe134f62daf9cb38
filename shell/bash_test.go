package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/bashstub"
	"github.com/reinhq/rein/internal/testenv"
)

// The cross-check runs every corpus line twice under real bash: once as
// written and once as rein prints its plan back. Every program a line names
// is a stand-in script on PATH that records its argv, its working directory
// and what it read on stdin, then writes "1 NAME" to stdout and "2 NAME" to
// stderr. rein's plan predicts all of it: which stages run (fail exits 1, so
// && and || skip what they should), what each stage receives, and which
// files the redirects leave behind with what lines in them. HOME is a
// directory of the test's own tree, so that ~ in a redirect target or a cd
// names a place bash can reach.

// corpusEntry is one line of a corpus file.
type corpusEntry struct {
	name string
	line string
}

// readCorpus reads a corpus file in the encoding described at the top of
// testdata/bash_corpus.txt.
func readCorpus(tb testing.TB, path string) []corpusEntry {
	tb.Helper()
	var out []corpusEntry
	for _, c := range testenv.ReadCorpus(tb, path) {
		out = append(out, corpusEntry{name: c.Name(), line: c.Text})
	}
	return out
}

// longLines are corpus entries too long or too regular to keep in the file.
func longLines() []corpusEntry {
	var words []string
	for i := range 300 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	var chain strings.Builder
	for i := range 60 {
		if i > 0 {
			chain.WriteString([]string{" && ", " || ", " ; "}[i%3])
		}
		prog := "cmd"
		if i%7 == 3 {
			prog = "fail"
		}
		fmt.Fprintf(&chain, "%s c%d", prog, i)
	}
	var ascii, high strings.Builder
	for i := 1; i < 0x80; i++ {
		if i != '\'' {
			ascii.WriteByte(byte(i))
		}
	}
	// Lines are UTF-8, so the high bytes arrive as the characters
	// U+0080 to U+07FF, whose encodings use every byte from 0x80 to 0xDF.
	for r := rune(0x80); r < 0x800; r++ {
		high.WriteRune(r)
	}
	return []corpusEntry{
		{"long-args", "cmd " + strings.Join(words, " ")},
		{"long-single-quoted", "cmd '" + strings.Repeat("a b\\c\"d$e`f*g\n", 4000) + "'"},
		{"long-double-quoted", `cmd "` + strings.Repeat(`a\"b\\c\$d\`+"`"+`e 'f' \n `, 2000) + `"`},
		{"long-escapes", "cmd " + strings.Repeat(`\;\ \*\'\"\\`, 2000)},
		{"long-chain", chain.String()},
		{"long-pipeline", "cmd" + strings.Repeat(" | cat", 30) + " > out"},
		{"ascii-quoted", "cmd '" + ascii.String() + "' x"},
		{"high-bytes-quoted", "cmd '" + high.String() + "' x"},
	}
}

// realDir returns dir with symlinks resolved, so that bash's $PWD and the
// paths the test computes agree.
func realDir(t testing.TB, dir string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stubBin writes the stand-in programs into a fresh directory.
func stubBin(t testing.TB, bash string) string {
	t.Helper()
	bin := realDir(t, t.TempDir())
	if err := bashstub.Write(bin, bash); err != nil {
		t.Fatal(err)
	}
	return bin
}

// bashRecord is what one stand-in program saw.
type bashRecord struct {
	Cwd   string
	Stdin string
	Argv  []string
}

func (r bashRecord) String() string {
	return fmt.Sprintf("argv=%q cwd=%q stdin=%q", r.Argv, r.Cwd, r.Stdin)
}

func (r bashRecord) equal(o bashRecord) bool {
	return r.Cwd == o.Cwd && r.Stdin == o.Stdin && slices.Equal(r.Argv, o.Argv)
}

// bashOutcome is everything observable after a line ran: the records in
// the order the stages started, the files under the test root (path
// relative to the root, sorted lines), bash's own output (sorted lines)
// and its exit status.
type bashOutcome struct {
	records []bashRecord
	files   map[string][]string
	stdout  []string
	stderr  []string
	status  int
}

// bashSetup is what must exist before a line runs: directories that cd
// enters, and input files that redirects read.
type bashSetup struct {
	dirs  []string
	files map[string]string
}

// prediction is what rein's plan says running the line does.
type prediction struct {
	setup bashSetup
	sizes []int // number of records of each pipeline that runs
	want  bashOutcome
}

type bashSinkKind int

const (
	toPipe bashSinkKind = iota
	toStdout
	toStderr
	toFile
	toNull
)

type bashSink struct {
	kind bashSinkKind
	path string
}

// predict runs plan l on paper, the way a shell would, with root as the
// directory that holds home and work.
func predict(l *Line, root, home, work string) (*prediction, error) {
	pr := &prediction{setup: bashSetup{files: map[string]string{}}}
	files := map[string][]string{}
	exists := map[string]bool{}
	var stdout, stderr []string
	cwd, status := work, 0
	inside := func(p string) bool { return strings.HasPrefix(p, root+string(filepath.Separator)) }
	resolve := func(p string) (string, error) {
		if p == os.DevNull {
			return p, nil
		}
		if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") || p == "." || p == ".." {
			return "", fmt.Errorf("redirect target %q names a directory", p)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if !inside(p) {
			return "", fmt.Errorf("redirect target %q is outside the test root", p)
		}
		return p, nil
	}
	for i, p := range l.Pipelines {
		if i > 0 {
			c := l.Connectors[i-1]
			if (c == And && status != 0) || (c == Or && status == 0) {
				continue
			}
		}
		if len(p.Stages) == 1 && p.Stages[0].Kind == Cd {
			// The directory is created as written, so that every
			// component of sub/../other exists as chdir needs it.
			raw := home
			if d := p.Stages[0].Dir; d != "" {
				raw = d
				if !filepath.IsAbs(d) {
					raw = cwd + string(filepath.Separator) + d
				}
			}
			dir := filepath.Clean(raw)
			if inside(dir) {
				pr.setup.dirs = append(pr.setup.dirs, raw)
			} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				// rein fails the whole line on a cd it cannot make; bash
				// goes on: the tree cannot make this directory.
				return nil, fmt.Errorf("cd to %q, outside the tree and missing", raw)
			}
			cwd, status = dir, 0
			continue
		}
		type proc struct {
			in       string
			readFile bool
			data     *string // a here-document's bytes on stdin
			out, err bashSink
		}
		procs := make([]proc, len(p.Stages))
		for j, st := range p.Stages {
			if st.Kind != Command || len(st.Argv) == 0 {
				return nil, fmt.Errorf("stage %d of pipeline %d is not a command", j, i)
			}
			if !slices.Contains(bashstub.Programs, st.Argv[0]) {
				return nil, fmt.Errorf("stage argv %q names no stand-in program", st.Argv)
			}
			pc := proc{out: bashSink{kind: toStdout}, err: bashSink{kind: toStderr}}
			if j < len(p.Stages)-1 {
				pc.out = bashSink{kind: toPipe}
			}
			for _, r := range st.Redirects {
				if r.Op == DupStdout {
					pc.err = pc.out
					continue
				}
				if r.Op == Input {
					d := r.Data
					pc.data, pc.readFile = &d, false
					continue
				}
				path, err := resolve(r.Path)
				if err != nil {
					return nil, err
				}
				target := bashSink{kind: toFile, path: path}
				if path == os.DevNull {
					target = bashSink{kind: toNull}
				} else {
					pr.setup.dirs = append(pr.setup.dirs, filepath.Dir(path))
				}
				switch {
				case r.Op == Read:
					pc.readFile, pc.in, pc.data = true, path, nil
					if path != os.DevNull && !exists[path] {
						content := "< " + r.Path
						pr.setup.files[path] = content + "\n"
						files[path], exists[path] = []string{content}, true
					}
					continue
				case target.kind == toNull:
				case r.Op == Truncate:
					files[path], exists[path] = nil, true
				case r.Op == Append:
					// Opened, so made, even if a later redirect takes
					// the descriptor and nothing is written to it.
					if _, ok := files[path]; !ok {
						files[path] = nil
					}
					exists[path] = true
				}
				if r.Fd == 2 {
					pc.err = target
				} else {
					pc.out = target
				}
			}
			procs[j] = pc
		}
		var pipe []string
		for j, st := range p.Stages {
			pc := procs[j]
			var in []string
			switch {
			case pc.data != nil:
			case pc.readFile && pc.in != os.DevNull:
				in = files[pc.in]
			case !pc.readFile && j > 0:
				in = pipe
			}
			stdin := joinLines(in)
			if pc.data != nil {
				stdin = *pc.data
			}
			var next []string
			write := func(s bashSink, text string) {
				switch s.kind {
				case toPipe:
					next = append(next, text)
				case toStdout:
					stdout = append(stdout, text)
				case toStderr:
					stderr = append(stderr, text)
				case toFile:
					files[s.path] = append(files[s.path], text)
				}
			}
			name := st.Argv[0]
			pr.want.records = append(pr.want.records, bashRecord{
				Cwd:   cwd,
				Stdin: stdin,
				Argv:  slices.Clone(st.Argv),
			})
			write(pc.out, "1 "+name)
			write(pc.err, "2 "+name)
			pipe = next
			status = 0
			if name == "fail" {
				status = 1
			}
		}
		pr.sizes = append(pr.sizes, len(p.Stages))
	}
	pr.want.files = map[string][]string{}
	for path, lines := range files {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil, err
		}
		pr.want.files[rel] = sortedLines(joinLines(lines))
	}
	pr.want.stdout = sortedLines(joinLines(stdout))
	pr.want.stderr = sortedLines(joinLines(stderr))
	pr.want.status = status
	return pr, nil
}

func joinLines(lines []string) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

func sortedLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// bashWorld is the filesystem one line runs in.
type bashWorld struct {
	bash, bin  string
	root, logs string
	home, work string
	// background is the number of records to wait for after bash ends:
	// a line ended by & leaves its command running.
	background int
}

func newBashWorld(t *testing.T, bash, bin string) *bashWorld {
	t.Helper()
	root := realDir(t, t.TempDir())
	return &bashWorld{
		bash: bash, bin: bin,
		root: root, logs: realDir(t, t.TempDir()),
		home: filepath.Join(root, "home"), work: filepath.Join(root, "work"),
	}
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// run prepares a fresh tree and runs line under bash.
func (w *bashWorld) run(line string, setup bashSetup) (*bashOutcome, error) {
	for _, d := range []string{w.root, w.logs} {
		if err := emptyDir(d); err != nil {
			return nil, err
		}
	}
	for _, d := range append([]string{w.home, w.work}, setup.dirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for path, content := range setup.files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bash, "--norc", "--noprofile", "-c", line)
	cmd.Dir = w.work
	cmd.Env = []string{"HOME=" + w.home, "PATH=" + w.bin, "LC_ALL=C", "REIN_TEST_LOG=" + w.logs}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	out := &bashOutcome{files: map[string][]string{}}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ctx.Err() != nil {
			return nil, fmt.Errorf("bash: %v (stderr %q)", err, stderr.String())
		}
		out.status = ee.ExitCode()
	}
	out.stdout = sortedLines(stdout.String())
	out.stderr = sortedLines(stderr.String())
	for deadline := time.Now().Add(5 * time.Second); w.background > 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if entries, err := os.ReadDir(w.logs); err == nil && len(entries) >= w.background {
			break
		}
	}

	type stamped struct {
		at  string
		rec bashRecord
	}
	var recs []stamped
	entries, err := os.ReadDir(w.logs)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(w.logs, e.Name()))
		if err != nil {
			return nil, err
		}
		f := strings.Split(string(data), "\x00")
		if len(f) < 5 || f[len(f)-1] != "" {
			return nil, fmt.Errorf("malformed record %q", data)
		}
		f = f[:len(f)-1]
		recs = append(recs, stamped{at: f[0], rec: bashRecord{Cwd: f[1], Stdin: f[2], Argv: f[3:]}})
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].at < recs[j].at })
	for _, r := range recs {
		out.records = append(out.records, r.rec)
	}

	err = filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(w.root, path)
		out.files[rel] = sortedLines(string(data))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// compareOutcome reports every difference between what rein's plan
// predicts and what bash did.
func compareOutcome(t *testing.T, line string, pr *prediction, got *bashOutcome) {
	t.Helper()
	want := pr.want
	var problems []string
	if len(got.records) != len(want.records) {
		problems = append(problems, fmt.Sprintf("rein runs %d stages, bash ran %d", len(want.records), len(got.records)))
	} else {
		at := 0
		for pi, n := range pr.sizes {
			wantP, gotP := want.records[at:at+n], slices.Clone(got.records[at:at+n])
			at += n
			for _, w := range wantP {
				k := slices.IndexFunc(gotP, w.equal)
				if k < 0 {
					problems = append(problems, fmt.Sprintf("pipeline %d: rein stage %s: bash ran no such stage", pi, w))
					continue
				}
				gotP = slices.Delete(gotP, k, k+1)
			}
			for _, g := range gotP {
				problems = append(problems, fmt.Sprintf("pipeline %d: bash stage %s: rein has no such stage", pi, g))
			}
		}
	}
	for path, w := range want.files {
		g, ok := got.files[path]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("rein's redirects leave file %q, bash left none", path))
		case !slices.Equal(w, g):
			problems = append(problems, fmt.Sprintf("file %q: rein %q, bash %q", path, w, g))
		}
	}
	for path, g := range got.files {
		if _, ok := want.files[path]; !ok {
			problems = append(problems, fmt.Sprintf("bash left file %q (lines %q), rein's redirects name no such file", path, g))
		}
	}
	if !slices.Equal(want.stdout, got.stdout) {
		problems = append(problems, fmt.Sprintf("stdout: rein %q, bash %q", want.stdout, got.stdout))
	}
	if !slices.Equal(want.stderr, got.stderr) {
		problems = append(problems, fmt.Sprintf("stderr: rein %q, bash %q", want.stderr, got.stderr))
	}
	if want.status != got.status {
		problems = append(problems, fmt.Sprintf("exit status: rein %d, bash %d", want.status, got.status))
	}
	if len(problems) == 0 {
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "line %q\n", line)
	for _, r := range want.records {
		fmt.Fprintf(&sb, "  rein: %s\n", r)
	}
	for _, r := range got.records {
		fmt.Fprintf(&sb, "  bash: %s\n", r)
	}
	for _, p := range problems {
		fmt.Fprintf(&sb, "  %s\n", p)
	}
	t.Error(sb.String())
}

// crossCheck runs line, then rein's printed plan, under bash and compares
// both with the plan's prediction.
func crossCheck(t *testing.T, w *bashWorld, line string, l *Line) {
	t.Helper()
	pr, err := predict(l, w.root, w.home, w.work)
	if err != nil {
		t.Fatalf("line %q: plan %s: %v", line, dumpPlan(l), err)
	}
	if l.Background {
		w.background = len(pr.want.records)
	}
	got, err := w.run(line, pr.setup)
	if err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	compareOutcome(t, line, pr, got)

	printed := l.String()
	if printed == line {
		return
	}
	l2, err := Parser{Home: w.home}.Parse(printed)
	if err != nil {
		t.Errorf("line %q prints as %q, which is refused: %v", line, printed, err)
		return
	}
	if !samePlan(l, l2) {
		t.Errorf("line %q prints as %q, which parses to another plan:\n  %s\n  %s", line, printed, dumpPlan(l), dumpPlan(l2))
		return
	}
	got, err = w.run(printed, pr.setup)
	if err != nil {
		t.Fatalf("printed line %q: %v", printed, err)
	}
	compareOutcome(t, printed, pr, got)
}

// FuzzBashAgrees is the cross-check as a fuzzer: a line the grammar
// admits, whose programs are the stand-ins and whose files stay in the
// test's tree, runs under real bash, and what ran (which stages, their
// argv, working directory and standard input, the files left) must be
// what its plan says. The seeds are a tenth of the bash corpus and the
// lines where bash and the tokeniser were once found to part ways.
func FuzzBashAgrees(f *testing.F) {
	bash := testenv.Bash(f)
	for i, e := range readCorpus(f, filepath.Join("testdata", "bash_corpus.txt")) {
		if i%10 == 0 {
			f.Add(e.line)
		}
	}
	bin := stubBin(f, bash)
	f.Fuzz(func(t *testing.T, line string) {
		w := newBashWorld(t, bash, bin)
		l, err := Parser{Home: w.home}.Parse(line)
		if err != nil {
			return
		}
		for _, st := range l.Stages() {
			for _, r := range st.Redirects {
				if slices.ContainsFunc(strings.Split(r.Path, "/"), func(c string) bool { return len(c) > 255 }) {
					return // a name no file system takes: bash and rein both fail to open it
				}
			}
		}
		pr, err := predict(l, w.root, w.home, w.work)
		if err != nil {
			return // a program with no stand-in, or a file outside the tree
		}
		if l.Background {
			w.background = len(pr.want.records)
		}
		got, err := w.run(line, pr.setup)
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "bash:"):
			t.Fatalf("line %q: %v", line, err)
		case err != nil:
			return // the tree the prediction needs cannot be made (< . names a directory)
		}
		compareOutcome(t, line, pr, got)
	})
}

func TestBashQuoteRemoval(t *testing.T) {
	bash := testenv.Bash(t)
	corpus := readCorpus(t, filepath.Join("testdata", "bash_corpus.txt"))
	if len(corpus) < 250 {
		t.Fatalf("bash corpus has %d lines, want at least 250", len(corpus))
	}
	bin := stubBin(t, bash)
	for _, e := range append(corpus, longLines()...) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			w := newBashWorld(t, bash, bin)
			l, err := Parser{Home: w.home}.Parse(e.line)
			if err != nil {
				t.Fatalf("line %q is admitted by the grammar but refused: %v", e.line, err)
			}
			crossCheck(t, w, e.line, l)
		})
	}
}

// fromArgvCases are argvs whose printed form must survive bash unchanged.
var fromArgvCases = [][]string{
	{"cmd"},
	{"cmd", ""},
	{"cmd", "", ""},
	{"cmd", "a b", "c\td", "e\nf", "g\r\nh"},
	{"cmd", "'", `"`, `\`, `\\`, `'\''`, `"'"`, `\'`},
	{"cmd", "$HOME", "${x}", "$(ls)", "`ls`", "$'a'", `$"a"`, "$", "$((1))"},
	{"cmd", "*", "?", "[a]", "{a,b}", "{}", "{", "}", "@(a|b)", "!(x)"},
	{"cmd", "~", "~/x", "~root", "~+", "a=~/x", "a=b:~/c", "--x=~/y", "x~"},
	{"cmd", "#", "#x", "a#b", "!", "!x", "^", "&", "|", ";", "&&", "||", ";;"},
	{"cmd", ">", ">>", "<", "2>", "2>&1", "<<EOF", "<<<", "&>", "|&", ">|", "<>", "<(x)", ">(x)"},
	{"cmd", "(", ")", "( a )", "((1))", "[[", "]]"},
	{"cmd", "if", "then", "fi", "for", "done", "case", "esac", "function", "{", "time"},
	{"cmd", "export", "eval", "source", ".", "alias", "set", "unset", "exec", "cd"},
	{"cmd", "FOO=1", "A=", "=", "a=b=c"},
	{"cmd", "2", "1", "0", "-", "--", "-n", "--flag=value"},
	{"cmd", "\x01", "\x1b[31m", "\x7f", "a\x02b"},
	{"cmd", "héllo", "日本語", "🙂", "\u0085", "\u00a0"},
	{"cmd", "  leading", "trailing  ", " ", "\t"},
	{"my cmd", "x"},
	{"café", "y"},
	{"fail", "z"},
	{"cmd", strings.Repeat("a'b\"c\\d$e ", 1000)},
}

func TestBashFromArgv(t *testing.T) {
	bash := testenv.Bash(t)
	bin := stubBin(t, bash)
	for i, argv := range fromArgvCases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			w := newBashWorld(t, bash, bin)
			l, err := FromArgv(argv)
			if err != nil {
				t.Fatalf("FromArgv(%q): %v", argv, err)
			}
			printed := l.String()
			l2, err := Parser{Home: w.home}.Parse(printed)
			if err != nil {
				t.Fatalf("FromArgv(%q) prints as %q, which is refused: %v", argv, printed, err)
			}
			if st := l2.Stages(); len(st) != 1 || !slices.Equal(st[0].Argv, argv) {
				t.Fatalf("FromArgv(%q) prints as %q, which parses to %s", argv, printed, dumpPlan(l2))
			}
			pr, err := predict(l, w.root, w.home, w.work)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.run(printed, pr.setup)
			if err != nil {
				t.Fatalf("printed line %q: %v", printed, err)
			}
			compareOutcome(t, printed, pr, got)
		})
	}
}

// samePlan compares two plans, byte offsets aside.
func samePlan(a, b *Line) bool {
	return dumpPlan(a) == dumpPlan(b)
}

// dumpPlan renders a plan without byte offsets, every string %q-quoted.
func dumpPlan(l *Line) string {
	if l == nil {
		return "<nil>"
	}
	var sb strings.Builder
	for i, p := range l.Pipelines {
		if i > 0 {
			if i-1 < len(l.Connectors) {
				fmt.Fprintf(&sb, " %s ", l.Connectors[i-1])
			} else {
				sb.WriteString(" <missing connector> ")
			}
		}
		for j, s := range p.Stages {
			if j > 0 {
				sb.WriteString(" | ")
			}
			if s == nil {
				sb.WriteString("<nil stage>")
				continue
			}
			switch s.Kind {
			case Cd:
				fmt.Fprintf(&sb, "cd(%q)", s.Dir)
				if s.Argv != nil {
					fmt.Fprintf(&sb, "argv%q", s.Argv)
				}
			case Command:
				if len(s.Env) > 0 {
					fmt.Fprintf(&sb, "env%q", s.Env)
				}
				if s.Venv != "" {
					fmt.Fprintf(&sb, "venv(%q)", s.Venv)
				}
				fmt.Fprintf(&sb, "%q", s.Argv)
				if s.Dir != "" {
					fmt.Fprintf(&sb, "dir(%q)", s.Dir)
				}
			default:
				fmt.Fprintf(&sb, "kind%d", s.Kind)
			}
			for _, r := range s.Redirects {
				fmt.Fprintf(&sb, " {%d %s %q}", r.Fd, r.Op, r.Path)
				if r.Op == Input {
					fmt.Fprintf(&sb, "data(%q)", r.Data)
				}
			}
		}
	}
	if len(l.Connectors) != max(len(l.Pipelines)-1, 0) {
		fmt.Fprintf(&sb, " <%d connectors>", len(l.Connectors))
	}
	if l.Background {
		sb.WriteString(" &")
	}
	return sb.String()
}
