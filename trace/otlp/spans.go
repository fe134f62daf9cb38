package otlp

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/trace"
)

// rein's own attributes.
const (
	attrRunID      = attribute.Key("rein.run.id")
	attrWorkspace  = attribute.Key("rein.workspace")
	attrSurface    = attribute.Key("rein.surface")
	attrMode       = attribute.Key("rein.mode")
	attrSource     = attribute.Key("rein.source")
	attrRunStatus  = attribute.Key("rein.run.status")
	attrStep       = attribute.Key("rein.step")
	attrCallIndex  = attribute.Key("rein.call.index")
	attrStatus     = attribute.Key("rein.status")
	attrVerdict    = attribute.Key("rein.verdict")
	attrRule       = attribute.Key("rein.rule")
	attrLayer      = attribute.Key("rein.layer")
	attrRuleFile   = attribute.Key("rein.rule.file")
	attrPolicyKind = attribute.Key("rein.policy.kind")
	attrRung       = attribute.Key("rein.rung")
	attrLimitHit   = attribute.Key("rein.limit_hit")
	attrPoisoned   = attribute.Key("rein.poisoned")
	attrExitStatus = attribute.Key("rein.exit_status")
	attrAttempt    = attribute.Key("rein.attempt")
	attrPurpose    = attribute.Key("rein.purpose")
	attrFirstMS    = attribute.Key("rein.first_token_ms")
	attrGateStatus = attribute.Key("rein.gate.status")
	attrEvidence   = attribute.Key("rein.gate.evidence")
	// The content, only with Options.Content.
	attrReason   = attribute.Key("rein.reason")
	attrRequest  = attribute.Key("rein.request")
	attrResponse = attribute.Key("rein.response")
	attrError    = attribute.Key("rein.error")
	attrGateLine = attribute.Key("rein.gate.line")
)

// scope names the spans' maker.
var scope = instrumentation.Scope{Name: "github.com/reinhq/rein/trace/otlp", SchemaURL: semconv.SchemaURL}

// build turns a run's records into its spans: the run the root; for an
// agent run, each step a span under it holding the step's model calls,
// tool calls and gate attempts; for any other run (a rein tool call, an
// MCP session, a launched session), the model and tool calls under the
// root.
func build(r *record, o Options) tracetest.SpanStubs {
	id := r.run.ID
	tid := oteltrace.TraceID(traceID(id))
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("rein"), semconv.ServiceVersion(o.Version))
	ctx := func(kind string, n int64) oteltrace.SpanContext {
		return oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: tid, SpanID: spanID(id, kind, n), TraceFlags: oteltrace.FlagsSampled})
	}
	// content is nil when no content is exported.
	var content func(string) string
	if o.Content {
		content = func(s string) string { return s }
		if o.Redactor != nil {
			content = o.Redactor.Redact
		}
	}
	var spans tracetest.SpanStubs
	add := func(s tracetest.SpanStub) int {
		s.Resource, s.InstrumentationScope = res, scope
		spans = append(spans, s)
		return len(spans) - 1
	}

	root := add(rootSpan(r, ctx("run", 0)))

	// The steps of an agent run are those its model calls and step times
	// name. A launched session's calls are numbered by its gateway, one
	// a call, not by the steps of a loop rein drives: they have none.
	steps := map[int]int{} // step number -> index of its span
	var numbers []int
	step := func(n int) int {
		if i, ok := steps[n]; ok {
			return i
		}
		i := add(tracetest.SpanStub{Name: "step " + strconv.Itoa(n), SpanContext: ctx("step", int64(n)), Parent: spans[root].SpanContext,
			SpanKind: oteltrace.SpanKindInternal, Attributes: []attribute.KeyValue{attrStep.Int(n)}})
		steps[n] = i
		numbers = append(numbers, n)
		return i
	}
	stepped := r.run.Source != "launch"
	// modelDone is when each step's model answered: a tool call belongs
	// to the last step whose model had answered when it started.
	modelDone := map[int]time.Time{}
	for _, c := range r.calls {
		parent := root
		if stepped && c.Step > 0 {
			parent = step(c.Step)
		}
		s := modelSpan(r.run.Source, c, content)
		s.SpanContext, s.Parent = ctx("model", c.ID), spans[parent].SpanContext
		add(s)
		if c.Purpose == "" && s.EndTime.After(modelDone[c.Step]) {
			modelDone[c.Step] = s.EndTime
		}
	}
	for _, t := range r.times {
		i := step(t.Step)
		spans[i].EndTime = t.At
		spans[i].StartTime = t.At.Add(-ms(t.ModelMS + t.ToolsMS + t.ReinMS))
	}
	slices.Sort(numbers)
	stepOf := func(at time.Time) (int, bool) {
		n, ok := 0, false
		for _, m := range numbers {
			if d, seen := modelDone[m]; seen && !d.After(at) {
				n, ok = m, true
			}
		}
		return n, ok
	}
	for _, st := range r.steps {
		parent := root
		if n, ok := stepOf(st.StartedAt); ok {
			parent = steps[n]
		}
		s := toolSpan(st, r.events, r.boxes, content)
		s.SpanContext, s.Parent = ctx("tool", st.ID), spans[parent].SpanContext
		add(s)
	}
	for _, g := range r.gates {
		parent := root
		if i, ok := steps[g.Step]; ok {
			parent = i
		}
		s := gateSpan(g, content)
		s.SpanContext, s.Parent = ctx("gate", g.ID), spans[parent].SpanContext
		add(s)
	}

	// A step's span covers its children, and the run's every span: a step
	// without its time (the run stopped in it) and a run without its end
	// end at their last record.
	cover := func(i int) {
		for _, c := range spans {
			if c.Parent.SpanID() != spans[i].SpanContext.SpanID() {
				continue
			}
			if spans[i].StartTime.IsZero() || c.StartTime.Before(spans[i].StartTime) {
				spans[i].StartTime = c.StartTime
			}
			if c.EndTime.After(spans[i].EndTime) {
				spans[i].EndTime = c.EndTime
			}
			spans[i].ChildSpanCount++
		}
	}
	for _, n := range numbers {
		cover(steps[n])
	}
	cover(root)
	return spans
}

