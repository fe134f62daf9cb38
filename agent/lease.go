package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/trace"
)

// The lease a durable run's driver holds, and how often it renews it.
const (
	leaseTTL     = 30 * time.Second
	leaseRenewal = 10 * time.Second
	// leaseMargin bounds how long the renewal before an effect may take:
	// past it the lease renewed is too near its end to act under.
	leaseMargin = leaseTTL / 2
)

// holdLease renews the run's lease just before an effect (a call that
// may change the workspace, a gate attempt): the effect starts only while
// the lease is still this driver's, renewed within leaseMargin, so that a
// driver that was paused past its lease (a stopped process, a suspended
// machine) and fenced out does not act on a run another driver owns.
func (d *driver) holdLease(ctx context.Context) error {
	if d.durable == nil {
		return nil
	}
	if err := d.failure(); err != nil {
		return err
	}
	start := time.Now()
	if err := d.durable.RenewLease(context.WithoutCancel(ctx), d.lease, leaseTTL); err != nil {
		return d.fail(err)
	}
	if took := time.Since(start); took > leaseMargin {
		return d.fail(fmt.Errorf("agent: renewing run %s's lease took %s, more than the %s an effect may start within: the lease may have lapsed meanwhile, so nothing more is done; resume the run", d.lease.RunID, took.Round(time.Millisecond), leaseMargin))
	}
	return nil
}

// heartbeat renews the run's lease while the driver lives, so that a long
// call (a command of minutes) does not let the lease lapse; a renewal
// fenced out stops the run.
func (d *driver) heartbeat(ctx context.Context) func() {
	return every(ctx, leaseRenewal, func(ctx context.Context) bool {
		var fenced *trace.FencedError
		if err := d.durable.RenewLease(ctx, d.lease, leaseTTL); errors.As(err, &fenced) {
			d.fail(err)
			return true
		}
		return false
	})
}

// every calls f every period until ctx ends or f says it is done; the
// returned function ends it and waits for it.
func every(ctx context.Context, period time.Duration, f func(context.Context) bool) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if f(ctx) {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
