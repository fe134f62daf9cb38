package traceview

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"time"

	"github.com/reinhq/rein/agent/loop"
)

// The pages are written by the functions of this file, not by
// html/template: text/template calls methods by name through reflection,
// which makes Go's linker keep every exported method of every type in
// rein's binary (74 MB became 128 MB, and every start, each hook call's
// among them, paid for it). Every value from the trace goes through
// doc.text or doc.href, which escape it; doc.raw takes this file's own
// constants and numbers only.

// doc is a page being written.
type doc struct {
	b    strings.Builder
	root string
}

// raw writes markup of this file's own: a constant, or numbers.
func (d *doc) raw(s string) { d.b.WriteString(s) }

// rawf writes markup of this file's own with numbers in it.
func (d *doc) rawf(format string, a ...any) { fmt.Fprintf(&d.b, format, a...) }

// text writes s as text: every character that could begin markup, or end
// an attribute, is escaped.
func (d *doc) text(s string) { d.b.WriteString(html.EscapeString(s)) }

// textf writes a formatted text, escaped.
func (d *doc) textf(format string, a ...any) { d.text(fmt.Sprintf(format, a...)) }

// runHref is the attribute value of a link to a run's page (and below
// it: rest begins with "/" or "?", or is ""), escaped.
func (d *doc) runHref(run, rest string) string {
	return html.EscapeString(d.root + "/run/" + url.PathEscape(run) + rest)
}

// link writes a link to a run's page named by its id.
func (d *doc) link(run string) {
	d.raw(`<a href="` + d.runHref(run, "") + `">`)
	d.text(run)
	d.raw(`</a>`)
}

func (d *doc) head(title string) {
	d.raw("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<title>")
	d.text(title)
	d.raw(" · rein trace</title>\n<link rel=\"stylesheet\" href=\"" + html.EscapeString(d.root+"/static/style.css") + "\">\n</head>\n<body>\n")
	d.raw(`<header><a class="home" href="` + html.EscapeString(d.root+"/") + "\">rein trace</a></header>\n<main>\n")
}

func (d *doc) foot() { d.raw("</main>\n</body>\n</html>\n") }

func when(t time.Time) string  { return t.UTC().Format("2006-01-02 15:04:05.000") }
func short(t time.Time) string { return t.UTC().Format("15:04:05.000") }
func money(f float64) string   { return fmt.Sprintf("$%.4f", f) }

// runsData is the list of runs.
type runsData struct {
	Store            string
	Runs             []runRow
	Skip, Prev, Next int
	HasPrev, HasNext bool
}

func (d *doc) runs(p runsData) {
	d.head("runs")
	d.raw("<h1>Runs</h1>\n<p class=\"muted\">Trace ")
	d.text(p.Store)
	d.rawf(": newest first, %d shown.</p>\n", len(p.Runs))
	d.raw("<table class=\"runs\">\n<thead><tr><th>run</th><th>kind</th><th>started (UTC)</th><th>state</th><th>steps</th><th>refusals</th><th>tokens in / out</th><th>cost</th><th>duration</th></tr></thead>\n<tbody>\n")
	for _, r := range p.Runs {
		d.raw("<tr class=\"run\">\n<td>")
		d.link(r.ID)
		d.raw("</td>\n<td>")
		d.text(r.Kind)
		d.raw("</td>\n<td>")
		d.text(when(r.StartedAt))
		d.raw("</td>\n<td class=\"state\">")
		d.text(r.State)
		d.rawf("</td>\n<td class=\"num\">%d</td>\n<td class=\"num\">%d</td>\n<td class=\"num\">", r.Steps, r.Refusals)
		if r.Agent {
			d.rawf("%d / %d", r.Tokens.Input, r.Tokens.Output)
		} else {
			d.raw("-")
		}
		d.raw("</td>\n<td class=\"num\">")
		d.cost(r.Cost)
		d.raw("</td>\n<td class=\"num\">")
		if r.Duration != 0 {
			d.text(formatMS(r.Duration))
		} else {
			d.raw("-")
		}
		d.raw("</td>\n</tr>\n")
	}
	if len(p.Runs) == 0 {
		d.raw("<tr><td colspan=\"9\">No runs in this trace.</td></tr>\n")
	}
	d.raw("</tbody>\n</table>\n<nav class=\"pages\">")
	if p.HasPrev {
		d.rawf(`<a href="%s?skip=%d">newer</a> `, html.EscapeString(d.root+"/"), p.Prev)
	}
	if p.HasNext {
		d.rawf(`<a href="%s?skip=%d">older</a>`, html.EscapeString(d.root+"/"), p.Next)
	}
	d.raw("</nav>\n")
	d.foot()
}

