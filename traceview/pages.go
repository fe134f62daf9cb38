package traceview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlstore"
)

// Page sizes: the runs a list page shows, and the timeline's entries a
// run page shows.
const (
	RunsPerPage    = 50
	EntriesPerPage = 100
)

// Bounds of what the timeline shows of a text: the head and tail lines
// of a tool's output, a line's length, and the head of an argument or a
// model's text; the step's page has it whole.
const (
	headLines = 12
	tailLines = 6
	lineChars = 400
	textChars = 600
)

func formatMS(f float64) string {
	switch {
	case f >= 60_000:
		return fmt.Sprintf("%.1f min", f/60_000)
	case f >= 1000:
		return fmt.Sprintf("%.2f s", f/1000)
	default:
		return fmt.Sprintf("%.1f ms", f)
	}
}

// runRow is one run as the list shows it.
type runRow struct {
	trace.RunSummary
	// State is the run's state or outcome; Agent says it is an agent run
	// (it has checkpoints).
	State  string
	Agent  bool
	Tokens loop.Usage
	Cost   float64
	// Duration is from its start to its end, or to its last checkpoint.
	Duration float64
	Kind     string
}

// page writes a page made by write.
func (s *Server) page(w http.ResponseWriter, write func(d *doc)) {
	d := &doc{root: s.root}
	write(d)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, d.b.String())
}

func (s *Server) fail(w http.ResponseWriter, code int, err error) {
	http.Error(w, "rein trace serve: "+err.Error(), code)
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	skip, _ := strconv.Atoi(r.URL.Query().Get("skip"))
	skip = max(skip, 0)
	ctx := r.Context()
	runs, err := s.store.RunsPage(ctx, skip, RunsPerPage+1)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	more := len(runs) > RunsPerPage
	runs = runs[:min(len(runs), RunsPerPage)]
	rows := make([]runRow, len(runs))
	for i, run := range runs {
		rows[i] = s.row(ctx, run)
	}
	p := runsData{Store: s.store.Path(), Runs: rows, Skip: skip, HasNext: more, Next: skip + RunsPerPage, HasPrev: skip > 0, Prev: max(skip-RunsPerPage, 0)}
	s.page(w, func(d *doc) { d.runs(p) })
}

// row is what the list says of a run: an agent run's state, tokens and
// cost from its last checkpoint, read without its transcript.
func (s *Server) row(ctx context.Context, run trace.RunSummary) runRow {
	row := runRow{RunSummary: run, State: run.Status, Kind: kindOf(run.Run)}
	if row.State == "" {
		row.State = "running or interrupted"
	}
	if run.EndedAt != nil {
		row.Duration = float64(run.EndedAt.Sub(run.StartedAt).Microseconds()) / 1000
	}
	if cp, err := s.store.LastCheckpoint(ctx, run.ID); err == nil && cp != nil {
		row.Agent, row.Kind, row.State = true, "agent run", cp.Status
		if cp.Waiting != "" {
			row.State += " (request " + cp.Waiting + ")"
		}
		if run.EndedAt == nil {
			row.Duration = float64(cp.At.Sub(run.StartedAt).Microseconds()) / 1000
		}
		if st, err := agent.StateHeader(ctx, s.store, run.ID); err == nil {
			row.Tokens, row.Cost = st.Tokens, st.Contract.Prices.Cost(st.Tokens)
			row.Steps = st.Steps
			if st.Contract.Child != nil {
				row.Kind = "child run"
			}
		}
	}
	return row
}

// kindOf names what started a run.
func kindOf(r trace.Run) string {
	switch r.Source {
	case "mcp":
		return "MCP session"
	case "launch":
		return "launched " + r.Surface
	case "hook":
		return "hook session (" + r.Surface + ")"
	case "cli":
		return "rein " + r.Surface
	}
	return r.Source
}

