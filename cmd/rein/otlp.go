package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/otlp"
	"github.com/reinhq/rein/trace/sqlstore"
)

// exportTimeout bounds the export of a run when it ends, its child runs
// and retries included: a collector that is down delays rein's exit by
// this much at most.
const exportTimeout = 5 * time.Second

// otlpOptions are the export's options of the policy: its endpoint and
// content switch, with the process's redactor for the content.
func otlpOptions(p *policy.Policy, red *trace.Redactor) otlp.Options {
	o := otlp.Options{Endpoint: p.OTLPEndpoint, Content: p.OTLPContent, Redactor: red}
	if bi, ok := debug.ReadBuildInfo(); ok {
		o.Version = bi.Main.Version
	}
	return o
}

// exportRun sends the run, and the runs spawn_agent started under it, to
// the OpenTelemetry collector the org or user policy names ([trace]
// otlp_endpoint), if it names one. A failure is one warning on w and
// nothing more: the run's outcome and exit status are its own.
func exportRun(w io.Writer, p *policy.Policy, store *sqlstore.Store, red *trace.Redactor, runID string) {
	if p.OTLPEndpoint == "" || runID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	ids := []string{runID}
	if children, err := store.ChildRuns(ctx, runID); err == nil {
		ids = append(ids, children...)
	}
	for _, id := range ids {
		err := otlp.Export(ctx, store, id, otlpOptions(p, red))
		if errors.Is(err, otlp.ErrNoRun) {
			// The run stopped before it was recorded (a launch that
			// failed to start): there is nothing to send.
			return
		}
		if err != nil {
			fmt.Fprintf(w, "rein: warning: the run %s was not exported to OpenTelemetry: %s\n", id, policy.Printable(red.Redact(err.Error())))
			return
		}
	}
}

// exportingStore exports each run whose end is appended through it: an
// MCP server's sessions are runs that end inside the server, one by one.
type exportingStore struct {
	trace.Store
	export func(runID string)

	mu      sync.Mutex
	started map[string]bool // runs begun through it and not yet exported
	busy    sync.WaitGroup
}

// exportOnEnd is store, exporting each run as it ends when the policy
// names a collector, and flush, which waits for the exports under way and
// sends the runs begun and not yet ended: a session whose end the server
// had not recorded when the process ended.
func exportOnEnd(w io.Writer, p *policy.Policy, store *sqlstore.Store, red *trace.Redactor) (s trace.Store, flush func()) {
	if p.OTLPEndpoint == "" {
		return store, func() {}
	}
	e := &exportingStore{Store: store, export: func(runID string) { exportRun(w, p, store, red, runID) }, started: map[string]bool{}}
	return e, e.flush
}

func (s *exportingStore) Append(ctx context.Context, r trace.Record) (int64, error) {
	id, err := s.Store.Append(ctx, r)
	if err == nil {
		s.seen(r)
	}
	return id, err
}

func (s *exportingStore) AppendAll(ctx context.Context, recs ...trace.Record) ([]int64, error) {
	ids, err := s.Store.AppendAll(ctx, recs...)
	if err == nil {
		for _, r := range recs {
			s.seen(r)
		}
	}
	return ids, err
}

// seen notes a run's start, and exports it at its end.
func (s *exportingStore) seen(r trace.Record) {
	s.mu.Lock()
	switch r := r.(type) {
	case trace.Run:
		s.started[r.ID] = true
	case trace.RunEnd:
		if s.started[r.RunID] {
			delete(s.started, r.RunID)
			s.busy.Add(1)
			s.mu.Unlock()
			defer s.busy.Done()
			s.export(r.RunID)
			return
		}
	}
	s.mu.Unlock()
}

func (s *exportingStore) flush() {
	s.busy.Wait()
	s.mu.Lock()
	left := s.started
	s.started = map[string]bool{}
	s.mu.Unlock()
	for id := range left {
		s.export(id)
	}
}

// newTraceExportCmd is `rein trace export RUN...`. It reads the trace
// command's --trace, --workspace and --json and the root's policy file
// flags, which are persistent.
func newTraceExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export RUN...",
		Short: "Send runs to the OpenTelemetry collector the policy names ([trace] otlp_endpoint)",
		Long: `Send each RUN, and the runs spawn_agent started under it, to the
OpenTelemetry collector that [trace] otlp_endpoint of the org or user policy
names, as rein does when a run ends: each run a trace, each step a span,
model and tool calls child spans (docs/opentelemetry.md). A run's trace id
derives from its id, so a run sent again is the same trace. Content leaves
only with [trace] otlp_content = true, redacted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flag := func(name string) string {
				if f := cmd.Flags().Lookup(name); f != nil {
					return f.Value.String()
				}
				return ""
			}
			ws := flag("workspace")
			if ws == "" {
				wd, err := os.Getwd()
				if err != nil {
					return &exitError{exitUsage, "cannot find the current directory; pass --workspace"}
				}
				ws = wd
			}
			if abs, err := filepath.Abs(ws); err == nil {
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					ws = real
				}
			}
			p, err := policy.Load(policy.Options{Workspace: ws, OrgFile: flag("org-policy"), UserFile: flag("user-policy"), ProjectFile: flag("project-policy")})
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			if p.OTLPEndpoint == "" {
				return &exitError{exitUsage, "no collector to export to: set [trace] otlp_endpoint in the org or user policy file, such as otlp_endpoint = \"http://127.0.0.1:4318\""}
			}
			useTraceKey(p)
			red := trace.NewRedactor(trace.SecretValues(os.Environ(), p.EnvSecrets...)...)
			tf := traceFlag{path: flag("trace")}
			store, err := tf.open(ws, red)
			if err != nil {
				return err
			}
			defer store.Close()
			type exported struct {
				Run     string `json:"run"`
				TraceID string `json:"trace_id"`
			}
			var out []exported
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			for _, run := range args {
				ids := []string{run}
				if children, err := store.ChildRuns(ctx, run); err == nil {
					ids = append(ids, children...)
				}
				for _, id := range ids {
					ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err := otlp.Export(ctx, store, id, otlpOptions(p, red))
					cancel()
					if err != nil {
						return &exitError{1, fmt.Sprintf("rein trace export: run %s: %s", id, policy.Printable(red.Redact(err.Error())))}
					}
					out = append(out, exported{id, otlp.TraceID(id)})
				}
			}
			if flag("json") == "true" {
				return writeJSON(cmd.OutOrStdout(), out, 0)
			}
			for _, e := range out {
				fmt.Fprintf(cmd.OutOrStdout(), "exported run %s as trace %s\n", e.Run, e.TraceID)
			}
			return nil
		},
	}
}