func (d *doc) cost(c float64) {
	if c != 0 {
		d.text(money(c))
	} else {
		d.raw("-")
	}
}

// runData is one run's page.
type runData struct {
	Run      runRow
	State    *loop.State
	Parent   string
	Chart    *tokenChart
	Children []runRow
	Entries  []entry
	// First says the page is the run's first; Next is the cursor of the
	// page after it, "" at the run's end.
	First bool
	Next  string
}

func (d *doc) run(p runData) {
	r := p.Run
	d.head(r.ID)
	d.raw("<h1>Run <span class=\"id\">")
	d.text(r.ID)
	d.raw("</span></h1>\n<dl class=\"facts\">\n")
	fact := func(name, class, value string) {
		d.raw("<dt>" + name + "</dt><dd")
		if class != "" {
			d.raw(` class="` + class + `"`)
		}
		d.raw(">")
		d.text(value)
		d.raw("</dd>\n")
	}
	fact("kind", "", r.Kind)
	fact("state", "state", r.State)
	fact("started", "", when(r.StartedAt)+" UTC")
	if r.Duration != 0 {
		fact("duration", "", formatMS(r.Duration))
	}
	fact("workspace", "", r.Workspace)
	fact("mode", "", r.Mode)
	fact("steps", "", fmt.Sprint(r.Steps))
	if r.Agent {
		fact("tokens", "", fmt.Sprintf("%d in (%d from the cache), %d out", r.Tokens.Input, r.Tokens.CacheRead, r.Tokens.Output))
	}
	if r.Cost != 0 {
		fact("cost", "", money(r.Cost))
	}
	if st := p.State; st != nil {
		if st.Contract.Goal != "" {
			fact("goal", "text", st.Contract.Goal)
		}
		if st.Done != nil {
			fact("outcome", "outcome", string(st.Done.Kind)+": "+st.Done.Reason)
		}
	}
	if p.Parent != "" {
		d.raw("<dt>parent</dt><dd>")
		d.link(p.Parent)
		d.raw("</dd>\n")
	}
	d.raw("</dl>\n")
	if c := p.Chart; c != nil {
		d.raw("<section class=\"chart-box\">\n<h2>Tokens and cost by step</h2>\n")
		d.rawf("<p class=\"muted\">%d model calls over %d steps: %d input and %d output tokens", c.Calls, c.Steps, c.Input, c.Output)
		if c.Priced {
			d.raw(", " + money(c.Cost))
		}
		d.raw(". Bars: input (lower) and output (upper) tokens; line: cost so far.</p>\n")
		// Numbers and this package's fixed words only (chart).
		d.raw(c.SVG)
		d.raw("\n</section>\n")
	}
	if len(p.Children) > 0 {
		d.raw("<section>\n<h2>Child runs</h2>\n<table class=\"runs\"><thead><tr><th>run</th><th>kind</th><th>state</th><th>steps</th><th>tokens in / out</th><th>cost</th></tr></thead><tbody>\n")
		for _, c := range p.Children {
			d.raw("<tr class=\"run\"><td>")
			d.link(c.ID)
			d.raw("</td><td>")
			d.text(c.Kind)
			d.raw("</td><td class=\"state\">")
			d.text(c.State)
			d.rawf("</td><td class=\"num\">%d</td><td class=\"num\">%d / %d</td><td class=\"num\">", c.Steps, c.Tokens.Input, c.Tokens.Output)
			d.cost(c.Cost)
			d.raw("</td></tr>\n")
		}
		d.raw("</tbody></table>\n</section>\n")
	}
	d.raw("<h2>Timeline</h2>\n")
	if !p.First {
		d.raw(`<p class="muted"><a href="` + d.runHref(r.ID, "") + "\">from the start</a></p>\n")
	}
	d.raw("<ol class=\"timeline\">\n")
	for _, e := range p.Entries {
		switch {
		case e.Model != nil:
			d.model(e.Model)
		case e.Tool != nil:
			d.tool(e.Tool)
		case e.Gate != nil:
			d.gate(e.Gate)
		case e.Sum != nil:
			d.summary(e)
		case e.Req != nil:
			d.request(e.Req)
		}
	}
	if len(p.Entries) == 0 {
		d.raw("<li class=\"entry\">Nothing recorded.</li>\n")
	}
	d.raw("</ol>\n")
	if p.Next != "" {
		d.raw(`<nav class="pages"><a href="` + d.runHref(r.ID, "?after="+p.Next) + "\">later</a></nav>\n")
	}
	d.foot()
}

