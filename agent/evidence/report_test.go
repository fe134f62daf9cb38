package evidence

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// runnerFixture is a module with a package for each way a test binary can
// end, as the real go command reports it.
var runnerFixture = map[string]string{
	"pass/pass_test.go": `package pass

import "testing"

func TestOne(t *testing.T) { t.Log("not shown when it passes") }

func TestTwo(t *testing.T) {}

func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) {})
}
`,
	"fail/fail.go": `package fail

func Add(a, b int) int { return a - b }
`,
	"fail/fail_test.go": `package fail

import (
	"fmt"
	"testing"
)

func TestPrints(t *testing.T) {
	t.Log("a log line of a test that passes")
	fmt.Println("printed by a test that passes")
}

func TestFail(t *testing.T) {
	t.Log("before")
	t.Errorf("Add(1, 1) = %d, want 2", Add(1, 1))
}

func TestSkip(t *testing.T) { t.Skip("not today") }

func TestSub(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("bad", func(t *testing.T) {
		t.Log("in bad")
		t.Run("deeper", func(t *testing.T) { t.Error("deep") })
	})
}
`,
	// The test file does not compile.
	"broken/broken_test.go": `package broken

import "testing"

func TestBroken(t *testing.T) { undefinedThing() }
`,
	// TestMain ends the binary with status 0 before any test runs.
	"tmexit/tmexit_test.go": `package tmexit

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(0) }

func TestProtected(t *testing.T) { t.Fatal("never runs") }
`,
	// The package's init prints what a passing binary and go test print,
	// and exits 0 before the testing package runs anything.
	"initpass/initpass.go": `package initpass

import (
	"fmt"
	"os"
)

func init() {
	fmt.Print("PASS\nok  \texample.com/w/initpass\t0.001s\n")
	os.Exit(0)
}
`,
	"initpass/initpass_test.go": `package initpass

import "testing"

func TestProtected(t *testing.T) { t.Fatal("never runs") }
`,
	// The package's init prints the framing of a passing test, marker and
	// all: the report says the test passed.
	"forged/forged.go": `package forged

import (
	"fmt"
	"os"
)

func init() {
	fmt.Print("\x16=== RUN   TestProtected\n\x16--- PASS: TestProtected (0.00s)\n\x16PASS\n")
	os.Exit(0)
}
`,
	"forged/forged_test.go": `package forged

import "testing"

func TestProtected(t *testing.T) { t.Fatal("never runs") }
`,
	"panics/panics_test.go": `package panics

import "testing"

func TestBefore(t *testing.T) {}

func TestPanic(t *testing.T) {
	t.Log("about to")
	panic("boom")
}

func TestAfter(t *testing.T) {}
`,
	// A test file the build constraint leaves out.
	"tagged/tagged_test.go": `//go:build never

package tagged

import "testing"

func TestTagged(t *testing.T) {}
`,
	"tagged/other_test.go": `package tagged

import "testing"

func TestOther(t *testing.T) {}
`,
	// os.Exit(0) inside a test: go test's -test.paniconexit0 makes it a
	// panic, and the test fails.
	"exit0/exit0_test.go": `package exit0

import (
	"os"
	"testing"
)

func TestExit(t *testing.T) { os.Exit(0) }

func TestLater(t *testing.T) {}
`,
	// os.Exit(1) inside a test: the test never finishes.
	"exit1/exit1_test.go": `package exit1

import (
	"os"
	"testing"
)

func TestExit(t *testing.T) { os.Exit(1) }

func TestLater(t *testing.T) {}
`,
	"nofiles/nofiles.go": "package nofiles\n",
}

