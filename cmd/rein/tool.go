package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

func newToolCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf      commonFlags
		tf      traceFlag
		lf      limitFlags
		nf      netFlags
		surface string
		approve string
		rung    string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "tool [flags] NAME 'JSON'",
		Short: "Make one tool call through the whole router, recorded as a run",
		Long: `Call the tool NAME with the JSON arguments through rein's router: the
schema, the gates, the policy (asks go to the terminal, or are denied with
no terminal; --approve all|none for scripts), the sandbox, the envelope the
model would see (printed), and the trace. The exit status is 0 for ok, 1
for any other status.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.extraRules, cf.networkFlag = nf.rules(), nf.network
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			raw := json.RawMessage("{}")
			if len(args) == 2 {
				raw = json.RawMessage(args[1])
			}
			approver, err := chooseApprover(approve, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			limits, err := lf.limits(p.Limits, p.Settings)
			if err != nil {
				return err
			}
			store, red, err := tf.openFor(p)
			if err != nil {
				return err
			}
			defer store.Close()
			reg, err := tool.Builtin()
			if err != nil {
				return err
			}
			prof := sandbox.Profile{Rung: sandbox.Rung(rung), Limits: limits}
			r, err := tool.NewRouter(reg, tool.Config{Policy: p, Approver: approver, Surface: surface, Store: store,
				Redactor: red, Profile: prof, Source: "cli", Cold: true})
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			env := r.Call(ctx, args[0], raw)
			status := "ok"
			if env.Status != tool.OK {
				status = string(env.Status)
			}
			r.Close(status)
			defer exportRun(cmd.ErrOrStderr(), p, store, red, r.RunID())
			if asJSON {
				out := map[string]any{"run": r.RunID(), "envelope": env, "result": env.Result()}
				if err := writeJSON(cmd.OutOrStdout(), out, 0); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), env.Text())
				if !strings.HasSuffix(env.Text(), "\n") {
					fmt.Fprintln(cmd.OutOrStdout())
				}
			}
			if env.Status != tool.OK {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	f := cmd.Flags()
	lf.register(f)
	nf.register(f, "")
	f.StringVar(&surface, "surface", tool.SurfaceCoding, "the tool set the call sees: "+tool.SurfaceCoding+" or "+tool.SurfaceReadOnly)
	f.StringVar(&approve, "approve", "", "answer for asked actions without a terminal: all or none")
	f.StringVar(&rung, "rung", "", "the sandbox rung for commands (default: the policy's sandbox.rung)")
	f.BoolVar(&asJSON, "json", false, "print the envelope and the whole result object")
	return cmd
}

func newToolsCmd() *cobra.Command {
	var (
		surface string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "tools [--surface S] [--json]",
		Short: "List the tools a surface shows a model, with their schemas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := tool.Builtin()
			if err != nil {
				return err
			}
			specs, err := reg.Surface(surface)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), specs, 0)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tKIND\tMODES\tDESCRIPTION")
			for _, s := range specs {
				kind := "mutating"
				if s.ReadOnly {
					kind = "read-only"
				}
				modes := make([]string, len(s.Modes))
				for i, m := range s.Modes {
					modes[i] = m.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, kind, strings.Join(modes, ","), s.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&surface, "surface", tool.SurfaceCoding, "the surface: "+tool.SurfaceCoding+" or "+tool.SurfaceReadOnly)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the specs as JSON, schemas included")
	return cmd
}
