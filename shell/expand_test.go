package shell

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// osFiles lists directories of the host, for tests.
type osFiles struct{}

func (osFiles) ReadDir(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }

// treeFiles lists directories under root only, as a workspace's view does.
type treeFiles struct{ root string }

func (f treeFiles) ReadDir(dir string) ([]os.DirEntry, error) {
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if r != f.root && !strings.HasPrefix(r, f.root+"/") {
		return nil, fmt.Errorf("%s is outside the tree", dir)
	}
	return os.ReadDir(r)
}

// expandTree makes a directory of awkward names for globs to match.
func expandTree(t testing.TB) string {
	dir := realDir(t, t.TempDir())
	for _, f := range []string{"a.py", "b.py", "B.py", ".hidden.py", "-rf", "c d.txt", "x[1].txt", "é.py", "sub/x/y.py", "sub/z.py", "sub/.dot/w.py", "q?.md", "star*.md"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// showWorld is a tree of awkward names and a stand-in program, show, that
// prints its argv and the variables A, B, CI, TZ, LC_ALL and SHOW_*.
type showWorld struct {
	bash, bin, dir, home string
}

func newShowWorld(t testing.TB) *showWorld {
	bash := testenv.Bash(t)
	w := &showWorld{bash: bash, dir: expandTree(t), bin: realDir(t, t.TempDir())}
	w.home = filepath.Join(w.dir, "sub")
	show := "#!" + bash + "\nprintf '%s\\0' \"$@\"; printf 'ENV\\0'; { env -0 | grep -zE '^(A|B|LC_ALL|CI|TZ|SHOW_[A-Z]*)=' || true; }; printf 'END\\0'\n"
	if err := os.WriteFile(filepath.Join(w.bin, "show"), []byte(show), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// run runs line under bash (LC_ALL=C) and returns what the last show got.
func (w *showWorld) run(t testing.TB, line string) (argv []string, env map[string]string) {
	cmd := exec.Command(w.bash, "--norc", "--noprofile", "-c", line)
	cmd.Dir = w.dir
	cmd.Env = []string{"HOME=" + w.home, "PATH=" + w.bin + ":/usr/bin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash %q: %v", line, err)
	}
	// The last show's record: its argv, ENV, its variables, END.
	recs := strings.Split(strings.TrimSuffix(out.String(), "END\x00"), "END\x00")
	f := strings.Split(strings.TrimSuffix(recs[len(recs)-1], "\x00"), "\x00")
	k := slices.Index(f, "ENV")
	env = map[string]string{}
	for _, e := range f[k+1:] {
		if n, v, ok := strings.Cut(e, "="); ok {
			env[n] = v
		}
	}
	return f[:k], env
}

// check compares the plan of line, made with the world's files, with
// what bash gave show; it reports false when the plan is not exact.
func (w *showWorld) check(t *testing.T, line string) bool {
	p := Parser{Home: w.home, Dir: w.dir, Files: treeFiles{w.dir}}
	l, err := p.Parse(line)
	if err != nil {
		return false
	}
	st := l.Stages()[len(l.Stages())-1]
	gotArgv, gotEnv := w.run(t, line)
	want := st.Argv[1:]
	if !slices.Equal(gotArgv, want) && !(len(gotArgv) == 1 && gotArgv[0] == "" && len(want) == 0) {
		t.Errorf("%q argv: bash %q, rein %q", line, gotArgv, want)
	}
	wantEnv := map[string]string{"LC_ALL": "C"}
	for _, e := range st.Env {
		n, v, _ := strings.Cut(e, "=")
		wantEnv[n] = v
	}
	if !maps.Equal(gotEnv, wantEnv) {
		t.Errorf("%q env: bash %q, rein %q", line, gotEnv, wantEnv)
	}
	// What rein plans prints back to the same plan.
	l2, err := Parser{Home: w.home, Dir: w.dir}.Parse(l.String())
	if err != nil || !samePlan(l, l2) {
		t.Errorf("%q printed %q: %v %s", line, l.String(), err, dumpPlan(l2))
	}
	return true
}

// TestBashExpansions runs lines with globs, assignments before a program
// and fixed variables under real bash (LC_ALL=C) and checks that the
// plan's argv and environment are what bash gives the program.
func TestBashExpansions(t *testing.T) {
	w := newShowWorld(t)
	for _, line := range expansionLines {
		if !w.check(t, line) && !outsideLines[line] {
			t.Errorf("%q: not an exact plan", line)
		}
	}
}

// outsideLines are expansionLines whose glob reads outside the tree or
// holds //: opaque.
var outsideLines = map[string]bool{`show ../*`: true, `show /*`: true, `show *//`: true}

var expansionLines = []string{
	`show *.py`, `show *`, `show .*`, `show */`, `show sub/*/*.py`, `show */*.py`, `show s*/*`,
	`show "a"*`, `show 'b'.p?`, `show [ab].py`, `show [!a].py`, `show [^a].py`, `show [[:upper:]]*`,
	`show x\[1\].txt x[1]*`, `show *.zz`, `show "*".py`, `show \*.md`, `show q\?.md q?.md`,
	`show c*`, `show link/*`, `show link/*/`, `show ./*.py`, `show sub/.*`, `show {a,b}*.py`, `show *{.py,.md}`,
	`show é*`, `show ?.py`, `show -- *`, `show ../*`, `show /*`, `show *//`,
	`A=1 show`, `A=1 B='x y' show`, `A=~/x:~/y show`, `A= show`, `A="$HOME" show`, `A=* show *.py`,
	`A='a b' B=c\ d show $HOME`, `CI=true LC_ALL=C TZ=UTC show`, `SHOW_X=1 SHOW_X=2 show`,
	`show $HOME "$HOME" ${HOME} "${HOME}/x" x$HOME $PWD "$PWD"`, `cd sub && show *`, `cd sub && show *.py ../*.py`,
	`for f in a.py 'c d.txt'; do show "$f" x"$f"; done`, `for f in *.py; do show "$f"; done`,
}

// FuzzGlobAgrees: a line of show and fuzzed words, planned with the
// world's files, gives show exactly the argv and variables bash does.
func FuzzGlobAgrees(f *testing.F) {
	for _, l := range expansionLines {
		f.Add(strings.TrimPrefix(l, "show "))
	}
	w := newShowWorld(f)
	f.Fuzz(func(t *testing.T, words string) {
		if strings.ContainsAny(words, "\n;&|<>()`$") {
			return // one show, no redirect: the world's files stay as they are
		}
		w.check(t, "show "+words)
	})
}

// TestExpansionsOpaque: what rein does not expand stays opaque, naming
// why.
func TestExpansionsOpaque(t *testing.T) {
	dir := expandTree(t)
	p := Parser{Home: "/h", Dir: dir, Files: osFiles{}}
	for line, want := range map[string]string{
		"ls a.py && ls *.py":                   "after another command",
		"*.py":                                 "glob",
		"ls > *.txt":                           "glob",
		"cd *":                                 "glob",
		`ls ["!"a].py`:                         "bracket expression",
		"ls $FOO":                              "parameter-expansion",
		"ls $X*":                               "parameter-expansion",
		"cd sub && ls $PWD":                    "parameter-expansion",
		"A=1":                                  "assignment",
		"A=1 cd sub":                           "assignment",
		"ls ${HOME:-x}":                        "parameter-expansion",
		"echo $HOME$$":                         "parameter-expansion",
		"ls $?":                                "parameter-expansion",
		"A+=1 ls":                              "assignment",
		"for PATH in /x; do ls; done":          "lower-case",
		"for HOME in /x; do ls; done":          "lower-case",
		"for http_proxy in x; do curl a; done": "lower-case",
		`for x in 'a\b'; do ls $x*; done`:      "parameter-expansion",
		`for x in ']'; do ls [a$x*; done`:      "parameter-expansion",
		"time A=1 ls":                          "assignment",
	} {
		l, err := p.Plan(line)
		if err != nil || l.Opaque == nil {
			t.Errorf("%q: %v, want opaque (%s); plan %s", line, err, want, dumpPlan(l))
			continue
		}
		if !strings.Contains(l.Opaque.Error(), want) {
			t.Errorf("%q: opaque for %q, want %q", line, l.Opaque.Error(), want)
		}
	}
	// Without Files, a glob is opaque as ever; an unquoted value with a
	// blank would be split by bash.
	if l, _ := (Parser{Home: "/h", Dir: dir}).Plan("ls *.py"); l.Opaque == nil || l.Opaque.Construct != Glob {
		t.Errorf("a glob without Files: %s", dumpPlan(l))
	}
	if l, _ := (Parser{Home: "/h j", Dir: dir}).Plan("ls $HOME"); l.Opaque == nil {
		t.Errorf("an unquoted HOME with a blank: %s", dumpPlan(l))
	}
}

// TestGlobAttack: a file named -rf in the workspace is matched by rm *,
// and the plan says so: the argv decided is the argv that runs.
func TestGlobAttack(t *testing.T) {
	dir := expandTree(t)
	l, err := Parser{Home: "/h", Dir: dir, Files: osFiles{}}.Parse("rm *")
	if err != nil {
		t.Fatal(err)
	}
	argv := l.Stages()[0].Argv
	if len(argv) < 2 || argv[1] != "-rf" {
		t.Fatalf("rm * plans %q, want -rf first, as bash gives it", argv)
	}
}

// TestGlobLimit: past 10,000 words a line's globs are opaque.
func TestGlobLimit(t *testing.T) {
	dir := realDir(t, t.TempDir())
	for i := range 5001 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644)
	}
	p := Parser{Home: "/h", Dir: dir, Files: osFiles{}}
	if l, err := p.Plan("ls f*"); err != nil || l.Opaque != nil || len(l.Stages()[0].Argv) != 5002 {
		t.Fatalf("5001 matches: %v", err)
	}
	if l, err := p.Plan("ls f* f*"); err != nil || l.Opaque == nil || l.Opaque.Construct != Glob {
		t.Fatalf("10,002 matches: %v %v", err, l.Opaque)
	}
}

// TestGlobBounded: what a line's globs may read is bounded, so that no
// line costs more to plan than a refusal: a tree of links that fans out,
// many globs over a wide tree, a pattern longer than a path can be.
func TestGlobBounded(t *testing.T) {
	dir := realDir(t, t.TempDir())
	for i := range 3000 {
		if err := os.Symlink(".", filepath.Join(dir, fmt.Sprintf("s%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	p := Parser{Home: "/h", Dir: dir, Files: osFiles{}}
	for _, line := range []string{"ls */*", "ls */x*{1..1000}", "ls " + strings.Repeat("./", 3000) + "*"} {
		start := time.Now()
		l, err := p.Plan(line)
		if err != nil || l.Opaque == nil || l.Opaque.Construct != Glob {
			t.Errorf("%.40s: %v %v", line, err, l.Opaque)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%.40s took %v", line, d)
		}
	}
}