func rootSpan(r *record, sc oteltrace.SpanContext) tracetest.SpanStub {
	run := r.run
	status := run.Status
	if run.EndedAt == nil {
		status = "unfinished"
	}
	s := tracetest.SpanStub{Name: "rein " + run.Source, SpanContext: sc, SpanKind: oteltrace.SpanKindInternal, StartTime: run.StartedAt,
		Attributes: []attribute.KeyValue{attrRunID.String(run.ID), attrWorkspace.String(run.Workspace), attrSurface.String(run.Surface),
			attrMode.String(run.Mode), attrSource.String(run.Source), attrRunStatus.String(status)}}
	if run.EndedAt != nil {
		s.EndTime = *run.EndedAt
	}
	// An agent's run is an agent's invocation in the GenAI conventions:
	// rein's own (rein run, and a run spawn_agent started), or the foreign
	// agent a launched session ran (its surface names it).
	switch run.Source {
	case "run", "agent":
		s.Name = "invoke_agent rein"
		s.Attributes = append(s.Attributes, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("rein"))
	case "launch":
		s.Name = "invoke_agent " + run.Surface
		s.Attributes = append(s.Attributes, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(run.Surface))
	}
	// A run spawn_agent started is named by its parent's id and a dot;
	// it is a trace of its own, linked to its parent's root.
	if i := strings.LastIndexByte(run.ID, '.'); i > 0 {
		parent := run.ID[:i]
		s.Links = []sdktrace.Link{{SpanContext: oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
			TraceID: traceID(parent), SpanID: spanID(parent, "run", 0), TraceFlags: oteltrace.FlagsSampled}),
			Attributes: []attribute.KeyValue{attrRunID.String(parent)}}}
	}
	return s
}

// modelSpan is one attempt of a model call. An agent records a call when
// it has answered (At is its end); a launched session's gateway records
// the time it started.
func modelSpan(source string, c trace.ProviderCall, content func(string) string) tracetest.SpanStub {
	end := c.At
	start := end.Add(-ms(c.LatencyMS))
	if source == "launch" {
		start, end = c.At, c.At.Add(ms(c.LatencyMS))
	}
	model, provider, finish := modelNames(source, c, content)
	s := tracetest.SpanStub{Name: "chat " + model, SpanKind: oteltrace.SpanKindClient, StartTime: start, EndTime: end,
		Attributes: []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModel(model), semconv.GenAIUsageInputTokens(int(c.Input)), semconv.GenAIUsageOutputTokens(int(c.Output)),
			attrStep.Int(c.Step), attrAttempt.Int(c.Attempt)}}
	if c.CacheRead > 0 {
		s.Attributes = append(s.Attributes, semconv.GenAIUsageCacheReadInputTokens(int(c.CacheRead)))
	}
	if c.CacheWrite > 0 {
		s.Attributes = append(s.Attributes, semconv.GenAIUsageCacheCreationInputTokens(int(c.CacheWrite)))
	}
	if finish != "" {
		s.Attributes = append(s.Attributes, semconv.GenAIResponseFinishReasons(finish))
	}
	if c.FirstMS > 0 {
		s.Attributes = append(s.Attributes, attrFirstMS.Float64(c.FirstMS))
	}
	if c.Purpose != "" {
		s.Attributes = append(s.Attributes, attrPurpose.String(c.Purpose))
	}
	if c.Failure != "" {
		s.Status = sdktrace.Status{Code: codes.Error, Description: c.Failure}
		s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(c.Failure))
	}
	if content != nil {
		s.Attributes = set(s.Attributes, attrRequest, content(c.Request))
		s.Attributes = set(s.Attributes, attrResponse, content(c.Response))
		s.Attributes = set(s.Attributes, attrError, content(c.Error))
	}
	return s
}

