package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/postgres"
	"github.com/reinhq/rein/trace/sqlite"
	"github.com/reinhq/rein/trace/sqlstore"
	"github.com/reinhq/rein/traceview"
)

// traceFlag names the trace store; REIN_TRACE does too.
type traceFlag struct{ path string }

func (t *traceFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.path, "trace", "", "the trace store: a file, or a postgres:// URL (default ~/.cache/rein/trace/<workspace hash>.db; env REIN_TRACE)")
}

// openFor opens the store of p's workspace with the redactor of p's
// secrets (and of the extra values, such as a token), the one redactor the
// run then prints and stores through.
func (t *traceFlag) openFor(p *policy.Policy, extra ...string) (*sqlstore.Store, *trace.Redactor, error) {
	red := trace.NewRedactor(append(trace.SecretValues(os.Environ(), p.EnvSecrets...), extra...)...)
	store, err := t.open(p.Workspace, red)
	return store, red, err
}

// open opens the store: the flag, else REIN_TRACE, else the workspace's.
// A postgres:// or postgresql:// URL is a PostgreSQL server's; anything
// else is a file's path.
func (t *traceFlag) open(workspace string, r *trace.Redactor) (*sqlstore.Store, error) {
	path, err := t.location(workspace)
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	key, err := traceKey(path, workspace)
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	var s *sqlstore.Store
	if postgres.IsURL(path) {
		s, err = postgres.Open(path, r, postgres.WithKey(key))
	} else {
		s, err = sqlite.Open(path, r, sqlite.WithKey(key))
	}
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	return s, nil
}

// location is the store's: the flag, else REIN_TRACE, else the
// workspace's file.
func (t *traceFlag) location(workspace string) (string, error) {
	path := t.path
	if path == "" {
		path = os.Getenv("REIN_TRACE")
	}
	if path == "" {
		// Outside the workspace, where no command can reach it.
		dir, err := sandbox.StateDir("trace")
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, sandbox.WorkspaceKey(workspace)+".db")
	}
	return path, nil
}

// useTraceKey makes the org or user policy's [trace] key_file the trace
// key of this process, where REIN_TRACE_KEY does not name one: the trace
// and the sandbox's sealed session state read it from there.
func useTraceKey(p *policy.Policy) {
	if p.TraceKeyFile != "" && os.Getenv("REIN_TRACE_KEY") == "" {
		os.Setenv("REIN_TRACE_KEY", p.TraceKeyFile)
	}
}

// traceKey loads (making it on first use) the key the chain of the store
// at path is keyed with: REIN_TRACE_KEY, else trace.key in rein's state
// directory. The state directory is where no sandbox can look: the sandbox
// refuses a read path or host cache that overlaps it and a workspace that
// holds it, the bwrap rung's HOME is a directory of its own, and the
// landlock rung grants nothing of the real HOME but those paths. A key in
// the workspace, or beside the store, is refused.
func traceKey(store, workspace string) (*trace.Key, error) {
	path, err := sandbox.KeyPath()
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(real, filepath.Base(path))
	}
	if workspace != "" && (path == workspace || strings.HasPrefix(path, workspace+"/")) {
		return nil, fmt.Errorf("the trace key %s is inside the workspace %s, where a command could read it: set REIN_TRACE_KEY to a file outside", path, workspace)
	}
	if !postgres.IsURL(store) && filepath.Dir(path) == filepath.Dir(store) {
		return nil, fmt.Errorf("the trace key %s is beside the trace %s, where whoever can write the trace can read it: set REIN_TRACE_KEY to a file elsewhere", path, store)
	}
	return trace.LoadKey(path)
}

