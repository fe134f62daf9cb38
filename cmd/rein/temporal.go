//go:build temporal

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/temporal"
	"github.com/reinhq/rein/internal/keyfile"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// temporalLogger logs the SDK's warnings and errors to stderr: stdout is
// the command's.
var temporalLogger = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

// key is the key the store open opens is keyed with.
func (t *traceFlag) key(workspace string) (*trace.Key, error) {
	path, err := t.location(workspace)
	if err != nil {
		return nil, err
	}
	return traceKey(path, workspace)
}

// decisionSecret is the secret a decision's Update is signed with: one
// derived from the trace key, which every writer of the trace holds.
func decisionSecret(k *trace.Key) []byte { return []byte(k.Sum("temporal decisions", nil)) }

// payloadSecret is the secret the payloads are sealed with: the file
// --payload-key or REIN_PAYLOAD_KEY names (which must exist: a fleet's
// hosts share it), else one derived from the trace key.
func (t *temporalFlags) payloadSecret(k *trace.Key) ([]byte, error) {
	path := t.payloadKey
	if path == "" {
		path = os.Getenv("REIN_PAYLOAD_KEY")
	}
	if path == "" {
		return []byte(k.Sum("temporal payloads", nil)), nil
	}
	if _, err := os.Lstat(path); err != nil {
		return nil, fmt.Errorf("the payload key %s: %v (every host of the fleet is given the same file)", path, err)
	}
	return keyfile.Load(path)
}