// toolSpan is one tool call (or, in a hook's run, one decision), with its
// refusals and approvals as events and the deciding one's verdict, rule
// and layer as attributes.
func toolSpan(st trace.Step, events []trace.PolicyEvent, boxes []trace.SandboxEvent, content func(string) string) tracetest.SpanStub {
	name := toolName(st, content)
	s := tracetest.SpanStub{Name: "execute_tool " + name, SpanKind: oteltrace.SpanKindInternal,
		StartTime: st.StartedAt, EndTime: st.StartedAt.Add(ms(st.DurationMS)),
		Attributes: []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name),
			attrCallIndex.Int(st.Index), attrStatus.String(st.Status)}}
	var decided *trace.PolicyEvent
	for i, ev := range events {
		if ev.StepID != st.ID {
			continue
		}
		// The refusal decided the call; without one, the last answer did.
		if decided == nil || decided.Kind != "refusal" {
			decided = &events[i]
		}
		a := []attribute.KeyValue{attrPolicyKind.String(ev.Kind), attrVerdict.String(ev.Decision)}
		a = set(set(set(a, attrRule, ruleText(ev, content)), attrLayer, ev.Layer), attrRuleFile, ev.File)
		if content != nil {
			a = set(a, attrReason, content(ev.Reason))
		}
		s.Events = append(s.Events, sdktrace.Event{Name: "rein.policy", Time: ev.At, Attributes: a})
	}
	if decided != nil {
		s.Attributes = append(s.Attributes, attrVerdict.String(decided.Decision))
		s.Attributes = set(set(set(s.Attributes, attrRule, ruleText(*decided, content)), attrLayer, decided.Layer), attrRuleFile, decided.File)
	}
	for _, b := range boxes {
		if b.StepID != st.ID || b.Kind != "run" {
			continue
		}
		var d struct {
			Rung     string `json:"rung"`
			LimitHit string `json:"limit_hit"`
			Poisoned string `json:"poisoned"`
		}
		if json.Unmarshal([]byte(b.Detail), &d) == nil {
			s.Attributes = set(set(s.Attributes, attrRung, d.Rung), attrLimitHit, d.LimitHit)
			if d.Poisoned != "" {
				s.Attributes = append(s.Attributes, attrPoisoned.Bool(true))
			}
		}
	}
	if code, ok := exitStatus(st); ok {
		s.Attributes = append(s.Attributes, attrExitStatus.Int(code))
	}
	switch st.Status {
	case "ok", "allow", "ask":
	default:
		s.Status = sdktrace.Status{Code: codes.Error, Description: st.Status}
		s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(st.Status))
	}
	if content != nil {
		s.Attributes = set(s.Attributes, semconv.GenAIToolCallArgumentsKey, content(st.Args))
		s.Attributes = set(s.Attributes, semconv.GenAIToolCallResultKey, content(st.Observation))
		s.Attributes = set(s.Attributes, attrReason, content(st.Reason))
	}
	return s
}

// exitStatus is the exit status of a command a step ran, which the first
// line of its observation states: "shell: failed (exit 2)". That line is
// rein's own, not the command's output.
func exitStatus(st trace.Step) (int, bool) {
	rest, ok := strings.CutPrefix(st.Observation, st.Tool+": "+st.Status+" (exit ")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ")")
	if !ok {
		return 0, false
	}
	code, err := strconv.Atoi(num)
	return code, err == nil
}

// gateSpan is one run of an agent run's gate, recorded when it ended.
func gateSpan(g trace.GateAttempt, content func(string) string) tracetest.SpanStub {
	s := tracetest.SpanStub{Name: "gate", SpanKind: oteltrace.SpanKindInternal, StartTime: g.At.Add(-ms(g.DurationMS)), EndTime: g.At,
		Attributes: []attribute.KeyValue{attrStep.Int(g.Step), attrGateStatus.String(g.Status)}}
	if g.ExitCode >= 0 {
		s.Attributes = append(s.Attributes, attrExitStatus.Int(g.ExitCode))
	}
	s.Attributes = set(s.Attributes, attrEvidence, g.Evidence)
	if g.Status != "passed" {
		s.Status = sdktrace.Status{Code: codes.Error, Description: g.Status}
	}
	if content != nil {
		s.Attributes = set(s.Attributes, attrGateLine, content(g.Line))
	}
	return s
}

// set appends k = v when v is not empty.
func set(a []attribute.KeyValue, k attribute.Key, v string) []attribute.KeyValue {
	if v == "" {
		return a
	}
	return append(a, k.String(v))
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