func (d *doc) model(m *modelEntry) {
	d.rawf("<li class=\"entry model\">\n<div class=\"what\"><span class=\"badge\">model</span> step %d", m.Step)
	if m.Attempt > 1 {
		d.rawf(", attempt %d", m.Attempt)
	}
	if m.Purpose != "" {
		d.textf(" (%s)", m.Purpose)
	}
	d.textf(": %s %s", m.Provider, m.Model)
	d.raw("</div>\n<div class=\"meta\">")
	d.text(short(m.At) + " · ")
	if m.Failure != "" {
		d.raw(`<span class="bad">`)
		d.textf("failed (%s): %s", m.Failure, m.Error)
		d.raw(`</span>`)
	} else {
		d.textf("%s, %d in (%d cached), %d out", m.Finish, m.Input, m.CacheRead, m.Output)
	}
	d.text(" · " + formatMS(m.LatencyMS))
	if m.FirstMS != 0 {
		d.textf(" (first token %s)", formatMS(m.FirstMS))
	}
	if m.Priced {
		d.text(" · " + money(m.Cost))
	}
	d.raw("</div>\n")
	if m.Text != "" {
		d.raw(`<pre class="text">`)
		d.text(m.Text)
		d.raw("</pre>\n")
	}
	if len(m.ToolCalls) > 0 {
		d.raw(`<div class="meta">calls: `)
		d.text(strings.Join(m.ToolCalls, ", "))
		d.raw("</div>\n")
	}
	d.raw("</li>\n")
}

func (d *doc) tool(t *toolEntry) {
	d.raw(`<li class="entry tool `)
	d.text(t.Status)
	d.rawf("\" id=\"step-%d\">\n<div class=\"what\"><span class=\"badge\">tool</span> call %d: <strong class=\"tool-name\">", t.ID, t.Index)
	d.text(t.Tool)
	d.raw(`</strong> <span class="status">`)
	d.text(t.Status)
	d.raw("</span>")
	if t.Rung != "" {
		d.text(" · rung " + t.Rung)
	}
	d.raw("</div>\n<div class=\"meta\">")
	d.text(short(t.StartedAt) + " · " + formatMS(t.DurationMS))
	d.raw("</div>\n<pre class=\"args\">")
	d.text(t.Args)
	d.raw("</pre>\n")
	if t.Reason != "" {
		d.raw(`<div class="reason">`)
		d.text(t.Reason)
		d.raw("</div>\n")
	}
	for _, e := range t.Events {
		d.raw(`<div class="verdict `)
		d.text(e.Kind)
		d.raw(`"><span class="badge">`)
		d.text(e.Kind)
		d.raw("</span> ")
		d.text(e.Decision)
		if e.Rule != "" {
			d.raw(` by rule <code class="rule">`)
			d.text(e.Rule)
			d.raw("</code> ")
			d.text("(" + e.Layer + " layer")
			if e.File != "" {
				d.text(", " + e.File)
			}
			d.raw(")")
		}
		if e.Reason != "" {
			d.text(": " + e.Reason)
		}
		d.raw("</div>\n")
	}
	for _, e := range t.Sandbox {
		d.raw(`<div class="meta">`)
		d.textf("sandbox %s: %s", e.Kind, e.Detail)
		d.raw("</div>\n")
	}
	if len(t.Head) > 0 {
		d.raw(`<pre class="output">`)
		for _, l := range t.Head {
			d.text(l + "\n")
		}
		if t.Elided > 0 {
			d.rawf("<span class=\"elided\">… %d lines …</span>\n", t.Elided)
			for _, l := range t.Tail {
				d.text(l + "\n")
			}
		}
		d.raw("</pre>\n")
	}
	if !t.Whole {
		d.raw(`<a class="more" href="` + d.runHref(t.RunID, fmt.Sprintf("/step/%d", t.ID)) + "\">whole result</a>\n")
	}
	for _, e := range t.Edits {
		d.raw(`<div class="diff"><div class="path">`)
		d.text(e.Path)
		d.raw("</div><pre>")
		for _, l := range e.Lines {
			// Class is one of diff's fixed words.
			d.raw(`<span class="` + l.Class + `">`)
			d.text(l.Text)
			d.raw("</span>\n")
		}
		if e.Cut > 0 {
			d.rawf("<span class=\"elided\">… %d more lines</span>", e.Cut)
		}
		d.raw("</pre></div>\n")
	}
	d.raw("</li>\n")
}

