package evidence

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// declaredFixture is a workspace of test files that go test builds (with
// -vet=off: vet refuses TestlowerCase's name). The fuzz test's line is
// indented so that no line of this file starts a fuzzer of its own.
var declaredFixture = map[string]string{
	"go.mod": "// The workspace's module.\nmodule \"example.com/d\" // quoted, as go.mod may\n\ngo 1.26\n",
	"a/a.go": "package a\n",
	"a/a_test.go": `package a

import (
	"fmt"
	"testing"
)

type suite struct{}

func TestA(t *testing.T)              {}
func Test(t *testing.T)               {}
func Test_under(t *testing.T)         {}
func TestÜber(t *testing.T)           {}
func TestlowerCase(t *testing.T)      {}
func Testify()                        {}
func (suite) TestMethod(t *testing.T) {}
func TestMain(m *testing.M)           { m.Run() }
func BenchmarkA(b *testing.B)         {}
func ExampleA()                       { fmt.Println("a") }
	func FuzzSeeds(f *testing.F)      {}

// Output: a
`,
	// An external test package, with testing renamed.
	"a/ext_test.go": `package a_test

import tst "testing"

func TestExternal(t *tst.T) {}
`,
	"dot/dot_test.go": `package dot

import . "testing"

func TestDot(t *T) {}
`,
	"a/a_linux_test.go":         "package a\n\nimport \"testing\"\n\nfunc TestLinux(t *testing.T) {}\n",
	"a/a_windows_arm64_test.go": "package a\n\nimport \"testing\"\n\nfunc TestWindowsArm(t *testing.T) {}\n",
	"a/integration_test.go":     "// Copyright\n\n//go:build integration\n\npackage a\n\nimport \"testing\"\n\nfunc TestIntegration(t *testing.T) {}\n",
	"a/linux_test.go":           "package a\n\nimport \"testing\"\n\nfunc TestNamedLinux(t *testing.T) {}\n",
	"nested/go.mod":             "module example.com/nested\n\ngo 1.26\n",
	"nested/x/y/x_test.go":      "package y\n\nimport \"testing\"\n\nfunc TestNested(t *testing.T) {}\n",
	"nested/n_test.go":          "package nested\n\nimport \"testing\"\n\nfunc TestNestedRoot(t *testing.T) {}\n",
	"testdata/t_test.go":        "package t\n\nimport \"testing\"\n\nfunc TestData(t *testing.T) {}\n",
	"a/testdata/t_test.go":      "package t\n\nimport \"testing\"\n\nfunc TestData(t *testing.T) {}\n",
	"_skip/s_test.go":           "package s\n\nimport \"testing\"\n\nfunc TestUnderscore(t *testing.T) {}\n",
	".hidden/h_test.go":         "package h\n\nimport \"testing\"\n\nfunc TestHidden(t *testing.T) {}\n",
	"a/_x_test.go":              "package a\n\nimport \"testing\"\n\nfunc TestUnderscoreFile(t *testing.T) {}\n",
	"a/notes.txt":               "func TestText(t *testing.T) {}\n",
}

// declaredWant is what DeclaredGo finds in declaredFixture, sorted.
var declaredWant = []Test{
	{Key: "example.com/d/a.FuzzSeeds", File: "a/a_test.go"},
	{Key: "example.com/d/a.Test", File: "a/a_test.go"},
	{Key: "example.com/d/a.TestA", File: "a/a_test.go"},
	{Key: "example.com/d/a.TestExternal", File: "a/ext_test.go"},
	{Key: "example.com/d/a.TestIntegration", File: "a/integration_test.go", Constrained: true},
	{Key: "example.com/d/a.TestLinux", File: "a/a_linux_test.go", Constrained: true},
	{Key: "example.com/d/a.TestNamedLinux", File: "a/linux_test.go"},
	{Key: "example.com/d/a.TestWindowsArm", File: "a/a_windows_arm64_test.go", Constrained: true},
	{Key: "example.com/d/a.Test_under", File: "a/a_test.go"},
	{Key: "example.com/d/a.TestÜber", File: "a/a_test.go"},
	{Key: "example.com/d/dot.TestDot", File: "dot/dot_test.go"},
	{Key: "example.com/nested.TestNestedRoot", File: "nested/n_test.go"},
	{Key: "example.com/nested/x/y.TestNested", File: "nested/x/y/x_test.go"},
}

func TestDeclaredGo(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, declaredFixture, 0o644)
	got, err := DeclaredGo(ws, slices.Collect(maps.Keys(declaredFixture)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, declaredWant) {
		t.Errorf("DeclaredGo:\n got %+v\nwant %+v", got, declaredWant)
	}
}

