package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
)

func newTrustCmd(sf *scopeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust the project policy file of DIR (default: the current directory)",
		Long: `A project's .rein/policy.toml lives in the repository an agent works on,
so by default only its deny and ask rules apply. trust records the file's
SHA-256 in the user configuration (trust.toml beside the user policy); its
allow rules then apply until the file changes.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			o := policy.Options{Workspace: abs, OrgFile: sf.org, UserFile: sf.user, ProjectFile: sf.project}
			file, tf, digest, err := policy.Trust(o)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trusted %s\n  sha256 %s\n  recorded in %s\n", file, digest, tf)
			return nil
		},
	}
}