func (d *doc) gate(g *gateEntry) {
	d.raw(`<li class="entry gate `)
	d.text(g.Status)
	d.raw("\">\n<div class=\"what\"><span class=\"badge\">gate</span> ")
	if g.Step != 0 {
		d.rawf("after step %d", g.Step)
	} else {
		d.raw("baseline, before the first model call")
	}
	d.raw(": <code>")
	d.text(g.Line)
	d.raw(`</code> <span class="status">`)
	d.text(g.Status)
	d.rawf("</span>, exit %d</div>\n<div class=\"meta\">", g.ExitCode)
	d.text(short(g.At) + " · " + formatMS(g.DurationMS))
	if t := g.Tests; t != nil {
		d.textf(" · tests: %d run, %d passed, %d failed, %d skipped", t.Run, t.Passed, t.Failed, t.Skipped)
		if len(t.NotRun) > 0 {
			d.text("; not run: " + strings.Join(t.NotRun, ", "))
		}
	}
	if g.Evidence != "" {
		d.text(" (" + g.Evidence + ")")
	}
	d.raw("</div>\n")
	if g.Tampered != "" {
		d.raw(`<div class="bad">protected files changed: `)
		d.text(g.Tampered)
		d.raw("</div>\n")
	}
	d.raw("</li>\n")
}

func (d *doc) summary(e entry) {
	m := e.Sum
	d.rawf("<li class=\"entry summary\">\n<div class=\"what\"><span class=\"badge\">summary</span> before step %d: steps %d to %d (%d messages) folded into %d characters</div>\n<div class=\"meta\">",
		m.Step, m.FirstStep, m.LastStep, m.Messages, m.Chars)
	d.textf("%s · %d in, %d out", short(m.At), m.Input, m.Output)
	if m.Request != "" {
		d.text(" · asked by request " + m.Request)
	}
	d.raw("</div>\n<pre class=\"text\">")
	d.text(m.Text)
	d.raw("</pre>\n</li>\n")
}

func (d *doc) request(q *requestEntry) {
	d.raw("<li class=\"entry request\">\n<div class=\"what\"><span class=\"badge\">")
	d.text(q.Kind)
	d.raw("</span> ")
	d.textf("request %s (%s, call %s)", q.Request, q.Tool, q.CallID)
	d.raw("</div>\n<pre class=\"text\">")
	d.text(q.Shown)
	d.raw("</pre>\n<div class=\"meta\">")
	d.text(short(q.At) + " · ")
	if a := q.Answer; a != nil {
		d.raw(`answered <span class="status">`)
		d.text(a.Answer)
		d.raw("</span> ")
		d.text("by " + a.By)
		if a.Note != "" {
			d.text(": " + a.Note)
		}
	} else {
		d.raw("not answered yet")
	}
	d.raw("</div>\n</li>\n")
}

// step is one tool call's page: the call whole.
func (d *doc) step(run string, t *toolEntry) {
	d.head("step")
	d.raw(`<p><a href="` + d.runHref(run, "") + `">`)
	d.text("run " + run)
	d.raw("</a></p>\n<h1>")
	d.textf("Tool call %d: %s", t.Index, t.Tool)
	d.raw("</h1>\n<ol class=\"timeline\">")
	d.tool(t)
	d.raw("</ol>\n")
	if t.ResultID != "" {
		d.raw(`<p class="muted">`)
		d.textf("The result was kept as %s while the run ran; the trace keeps what the model was shown, above.", t.ResultID)
		d.raw("</p>\n")
	}
	d.foot()
}
