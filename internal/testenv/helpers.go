package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Must ends tb at a setup error, which the test cannot go on from.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// WriteFiles writes files (paths relative to dir, slash-separated, and
// their contents) under dir with mode perm, making the directories
// between.
func WriteFiles(tb testing.TB, dir string, files map[string]string, perm os.FileMode) {
	tb.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), perm); err != nil {
			tb.Fatal(err)
		}
	}
}

// ProcessesWith lists the pids of the processes whose command line holds
// marker, but for the test binaries re-run as helpers (whose environment
// a REIN_TEST variable marks, and whose command line names it): a test
// that starts commands with a marker checks that none outlived it.
func ProcessesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(data), marker) && !strings.Contains(string(data), "REIN_TEST") {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// Bash returns the path of the bash the cross-checks run against:
// /usr/bin/bash, else the one on PATH. Without one the test is Missing it.
func Bash(tb testing.TB) string {
	tb.Helper()
	const bash = "/usr/bin/bash"
	if _, err := os.Stat(bash); err == nil {
		return bash
	}
	p, err := exec.LookPath("bash")
	if err != nil {
		Missing(tb, "bash is required for the cross-check with bash: %v", err)
	}
	return p
}

// CorpusLine is one entry of a line corpus: the line of the file it is on
// and the shell line it holds.
type CorpusLine struct {
	At   int
	Text string
}

// Name names the entry for a subtest: line007.
func (c CorpusLine) Name() string { return fmt.Sprintf("line%03d", c.At) }

// ReadCorpus reads a corpus of shell lines (shell/testdata/bash_corpus.txt
// and its like): one line each, blank lines and # comments skipped, and a
// line written go:"..." as the Go string it quotes (for newlines and
// bytes a text file does not hold well).
func ReadCorpus(tb testing.TB, path string) []CorpusLine {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []CorpusLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if q, ok := strings.CutPrefix(text, "go:"); ok {
			s, err := strconv.Unquote(q)
			if err != nil {
				tb.Fatalf("%s:%d: %v", path, n, err)
			}
			text = s
		}
		out = append(out, CorpusLine{At: n, Text: text})
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return out
}

// Git runs git with args in dir, reading no system or global
// configuration, and returns what it printed; an error fails tb.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
