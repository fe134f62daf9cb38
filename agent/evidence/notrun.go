package evidence

import (
	"slices"
	"strings"
)

// NotRun returns, sorted, the keys of the declared tests that had to run
// and pass in attempt and did not: missing from its report, skipped, cut
// short, or failed. (A failure usually makes the exit status non-zero
// too; it is listed all the same.)
//
// The baseline is the gate run at the run's start, and says which tests
// the gate runs: a declared test has to run if the baseline reported it
// run (passed, failed or cut short), or if the baseline could not build
// its package's test binary and the test's file is built in every
// context (see Test.Constrained). A test the baseline reported skipped,
// and a test of a package the baseline did not test at all (outside the
// gate's patterns, or left out by its -run), need not run.
//
// A test of a package the baseline could not build has to run now
// whatever the gate's -run, -skip or -short say, and whether or not it
// skips itself in this environment: the baseline could not tell.
func NotRun(declared []Test, baseline, attempt Report) []string {
	unbuilt := map[string]bool{}
	for _, p := range baseline.BuildFailed {
		unbuilt[p] = true
	}
	var out []string
	for _, t := range declared {
		before, reported := baseline.Tests[t.Key]
		required := reported && before != Skip || !reported && !t.Constrained && unbuilt[packageOf(t.Key)]
		if required && attempt.Tests[t.Key] != Pass {
			out = append(out, t.Key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// packageOf returns the import path of a test's key: a test's name holds
// no dot, an import path may.
func packageOf(key string) string {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return ""
	}
	return key[:i]
}
