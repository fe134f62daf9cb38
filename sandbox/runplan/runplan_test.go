package runplan

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/bashstub"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

// The cross-check runs every admitted line of the grammar's bash corpus
// twice in identical fresh trees: once under real bash, once through Run.
// Every program is a stand-in script that records its argv, its working
// directory and its stdin, prints a line to stdout and one to stderr, and
// exits 0 (or 1 for "fail"). The two runs must leave the same records in
// the same order, the same files with the same lines, the same stand-in
// output and the same exit status.

// world is one fresh tree: root holds home and work; logs gets records.
type world struct {
	root, home, work, logs, bin string
}

func newWorld(t *testing.T, bin string) *world {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	w := &world{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), logs: logs, bin: bin}
	return w
}

// prepare creates what the line needs: the directories its cds enter and
// the files its < redirects read, wherever the line could be at the time.
func (w *world) prepare(l *shell.Line) error {
	for _, d := range []string{w.home, w.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cwds := []string{w.work}
	for _, st := range l.Stages() {
		if st.Kind == shell.Cd {
			dir := st.Dir
			if dir == "" {
				dir = w.home
			}
			var next []string
			for _, c := range cwds {
				d := dir
				if !filepath.IsAbs(d) {
					d = c + "/" + d
				}
				if !strings.HasPrefix(d, w.root) {
					continue
				}
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				if d, err := filepath.EvalSymlinks(d); err == nil {
					next = append(next, d)
				}
			}
			cwds = append(cwds, next...)
			continue
		}
		for _, rd := range st.Redirects {
			if rd.Op != shell.Read {
				continue
			}
			for _, c := range cwds {
				p := rd.Path
				if !filepath.IsAbs(p) {
					p = filepath.Join(c, p)
				}
				if _, err := os.Stat(p); err == nil || !strings.HasPrefix(p, w.root) {
					continue
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, []byte("input of "+filepath.Base(p)+"\n"), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *world) env() []string {
	return []string{"HOME=" + w.home, "PATH=" + w.bin, "LC_ALL=C", "REIN_TEST_LOG=" + w.logs}
}

// outcome is everything observable after a line ran.
type outcome struct {
	records []string
	files   map[string]string
	stdout  string
	stubErr string
	status  int
}

func (w *world) observe(stdout, stderr []byte, status int) (*outcome, error) {
	out := &outcome{files: map[string]string{}, status: status, stdout: sorted(string(stdout))}
	var errLines []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if strings.HasPrefix(l, "2 ") {
			errLines = append(errLines, l)
		}
	}
	out.stubErr = sorted(strings.Join(errLines, "\n"))
	type rec struct{ at, s string }
	var recs []rec
	entries, err := os.ReadDir(w.logs)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(w.logs, e.Name()))
		if err != nil {
			return nil, err
		}
		f := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		cwd := strings.TrimPrefix(f[1], w.root)
		s := fmt.Sprintf("cwd=%q stdin=%q argv=%q", cwd, f[2], f[3:])
		recs = append(recs, rec{f[0], strings.ReplaceAll(s, w.root, "ROOT")})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].at < recs[j].at })
	for _, r := range recs {
		out.records = append(out.records, r.s)
	}
	err = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		out.files[strings.TrimPrefix(p, w.root)] = sorted(string(data))
		return err
	})
	return out, err
}

func sorted(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestRunMatchesBash(t *testing.T) {
	bash := testenv.Bash(t)
	bin := t.TempDir()
	if err := bashstub.Write(bin, bash); err != nil {
		t.Fatal(err)
	}
	lines := testenv.ReadCorpus(t, "../../shell/testdata/bash_corpus.txt")
	if len(lines) < 200 {
		t.Fatalf("the corpus has %d lines", len(lines))
	}
	for _, c := range lines {
		line := c.Text
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			a, b := newWorld(t, bin), newWorld(t, bin)
			la, err := shell.Parser{Home: a.home}.Parse(line)
			if err != nil {
				t.Fatalf("the corpus holds admitted lines only, but this one is refused: %v", err)
			}
			lb, err := shell.Parser{Home: b.home}.Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.prepare(la); err != nil {
				t.Fatal(err)
			}
			if err := b.prepare(lb); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", line)
			cmd.Dir, cmd.Env = a.work, a.env()
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			status := 0
			if err := cmd.Run(); err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatalf("bash: %v", err)
				}
				status = ee.ExitCode()
			}
			want, err := a.observe(so.Bytes(), se.Bytes(), status)
			if err != nil {
				t.Fatal(err)
			}

			outF, errF := tempFile(t), tempFile(t)
			res, err := Run(ctx, lb, Options{Dir: b.work, Home: b.home, Env: b.env(), Stdout: outF, Stderr: errF})
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.observe(readBack(t, outF), readBack(t, errF), res.ExitCode)
			if err != nil {
				t.Fatal(err)
			}
			// Stages of one pipeline start together, so their records are
			// compared as a set; pipelines must follow one another.
			var sizes []int
			k := 0
			for _, pl := range lb.Pipelines {
				ran := 0
				for range pl.Stages {
					if st := res.Stages[k].Status; st == OK || st == Failed {
						ran++
					}
					k++
				}
				if ran > 0 {
					sizes = append(sizes, ran)
				}
			}
			chunked(got.records, sizes)
			chunked(want.records, sizes)
			if !slices.Equal(got.records, want.records) || got.status != want.status || got.stdout != want.stdout ||
				got.stubErr != want.stubErr || !mapsEqual(got.files, want.files) {
				t.Fatalf("line %q\nbash: status %d records %q\n      files %q\n      stdout %q stderr %q\nrein: status %d records %q\n      files %q\n      stdout %q stderr %q\n%+v",
					line, want.status, want.records, want.files, want.stdout, want.stubErr,
					got.status, got.records, got.files, got.stdout, got.stubErr, res)
			}
		})
	}
}

// chunked sorts each run of records that belongs to one pipeline.
func chunked(recs []string, sizes []int) {
	i := 0
	for _, n := range sizes {
		if i+n > len(recs) {
			return
		}
		slices.Sort(recs[i : i+n])
		i += n
	}
}

func tempFile(t *testing.T) *os.File {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readBack(t *testing.T, f *os.File) []byte {
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
