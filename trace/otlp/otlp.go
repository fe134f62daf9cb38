// Package otlp owns the export of rein's recorded runs to an
// OpenTelemetry collector over OTLP/HTTP: each run a trace, each step of
// an agent run a span, each model call and tool call a child span with
// the GenAI semantic conventions' attributes and rein's own (the verdict,
// rule and layer of a refusal, the rung, the exit status).
//
// It exports after the fact, from the trace store, with the times the
// records hold, so a run's own path never waits on a collector and a run
// exported twice is the same trace (its ids derive from the run's id).
// Nothing of a prompt, a response, a tool call's arguments or its output
// leaves unless Options.Content says so, and then only as the store holds
// it, redacted. Nor does metadata the model chose: without Content a
// builtin rule is exported as its kind ("hard deny", not the command it
// quotes), a tool the run did not have as "unknown", and a launched
// agent's model only when the provider answered for it (names.go).
//
// The collector is the one Options names, never the environment's: the
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, certificates), the
// proxy variables and OTEL_RESOURCE_ATTRIBUTES are not read, since a
// repository can set a process's environment through an agent's settings
// and would then choose where its runs go. Go's TLS still reads
// SSL_CERT_FILE and SSL_CERT_DIR for an https collector's trust roots on
// Unix systems other than macOS; docs/opentelemetry.md says so, and
// what to do where that matters.
//
// otlp imports of rein only package trace: it reads plain records through
// Source, and must not learn how a decision was made or a command
// confined, nor link a store (an embedder's store can be a Source).
package otlp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/reinhq/rein/trace"
)

// Source is what an export reads of a trace store; package trace/sqlstore's
// Store (trace/sqlite, trace/postgres) is one.
type Source interface {
	// RunByID is the run with its end, or nil when the store has none.
	RunByID(ctx context.Context, id string) (*trace.RunSummary, error)
	Steps(ctx context.Context, runID string) ([]trace.Step, error)
	PolicyEvents(ctx context.Context, runID string) ([]trace.PolicyEvent, error)
	SandboxEvents(ctx context.Context, runID string) ([]trace.SandboxEvent, error)
	ProviderCalls(ctx context.Context, runID string) ([]trace.ProviderCall, error)
	StepTimes(ctx context.Context, runID string) ([]trace.StepTime, error)
	GateAttempts(ctx context.Context, runID string) ([]trace.GateAttempt, error)
}

// Options says where a run goes and what of it.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP URL (http or https). Spans
	// are posted to it as it is, or to its /v1/traces when it has no
	// path ("http://127.0.0.1:4318" is "http://127.0.0.1:4318/v1/traces").
	Endpoint string
	// Content exports, besides the metadata, each tool call's arguments,
	// observation and reason, each refusal's reason, each model call's
	// request, response and error, and each gate's line, as the store
	// holds them (redacted when they were written); and, whole, the
	// names and rules that can quote the run: a builtin rule's text, the
	// name of a tool the model invented, the model a launched agent asked
	// for. Without it those leave in a form that holds nothing of the run.
	Content bool
	// Redactor, when set, redacts the content once more before it leaves:
	// the store redacted it with the secrets of the process that wrote
	// it, and the exporting process may know others.
	Redactor *trace.Redactor
	// Version is rein's version, the resource's service.version.
	Version string
}

// ErrNoRun is a run the store does not hold.
var ErrNoRun = errors.New("no such run in the trace")

// Export sends the run's records to the collector as one trace, in one
// request; ctx bounds it, retries included. A run still going is sent
// as far as it is recorded, its root span ending at its last record.
func Export(ctx context.Context, src Source, runID string, o Options) error {
	r, err := read(ctx, src, runID)
	if err != nil {
		return err
	}
	return send(ctx, build(r, o), o)
}

// TraceID is the OpenTelemetry trace id of the run's export, in hex: a
// digest of the run's id, so that a collector's trace can be found from
// the run, and a run exported again replaces rather than repeats it.
func TraceID(runID string) string {
	id := traceID(runID)
	return hex.EncodeToString(id[:])
}

// record is one run's records, as an export reads them.
type record struct {
	run    trace.RunSummary
	steps  []trace.Step
	events []trace.PolicyEvent
	boxes  []trace.SandboxEvent
	calls  []trace.ProviderCall
	times  []trace.StepTime
	gates  []trace.GateAttempt
}

func read(ctx context.Context, src Source, runID string) (*record, error) {
	sum, err := src.RunByID(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("otlp: reading run %s: %w", runID, err)
	}
	if sum == nil {
		return nil, fmt.Errorf("otlp: run %s: %w", runID, ErrNoRun)
	}
	r := &record{run: *sum}
	var errs [6]error
	r.steps, errs[0] = src.Steps(ctx, runID)
	r.events, errs[1] = src.PolicyEvents(ctx, runID)
	r.boxes, errs[2] = src.SandboxEvents(ctx, runID)
	r.calls, errs[3] = src.ProviderCalls(ctx, runID)
	r.times, errs[4] = src.StepTimes(ctx, runID)
	r.gates, errs[5] = src.GateAttempts(ctx, runID)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("otlp: reading run %s: %w", runID, err)
	}
	return r, nil
}

// traceID and spanID derive a run's ids from its id, so that an export is
// the same trace each time and a child run can link to its parent's.
func traceID(runID string) [16]byte {
	sum := sha256.Sum256([]byte("rein otlp trace\x00" + runID))
	return [16]byte(sum[:16])
}

func spanID(runID, kind string, n int64) [8]byte {
	sum := sha256.Sum256(fmt.Appendf(nil, "rein otlp span\x00%s\x00%s\x00%d", runID, kind, n))
	return [8]byte(sum[:8])
}
