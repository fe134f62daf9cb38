// Command rein decides, confines and records what AI agents run. This
// binary is the command-line face of the rein packages; each subcommand
// lives in its own file.
//
// cmd/rein may import any rein package; no rein package imports it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/sandbox"
)

// Exit statuses shared by the subcommands.
const (
	exitOK     = 0
	exitUsage  = 2
	exitAsk    = 10
	exitDeny   = 11
	exitRefuse = 12
)

// exitError carries a chosen exit status out of a command. Its message,
// when not empty, has already been printed or is printed by main.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// scopeFlags name each scope's policy file explicitly.
type scopeFlags struct {
	org, user, project string
}

func newRoot() *cobra.Command {
	var sf scopeFlags
	root := &cobra.Command{
		Use:   "rein",
		Short: "rein decides, confines and records what AI agents run",
		Long: `rein decides every action an AI agent takes (run a command line, read or
write a path, reach a host, call a tool) with a layered policy before it
happens, and says which rule in which file decided it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&sf.org, "org-policy", "", "org policy file (default /etc/rein/policy.toml; env REIN_ORG_POLICY)")
	pf.StringVar(&sf.user, "user-policy", "", "user policy file (default ~/.config/rein/policy.toml; env REIN_USER_POLICY)")
	pf.StringVar(&sf.project, "project-policy", "", "project policy file (default WORKSPACE/.rein/policy.toml; env REIN_PROJECT_POLICY)")
	root.AddCommand(newPolicyCmd(&sf), newTrustCmd(&sf), newSandboxCmd(), newExecCmd(&sf), newShellCmd(&sf), newDoctorCmd(), newToolchainCmd(&sf), newRunCmd(&sf), newWorkerCmd(&sf), newChatCmd(&sf),
		newToolCmd(&sf), newToolsCmd(), newTraceCmd(), newHookCmd(&sf), newMCPCmd(&sf), newLaunchCmd(&sf), newApproveCmd(&sf), newAnswerCmd(&sf), newRunsCmd(&sf))
	return root
}

func main() {
	// rein's binary is also the sandbox's init; Main returns at once when
	// it is not started as one.
	sandbox.Main()
	useLeanInit(os.Stderr)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// useLeanInit makes the rein-init installed beside rein's binary, if there
// is one, the sandbox's init: it starts in a fraction of the time rein's
// whole binary takes, which each cold run pays. One that cannot be trusted
// is said and left unused.
func useLeanInit(stderr io.Writer) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	lean := filepath.Join(filepath.Dir(exe), "rein-init")
	if _, err := os.Lstat(lean); err != nil {
		return
	}
	if err := sandbox.UseInit(lean); err != nil {
		fmt.Fprintf(stderr, "rein: not using %s as the sandbox's init: %v\n", lean, err)
	}
}

// run executes one command line of rein and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runIn(args, os.Stdin, stdout, stderr)
}

// runIn is run with stdin given.
func runIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "rein:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "rein:", err)
	return exitUsage
}