// dial connects to the server, its payloads redacted with red and
// sealed with the fleet's key, and those over temporal.OffloadOver kept
// in store's blob store.
func (t *temporalFlags) dial(store *sqlstore.Store, k *trace.Key, red *trace.Redactor) (client.Client, error) {
	secret, err := t.payloadSecret(k)
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	dc, err := temporal.DataConverter(secret, temporal.WithRedact(red.Redact))
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	o := client.Options{HostPort: t.addr, Namespace: t.namespace, Logger: temporalLogger, DataConverter: dc, FailureConverter: temporal.FailureConverter(dc),
		ExternalStorage: temporal.ExternalStorage(store)}
	if o.Namespace == "" {
		o.Namespace = os.Getenv("TEMPORAL_NAMESPACE")
	}
	if o.ConnectionOptions.TLS, err = t.tls(); err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	if key := os.Getenv("TEMPORAL_API_KEY"); key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
		if o.ConnectionOptions.TLS == nil {
			// A key is never sent in the clear.
			o.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	c, err := client.Dial(o)
	if err != nil {
		return nil, &exitError{exitUsage, fmt.Sprintf("the Temporal server %s: %v", t.addr, err)}
	}
	return c, nil
}

// tls is the connection's TLS configuration, nil when no flag or
// variable asks for one.
func (t *temporalFlags) tls() (*tls.Config, error) {
	or := func(v, env string) string {
		if v == "" {
			v = os.Getenv(env)
		}
		return v
	}
	cert, key, ca := or(t.tlsCert, "TEMPORAL_TLS_CERT"), or(t.tlsKey, "TEMPORAL_TLS_KEY"), or(t.tlsCA, "TEMPORAL_TLS_CA")
	if cert == "" && key == "" && ca == "" && t.sni == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.sni}
	if (cert == "") != (key == "") {
		return nil, errors.New("a Temporal client certificate needs its key, and a key its certificate")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the Temporal client certificate: %v", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("the Temporal CA certificate: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Temporal CA certificate %s holds no PEM certificate", ca)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// connect is the client of a command that works on a run of a Temporal
// server (--temporal): the trace's key found as the store opened with it
// was, for the run's workspace.
func (t *temporalFlags) connect(tf *traceFlag, store *sqlstore.Store, workspace string, red *trace.Redactor) (client.Client, []byte, error) {
	k, err := tf.key(workspace)
	if err != nil {
		return nil, nil, &exitError{exitUsage, err.Error()}
	}
	c, err := t.dial(store, k, red)
	if err != nil {
		return nil, nil, err
	}
	return c, decisionSecret(k), nil
}

// tell tells run's workflow that request was answered (the answer in
// the trace already), so that a run waiting for it goes on.
func (t *temporalFlags) tell(ctx context.Context, tf *traceFlag, store *sqlstore.Store, workspace, run, request, answer string) error {
	c, secret, err := t.connect(tf, store, workspace, trace.NewRedactor(trace.SecretValues(os.Environ())...))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := temporal.SendDecision(ctx, c, run, request, answer, secret); err != nil {
		return &exitError{exitUsage, fmt.Sprintf("request %s of run %s is answered in the trace, but its workflow on %s was not told: %v", request, run, t.addr, err)}
	}
	return nil
}

// follow follows a run's workflow, its step lines printed as the
// workers saw them, to its outcome or its wait for a decision.
func follow(ctx context.Context, c client.Client, store *sqlstore.Store, out io.Writer, st *temporal.Start, run string, observe func(agent.Event), red *trace.Redactor, asJSON bool) error {
	var res agent.Outcome
	var err error
	if st != nil {
		res, err = temporal.Execute(ctx, c, *st, observe)
	} else {
		res, err = temporal.Follow(ctx, c, run, observe)
	}
	if ctx.Err() != nil {
		return &exitError{130, fmt.Sprintf("stopped following run %s; it goes on on its workers: rein run resume --temporal ... %s follows it again, rein run cancel --temporal ... %s cancels it", run, run, run)}
	}
	if err != nil {
		err = fmt.Errorf("run %s on Temporal: %w", run, err)
	} else if err = checkOutcome(ctx, store, run, res); err != nil {
		return &exitError{exitUsage, err.Error()}
	}
	return outcomeExit(out, res, err, red, asJSON)
}

// checkOutcome refuses an outcome the workflow reports that the trace
// does not hold: whoever reaches the namespace could complete a workflow
// with an outcome copied from another run's history, and only the trace
// is written under the trace key.
func checkOutcome(ctx context.Context, store *sqlstore.Store, run string, res agent.Outcome) error {
	cp, err := store.LastCheckpoint(ctx, run)
	switch {
	case err != nil:
		return fmt.Errorf("run %s: reading its outcome in the trace: %v", run, err)
	case res.Run != run:
		return fmt.Errorf("run %s's workflow reports the outcome of run %q: refused", run, res.Run)
	case cp == nil || cp.Status != string(res.Kind):
		status := "no checkpoint"
		if cp != nil {
			status = cp.Status
		}
		return fmt.Errorf("run %s's workflow reports %s, and the trace holds %s: refused", run, res.Kind, status)
	}
	return nil
}

// newWorkerCmd is rein worker: a host of a fleet that runs agent runs'
// workflows and effects.
func newWorkerCmd(sf *scopeFlags) *cobra.Command {
	var (
		tmp   temporalFlags
		tf    traceFlag
		max   int
		roots []string
	)
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT [--task-queue Q] [flags]",
		Short: "Serve agent runs' workflows and effects from a Temporal server, on this host's sandbox",
		Long: `Serve the agent runs that rein run --temporal starts: their workflows,
and their effects (model calls, tool calls in this host's sandbox, gate
attempts) in the task queue --task-queue, whose workers are the hosts
that can run rein's sandbox over the runs' workspaces. Each run is
driven as rein run resume would drive it on this host: its policy loaded
again for its workspace and its recorded configuration (which a worker
never widens), its provider's key read from this host's environment, its
asks deferred to an operator (rein approve --temporal). A run's steps are
committed to the trace before its workflow hears of them; a worker that
dies (kill -9, a lost host) has its runs opened again on another, from
their last checkpoints, and a call that may have changed the workspace
is never made again on its own.

The trace is the store every host of the fleet writes (REIN_TRACE or
--trace: a postgres:// URL), under the one trace key (REIN_TRACE_KEY or
[trace] key_file); payloads are sealed with --payload-key. Stop it with
SIGINT or SIGTERM: it finishes nothing in flight, and its runs go on
elsewhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !tmp.on() {
				return &exitError{exitUsage, "rein worker needs --temporal HOST:PORT"}
			}
			if tf.path == "" && os.Getenv("REIN_TRACE") == "" {
				return &exitError{exitUsage, "rein worker needs the trace every host writes: REIN_TRACE or --trace (a postgres:// URL for a fleet)"}
			}
			// The org or user policy may name the trace key.
			var base commonFlags
			if _, err := base.load(sf); err != nil {
				return err
			}
			red := trace.NewRedactor(trace.SecretValues(os.Environ())...)
			store, err := tf.open("", red)
			if err != nil {
				return err
			}
			defer store.Close()
			k, err := tf.key("")
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			c, err := tmp.dial(store, k, red)
			if err != nil {
				return err
			}
			defer c.Close()
			temporal.SetKey(decisionSecret(k))
			if len(roots) == 0 {
				wd, err := os.Getwd()
				if err != nil {
					return &exitError{exitUsage, "cannot find the current directory; pass --workspaces"}
				}
				roots = []string{wd}
			}
			for i, r := range roots {
				real, err := filepath.EvalSymlinks(r)
				if err != nil {
					return &exitError{exitUsage, fmt.Sprintf("--workspaces %s: %v", r, err)}
				}
				if roots[i], err = filepath.Abs(real); err != nil {
					return &exitError{exitUsage, err.Error()}
				}
			}
			out := cmd.OutOrStdout()
			var mu sync.Mutex
			a := &temporal.Activities{Store: store, Options: func(ctx context.Context, ct agent.Contract) (agent.Options, error) {
				if err := underRoots(ct.Workspace, roots); err != nil {
					return agent.Options{}, err
				}
				cf := commonFlags{workspace: ct.Workspace}
				provider, p, approver, red, err := runnerFor(ctx, cmd, sf, &cf, agent.ProviderChoice{}, "defer", ct, nil, red)
				if err != nil {
					return agent.Options{}, errors.New(strings.TrimPrefix(err.Error(), "agent: "))
				}
				if err := workerAllows(ct.Config, p, roots); err != nil {
					return agent.Options{}, err
				}
				o := agentOptions(provider, p, approver, store, red, out, true)
				o.PolicyFor = worktreePolicy(cf, *sf, p)
				o.Observer = func(e agent.Event) {
					var b strings.Builder
					printEvent(&b, e, red.Redact)
					mu.Lock()
					defer mu.Unlock()
					for line := range strings.Lines(b.String()) {
						fmt.Fprintf(out, "run %s | %s", e.Run, line)
					}
				}
				return o, nil
			}}
			// A run's workflow tasks go to the worker that ran its last
			// one for a second at most: a dead worker's runs go on
			// elsewhere without waiting out Temporal's five.
			a.Max = max
			w := temporal.NewWorker(c, tmp.queue, a, worker.Options{StickyScheduleToStartTimeout: time.Second})
			if err := w.Start(); err != nil {
				return &exitError{exitUsage, fmt.Sprintf("the worker: %v", err)}
			}
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			fmt.Fprintf(out, "rein worker: serving task queue %s of %s, at most %d runs at once; trace %s\n", tmp.queue, tmp.addr, max, store.Path())
			<-ctx.Done()
			w.Stop()
			return nil
		},
	}
	tmp.register(cmd, false)
	cmd.Flags().StringVar(&tmp.queue, "task-queue", "rein", "the task queue served: the hosts of one queue can all run the sandbox over its runs' workspaces")
	cmd.Flags().IntVar(&max, "max-runs", 16, "the most runs this worker holds at once")
	cmd.Flags().StringArrayVar(&roots, "workspaces", nil, "a directory whose workspaces this worker runs runs in (repeatable; default: the current directory); a run whose workspace is elsewhere is refused")
	tf.register(cmd)
	return cmd
}

// runOnTemporal is rein run --temporal: the run started as a workflow on
// the fleet's workers, and followed.
func runOnTemporal(ctx context.Context, tmp *temporalFlags, tf *traceFlag, store *sqlstore.Store, c agent.Contract, observe func(agent.Event), out io.Writer, red *trace.Redactor, asJSON bool) error {
	cl, _, err := tmp.connect(tf, store, c.Workspace, red)
	if err != nil {
		return err
	}
	defer cl.Close()
	st := temporal.Start{Run: temporal.NewRunID(), Contract: &c, Queue: tmp.queue, Heartbeat: tmp.heartbeat}
	return follow(ctx, cl, store, out, &st, st.Run, observe, red, asJSON)
}

// followAgain is rein run resume --temporal: the run's workflow told of
// the decision the trace holds for the request the run waits on, if any,
// and followed.
func followAgain(ctx context.Context, cmd *cobra.Command, tmp *temporalFlags, tf *traceFlag, store *sqlstore.Store, workspace string, st *agent.State, red *trace.Redactor, asJSON bool) error {
	c, secret, err := tmp.connect(tf, store, workspace, red)
	if err != nil {
		return err
	}
	defer c.Close()
	if st.Waiting != nil {
		if d, err := store.Decision(ctx, st.Run, st.Waiting.Request); err == nil && d != nil {
			if err := temporal.SendDecision(ctx, c, st.Run, d.Request, d.Answer, secret); err != nil {
				return &exitError{exitUsage, fmt.Sprintf("telling run %s's workflow of the answer to %s: %v", st.Run, d.Request, err)}
			}
		}
	}
	var observe func(agent.Event)
	if !asJSON {
		observe = stepPrinter(cmd.OutOrStdout(), red)
	}
	return follow(ctx, c, store, cmd.OutOrStdout(), nil, st.Run, observe, red, asJSON)
}

// underRoots refuses a workspace that is not one of roots or below one,
// its links resolved: whoever can start a run names its workspace, and a
// worker runs runs only where its operator said.
func underRoots(workspace string, roots []string) error {
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil || !filepath.IsAbs(workspace) {
		return fmt.Errorf("the run's workspace %q is not a directory of this host: refused", workspace)
	}
	if real != filepath.Clean(workspace) {
		// A link on the way could be turned elsewhere after this check.
		return fmt.Errorf("the run's workspace %s is reached through a link (it is %s): refused", workspace, real)
	}
	for _, r := range roots {
		if real == r || strings.HasPrefix(real, r+string(filepath.Separator)) || r == string(filepath.Separator) {
			return nil
		}
	}
	return fmt.Errorf("the run's workspace %s is outside this worker's --workspaces (%s): refused", real, strings.Join(roots, ", "))
}

// workerAllows refuses what a run's recorded configuration asks of this
// host that its operator did not give: whoever can start a run writes
// the configuration, and the worker holds the keys and the files. A
// provider is a preset with its own base URL and key variable, or one of
// the org or user policy's [[provider]] entries as it is written there
// (never a variable of the worker's environment sent to a host of the
// starter's choosing); a read path is inside the worker's --workspaces.
func workerAllows(rc *agent.RunConfig, p *policy.Policy, roots []string) error {
	if rc == nil {
		return nil
	}
	ok := false
	for _, pr := range agent.Presets() {
		if pr.Name == rc.Provider && (rc.BaseURL == "" || rc.BaseURL == pr.BaseURL) && (rc.KeyEnv == "" || rc.KeyEnv == pr.KeyEnv) {
			ok = true
		}
	}
	for _, e := range p.Providers {
		if e.Name == rc.Provider && (rc.BaseURL == "" || rc.BaseURL == e.BaseURL) && (rc.KeyEnv == "" || rc.KeyEnv == e.APIKeyEnv) {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("the run's provider %s at %q with its key from %q is neither a preset as it is nor a [[provider]] entry of this worker's policy: refused", rc.Provider, rc.BaseURL, rc.KeyEnv)
	}
	for _, r := range rc.ReadPaths {
		if err := underRoots(r, roots); err != nil {
			return fmt.Errorf("the run's read path %s: %v", r, err)
		}
	}
	return nil
}