func newTraceCmd() *cobra.Command {
	var (
		tf        traceFlag
		workspace string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Query the trace: runs, a run's steps, refusals, handles; verify the hash chain",
	}
	open := func() (*sqlstore.Store, error) {
		ws := workspace
		if ws == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, &exitError{exitUsage, "cannot find the current directory; pass --workspace"}
			}
			ws = wd
		}
		if abs, err := filepath.Abs(ws); err == nil {
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				ws = real
			}
		}
		// The org or user policy may name the trace key; a policy that
		// does not load leaves the key where REIN_TRACE_KEY says, and a
		// store keyed otherwise is then read, never appended to.
		if p, err := policy.Load(policy.Options{Workspace: ws}); err == nil {
			useTraceKey(p)
		}
		return tf.open(ws, nil)
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&tf.path, "trace", "", "the trace store: a file, or a postgres:// URL (default ~/.cache/rein/trace/<workspace hash>.db; env REIN_TRACE)")
	pf.StringVar(&workspace, "workspace", "", "the workspace whose trace to read (default: the current directory)")
	pf.BoolVar(&asJSON, "json", false, "print JSON")
	ctx := context.Background()

	runs := &cobra.Command{Use: "runs", Short: "List the runs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			rs, err := s.Runs(ctx, 0)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rs, 0)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED\tSOURCE\tSURFACE\tMODE\tSTEPS\tREFUSALS\tHANDLES\tSTATUS")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.ID, r.StartedAt.Format("2006-01-02 15:04:05"), r.Source, r.Surface, r.Mode, r.Steps, r.Refusals, r.Handles, r.Status)
			}
			return tw.Flush()
		}}
	show := &cobra.Command{Use: "show RUN", Short: "Show a run's model calls, gate attempts, steps, refusals, sandbox events and edits", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			steps, err := s.Steps(ctx, args[0])
			if err != nil {
				return err
			}
			events, _ := s.PolicyEvents(ctx, args[0])
			sb, _ := s.SandboxEvents(ctx, args[0])
			edits, _ := s.Edits(ctx, args[0])
			calls, _ := s.ProviderCalls(ctx, args[0])
			gates, _ := s.GateAttempts(ctx, args[0])
			if len(steps) == 0 && len(events) == 0 && len(calls) == 0 {
				return &exitError{1, "no run " + args[0] + " in " + s.Path()}
			}
			if asJSON {
				sums, _ := s.Summaries(ctx, args[0])
				times, _ := s.StepTimes(ctx, args[0])
				return writeJSON(cmd.OutOrStdout(), map[string]any{"steps": steps, "policy_events": events, "sandbox_events": sb, "edits": edits,
					"provider_calls": calls, "gate_attempts": gates, "summaries": sums, "step_times": times}, 0)
			}
			out := cmd.OutOrStdout()
			// An agent run's todo list, as its last checkpoint keeps it.
			if st, err := agent.LoadState(ctx, s, args[0]); err == nil {
				if st.Plan != nil {
					fmt.Fprintf(out, "approved plan:\n%s", indent(loop.PlanText(st.Plan)))
				}
				if len(st.Todo) > 0 {
					fmt.Fprintf(out, "todo:\n%s", indent(loop.TodoText(st.Todo)+"\n"))
				}
			}
			// The summaries the oldest steps were folded into.
			if sums, err := s.Summaries(ctx, args[0]); err == nil {
				for _, m := range sums {
					fmt.Fprintf(out, "summary before step %d: steps %d to %d (%d messages) in %d characters, %d in and %d out tokens", m.Step, m.FirstStep, m.LastStep, m.Messages, m.Chars, m.Input, m.Output)
					if m.Request != "" {
						fmt.Fprintf(out, ", asked by request %s", m.Request)
					}
					fmt.Fprintf(out, ":\n%s", indent(m.Text+"\n"))
				}
			}
			// What the run put to a person, and the answers.
			reqs, _ := s.ApprovalRequests(ctx, args[0])
			for _, r := range reqs {
				fmt.Fprintf(out, "request %s (%s, call %s):\n%s", r.Request, r.Kind, r.CallID, indent(strings.TrimRight(r.Shown, "\n")+"\n"))
				switch d, err := s.Decision(ctx, args[0], r.Request); {
				case err != nil:
					fmt.Fprintf(out, "  answer unreadable: %v\n", err)
				case d == nil:
					fmt.Fprintln(out, "  not answered yet")
				case d.Note != "":
					fmt.Fprintf(out, "  answered %s by %s: %s\n", d.Answer, policy.Printable(d.By), policy.Printable(d.Note))
				default:
					fmt.Fprintf(out, "  answered %s by %s\n", d.Answer, policy.Printable(d.By))
				}
			}
			for _, c := range calls {
				what := fmt.Sprintf("%s, %d in (%d cached) and %d out tokens", c.Finish, c.Input, c.CacheRead, c.Output)
				var priced struct {
					Cost *float64 `json:"cost_usd"`
				}
				if json.Unmarshal([]byte(c.Response), &priced) == nil && priced.Cost != nil {
					what += fmt.Sprintf(", $%.6f", *priced.Cost)
				}
				if c.Failure != "" {
					what = "failed, " + c.Failure + ": " + policy.Printable(c.Error)
				}
				kind := "model call"
				if c.Purpose != "" {
					kind = "model call (" + policy.Printable(c.Purpose) + ")"
				}
				fmt.Fprintf(out, "%s: step %d attempt %d, %s %s: %s (%.1f ms)\n", kind, c.Step, c.Attempt, policy.Printable(c.Provider), policy.Printable(c.Model), what, c.LatencyMS)
			}
			times, _ := s.StepTimes(ctx, args[0])
			for _, st := range times {
				share := ""
				if st.Input > 0 {
					share = fmt.Sprintf(", %.0f%% of %d input tokens from the prompt cache", 100*float64(st.CacheRead)/float64(st.Input), st.Input)
				}
				fmt.Fprintf(out, "step time: step %d, model %.1f ms (first token %.1f ms), tools %.1f ms, rein %.1f ms%s\n", st.Step, st.ModelMS, st.FirstMS, st.ToolsMS, st.ReinMS, share)
			}
			for _, g := range gates {
				when := fmt.Sprintf("after step %d", g.Step)
				if g.Step == 0 {
					when = "baseline, before the first model call"
				}
				fmt.Fprintf(out, "gate: %s, %s: %s, exit %d (%.1f ms)", when, policy.Printable(g.Line), g.Status, g.ExitCode, g.DurationMS)
				if g.Tampered != "null" && g.Tampered != "" {
					fmt.Fprintf(out, ", tampered %s", policy.Printable(g.Tampered))
				}
				fmt.Fprintln(out)
				if g.Evidence != "" {
					fmt.Fprintf(out, "  tests: %s\n", gateTests(g.Evidence, g.Tests))
				}
			}
			for _, e := range sb {
				var r agent.ConfigReport
				if e.StepID == 0 && e.Kind == trace.KindConfigChanged && json.Unmarshal([]byte(e.Detail), &r) == nil {
					fmt.Fprintln(out, configLine(r, func(s string) string { return s }))
				}
			}
			for _, st := range steps {
				fmt.Fprintf(out, "step %d: %s %s -> %s (%.1f ms)\n", st.Index, policy.Printable(st.Tool), policy.Printable(st.Args), st.Status, st.DurationMS)
				if st.Reason != "" {
					fmt.Fprintf(out, "  reason: %s\n", policy.Printable(st.Reason))
				}
				for _, e := range events {
					if e.StepID == st.ID {
						fmt.Fprintf(out, "  %s: %s %s\n", e.Kind, e.Decision, attribution(e))
					}
				}
				for _, e := range sb {
					if e.StepID == st.ID {
						fmt.Fprintf(out, "  sandbox %s: %s\n", e.Kind, policy.Printable(e.Detail))
					}
				}
				for _, e := range edits {
					if e.StepID == st.ID {
						fmt.Fprintf(out, "  edit %s:\n%s", policy.Printable(e.Path), indent(e.Diff))
					}
				}
			}
			return nil
		}}
	refusals := &cobra.Command{Use: "refusals", Short: "List every refusal and approver decision, with rule and layer", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			events, err := s.PolicyEvents(ctx, "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), events, 0)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tAT\tKIND\tDECISION\tRULE\tREASON")
			for _, e := range events {
				if e.Kind == "net" && e.Decision == "allow" {
					// A connection made, not a refusal: rein trace show has it.
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.RunID, e.At.Format("15:04:05"), e.Kind, e.Decision, attribution(e), policy.Printable(e.Reason))
			}
			return tw.Flush()
		}}
	handles := &cobra.Command{Use: "handles RUN", Short: "List a run's background handles and what was read from them", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			hs, err := s.Handles(ctx, args[0])
			if err != nil {
				return err
			}
			type row struct {
				trace.Handle
				BytesRead int64 `json:"bytes_read"`
				Skipped   int64 `json:"bytes_skipped"`
			}
			var rows []row
			for _, h := range hs {
				out, _ := s.HandleOutput(ctx, args[0], h.Handle)
				r := row{Handle: h}
				for _, o := range out {
					r.BytesRead += int64(len(o.Data))
					r.Skipped += o.Skipped
				}
				rows = append(rows, r)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rows, 0)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HANDLE\tRUNG\tREAD\tSKIPPED\tLINE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.Handle.Handle, r.Rung, r.BytesRead, r.Skipped, policy.Printable(r.Line))
			}
			return tw.Flush()
		}}
	var keptHead string
	verify := &cobra.Command{Use: "verify", Short: "Check the hash chain and print its head: exit 1 naming the first record that does not match", Args: cobra.NoArgs,
		Long: `Recompute every link of the trace's hash chain, with the trace key, and
check that every record is linked. Print the chain's form (keyed with
HMAC-SHA256, or links of SHA-256 alone from before keys) and its head, SEQ:HASH:
keep the head elsewhere, and --head SEQ:HASH later checks that the trace still
extends it, which is how records removed from its end are found.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var kept *trace.Head
			if keptHead != "" {
				h, err := trace.ParseHead(keptHead)
				if err != nil {
					return &exitError{exitUsage, err.Error()}
				}
				kept = &h
			}
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			c, verr := s.VerifyChain(ctx, kept)
			if asJSON {
				out := map[string]any{"ok": verr == nil, "trace": s.Path(), "chain": c, "form": c.Form()}
				if verr != nil {
					out["error"] = verr.Error()
				}
				if err := writeJSON(cmd.OutOrStdout(), out, 0); err != nil {
					return err
				}
				if verr != nil {
					return &exitError{code: 1}
				}
				return nil
			}
			out := cmd.OutOrStdout()
			if verr != nil {
				fmt.Fprintf(out, "chain: %s; %d links checked before the failure\n", c.Form(), c.Links)
				return &exitError{1, verr.Error()}
			}
			fmt.Fprintf(out, "ok: every record of %s matches the hash chain\n", s.Path())
			fmt.Fprintf(out, "chain: %s, %d links\n", c.Form(), c.Links)
			if c.Links > 0 {
				fmt.Fprintf(out, "head: %s\n", c.Head)
			}
			if kept != nil {
				fmt.Fprintf(out, "extends the kept head %s\n", kept)
			}
			return nil
		}}
	verify.Flags().StringVar(&keptHead, "head", "", "a head printed by an earlier verify (SEQ:HASH, or HASH): fail unless the chain still extends it")
	var addr string
	serve := &cobra.Command{Use: "serve [--addr 127.0.0.1:PORT]", Short: "Serve a read-only web view of the trace on loopback: the runs, and each as a timeline",
		Long: `Serve a local web page over the trace: the runs (agent runs, launched,
hook and MCP sessions) with their state, steps, tokens, cost and duration,
and each run as a timeline of its model calls, tool calls with their
verdicts and rules, diffs, gate attempts, requests and summaries, with a
chart of its tokens and cost by step. Long runs are read a page at a time.

It listens on loopback only, answers only requests naming its own address,
and only a browser that opened the URL it prints: the token in it is
exchanged on the first visit for a cookie and dropped from the address.
It shows the trace as stored (redacted) and never writes to it. It stops
on Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			defer s.Close()
			srv, err := traceview.Listen(s, addr)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.OutOrStdout(), "rein trace serve: the trace %s at\n%s\n(the token in it is this server's; Ctrl-C stops it)\n", s.Path(), srv.URL())
			return srv.Serve(ctx)
		}}
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "the loopback address to listen on (port 0: a free one)")
	cmd.AddCommand(runs, show, refusals, handles, verify, serve, newTraceExportCmd())
	return cmd
}

func attribution(e trace.PolicyEvent) string {
	if e.Rule == "" {
		return "-"
	}
	s := fmt.Sprintf("rule %q (%s layer", e.Rule, e.Layer)
	if e.File != "" {
		s += ", " + e.File
	}
	return s + ")"
}

// indent indents a diff for the terminal, each line made printable.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + policy.Printable(strings.TrimSuffix(l, "\n")) + "\n")
		}
	}
	return b.String()
}

// gateTests is a gate attempt's evidence as a line: the runner's counts
// and the protected tests that did not run, or that the exit status alone
// judged it.
func gateTests(evidence, tests string) string {
	var t agent.GateTests
	if tests == "" || json.Unmarshal([]byte(tests), &t) != nil {
		return "judged by its " + policy.Printable(evidence) + " alone: the runner reported nothing rein can read"
	}
	line := fmt.Sprintf("%d run, %d passed, %d failed, %d skipped (%s)", t.Run, t.Passed, t.Failed, t.Skipped, policy.Printable(evidence))
	if len(t.NotRun) > 0 {
		line += "; not run: " + policy.Printable(strings.Join(t.NotRun, ", "))
	}
	return line
}
