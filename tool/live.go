package tool

import (
	"context"
	"io"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/netproxy"
)

// Live is what the caller of one call is shown of its command while the
// command happens, besides the envelope at its end: rein exec and rein
// shell print a command's output to the terminal as it is produced. The
// call is otherwise the same call, with the same policy, sandbox, limits,
// result and trace.
type Live struct {
	// Stdout and Stderr, when set, receive the command's streams as it
	// writes them, through the run's redactor a line at a time
	// (trace.RedactingWriter): a declared secret is redacted there as in
	// the result. They get the whole streams; the result is bounded as
	// ever.
	Stdout, Stderr io.Writer
	// Decided, when set, is given the policy's last verdict on the command
	// (after the approver), allowed or not, before it runs.
	Decided func(*policy.Verdict)
	// Egress, when set, sees each of the command's connections through
	// the egress proxy as it ends, as the trace records it.
	Egress func(netproxy.Event)
	// SpoolDir, when set, is a directory of the caller's, outside the
	// workspace, where the command's whole streams are kept as files
	// (sandbox.Profile.SpoolDir, up to sandbox.DefaultSpoolBytes or the
	// file size limit each, as the command wrote them), left in place and
	// named by the result; otherwise the call spools to a directory of
	// its own, removed once the result is kept.
	SpoolDir string
}

type liveKey struct{}

// WithLive makes the command of the call made with ctx (exec, shell)
// show itself to l as it happens.
func WithLive(ctx context.Context, l Live) context.Context {
	return context.WithValue(ctx, liveKey{}, l)
}

func liveOf(ctx context.Context) Live {
	l, _ := ctx.Value(liveKey{}).(Live)
	return l
}