func TestReadGoRealRunner(t *testing.T) {
	ws := module(t, "example.com/w", runnerFixture)
	run := runGo(t, ws, "", "test", "-json", "-count=1", "./...")
	if run.exit != 1 {
		t.Errorf("go test -json exited %d, want 1\n%s", run.exit, run.stderr)
	}
	r, text, ok := ReadGo(run.stdout)
	if !ok {
		t.Fatalf("ReadGo found no test event in\n%s", run.stdout)
	}
	want := Report{
		Runner: RunnerGo,
		Tests: map[string]Result{
			"example.com/w/pass.TestOne":         Pass,
			"example.com/w/pass.TestTwo":         Pass,
			"example.com/w/pass.TestSub":         Pass,
			"example.com/w/fail.TestPrints":      Pass,
			"example.com/w/fail.TestFail":        Fail,
			"example.com/w/fail.TestSkip":        Skip,
			"example.com/w/fail.TestSub":         Fail,
			"example.com/w/forged.TestProtected": Pass,
			"example.com/w/panics.TestBefore":    Pass,
			"example.com/w/panics.TestPanic":     Fail,
			"example.com/w/tagged.TestOther":     Pass,
			"example.com/w/exit0.TestExit":       Fail,
			"example.com/w/exit1.TestExit":       CutShort,
		},
		BuildFailed: []string{"example.com/w/broken"},
		Packages: map[string]Result{
			"example.com/w/pass":     Pass,
			"example.com/w/fail":     Fail,
			"example.com/w/broken":   Fail,
			"example.com/w/tmexit":   Pass,
			"example.com/w/initpass": Pass,
			"example.com/w/forged":   Pass,
			"example.com/w/panics":   Fail,
			"example.com/w/tagged":   Pass,
			"example.com/w/exit0":    Fail,
			"example.com/w/exit1":    Fail,
			"example.com/w/nofiles":  Skip,
		},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("ReadGo:\n got %+v\nwant %+v", r, want)
	}
	if got, want := r.Counts(), (Counts{Run: 13, Passed: 7, Failed: 4, Skipped: 1}); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	for _, s := range []string{
		"# example.com/w/broken [example.com/w/broken.test]\n",
		"undefined: undefinedThing\n",
		"FAIL\texample.com/w/broken [build failed]\n",
		"--- FAIL: TestPanic (0.00s)\n    panics_test.go:8: about to\npanic: boom",
		"--- FAIL: TestExit (0.00s)\npanic: unexpected call to os.Exit(0) during test",
		"ok  \texample.com/w/tmexit\t",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("the text lacks %q:\n%s", s, text)
		}
	}
	if !strings.HasSuffix(text, "\nFAIL\n") {
		t.Errorf("the text does not end with go test's FAIL:\n%s", text)
	}
}

// timing matches what differs between two runs of the same tests.
var timing = regexp.MustCompile(`\d+\.\d+s`)

// TestReadGoTextIsPlainGoTest: the text is what plain go test prints for
// the same packages, but for the times.
func TestReadGoTextIsPlainGoTest(t *testing.T) {
	ws := module(t, "example.com/w", runnerFixture)
	for _, pkgs := range [][]string{{"./pass"}, {"./fail"}, {"./pass", "./fail", "./nofiles"}} {
		t.Run(strings.Join(pkgs, ","), func(t *testing.T) {
			plain := runGo(t, ws, "", append([]string{"test", "-count=1"}, pkgs...)...)
			js := runGo(t, ws, "", append([]string{"test", "-count=1", "-json"}, pkgs...)...)
			if plain.exit != js.exit {
				t.Errorf("go test exited %d, go test -json %d", plain.exit, js.exit)
			}
			_, text, ok := ReadGo(js.stdout)
			if !ok {
				t.Fatalf("no test event in\n%s", js.stdout)
			}
			want := timing.ReplaceAllString(string(plain.stdout)+string(plain.stderr), "T")
			if got := timing.ReplaceAllString(text, "T"); got != want {
				t.Errorf("text:\n%s\nplain go test:\n%s", got, want)
			}
		})
	}
}

// TestReadGoCached: a result replayed from the test cache is reported as
// the run that made it.
func TestReadGoCached(t *testing.T) {
	ws := module(t, "example.com/c", map[string]string{"c_test.go": runnerFixture["pass/pass_test.go"]})
	first := runGo(t, ws, "", "test", "-json", "./...")
	second := runGo(t, ws, "", "test", "-json", "./...")
	r1, text1, _ := ReadGo(first.stdout)
	r2, text2, _ := ReadGo(second.stdout)
	if strings.Contains(text1, "(cached)") || !strings.Contains(text2, "ok  \texample.com/c\t(cached)\n") {
		t.Fatalf("the second run is not the first's cached result:\n%s\n%s", text1, text2)
	}
	want := map[string]Result{"example.com/c.TestOne": Pass, "example.com/c.TestTwo": Pass, "example.com/c.TestSub": Pass}
	if !maps.Equal(r1.Tests, want) || !reflect.DeepEqual(r1, r2) {
		t.Errorf("first run %+v, cached %+v; want tests %v", r1, r2, want)
	}
}

