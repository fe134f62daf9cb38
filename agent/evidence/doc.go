// Package evidence owns what a gate's test runner says about a gate
// attempt, beyond its exit status: it reads the runner's machine-readable
// report (Go's `go test -json`, the test2json stream, first), enumerates
// the tests that the protected test files declare, and decides which of
// those tests did not run and pass. An exit status of zero says only that
// the runner ended well; a test binary whose TestMain exits early, whose
// package prints PASS from an init function and exits, or whose tests are
// skipped or compiled out also ends well. The report names what ran.
//
// The report is what the runner printed, and the code under test runs
// inside the runner: a test binary can print the framing test2json reads
// (its ^V marker included) and so report a test it never ran. Evidence
// catches a test that went missing, was skipped or was cut short; it is
// no proof against code written to forge the report.
//
// evidence imports shell and the standard library only; it never imports
// agent, tool, sandbox or anything that runs a command.
package evidence
