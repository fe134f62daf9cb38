package hook

import (
	"strings"
	"testing"
	"time"
)

// TestBounded: an answer in time is the answer; a panic and a decision
// past the bound are denies naming why.
func TestBounded(t *testing.T) {
	if d := Bounded(time.Second, func() Decision { return Decision{Answer: Allow, Reason: "ok"} }); d.Answer != Allow || d.Reason != "ok" {
		t.Errorf("in time: %+v", d)
	}
	if d := Bounded(time.Second, func() Decision { panic("boom") }); d.Answer != Deny || !strings.Contains(d.Reason, "internal error: boom") {
		t.Errorf("panic: %+v", d)
	}
	release := make(chan struct{})
	defer close(release)
	d := Bounded(50*time.Millisecond, func() Decision { <-release; return Decision{Answer: Allow} })
	if d.Answer != Deny || !strings.Contains(d.Reason, "no decision within 50ms") {
		t.Errorf("late: %+v", d)
	}
}
