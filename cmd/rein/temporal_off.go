//go:build !temporal

package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// errNoTemporal is every fleet command of a rein built without the
// Temporal driver: its client would double the binary and slow every
// start of rein (each hook call among them), so it is a build of its
// own.
var errNoTemporal = &exitError{exitUsage, "this rein is built without the Temporal driver: build it with go build -tags temporal ./cmd/rein (docs/scale-out.md)"}

func runOnTemporal(context.Context, *temporalFlags, *traceFlag, *sqlstore.Store, agent.Contract, func(agent.Event), io.Writer, *trace.Redactor, bool) error {
	return errNoTemporal
}

func followAgain(context.Context, *cobra.Command, *temporalFlags, *traceFlag, *sqlstore.Store, string, *agent.State, *trace.Redactor, bool) error {
	return errNoTemporal
}

func (t *temporalFlags) tell(context.Context, *traceFlag, *sqlstore.Store, string, string, string, string) error {
	return errNoTemporal
}

func newWorkerCmd(*scopeFlags) *cobra.Command {
	var tmp temporalFlags
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT [--task-queue Q] [flags]",
		Short: "Serve agent runs' workflows and effects from a Temporal server (a build with -tags temporal)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return errNoTemporal },
	}
	tmp.register(cmd, true)
	return cmd
}
