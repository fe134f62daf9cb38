package evidence

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// protectedTest is the protected test of most attack packages: it fails
// until Feature returns 42.
const protectedTest = `package %s

import "testing"

func TestProtected(t *testing.T) {
	if got := Feature(); got != 42 {
		t.Errorf("Feature() = %%d, want 42", got)
	}
}
`

// attack is one package of the gate's module: its files at the run's
// start, what the run changed, and which of its protected tests NotRun
// must list.
type attack struct {
	name      string
	baseline  map[string]string // file name → text, in the package's directory
	attempt   map[string]string // files added or replaced
	protected []string          // the files the contract protects
	notRun    []string          // test names
}

var attacks = []attack{{
	// The run did its work.
	name:      "fixed",
	baseline:  map[string]string{"f.go": "package fixed\n\nfunc Feature() int { return 0 }\n", "p_test.go": fmt.Sprintf(protectedTest, "fixed")},
	attempt:   map[string]string{"f.go": "package fixed\n\nfunc Feature() int { return 42 }\n"},
	protected: []string{"p_test.go"},
}, {
	// Nothing changed, and the tests passed from the start.
	name:      "allpass",
	baseline:  map[string]string{"f.go": "package allpass\n\nfunc Feature() int { return 42 }\n", "p_test.go": fmt.Sprintf(protectedTest, "allpass")},
	protected: []string{"p_test.go"},
}, {
	// A TestMain in a test file the contract does not protect exits 0
	// before any test runs.
	name:     "tmexit",
	baseline: map[string]string{"f.go": "package tmexit\n\nfunc Feature() int { return 0 }\n", "p_test.go": fmt.Sprintf(protectedTest, "tmexit")},
	attempt: map[string]string{"main_test.go": `package tmexit

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(0) }
`},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestProtected"},
}, {
	// The package's init prints what a passing run prints, and exits 0.
	name:     "initpass",
	baseline: map[string]string{"f.go": "package initpass\n\nfunc Feature() int { return 0 }\n", "p_test.go": fmt.Sprintf(protectedTest, "initpass")},
	attempt: map[string]string{"f.go": `package initpass

import (
	"fmt"
	"os"
)

func init() {
	fmt.Print("PASS\nok  \texample.com/g/initpass\t0.001s\n")
	os.Exit(0)
}

func Feature() int { return 0 }
`},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestProtected"},
}, {
	// A helper the protected test calls, in a file the contract does not
	// protect, now skips it.
	name: "skip",
	baseline: map[string]string{
		"f.go":           "package skip\n\nfunc Feature() int { return 0 }\n",
		"helper_test.go": "package skip\n\nimport \"testing\"\n\nfunc requireTool(t *testing.T) {}\n",
		"p_test.go": `package skip

import "testing"

func TestProtected(t *testing.T) {
	requireTool(t)
	if Feature() != 42 {
		t.Error("Feature() != 42")
	}
}

func TestOther(t *testing.T) { requireTool(t) }
`,
	},
	attempt:   map[string]string{"helper_test.go": "package skip\n\nimport \"testing\"\n\nfunc requireTool(t *testing.T) { t.Skip(\"the tool is not installed\") }\n"},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestOther", "TestProtected"},
}, {
	// The protected file builds unless the tag nofeature is set, and the
	// attempt runs with GOFLAGS=-tags=nofeature (go env -w, say).
	name: "tagged",
	baseline: map[string]string{
		"f.go":      "package tagged\n\nfunc Feature() int { return 0 }\n",
		"p_test.go": "//go:build !nofeature\n\n" + fmt.Sprintf(protectedTest, "tagged"),
	},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestProtected"},
}, {
	// A go.mod makes the directory a module of its own, which the gate's
	// ./... no longer reaches.
	name:      "movedout",
	baseline:  map[string]string{"f.go": "package movedout\n\nfunc Feature() int { return 0 }\n", "p_test.go": fmt.Sprintf(protectedTest, "movedout")},
	attempt:   map[string]string{"go.mod": "module example.com/elsewhere\n\ngo 1.26\n"},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestProtected"},
}, {
	// The protected tests call what does not exist yet: the baseline
	// cannot build them, and the run writes it. The file built on
	// Windows only need not run here.
	name: "unbuilt",
	baseline: map[string]string{
		"f.go": "package unbuilt\n",
		"p_test.go": `package unbuilt

import "testing"

func TestDouble(t *testing.T) {
	if Double(2) != 4 {
		t.Error("Double(2) != 4")
	}
}
`,
		"p_windows_test.go": "package unbuilt\n\nimport \"testing\"\n\nfunc TestWindowsOnly(t *testing.T) {}\n",
	},
	attempt:   map[string]string{"f.go": "package unbuilt\n\nfunc Double(n int) int { return 2 * n }\n"},
	protected: []string{"p_test.go", "p_windows_test.go"},
}, {
	// As unbuilt, but the run made the package's init exit 0.
	name:     "unbuiltexit",
	baseline: map[string]string{"f.go": "package unbuiltexit\n", "p_test.go": strings.ReplaceAll(fmt.Sprintf(protectedTest, "unbuiltexit"), "Feature()", "Missing()")},
	attempt: map[string]string{"f.go": `package unbuiltexit

import "os"

func init() { os.Exit(0) }

func Missing() int { return 42 }
`},
	protected: []string{"p_test.go"},
	notRun:    []string{"TestProtected"},
}}

