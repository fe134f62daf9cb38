package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/reinhq/rein/agent/evidence"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/tool"
)

// gate runs one attempt: the protected files compared with the run's
// start first, then the gate's line through the router, like any command,
// with caches of the attempt's own (tool.GateCaches); a go test gate rein
// recognises reports each test (-json, added), and a protected test that
// ran in the baseline must run and pass.
func (d *driver) gate(ctx context.Context, baseline bool) (a GateAttempt) {
	start := d.o.Now()
	defer func() {
		a.DurationMS = float64(d.o.Now().Sub(start).Microseconds()) / 1000
		d.emit(Event{Kind: EventGateAttempt, Step: d.state.Steps, Tokens: d.state.Tokens, Status: string(a.Status), Target: d.c.Verify.Line})
	}()
	// Nothing of the run runs beside its gate: a background line could
	// change what the gate reads while it reads it.
	d.router.KillHandles()
	if d.tampered(&a) {
		return a
	}
	// A line with ~ is not rewritten: the router reads ~ as the sandbox's
	// HOME.
	line, report := evidence.GoTestLine(shell.Parser{}, d.c.Verify.Line)
	if !report {
		line = d.c.Verify.Line
	}
	var err error
	if baseline {
		if err = d.gateCaches.EmptyBaseline(); err == nil {
			if report {
				d.buildStd(d.gateCaches.Baseline(ctx))
			}
			ctx = d.gateCaches.Baseline(ctx)
		}
	} else {
		var done func()
		ctx, done, err = d.gateCaches.Attempt(ctx)
		if err == nil {
			defer done()
		}
	}
	if err != nil {
		a.Status, a.Output = GateErrored, err.Error()
		return a
	}
	ctx = tool.NetworkOff(ctx)
	stdout, stderr := &capped{max: maxReportBytes}, &capped{max: maxReportBytes}
	if report {
		ctx = tool.WithLive(ctx, tool.Live{Stdout: stdout, Stderr: stderr})
	}
	args := map[string]string{"line": line}
	if d.c.Verify.Timeout > 0 {
		args["timeout"] = d.c.Verify.Timeout.String()
	}
	raw, _ := json.Marshal(args)
	env := d.router.Call(tool.GateGrant(ctx, line), "shell", raw)
	if env.Rung != "" {
		d.rung = string(env.Rung)
	}
	a.ExitCode, a.ResultID, a.Output = env.ExitCode, env.ResultID, env.Text()
	ran := env.ExitCode != nil && (env.Status == tool.OK || env.Status == tool.Failed)
	switch {
	case ran && *env.ExitCode == d.c.Verify.ExpectExit:
		a.Status = GatePassed
	case ran:
		a.Status = GateFailedSt
	default:
		a.Status = GateErrored
	}
	a.Evidence = EvidenceExitStatus
	if report && (ran || baseline) {
		d.judgeTests(&a, baseline, stdout, stderr)
	}
	// And nothing changed them while the gate ran.
	d.tampered(&a)
	return a
}

// stdPackage is an import path of Go's standard library as go list
// prints it, never a flag, a file or a vendored path.
var stdPackage = regexp.MustCompile(`^[a-z0-9_]+(/[a-z0-9_]+)*$`)

// buildStd builds the standard packages the workspace's Go tests import
// into the standard library's shared caches (tool.GateCaches), so that a
// baseline compiles only the workspace: go list with the baseline's
// caches (ctx), then go build of those packages alone, which runs nothing
// of the workspace. The gate's grant covers both lines where the policy
// would ask; either line denied, or failing, leaves the baseline to build
// the packages itself.
func (d *driver) buildStd(ctx context.Context) {
	if _, err := os.Stat(filepath.Join(d.c.Workspace, "go.mod")); err != nil {
		return
	}
	run := func(ctx context.Context, line string) (string, bool) {
		out := &capped{max: 1 << 20}
		raw, _ := json.Marshal(map[string]string{"line": line})
		env := d.router.Call(tool.WithLive(tool.GateGrant(tool.NetworkOff(ctx), line), tool.Live{Stdout: out}), "shell", raw)
		return out.buf.String(), env.Status == tool.OK && !out.over
	}
	listed, ok := run(ctx, `go list -deps -test -f '{{if .Standard}}{{.ImportPath}}{{end}}' ./...`)
	if !ok {
		return
	}
	var pkgs []string
	for _, p := range strings.Fields(listed) {
		if stdPackage.MatchString(p) && !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return
	}
	slices.Sort(pkgs)
	std, err := d.gateCaches.StdBuild(ctx)
	if err != nil {
		return
	}
	run(std, "go build "+strings.Join(pkgs, " "))
}

// maxReportBytes bounds what is kept of a gate's report (each stream):
// a report cut there is none, and the protected tests count as not run.
const maxReportBytes = 64 << 20

