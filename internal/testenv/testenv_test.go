package testenv

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneHelper: the tests read REIN_REQUIRE_SANDBOX only through this
// package, so "fail in CI, skip elsewhere" is written once.
func TestOneHelper(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasPrefix(filepath.ToSlash(p), "../../internal/testenv/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), `Getenv("REIN_REQUIRE_SANDBOX")`) || strings.Contains(string(data), `Getenv(requireEnv)`) {
			t.Errorf("%s reads REIN_REQUIRE_SANDBOX itself: use testenv.Missing or testenv.Required", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goFiles calls f with each Go file of the module (outside node_modules
// and .git), its path relative to the module root and its text.
func goFiles(t *testing.T, f func(rel, text string)) {
	t.Helper()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSharedHelpers: a helper this package holds is not written again in
// another package's tests, where the copies would drift.
func TestSharedHelpers(t *testing.T) {
	copies := map[string]string{
		"func processesWith(": "ProcessesWith",
		"func must(":          "Must",
		"func writeFiles(":    "WriteFiles",
		"func requireBash(":   "Bash",
		"func bashPath(":      "Bash",
		"bash_corpus.txt\")":  "ReadCorpus",
	}
	seen := 0
	goFiles(t, func(rel, text string) {
		if !strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "internal/testenv/") {
			return
		}
		seen++
		for _, line := range strings.Split(text, "\n") {
			for copy, helper := range copies {
				if strings.Contains(line, copy) && !strings.Contains(line, "ReadCorpus(") && !strings.Contains(line, "readCorpus(") {
					t.Errorf("%s: %q: use testenv.%s", rel, strings.TrimSpace(line), helper)
				}
			}
		}
	})
	if seen < 20 {
		t.Fatalf("saw only %d test files; the walk is not looking at the module", seen)
	}
}

// TestFuzzCorpora: every fuzzer has a seed corpus in its package's
// testdata/fuzz/FuzzXxx, in Go's corpus file format, so that a plain go
// test runs the inputs it was written for and the crashers it found.
func TestFuzzCorpora(t *testing.T) {
	fuzzers := 0
	goFiles(t, func(rel, text string) {
		if !strings.HasSuffix(rel, "_test.go") {
			return
		}
		for _, line := range strings.Split(text, "\n") {
			rest, ok := strings.CutPrefix(line, "func Fuzz")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut("Fuzz"+rest, "(")
			fuzzers++
			dir := filepath.Join("..", "..", filepath.FromSlash(path.Dir(rel)), "testdata", "fuzz", name)
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) == 0 {
				t.Errorf("%s: %s has no seed corpus in %s: add a few inputs as files in Go's corpus format (go test fuzz v1)", rel, name, path.Join(path.Dir(rel), "testdata", "fuzz", name))
				continue
			}
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil || !strings.HasPrefix(string(data), "go test fuzz v1\n") {
					t.Errorf("%s: %s is not a corpus file (go test fuzz v1): %v", name, e.Name(), err)
				}
			}
		}
	})
	if fuzzers < 10 {
		t.Fatalf("found only %d fuzzers; the walk is not looking at the module", fuzzers)
	}
}