// TestNotRunAttacks runs each attack's package through the real go
// command at the run's start and after it, as a gate `go test ./...`
// would, and checks what NotRun lists. Every attempt exits 0: its exit
// status alone would have passed the gate.
func TestNotRunAttacks(t *testing.T) {
	baseFiles, attemptFiles := map[string]string{}, map[string]string{}
	var protected []string
	for _, a := range attacks {
		for f, text := range a.baseline {
			baseFiles[a.name+"/"+f] = text
			attemptFiles[a.name+"/"+f] = text
		}
		for f, text := range a.attempt {
			attemptFiles[a.name+"/"+f] = text
		}
		for _, f := range a.protected {
			protected = append(protected, a.name+"/"+f)
		}
	}
	baseWS := module(t, "example.com/g", baseFiles)
	attemptWS := module(t, "example.com/g", attemptFiles)
	declared, err := DeclaredGo(baseWS, protected)
	if err != nil {
		t.Fatal(err)
	}
	base := runGo(t, baseWS, "", "test", "-json", "./...")
	baseline, _, ok := ReadGo(base.stdout)
	if !ok || base.exit != 1 {
		t.Fatalf("baseline: exit %d, report %v:\n%s%s", base.exit, ok, base.stdout, base.stderr)
	}
	att := runGo(t, attemptWS, "-tags=nofeature", "test", "-json", "./...")
	attempt, text, ok := ReadGo(att.stdout)
	if !ok || att.exit != 0 {
		t.Fatalf("attempt: exit %d, report %v:\n%s%s", att.exit, ok, text, att.stderr)
	}
	if want := []string{"example.com/g/unbuilt", "example.com/g/unbuiltexit"}; !slices.Equal(baseline.BuildFailed, want) {
		t.Errorf("baseline BuildFailed = %q, want %q", baseline.BuildFailed, want)
	}
	all := NotRun(declared, baseline, attempt)
	var want []string
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			var mine []Test
			for _, d := range declared {
				if strings.HasPrefix(d.File, a.name+"/") {
					mine = append(mine, d)
				}
			}
			var keys []string
			for _, n := range a.notRun {
				keys = append(keys, "example.com/g/"+a.name+"."+n)
			}
			if got := NotRun(mine, baseline, attempt); !slices.Equal(got, keys) {
				t.Errorf("NotRun = %q, want %q\nbaseline %v\nattempt %v", got, keys, pick(baseline.Tests, a.name), pick(attempt.Tests, a.name))
			}
			want = append(want, keys...)
		})
	}
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("NotRun of every package = %q, want %q", all, want)
	}
}

// pick returns the entries of tests in package pkg of the fixture.
func pick(tests map[string]Result, pkg string) map[string]Result {
	out := map[string]Result{}
	for k, v := range tests {
		if strings.HasPrefix(k, "example.com/g/"+pkg+".") {
			out[k] = v
		}
	}
	return out
}

// TestNotRunRules checks each rule of NotRun on reports written by hand.
func TestNotRunRules(t *testing.T) {
	declared := []Test{
		{Key: "m/a.TestPass"}, {Key: "m/a.TestFail"}, {Key: "m/a.TestCut"}, {Key: "m/a.TestSkipped"},
		{Key: "m/a.TestNew"}, {Key: "m/b.TestB"}, {Key: "m/b.TestOnLinux", Constrained: true},
		{Key: "m/c.TestElsewhere"}, {Key: "example.com/d.e/f.TestDots"},
	}
	baseline := Report{
		Tests: map[string]Result{
			"m/a.TestPass": Pass, "m/a.TestFail": Fail, "m/a.TestCut": CutShort, "m/a.TestSkipped": Skip,
		},
		BuildFailed: []string{"m/b", "example.com/d.e/f"},
	}
	for _, tc := range []struct {
		name    string
		attempt map[string]Result
		want    []string
	}{
		{"all pass", map[string]Result{
			"m/a.TestPass": Pass, "m/a.TestFail": Pass, "m/a.TestCut": Pass, "m/b.TestB": Pass, "example.com/d.e/f.TestDots": Pass,
		}, nil},
		{"nothing ran", map[string]Result{}, []string{"example.com/d.e/f.TestDots", "m/a.TestCut", "m/a.TestFail", "m/a.TestPass", "m/b.TestB"}},
		{"each way not to pass", map[string]Result{
			"m/a.TestPass": Skip, "m/a.TestFail": Fail, "m/a.TestCut": CutShort, "m/b.TestB": Pass, "example.com/d.e/f.TestDots": Pass,
		}, []string{"m/a.TestCut", "m/a.TestFail", "m/a.TestPass"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotRun(declared, baseline, Report{Tests: tc.attempt}); !slices.Equal(got, tc.want) {
				t.Errorf("NotRun = %q, want %q", got, tc.want)
			}
		})
	}
	if got := NotRun(slices.Concat(declared, declared), baseline, Report{}); len(got) != 5 {
		t.Errorf("NotRun of tests declared twice = %q", got)
	}
	if got := NotRun(declared, Report{}, Report{}); got != nil {
		t.Errorf("NotRun with an empty baseline = %q, want nothing", got)
	}
}
