package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/trace"
)

// A cancel from outside the driver's process (rein run cancel RUN) is an
// approval request of kind "cancel" in the run's trace. A durable run's
// driver looks for one as it starts and then every cancelPoll while it
// runs; the one it finds ends the run's context, which cancels the model
// call or the command in flight, and the run ends cancelled, naming the
// request. Its decision (yes, by rein) says when it was taken.

// cancelPoll is how often a running driver looks for a cancel.
const cancelPoll = 250 * time.Millisecond

// CancelRequest is the kind of the request rein run cancel records.
const CancelRequest = "cancel"

// cancelAsked is why the run was cancelled: the request and who asked.
type cancelAsked struct{ request, shown string }

func (c *cancelAsked) Error() string {
	return fmt.Sprintf("cancelled by request %s (%s)", c.request, c.shown)
}

// cancelRequested is the cancel of the run not yet taken, or nil.
func (d *driver) cancelRequested(ctx context.Context) (*cancelAsked, error) {
	run := d.router.RunID()
	reqs, err := d.durable.ApprovalRequests(ctx, run)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if r.Kind != CancelRequest {
			continue
		}
		dec, err := d.durable.Decision(ctx, run, r.Request)
		if err != nil {
			return nil, err
		}
		// Only rein's own answer says it was taken (a person's cannot
		// undo a cancel).
		if dec == nil || dec.By != "rein" {
			return &cancelAsked{request: r.Request, shown: r.Shown}, nil
		}
	}
	return nil, nil
}

// watchCancel stops the run (stop, the cause its context ends with) when
// a cancel is asked: once at once, then every cancelPoll until ctx ends.
// The returned function ends the watch.
func (d *driver) watchCancel(ctx context.Context, stop context.CancelCauseFunc) func() {
	if d.durable == nil {
		return func() {}
	}
	take := func() bool {
		c, err := d.cancelRequested(ctx)
		if err != nil || c == nil {
			return false
		}
		// The watch runs beside the driver: it reads nothing of the run's
		// state, which the driver alone writes.
		d.durable.AppendAll(context.WithoutCancel(ctx), trace.ApprovalDecision{RunID: d.router.RunID(), Request: c.request, Answer: "yes",
			Note: "taken by the run's driver", By: "rein", At: time.Now()})
		stop(c)
		return true
	}
	if take() {
		return func() {}
	}
	return every(ctx, cancelPoll, func(context.Context) bool { return take() })
}

// isCancelAsked reports whether err is a cancel rein run cancel asked.
func isCancelAsked(err error) bool {
	var c *cancelAsked
	return errors.As(err, &c)
}
