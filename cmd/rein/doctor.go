package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/cgroup"
	"github.com/reinhq/rein/sandbox/confine"
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
	var workspace string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show which sandbox rungs work on this host, what each enforces, and how to fix the others",
		Long: `Probe each sandbox rung for real (a minimal confined run whose init
checks the working directory, the workspace, HOME, TMPDIR and that no
network is reachable; never a version string) and print what it enforces
here, or why it cannot run and what to do about it. The results refresh
the preflight cache rein consults before a workspace's first run. Exits 1
when no confining rung can run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws := workspace
			if ws == "" {
				d, err := os.MkdirTemp("", "rein-doctor-")
				if err != nil {
					return &exitError{exitSandbox, err.Error()}
				}
				defer os.RemoveAll(d)
				ws = d
			}
			ws, err := filepath.Abs(ws)
			if err == nil {
				ws, err = filepath.EvalSymlinks(ws)
			}
			if err != nil {
				return &exitError{exitUsage, fmt.Sprintf("--workspace %s: %v", workspace, err)}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sup := confine.Probe()
			rows := []rungReport{
				report(sandbox.Preflight(ctx, sandbox.RungBwrap, ws, true), bwrapEnforces(sup)),
				report(sandbox.Preflight(ctx, sandbox.RungLandlock, ws, true), landlockEnforces(sup)),
				{rung: "none", ok: false, problem: "never chosen by auto: no confinement at all", fix: "only by name (--rung none), when you accept running unconfined"},
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUNG\tSTATUS\tENFORCES / PROBLEM\tFIX")
			usable := false
			for _, r := range rows {
				if r.ok {
					usable = true
					fmt.Fprintf(tw, "%s\tok\t%s\t\n", r.rung, r.enforces)
				} else {
					status := "unavailable"
					if r.rung == "none" {
						status = "by name"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.rung, status, r.problem, r.fix)
				}
			}
			tw.Flush()
			if rows[1].ok {
				fmt.Fprintln(out, "\nthe landlock rung leaves open what bwrap closes:")
				for _, l := range landlockOpen {
					fmt.Fprintln(out, "  - "+l)
				}
			}
			if h, err := cgroup.Find(); err == nil {
				fmt.Fprintf(out, "\ntree kill: a cgroup v2 group per run under %s (cgroup.kill, death confirmed)\n", h.Parent)
			} else {
				fmt.Fprintf(out, "\ntree kill: %v; bwrap relies on its pid namespace, landlock on its init as subreaper (a run whose init is killed cannot be confirmed dead and poisons the sandbox)\n", err)
			}
			fmt.Fprintln(out, "\nlimits:")
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, l := range sandbox.ProbeLimits() {
				if l.Problem != "" {
					fmt.Fprintf(tw, "  %s	cannot be enforced here: a run that asks for it is refused: %s\n", l.Limit, l.Problem)
				} else {
					fmt.Fprintf(tw, "  %s	%s\n", l.Limit, l.Mechanism)
				}
			}
			tw.Flush()
			fmt.Fprintln(out, "\nnetwork:")
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  off\tbwrap: an empty network namespace; landlock: no inet socket (seccomp), no TCP (Landlock)")
			fmt.Fprintln(tw, "  proxy\tbwrap: no route out; the only port is rein's forwarder on the sandbox's own loopback, to the egress proxy's unix socket; UDP and raw sockets refused")
			fmt.Fprintln(tw, "  \tlandlock (weaker): the host's network, TCP to the proxy's port only (Landlock); no UDP, raw or unix sockets, TCP Fast Open or listen (seccomp); Landlock restricts the port, not the address, so that port is reachable on any address a command names by IP")
			if pf := sandbox.PreflightFull(ctx, ws, true); pf.OK {
				fmt.Fprintln(tw, "  full\tbwrap only: slirp4netns on the sandbox's own namespace, the host's loopback unreachable; private and metadata addresses, and the host's services on its other addresses, are NOT refused")
			} else {
				fmt.Fprintf(tw, "  full\tunavailable: %s\t%s\n", pf.Problem, pf.Fix)
			}
			tw.Flush()
			if !usable {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "probe in this workspace (default: a temporary directory)")
	return cmd
}

func report(pf sandbox.PreflightResult, enforces string) rungReport {
	return rungReport{rung: string(pf.Rung), ok: pf.OK, enforces: enforces, problem: pf.Problem, fix: pf.Fix}
}

func bwrapEnforces(sup confine.Support) string {
	version := "?"
	if path, err := bwrap.Find(); err == nil {
		version, _ = bwrap.Version(path)
	}
	return fmt.Sprintf("bubblewrap %s: new user/mount/pid/ipc/uts/cgroup/net namespaces, a view built from nothing, Landlock ABI %d, seccomp, no capabilities, network off, proxy or full", version, sup.LandlockABI)
}

func landlockEnforces(sup confine.Support) string {
	return fmt.Sprintf("Landlock ABI %d (files, TCP, signals, abstract sockets), seccomp (no inet or unix sockets, no System V IPC), chmod, chown, utimes and extended attributes only beneath the writable paths (a supervisor thread, by seccomp user notification), no capabilities, network off or proxy (not full); weaker: see below", sup.LandlockABI)
}

// landlockOpen is what a command on the landlock rung can still do that
// the bwrap rung's namespaces and view prevent, each checked on that rung.
var landlockOpen = []string{
	"host processes are listed in /proc, with their command lines (not their environments, working directories or memory)",
	"any path can be stat'ed (mode, owner, size, times) and the extended attributes of any file read; listing a directory or reading a file outside the granted paths is refused",
	"everything the ruleset grants for reading is readable whole: the system directories, /etc but for what only root may read, /proc, the host read paths and toolchain caches",
	"a file it can read can be locked (flock), stalling a host program that waits for the lock",
	"the protected paths (.git/hooks, .git/config, .rein) are writable during the run and put back after it",
	"the command can kill its own init; the run then fails, and without a cgroup poisons the sandbox",
}