// entry is one thing of a run's timeline.
type entry struct {
	At   time.Time
	Kind string // model, tool, gate, summary, request
	// order breaks a tie of times: a step's model call comes before its
	// tool calls.
	order int
	Model *modelEntry
	Tool  *toolEntry
	Gate  *gateEntry
	Sum   *trace.Summary
	Req   *requestEntry
}

type modelEntry struct {
	trace.ProviderCall
	Text      string
	ToolCalls []string
	Cost      float64
	Priced    bool
}

type toolEntry struct {
	trace.Step
	Args    string
	Head    []string
	Tail    []string
	Elided  int
	Whole   bool
	Events  []trace.PolicyEvent
	Rung    string
	Sandbox []trace.SandboxEvent
	Edits   []editEntry
}

type editEntry struct {
	Path  string
	Lines []diffLine
	Cut   int
}

type diffLine struct {
	Class, Text string
}

type gateEntry struct {
	trace.GateAttempt
	Tests    *loop.GateTests
	Tampered string
}

type requestEntry struct {
	trace.ApprovalRequest
	Answer *trace.ApprovalDecision
}

// cursor is where a run's page starts: the last row of each kind the
// pages before it showed.
type cursor struct{ steps, calls, gates, sums, reqs int64 }

func parseCursor(s string) cursor {
	var c cursor
	f := strings.Split(s, "-")
	if len(f) == 5 {
		n := make([]int64, 5)
		for i := range f {
			n[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		c = cursor{n[0], n[1], n[2], n[3], n[4]}
	}
	return c
}

func (c cursor) String() string {
	return fmt.Sprintf("%d-%d-%d-%d-%d", c.steps, c.calls, c.gates, c.sums, c.reqs)
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("run")
	run, err := s.store.RunByID(ctx, id)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	if run == nil {
		s.fail(w, http.StatusNotFound, fmt.Errorf("no run %q in %s", id, s.store.Path()))
		return
	}
	p := runData{Run: s.row(ctx, *run)}
	var prices loop.Prices
	if st, err := agent.StateHeader(ctx, s.store, id); err == nil {
		prices = st.Contract.Prices
		p.State = st
		if st.Contract.Child != nil {
			p.Parent = st.Contract.Child.Parent
		}
	}
	at := parseCursor(r.URL.Query().Get("after"))
	entries, next, err := s.timeline(ctx, id, at, prices)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	p.Entries = entries
	if next != nil {
		p.Next = next.String()
	}
	p.First = at == cursor{}
	if p.First {
		usage, err := s.store.Usage(ctx, id)
		if err == nil && len(usage) > 0 {
			p.Chart = chart(usage, prices)
		}
		kids, _ := s.store.ChildRuns(ctx, id)
		var children []runRow
		for _, k := range kids {
			if c, err := s.store.RunByID(ctx, k); err == nil && c != nil {
				row := s.row(ctx, *c)
				row.Kind = strings.Repeat("└ ", strings.Count(strings.TrimPrefix(k, id+"."), ".")/2+1) + row.Kind
				children = append(children, row)
			}
		}
		p.Children = children
	}
	s.page(w, func(d *doc) { d.run(p) })
}

// timeline reads one page of a run's timeline after the cursor: at most
// EntriesPerPage entries of each kind, merged by time, of which the first
// EntriesPerPage are shown; next is where the following page starts (nil
// at the run's end).
func (s *Server) timeline(ctx context.Context, run string, at cursor, prices loop.Prices) ([]entry, *cursor, error) {
	n := EntriesPerPage + 1
	steps, err := sqlstore.Page[trace.Step](ctx, s.store, run, at.steps, n)
	if err != nil {
		return nil, nil, err
	}
	calls, err := sqlstore.Page[trace.ProviderCall](ctx, s.store, run, at.calls, n, "request")
	if err != nil {
		return nil, nil, err
	}
	gates, err := sqlstore.Page[trace.GateAttempt](ctx, s.store, run, at.gates, n)
	if err != nil {
		return nil, nil, err
	}
	sums, err := sqlstore.Page[trace.Summary](ctx, s.store, run, at.sums, n)
	if err != nil {
		return nil, nil, err
	}
	reqs, err := sqlstore.Page[trace.ApprovalRequest](ctx, s.store, run, at.reqs, n)
	if err != nil {
		return nil, nil, err
	}
	// Each kind in its rows' order, merged by time: a kind gives at most a
	// page, and one more row of it was read, so the next entry of every
	// kind is known at each pick.
	kinds := make([][]entry, 5)
	ids := make([][]int64, 5)
	for _, st := range steps {
		kinds[0] = append(kinds[0], entry{At: st.StartedAt, Kind: "tool", order: 1, Tool: &toolEntry{Step: st}})
		ids[0] = append(ids[0], st.ID)
	}
	for _, c := range calls {
		kinds[1] = append(kinds[1], entry{At: c.At, Kind: "model", order: 0, Model: model(c, prices)})
		ids[1] = append(ids[1], c.ID)
	}
	for _, g := range gates {
		kinds[2] = append(kinds[2], entry{At: g.At, Kind: "gate", order: 2, Gate: gate(g)})
		ids[2] = append(ids[2], g.ID)
	}
	for i := range sums {
		kinds[3] = append(kinds[3], entry{At: sums[i].At, Kind: "summary", order: 3, Sum: &sums[i]})
		ids[3] = append(ids[3], sums[i].ID)
	}
	for _, q := range reqs {
		e := &requestEntry{ApprovalRequest: q}
		e.Answer, _ = s.store.Decision(ctx, run, q.Request)
		kinds[4] = append(kinds[4], entry{At: q.At, Kind: "request", order: 4, Req: e})
		ids[4] = append(ids[4], q.ID)
	}
	var shown []entry
	heads := make([]int, 5)
	next := at
	last := []*int64{&next.steps, &next.calls, &next.gates, &next.sums, &next.reqs}
	for len(shown) < EntriesPerPage {
		pick := -1
		for k := range kinds {
			if heads[k] == len(kinds[k]) {
				continue
			}
			if pick < 0 {
				pick = k
				continue
			}
			a, b := kinds[k][heads[k]], kinds[pick][heads[pick]]
			if c := a.At.Compare(b.At); c < 0 || c == 0 && a.order < b.order {
				pick = k
			}
		}
		if pick < 0 {
			break
		}
		shown = append(shown, kinds[pick][heads[pick]])
		*last[pick] = ids[pick][heads[pick]]
		heads[pick]++
	}
	more := false
	for k := range kinds {
		more = more || heads[k] < len(kinds[k])
	}
	// The page's tool calls are rows at to next of steps: their records
	// are read for that range alone.
	if next.steps > at.steps {
		if err := s.attach(ctx, run, at.steps+1, next.steps, shown); err != nil {
			return nil, nil, err
		}
	}
	if !more {
		return shown, nil, nil
	}
	return shown, &next, nil
}

// attach gives each tool call of a page its policy events, sandbox
// events and edits, read for the page's steps alone.
func (s *Server) attach(ctx context.Context, run string, first, last int64, out []entry) error {
	events, err := sqlstore.OfSteps[trace.PolicyEvent](ctx, s.store, run, first, last)
	if err != nil {
		return err
	}
	sb, err := sqlstore.OfSteps[trace.SandboxEvent](ctx, s.store, run, first, last)
	if err != nil {
		return err
	}
	edits, err := sqlstore.OfSteps[trace.Edit](ctx, s.store, run, first, last)
	if err != nil {
		return err
	}
	for i := range out {
		if t := out[i].Tool; t != nil {
			fill(t, events, sb, edits, false)
		}
	}
	return nil
}

// fill gives a tool call what the view shows of it: its arguments, its
// output's head and tail (whole, on the step's page), its decisions, its
// rung and its diffs.
func fill(t *toolEntry, events []trace.PolicyEvent, sb []trace.SandboxEvent, edits []trace.Edit, whole bool) {
	t.Whole = whole
	t.Args = t.Step.Args
	lines := strings.Split(strings.TrimRight(t.Observation, "\n"), "\n")
	if !whole {
		t.Args = cut(t.Args, textChars)
		if len(lines) > headLines+tailLines {
			t.Elided = len(lines) - headLines - tailLines
			t.Tail = cutAll(lines[len(lines)-tailLines:])
			lines = lines[:headLines]
		}
		lines = cutAll(lines)
	}
	t.Head = lines
	for _, e := range events {
		if e.StepID == t.ID {
			t.Events = append(t.Events, e)
		}
	}
	for _, e := range sb {
		if e.StepID != t.ID {
			continue
		}
		var d struct {
			Rung string `json:"rung"`
		}
		if e.Kind == "run" && json.Unmarshal([]byte(e.Detail), &d) == nil && d.Rung != "" {
			t.Rung = d.Rung
			continue
		}
		t.Sandbox = append(t.Sandbox, e)
	}
	for _, e := range edits {
		if e.StepID == t.ID {
			t.Edits = append(t.Edits, diff(e, whole))
		}
	}
}

// maxDiffLines bounds a diff on the timeline; the step's page has it
// whole.
const maxDiffLines = 200

func diff(e trace.Edit, whole bool) editEntry {
	out := editEntry{Path: e.Path}
	lines := strings.Split(strings.TrimRight(e.Diff, "\n"), "\n")
	if !whole && len(lines) > maxDiffLines {
		out.Cut = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	for _, l := range lines {
		class := "ctx"
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		if !whole {
			l = cut(l, lineChars)
		}
		out.Lines = append(out.Lines, diffLine{class, l})
	}
	return out
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf(" … [%d more characters]", len(r)-n)
}

func cutAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = cut(l, lineChars)
	}
	return out
}

// model reads what the view shows of a model call from its response: the
// text's head, the tools it called, and what it cost.
func model(c trace.ProviderCall, prices loop.Prices) *modelEntry {
	m := &modelEntry{ProviderCall: c}
	var resp struct {
		Text      string `json:"text"`
		ToolCalls []struct {
			Name string `json:"name"`
		} `json:"tool_calls"`
		Cost *float64 `json:"cost_usd"`
	}
	if json.Unmarshal([]byte(c.Response), &resp) == nil {
		m.Text = cut(resp.Text, textChars)
		for _, t := range resp.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, t.Name)
		}
		if resp.Cost != nil {
			m.Cost, m.Priced = *resp.Cost, true
		}
	}
	if !m.Priced && prices != (loop.Prices{}) {
		m.Cost, m.Priced = prices.Cost(loop.Usage{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite}), true
	}
	m.Response = ""
	return m
}

