package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/shell"
)

// rungReport is one row of rein doctor: what a rung can enforce here, or
// why it cannot run and how to fix that.
type rungReport struct {
	rung     string
	ok       bool
	enforces string
	problem  string
	fix      string
}

func newDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Show which sandbox rungs work on this host, what each enforces, and how to fix the others",
		Long: `Probe each sandbox rung for real (a minimal confined run, not a version
string) and print what it can enforce here, or why it cannot run and what
to do about it. Exits 1 when no rung can run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows := []rungReport{probeBwrap(), {
				rung: "landlock", problem: "not built yet in this version of rein", fix: "use the bwrap rung",
			}, {
				rung: "none", problem: "never chosen automatically", fix: "only by name, and not offered by rein sandbox",
			}}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUNG\tSTATUS\tENFORCES / PROBLEM\tFIX")
			usable := false
			for _, r := range rows {
				if r.ok {
					usable = true
					fmt.Fprintf(tw, "%s\tok\t%s\t\n", r.rung, r.enforces)
				} else {
					fmt.Fprintf(tw, "%s\tunavailable\t%s\t%s\n", r.rung, r.problem, r.fix)
				}
			}
			tw.Flush()
			if !usable {
				return &exitError{code: 1}
			}
			return nil
		},
	}
}

// probeBwrap runs a real minimal sandbox on the bwrap rung.
func probeBwrap() rungReport {
	r := rungReport{rung: "bwrap"}
	path, err := bwrap.Find()
	if err != nil {
		r.problem, r.fix = "bubblewrap is not installed", "apt-get install bubblewrap"
		return r
	}
	if out, err := exec.Command(path, "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
		r.problem = fmt.Sprintf("user namespaces are refused: %s", firstLine(string(out)))
		r.fix = "sysctl -w kernel.unprivileged_userns_clone=1 (Debian), or on Ubuntu 24.04 allow bwrap in AppArmor"
		return r
	}
	sup := confine.Probe()
	if sup.LandlockABI < 4 || !sup.Seccomp {
		r.problem = fmt.Sprintf("the init's self-confinement needs Landlock ABI 4 and seccomp; this kernel has Landlock ABI %d, seccomp %v", sup.LandlockABI, sup.Seccomp)
		r.fix = "a kernel 6.7 or later with landlock in the lsm= boot list"
		return r
	}
	ws, err := os.MkdirTemp("", "rein-doctor-")
	if err != nil {
		r.problem, r.fix = err.Error(), "check $TMPDIR"
		return r
	}
	defer os.RemoveAll(ws)
	ws, _ = filepath.EvalSymlinks(ws)
	line, _ := shell.FromArgv([]string{"true"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := sandbox.Run(ctx, line, sandbox.Profile{Workspace: ws, Timeout: 20 * time.Second}, nil, nil)
	switch {
	case err != nil:
		r.problem, r.fix = err.Error(), "see the reason"
		return r
	case res.Status != sandbox.OK:
		r.problem, r.fix = fmt.Sprintf("a minimal sandbox failed: %s %s", res.Status, res.Reason), "see the reason"
		return r
	}
	version, _ := bwrap.Version(path)
	r.ok = true
	r.enforces = fmt.Sprintf("bubblewrap %s: new user/mount/pid/ipc/uts/cgroup/net namespaces, a view built from nothing, Landlock ABI %d, seccomp, no capabilities, network off", version, sup.LandlockABI)
	return r
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
