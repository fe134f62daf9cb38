package hook

import (
	"fmt"
	"time"
)

// Timeout bounds one hook answer: past it the answer is deny.
const Timeout = 10 * time.Second

// Bounded is decide's answer, or a deny when decide panics or has not
// answered within timeout: a hook that cannot decide never lets a call
// through. Every hook rein answers (rein hook, a launched session's) is
// answered through it.
func Bounded(timeout time.Duration, decide func() Decision) Decision {
	done := make(chan Decision, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Denied(fmt.Sprintf("internal error: %v", p))
			}
		}()
		done <- decide()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-done:
		return d
	case <-t.C:
		return Denied(fmt.Sprintf("no decision within %s", timeout))
	}
}
