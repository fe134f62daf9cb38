package apicheck

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write "+File+" from the code")

// TestSurface fails when the exported API differs from api/rein.txt: an
// export added, changed or removed must be meant, and the file changed
// with it.
func TestSurface(t *testing.T) {
	root, err := Root(".")
	if err != nil {
		t.Fatal(err)
	}
	touchSources(t, root)
	got, err := Surface(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 100 {
		t.Fatalf("the surface has only %d lines: the generator is not reading the module", len(got))
	}
	path := filepath.Join(root, File)
	if *update {
		if err := os.WriteFile(path, Format(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: make it with go test ./internal/apicheck -update", err)
	}
	if d := Diff(Parse(data), got); len(d) > 0 {
		t.Errorf("the exported API differs from %s:\n%s\nif that is meant, run: go test ./internal/apicheck -update", File, strings.Join(d, "\n"))
	} else if string(data) != string(Format(got)) {
		t.Errorf("%s is not as the generator writes it (order, header): run go test ./internal/apicheck -update", File)
	}
}

// touchSources reads every Go file of the module: go test caches a result
// by the files the test opens, and the surface is read by go list, whose
// reads it does not see.
func touchSources(t *testing.T, root string) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			_, err := os.ReadFile(p)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDiff(t *testing.T) {
	got := strings.Join(Diff([]string{"a", "b", "c"}, []string{"a", "c", "d"}), " ")
	if got != "-b +d" {
		t.Fatalf("Diff = %q, want %q", got, "-b +d")
	}
	if d := Diff([]string{"a"}, []string{"a"}); d != nil {
		t.Fatalf("Diff of equal lists = %q", d)
	}
}

func TestParse(t *testing.T) {
	lines := []string{"pkg a, func F()", "pkg a, type T struct"}
	if got := Parse(Format(lines)); strings.Join(got, "|") != strings.Join(lines, "|") {
		t.Fatalf("Parse(Format(%q)) = %q", lines, got)
	}
}