// TestDeclaredGoListed cross-checks DeclaredGo with what go test -list
// says each module's test binaries hold: every test of a file built in
// every context is listed, and every test or fuzz test listed is declared.
func TestDeclaredGoListed(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, declaredFixture, 0o644)
	declared := map[string]bool{}
	for _, d := range declaredWant {
		declared[d.Key] = true
	}
	listed := map[string]bool{}
	for _, mod := range []string{ws, filepath.Join(ws, "nested")} {
		run := runGo(t, mod, "", "test", "-vet=off", "-json", "-list", ".", "./...")
		if run.exit != 0 {
			t.Fatalf("go test -list in %s exited %d:\n%s%s", mod, run.exit, run.stdout, run.stderr)
		}
		for line := range strings.Lines(string(run.stdout)) {
			var e event
			if json.Unmarshal([]byte(line), &e) != nil || e.Action != "output" || e.Output == nil {
				continue
			}
			name := strings.TrimSpace(*e.Output)
			if isTestName(name, "Test") || isTestName(name, "Fuzz") {
				listed[e.Package+"."+name] = true
			}
		}
	}
	for _, d := range declaredWant {
		if !d.Constrained && !listed[d.Key] {
			t.Errorf("DeclaredGo finds %s, which go test does not list", d.Key)
		}
	}
	for k := range listed {
		if !declared[k] {
			t.Errorf("go test lists %s, which DeclaredGo does not find", k)
		}
	}
	if len(listed) < 10 {
		t.Errorf("go test listed only %v", listed)
	}
}

// TestDeclaredGoNotTests: functions go test would refuse as tests (it
// fails the package) or never sees are not declared tests.
func TestDeclaredGoNotTests(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, map[string]string{
		"go.mod": "module example.com/n\n",
		"n_test.go": `package n

import (
	"testing"
	other "example.com/n/fake"
)

func TestBench(b *testing.B)            {}
func TestNotPointer(t testing.T)        {}
func TestResult(t *testing.T) error     { return nil }
func TestTwoParams(t *testing.T, n int) {}
func TestTwoNames(t, u *testing.T)      {}
func TestGeneric[P any](t *testing.T)   {}
func TestOtherT(t *other.T)             {}
func TestBareT(t *T)                    {}
	func FuzzNotF(f *testing.T)         {}
`,
		"blank_test.go": "package n\n\nimport _ \"testing\"\n\nfunc TestBlank(t *testing.T) {}\n",
	}, 0o644)
	got, err := DeclaredGo(ws, []string{"n_test.go", "blank_test.go"})
	if err != nil || len(got) != 0 {
		t.Errorf("DeclaredGo = %+v, %v; want nothing", got, err)
	}
}

func TestDeclaredGoOutsideModules(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, map[string]string{
		"loose/l_test.go": "package loose\n\nimport \"testing\"\n\nfunc TestLoose(t *testing.T) {}\n",
	}, 0o644)
	// A go.mod above the workspace is not the workspace's.
	testenv.WriteFiles(t, filepath.Dir(ws), map[string]string{"go.mod": "module example.com/above\n"}, 0o644)
	got, err := DeclaredGo(ws, []string{"loose/l_test.go"})
	if err != nil || len(got) != 0 {
		t.Errorf("DeclaredGo = %v, %v; want nothing", got, err)
	}
}

func TestDeclaredGoErrors(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, map[string]string{
		"go.mod":              "module example.com/e\n",
		"bad/bad_test.go":     "package bad\n\nfunc TestX(t *testing.T) {\n",
		"nomod/go.mod":        "go 1.26\n",
		"nomod/n_test.go":     "package nomod\n",
		"gone/exists_test.go": "package gone\n",
	}, 0o644)
	for _, tc := range []struct {
		file, want string
	}{
		{"bad/bad_test.go", "evidence: parsing bad/bad_test.go: bad/bad_test.go:3:28: expected '}', found 'EOF'"},
		{"nomod/n_test.go", "evidence: nomod/go.mod has no module line: go cannot test the packages under it"},
		{"../x_test.go", `evidence: "../x_test.go" is not a path relative to the workspace`},
		{"/abs/x_test.go", `evidence: "/abs/x_test.go" is not a path relative to the workspace`},
		{"gone/missing_test.go", "evidence: reading gone/missing_test.go: "},
	} {
		_, err := DeclaredGo(ws, []string{tc.file})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("DeclaredGo(%q) = %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := DeclaredGo(filepath.Join(ws, "none"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeclaredGo of a missing workspace = %v", err)
	}
}

// TestModulePath cross-checks the go.mod reading with the go command's.
func TestModulePath(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module example.com/m\n", "example.com/m"},
		{"module example.com/m", "example.com/m"},
		{"  module   example.com/m  \r\n", "example.com/m"},
		{"// comment\nmodule example.com/m // trailing\n", "example.com/m"},
		{"module \"example.com/quoted\"\n", "example.com/quoted"},
		{"module `example.com/raw`\n", "example.com/raw"},
		{"go 1.26\n\nmodule example.com/late\n", "example.com/late"},
		{"modulex example.com/m\nmodule example.com/real\n", "example.com/real"},
		{"// module example.com/commented\n", ""},
		{"module\n", ""},
		{"module \"unterminated\n", ""},
		{"", ""},
	} {
		if got := modulePath([]byte(tc.gomod)); got != tc.want {
			t.Errorf("modulePath(%q) = %q, want %q", tc.gomod, got, tc.want)
		}
	}
}