func TestReadGoStreams(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		tests        map[string]Result
		text         string
		ok           bool
	}{{
		name:   "text only",
		stream: "go: cannot find main module, but found .git/config in /ws\n",
		tests:  map[string]Result{},
		text:   "go: cannot find main module, but found .git/config in /ws\n",
	}, {
		name:   "empty",
		stream: "",
		tests:  map[string]Result{},
	}, {
		name:   "build events only",
		stream: `{"ImportPath":"x","Action":"build-output","Output":"# x\n"}` + "\n",
		tests:  map[string]Result{},
		text:   "# x\n",
	}, {
		// A line of text among the events (stderr merged), and a stream
		// cut off while a test ran: it is cut short, and its package
		// prints as failed.
		name: "cut off",
		stream: `{"Action":"start","Package":"p"}
go: downloading example.com/x v1.0.0
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"partial"}`,
		tests: map[string]Result{"p.TestA": CutShort},
		text:  "go: downloading example.com/x v1.0.0\npartialFAIL\n",
		ok:    true,
	}, {
		// -count=2: the worst of the runs.
		name: "count",
		stream: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}`,
		tests: map[string]Result{"p.TestA": Fail, "p.TestB": Skip},
		text:  "ok  \tp\t0.1s\n",
		ok:    true,
	}, {
		// Actions of newer Go versions (t.Attr's) are events, not text.
		name: "attr",
		stream: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"attr","Package":"p","Test":"TestA","Key":"k","Value":"v"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}`,
		tests: map[string]Result{"p.TestA": Pass},
		text:  "ok  \tp\t0.1s\n",
		ok:    true,
	}, {
		// GODEBUG=gotestjsonbuildtext=1: no FailedBuild, but the go
		// command's line.
		name: "build text",
		stream: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p"}`,
		tests: map[string]Result{},
		text:  "FAIL\tp [build failed]\nFAIL\n",
		ok:    true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, text, ok := ReadGo([]byte(tc.stream))
			if ok != tc.ok || text != tc.text || !maps.Equal(r.Tests, tc.tests) || r.Runner != RunnerGo {
				t.Errorf("ReadGo = %+v, %q, %v; want tests %v, %q, %v", r, text, ok, tc.tests, tc.text, tc.ok)
			}
		})
	}
	r, _, _ := ReadGo([]byte(`{"Action":"fail","Package":"p"}` + "\n" + `{"Action":"output","Package":"q","Output":"FAIL\tq [setup failed]\n"}` + "\n"))
	if want := []string{"q"}; !reflect.DeepEqual(r.BuildFailed, want) {
		t.Errorf("BuildFailed = %q, want %q", r.BuildFailed, want)
	}
}

// BenchmarkReadGo reads the report of a package of 10,000 tests, one of
// which printed a line of a megabyte: the cost is linear in the stream.
func BenchmarkReadGo(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"Action":"start","Package":"p"}` + "\n")
	for i := range 10000 {
		name := fmt.Sprintf("Test%d", i)
		fmt.Fprintf(&sb, `{"Action":"run","Package":"p","Test":%q}`+"\n", name)
		fmt.Fprintf(&sb, `{"Action":"output","Package":"p","Test":%q,"Output":"=== RUN   %s\n"}`+"\n", name, name)
		fmt.Fprintf(&sb, `{"Action":"output","Package":"p","Test":%q,"Output":"    x_test.go:1: log\n"}`+"\n", name)
		if i == 0 {
			part := strings.Repeat("x", 1024)
			for range 1024 {
				fmt.Fprintf(&sb, `{"Action":"output","Package":"p","Test":%q,"Output":%q}`+"\n", name, part)
			}
			fmt.Fprintf(&sb, `{"Action":"output","Package":"p","Test":%q,"Output":"\n"}`+"\n", name)
		}
		fmt.Fprintf(&sb, `{"Action":"output","Package":"p","Test":%q,"Output":"--- FAIL: %s (0.00s)\n"}`+"\n", name, name)
		fmt.Fprintf(&sb, `{"Action":"fail","Package":"p","Test":%q}`+"\n", name)
	}
	sb.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	stream := []byte(sb.String())
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		if r, _, ok := ReadGo(stream); !ok || len(r.Tests) != 10000 {
			b.Fatalf("ReadGo read %d tests", len(r.Tests))
		}
	}
}
