package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/sandbox"
)

// rein launch runs a whole session in the bwrap sandbox, and relays its
// hook and MCP bytes over a Unix socket: on Windows both refuse with the
// sandbox's own refusal, so that the command's name still says what it
// would do.

func newLaunchCmd(*scopeFlags) *cobra.Command {
	return unsupportedCmd("launch [flags] claude-code [-- CLAUDE_ARGS...] | launch [flags] -- PROGRAM ARGS...",
		"Run Claude Code (or any agent CLI) whole inside rein's sandbox, as a managed session", false)
}

func unsupportedCmd(use, short string, hidden bool) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short,
		Hidden:             hidden,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := sandbox.ChooseRung(context.Background(), sandbox.Profile{})
			return &exitError{exitSandbox, "rein " + cmd.Name() + ": " + err.Error()}
		},
	}
}
