// Package testenv owns what rein's tests share about the machine they run
// on: with REIN_REQUIRE_SANDBOX=1 (as CI sets) a missing mechanism or
// program fails the test that needs it, and elsewhere it skips it, so that
// a test that would skip in CI does not exist. It also holds, written once,
// the helpers more than one package's tests use: the bash to cross-check
// with, the shell line corpus, the processes a test left running, a tree
// of files to start from. It imports nothing of rein, and only tests
// import it.
package testenv

import (
	"os"
	"testing"
)

// Required reports whether every mechanism and program the tests use must
// be there.
func Required() bool { return os.Getenv("REIN_REQUIRE_SANDBOX") == "1" }

// Missing ends t for want of something it needs: a failure when it is
// required, a skip otherwise, with why.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
