package evidence

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Result is what a runner reported of one test or one package.
type Result string

// The results. A test is CutShort when the runner reported it started and
// never reported it finished: its binary crashed, exited or was killed
// while it ran.
const (
	Pass     Result = "pass"
	Fail     Result = "fail"
	Skip     Result = "skip"
	CutShort Result = "run"
)

// worse orders the results of one test run more than once (-count=2):
// the entry is the worst of its runs.
var worse = map[Result]int{Pass: 0, Skip: 1, CutShort: 2, Fail: 3}

// RunnerGo names the runner whose report ReadGo reads.
const RunnerGo = "go test -json"

// Report is what one gate attempt's test runner reported.
type Report struct {
	// Runner is the runner that reported: RunnerGo.
	Runner string `json:"runner"`

	// Tests maps each top-level test the runner reported, as
	// "importpath.TestName", to its result. A subtest (TestX/sub) has no
	// entry: its failure fails TestX only as the runner reports TestX.
	//
	//	{"example.com/m.TestAdd": "pass", "example.com/m.TestSlow": "run"}
	Tests map[string]Result `json:"tests"`

	// BuildFailed are the import paths, sorted, whose test binary failed
	// to build (or whose package failed to load): none of their tests
	// could run.
	BuildFailed []string `json:"build_failed,omitempty"`

	// Packages maps each package tested to its result: Pass, Fail, or
	// Skip (no test files). A package whose test binary exits with
	// status 0 passes, whatever ran.
	Packages map[string]Result `json:"packages"`
}

// Counts are the top-level tests of a report by result.
type Counts struct {
	// Run is every test reported: Passed, Failed, Skipped, and those cut
	// short.
	Run, Passed, Failed, Skipped int
}

// Counts counts r's top-level tests.
func (r Report) Counts() Counts {
	var c Counts
	for _, res := range r.Tests {
		c.Run++
		switch res {
		case Pass:
			c.Passed++
		case Fail:
			c.Failed++
		case Skip:
			c.Skipped++
		}
	}
	return c
}

// event is one line of a `go test -json` stream: a test event
// (cmd/test2json's TestEvent, Package set) or a build event (go help
// buildjson's BuildEvent, which names its package ImportPath).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      *string
	FailedBuild string
}

// ReadGo reads the standard output of `go test -json` (with its standard
// error, if the gate merged them). Lines that are not JSON events (the go
// command prints its early errors as text) are kept for the text and
// otherwise ignored. ok is false when the stream holds no test event at
// all: the gate is then judged by its exit status alone.
//
// text is what plain `go test` with the same package arguments would have
// printed, rebuilt from the events: build errors, the output of failing
// packages without the framing -json adds (=== RUN, --- PASS, logs of
// tests that passed), and an ok line for each package that passed. It is
// what a model is shown. One line differs: where a test binary that
// failed printed nothing at all, plain go test adds its exit status
// ("exit status 1"), which the stream does not carry.
func ReadGo(stream []byte) (r Report, text string, ok bool) {
	r = Report{Runner: RunnerGo, Tests: map[string]Result{}, Packages: map[string]Result{}}
	open := map[string]int{} // top-level tests started and not yet finished, by key
	failed := map[string]bool{}
	p := newPrinter()
	for len(stream) > 0 {
		line := stream
		if i := bytes.IndexByte(stream, '\n'); i >= 0 {
			line, stream = stream[:i+1], stream[i+1:]
		} else {
			stream = nil
		}
		e, isEvent := parseEvent(line)
		if !isEvent {
			p.raw(string(line))
			continue
		}
		if e.Package == "" {
			// A build event, or JSON of no runner: its output is text.
			if e.Output != nil {
				p.raw(*e.Output)
			}
			continue
		}
		ok = true
		p.event(e)
		if e.Test == "" {
			switch e.Action {
			case "pass", "fail", "skip":
				r.Packages[e.Package] = Result(e.Action)
			}
			if e.Action == "fail" && e.FailedBuild != "" {
				failed[e.Package] = true
			}
			// With GODEBUG=gotestjsonbuildtext=1 no FailedBuild is set:
			// the go command's own line still says so.
			if e.Action == "output" && e.Output != nil {
				out := strings.TrimSuffix(*e.Output, "\n")
				if out == "FAIL\t"+e.Package+" [build failed]" || out == "FAIL\t"+e.Package+" [setup failed]" {
					failed[e.Package] = true
				}
			}
			continue
		}
		if strings.Contains(e.Test, "/") {
			continue
		}
		key := e.Package + "." + e.Test
		switch e.Action {
		case "run":
			open[key]++
		case "pass", "fail", "skip":
			if open[key] > 0 {
				open[key]--
			}
			record(r.Tests, key, Result(e.Action))
		}
	}
	for key, n := range open {
		if n > 0 {
			record(r.Tests, key, CutShort)
		}
	}
	for pkg := range failed {
		r.BuildFailed = append(r.BuildFailed, pkg)
	}
	slices.Sort(r.BuildFailed)
	return r, p.text(), ok
}

// record folds one run's result into the test's entry.
func record(tests map[string]Result, key string, res Result) {
	if old, seen := tests[key]; !seen || worse[res] > worse[old] {
		tests[key] = res
	}
}

// parseEvent decodes line as an event of the stream; false for a line of
// text.
func parseEvent(line []byte) (event, bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return event{}, false
	}
	var e event
	if err := json.Unmarshal(trimmed, &e); err != nil || e.Action == "" {
		return event{}, false
	}
	return e, true
}