func gate(g trace.GateAttempt) *gateEntry {
	e := &gateEntry{GateAttempt: g}
	var t loop.GateTests
	if g.Tests != "" && json.Unmarshal([]byte(g.Tests), &t) == nil {
		e.Tests = &t
	}
	if g.Tampered != "" && g.Tampered != "null" && g.Tampered != "[]" {
		e.Tampered = g.Tampered
	}
	return e
}

func (s *Server) stepPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run := r.PathValue("run")
	id, err := strconv.ParseInt(r.PathValue("step"), 10, 64)
	if err != nil {
		s.fail(w, http.StatusBadRequest, fmt.Errorf("a step is named by its number"))
		return
	}
	st, err := sqlstore.One[trace.Step](ctx, s.store, run, id)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	if st == nil {
		s.fail(w, http.StatusNotFound, fmt.Errorf("run %q has no step %d", run, id))
		return
	}
	events, err := sqlstore.OfSteps[trace.PolicyEvent](ctx, s.store, run, id, id)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	sb, _ := sqlstore.OfSteps[trace.SandboxEvent](ctx, s.store, run, id, id)
	edits, _ := sqlstore.OfSteps[trace.Edit](ctx, s.store, run, id, id)
	t := &toolEntry{Step: *st}
	fill(t, events, sb, edits, true)
	s.page(w, func(d *doc) { d.step(run, t) })
}
