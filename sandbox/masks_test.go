//go:build linux

package sandbox

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestMasksOnlyReachable: the bwrap rung masks the private files of /etc
// the caller could reach itself, and no others: root reaches them all and
// has them all masked; another user reaches none of /etc/shadow and
// /etc/ssl/private and gets no mount over them, and still cannot read
// them in the sandbox.
func TestMasksOnlyReachable(t *testing.T) {
	requireRung(t, RungBwrap)
	private, err := privateSystemFiles()
	if err != nil {
		t.Fatal(err)
	}
	masks, err := systemMasks(RungBwrap)
	if err != nil || !slices.Equal(masks, private) {
		t.Fatalf("as root the masks are %v, not every private file %v (%v)", masks, private, err)
	}
	if !slices.Contains(private, "/etc/shadow") {
		t.Fatalf("/etc/shadow is not among the private files: %v", private)
	}
	// The helper as nobody: its masks, and what a line printed through
	// them.
	out := asNobody(t, "REIN_TEST_MASKS_WS=",
		"REIN_TEST_MASKS_LINE=sh -c 'grep -c \" /etc/shadow \" /proc/self/mountinfo; cat /etc/shadow; ls /etc/ssl/private'")
	var got struct {
		Masks          []string
		Stdout, Stderr string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, f := range []string{"/etc/shadow", "/etc/ssl/private"} {
		if slices.Contains(got.Masks, f) {
			t.Errorf("%s is masked for a user who cannot reach it: %v", f, got.Masks)
		}
	}
	if got.Stdout != "0\n" || !strings.Contains(got.Stderr, "/etc/shadow: Permission denied") || !strings.Contains(got.Stderr, "'/etc/ssl/private': Permission denied") {
		t.Errorf("as nobody in the sandbox: stdout %q, stderr %q", got.Stdout, got.Stderr)
	}
}

// TestMasksJudgedAgain: the masks' answer is kept only while the watch on
// /etc vouches for the listing; a listing it does not vouch for (no
// watch, or a change seen) judges every file's reach again.
func TestMasksJudgedAgain(t *testing.T) {
	defer watchEtc.Store(watchEtc.Load())
	watchEtc.Store(true)
	first, err := systemMasks(RungBwrap)
	if err != nil {
		t.Fatal(err)
	}
	privateMu.Lock()
	gen := privateGen
	privateMu.Unlock()
	if again, _ := systemMasks(RungBwrap); !slices.Equal(first, again) {
		t.Fatalf("kept %v, first %v", again, first)
	}
	privateMu.Lock()
	kept := privateGen == gen && etcWatch.on
	// What a change the watch saw does: the watch is spent.
	etcWatch.stop()
	masksMemo.out = []string{"/stale"}
	privateMu.Unlock()
	if !kept {
		t.Fatal("the second listing was not vouched for by the watch on /etc: the masks were judged again although nothing changed")
	}
	if again, _ := systemMasks(RungBwrap); !slices.Equal(first, again) {
		t.Fatalf("after the watch was spent the masks are %v, not judged again (%v)", again, first)
	}
}