// judgeTests reads the runner's report of a go test gate: the attempt's
// counts, the output as go test prints it for the model, and the
// protected tests of the baseline that did not run and pass.
func (d *driver) judgeTests(a *GateAttempt, baseline bool, stdout, stderr *capped) {
	var rep evidence.Report
	text, ok := "", false
	if !stdout.over {
		rep, text, ok = evidence.ReadGo(stdout.buf.Bytes())
	}
	out := untimed(text)
	if stderr.buf.Len() > 0 {
		out += stderr.buf.String()
	}
	if stdout.over {
		out = fmt.Sprintf("[rein: the gate's report passed %d MiB and was not read]\n", maxReportBytes>>20) + a.Output
	}
	a.Output = boundedText(out)
	if ok {
		c := rep.Counts()
		a.Evidence, a.Tests = EvidenceGoTestJSON, &GateTests{Run: c.Run, Passed: c.Passed, Failed: c.Failed, Skipped: c.Skipped, NotRun: []string{}}
	}
	if baseline {
		// The protected tests are read as the run began: which module a
		// test file is in is what the workspace's go.mod files say, and
		// those are the run's to change.
		declared, err := evidence.DeclaredGo(d.c.Workspace, d.protectedTests())
		if err != nil {
			a.Output = fmt.Sprintf("[rein: reading the protected tests: %v]\n", err) + a.Output
		}
		if len(declared) > 0 {
			a.Declared, _ = json.Marshal(declared)
		}
		if !ok {
			// A baseline whose report cannot be read (its go.mod does
			// not parse, it ran out of time, it printed too much) tells
			// nothing of which tests run: every protected test must run
			// and pass, as in a package that did not build.
			rep = evidence.Report{Runner: evidence.RunnerGo}
			for _, t := range declared {
				if i := strings.LastIndexByte(t.Key, '.'); i > 0 && !slices.Contains(rep.BuildFailed, t.Key[:i]) {
					rep.BuildFailed = append(rep.BuildFailed, t.Key[:i])
				}
			}
		}
		a.Report, _ = json.Marshal(rep)
		return
	}
	b := d.state.GateBaseline
	if b == nil || len(b.Report) == 0 {
		return
	}
	var baseRep evidence.Report
	var baseDeclared []evidence.Test
	err := json.Unmarshal(b.Report, &baseRep)
	if err == nil && len(b.Declared) > 0 {
		err = json.Unmarshal(b.Declared, &baseDeclared)
	}
	if err != nil {
		// The checkpoint is under the trace's keyed chain; a baseline it
		// cannot read passes nothing.
		a.Status, a.Output = GateErrored, fmt.Sprintf("[rein: the baseline's report cannot be read: %v]\n", err)+a.Output
		return
	}
	// A protected test whose file is not where it was (its package's
	// import path changed: a go.mod renamed, made, or removed) is not the
	// test a report of its old name speaks of.
	now, err := evidence.DeclaredGo(d.c.Workspace, d.protectedTests())
	where := map[string]string{}
	for _, t := range now {
		where[t.File+"\x00"+t.Key[strings.LastIndexByte(t.Key, '.')+1:]] = t.Key
	}
	for _, t := range baseDeclared {
		if err != nil || where[t.File+"\x00"+t.Key[strings.LastIndexByte(t.Key, '.')+1:]] != t.Key {
			delete(rep.Tests, t.Key)
		}
	}
	notRun := evidence.NotRun(baseDeclared, baseRep, rep)
	if a.Tests == nil {
		// A report rein asked for and could not read: the attempt's
		// tests are none.
		a.Evidence, a.Tests = EvidenceGoTestJSON, &GateTests{}
	}
	a.Tests.NotRun = append([]string{}, notRun...)
	if a.Status == GatePassed && len(notRun) > 0 {
		a.Status = GateTestsNotRun
		a.Output = fmt.Sprintf("[rein: the gate exited %d, but these protected tests ran in the baseline and did not run and pass now: %s]\n",
			exitOf(a.ExitCode), strings.Join(notRun, ", ")) + a.Output
	}
}

// exitOf is an exit code, or -1 for none.
func exitOf(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// protectedTests are the protected files (as the run began) that are
// Go test files, in order.
func (d *driver) protectedTests() []string {
	var files []string
	for p := range d.baseline {
		if strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files
}

// The times go test prints of each test and package, which differ from
// run to run.
var (
	testTime    = regexp.MustCompile(`(?m)^(\s*--- (?:PASS|FAIL|SKIP): \S+) \(\d+\.\d+s\)$`)
	packageTime = regexp.MustCompile(`(?m)^((?:ok  |FAIL)\t\S+)\t\d+\.\d+s`)
)

// untimed is go test's output, rebuilt from its report, without the
// times of its tests and packages: the model is shown the same text for
// the same results, and a run replayed from its recording (whose first
// request holds the baseline's output) asks what it asked.
func untimed(text string) string {
	return packageTime.ReplaceAllString(testTime.ReplaceAllString(text, "$1"), "$1")
}

// capped keeps what is written to it up to max bytes, and says whether
// more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// maxGateShown bounds the gate output the model is shown: its head and
// its tail.
const maxGateShown = 50_000

func boundedText(s string) string {
	if len(s) <= maxGateShown {
		return s
	}
	head, tail := s[:maxGateShown/5], s[len(s)-maxGateShown*4/5:]
	return fmt.Sprintf("%s\n[rein: %d bytes left out]\n%s", strings.ToValidUTF8(head, ""), len(s)-len(head)-len(tail), strings.ToValidUTF8(tail, ""))
}
