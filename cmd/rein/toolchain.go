package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/toolchain"
)

// toolchainReport is what rein toolchain prints: the sandbox's PATH and,
// for each ecosystem the workspace shows, its commands and what it needs.
type toolchainReport struct {
	Workspace  string            `json:"workspace"`
	Path       []string          `json:"path"`
	Ecosystems []ecosystemReport `json:"ecosystems"`
	// Known lists every row, for a workspace that shows none.
	Known []string `json:"known"`
}

type ecosystemReport struct {
	Name     string             `json:"name"`
	Manager  string             `json:"manager"`
	Marker   string             `json:"marker"`
	Lockfile string             `json:"lockfile,omitempty"`
	Commands toolchain.Commands `json:"commands"`
	Needs    []need             `json:"needs"`
}

// need is one thing an ecosystem needs, whether this host has it, and the
// fix where not.
type need struct {
	Kind   string `json:"kind"` // program, cache, host_cache, preset
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func newToolchainCmd(sf *scopeFlags) *cobra.Command {
	var (
		c      commonFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "toolchain",
		Short: "Show the ecosystems the workspace uses, their commands, and what the sandbox has of what they need",
		Long: `Detect the ecosystems of the workspace (go.mod, package.json and its
lockfile, pyproject.toml, Cargo.toml, ...) from rein's toolchain table and
print, for each, its install, build, test, lint and format commands and
everything it needs: its programs as the sandbox's PATH finds them, its
per-workspace caches, the host caches served read-only (offline), and the
network preset that fetches what is missing (--network proxy). Where this
host lacks something, the fix is printed. Exits 1 when a detected
ecosystem needs a program the sandbox cannot find.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := c.load(sf)
			if err != nil {
				return err
			}
			rep := buildToolchainReport(p, os.Environ())
			code := exitOK
			for _, e := range rep.Ecosystems {
				for _, n := range e.Needs {
					if n.Kind == "program" && !n.OK {
						code = 1
					}
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep, code)
			}
			printToolchainReport(cmd.OutOrStdout(), rep)
			if code != exitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.workspace, "workspace", "", "workspace root (default: the current directory)")
	f.StringArrayVar(&c.readPaths, "read-path", nil, "a host directory commands may read, as [sandbox] read_paths (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func buildToolchainReport(p *policy.Policy, env []string) toolchainReport {
	prof := sandbox.Profile{Workspace: p.Workspace, Env: tool.Env(env, p), HostReadPaths: p.Sandbox.ReadPaths}
	rep := toolchainReport{Workspace: p.Workspace, Path: sandbox.SearchPath(prof), Ecosystems: []ecosystemReport{}}
	for _, r := range toolchain.Table() {
		rep.Known = append(rep.Known, r.Name)
	}
	exposed := tool.HostCaches(env, p)
	base := sandbox.ToolchainCacheDir(p.Workspace)
	for _, f := range toolchain.Detect(p.Workspace) {
		e := ecosystemReport{Name: f.Row.Name, Manager: f.Manager.Name, Marker: f.Marker, Lockfile: f.Lockfile, Commands: f.Commands, Needs: []need{}}
		for _, prog := range f.Manager.Programs {
			e.Needs = append(e.Needs, programNeed(prof, prog))
		}
		for _, c := range f.Manager.Caches {
			if c.Host == nil {
				e.Needs = append(e.Needs, need{Kind: "cache", Name: c.Name, OK: true,
					Detail: fmt.Sprintf("per-workspace, writable: %s=%s", c.Env, c.Setting(filepath.Join(base, c.Name), false))})
				continue
			}
			e.Needs = append(e.Needs, hostCacheNeed(c, env, exposed))
		}
		for _, name := range f.Manager.Presets {
			n := need{Kind: "preset", Name: name, OK: slices.Contains(p.NetPresets, name)}
			hosts := strings.Join(policy.PresetHosts(name), " ")
			if n.OK {
				n.Detail = "allowed by the policy's [net] presets: " + hosts + ", with --network proxy"
			} else {
				n.Detail = "not allowed: with the network on, fetching asks for each of " + hosts
				n.Fix = fmt.Sprintf("add presets = [%q] under [net] in a policy file, and run with --network proxy", name)
			}
			e.Needs = append(e.Needs, n)
		}
		rep.Ecosystems = append(rep.Ecosystems, e)
	}
	return rep
}

func programNeed(prof sandbox.Profile, prog toolchain.Program) need {
	n := need{Kind: "program", Name: prog.Name}
	path, err := sandbox.LookPath(prof, prog.Name)
	if err == nil {
		n.OK, n.Detail = true, path
		return n
	}
	n.Detail = err.Error()
	var pe *sandbox.ProgramError
	switch {
	case errors.As(err, &pe) && pe.HostDir != "":
		n.Detail = "the host has it at " + pe.Host + ", outside the sandbox's view"
		n.Fix = fmt.Sprintf("add read_paths = [%q] under [sandbox] in a policy file (or --read-path %s)", pe.HostDir, pe.HostDir)
	case prog.Package != "":
		n.Detail = "not found in the sandbox's PATH"
		n.Fix = "apt-get install " + prog.Package
	default:
		n.Detail = "not found in the sandbox's PATH"
		n.Fix = "install " + prog.Name + " from its project's packages, into a directory of the system or one named in [sandbox] read_paths"
	}
	return n
}

func hostCacheNeed(c toolchain.Cache, env []string, exposed []toolchain.HostCache) need {
	n := need{Kind: "host_cache", Name: c.Name}
	for _, h := range exposed {
		if h.Name == c.Name {
			n.OK = true
			v := c.Value
			if v == "" {
				v = "{dir}"
			}
			n.Detail = fmt.Sprintf("the host's %s, read-only, as %s=%s", h.Path, c.Env, v)
			return n
		}
	}
	where := toolchain.HostCachePath(c, env)
	switch {
	case where == "":
		n.Detail = "this host has none (none of " + strings.Join(c.Host, ", ") + " is set)"
	default:
		if _, err := os.Stat(where); err != nil {
			n.Detail = "this host has none at " + where
		} else {
			n.Detail = where + " is protected or overlaps the workspace, and is never exposed"
		}
	}
	n.Fix = "fill it on the host (the manager's install command run outside the sandbox) to build offline, or run with --network proxy"
	return n
}

// printToolchainReport prints the report for a terminal: every name that
// comes from the host or the workspace (a marker's file name, a path)
// through policy.Printable, so that no byte of it can move the cursor.
func printToolchainReport(w io.Writer, rep toolchainReport) {
	pr := policy.Printable
	fmt.Fprintf(w, "workspace %s\n", pr(rep.Workspace))
	fmt.Fprintf(w, "sandbox PATH %s\n", pr(strings.Join(rep.Path, ":")))
	if len(rep.Ecosystems) == 0 {
		fmt.Fprintf(w, "\nno ecosystem shows at the workspace root; rein knows %s\n", strings.Join(rep.Known, ", "))
		return
	}
	for _, e := range rep.Ecosystems {
		how := pr(e.Marker)
		if e.Lockfile != "" && e.Lockfile != e.Marker {
			how += ", " + pr(e.Lockfile)
		}
		fmt.Fprintf(w, "\n%s (%s): %s\n", e.Name, how, e.Manager)
		for _, c := range [][2]string{{"install", e.Commands.Install}, {"build", e.Commands.Build}, {"test", e.Commands.Test}, {"lint", e.Commands.Lint}, {"format", e.Commands.Format}} {
			if c[1] != "" {
				fmt.Fprintf(w, "  %-8s %s\n", c[0], pr(c[1]))
			}
		}
		for _, n := range e.Needs {
			mark := "ok"
			switch {
			case !n.OK && n.Kind == "program":
				mark = "missing"
			case !n.OK:
				mark = "no"
			}
			fmt.Fprintf(w, "  %-8s %s %s: %s\n", mark, strings.ReplaceAll(n.Kind, "_", " "), n.Name, pr(n.Detail))
			if n.Fix != "" {
				fmt.Fprintf(w, "           fix: %s\n", pr(n.Fix))
			}
		}
	}
}
