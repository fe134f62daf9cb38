package traceview

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/trace/sqlstore"
)

// Chart sizes: the drawing's width and height, and the most bars drawn
// (a longer run's steps are summed into that many).
const (
	chartW    = 960
	chartH    = 220
	chartPad  = 48
	chartBars = 400
)

// tokenChart is a run's tokens and cost over its steps, drawn as SVG of
// numbers and fixed words only: nothing from the trace is in it but
// counts.
type tokenChart struct {
	SVG           string
	Steps, Calls  int
	Input, Output int64
	Cost          float64
	Priced        bool
}

// chart draws each step's input and output tokens as stacked bars and the
// cost so far as a line.
func chart(usage []sqlstore.StepUsage, prices loop.Prices) *tokenChart {
	type bar struct {
		first, last   int
		input, output int64
		cost          float64
	}
	steps := 0
	for _, u := range usage {
		steps = max(steps, u.Step)
	}
	steps = max(steps, 1)
	per := (steps + chartBars - 1) / chartBars
	bars := make([]bar, (steps+per-1)/per)
	for i := range bars {
		bars[i].first, bars[i].last = i*per+1, min((i+1)*per, steps)
	}
	c := &tokenChart{Steps: steps, Calls: len(usage), Priced: prices != (loop.Prices{})}
	for _, u := range usage {
		i := (max(u.Step, 1) - 1) / per
		b := &bars[i]
		b.input += u.Input
		b.output += u.Output
		cost := prices.Cost(loop.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite})
		b.cost += cost
		c.Input += u.Input
		c.Output += u.Output
		c.Cost += cost
	}
	var top int64 = 1
	for _, b := range bars {
		top = max(top, b.input+b.output)
	}
	plotW, plotH := float64(chartW-2*chartPad), float64(chartH-2*chartPad/2-16)
	bw := plotW / float64(len(bars))
	y := func(v int64) float64 { return plotH * float64(v) / float64(top) }
	var svg strings.Builder
	fmt.Fprintf(&svg, `<svg class="chart" role="img" aria-label="tokens and cost by step" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, chartW, chartH)
	base := float64(chartPad/2) + plotH
	fmt.Fprintf(&svg, `<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, chartPad, base, chartW-chartPad, base)
	fmt.Fprintf(&svg, `<text class="label" x="%d" y="%.1f" text-anchor="end">%d</text>`, chartPad-4, float64(chartPad/2)+8, top)
	fmt.Fprintf(&svg, `<text class="label" x="%d" y="%.1f" text-anchor="end">0</text>`, chartPad-4, base)
	fmt.Fprintf(&svg, `<text class="label" x="%d" y="%d">step 1</text>`, chartPad, chartH-4)
	fmt.Fprintf(&svg, `<text class="label" x="%d" y="%d" text-anchor="end">step %d</text>`, chartW-chartPad, chartH-4, steps)
	var line strings.Builder
	total := 0.0
	for i, b := range bars {
		x := float64(chartPad) + float64(i)*bw
		in, out := y(b.input), y(b.output)
		span := fmt.Sprintf("step %d", b.first)
		if b.last != b.first {
			span = fmt.Sprintf("steps %d to %d", b.first, b.last)
		}
		fmt.Fprintf(&svg, `<g><title>%s: %d input, %d output tokens`, span, b.input, b.output)
		if c.Priced {
			fmt.Fprintf(&svg, `, $%.4f`, b.cost)
		}
		fmt.Fprintf(&svg, `</title><rect class="in" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/><rect class="out" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></g>`,
			x, base-in, max(bw-1, 0.5), in, x, base-in-out, max(bw-1, 0.5), out)
		total += b.cost
		if c.Priced && c.Cost > 0 {
			if i == 0 {
				line.WriteString("M")
			} else {
				line.WriteString(" L")
			}
			fmt.Fprintf(&line, "%.1f %.1f", x+bw/2, base-plotH*total/c.Cost)
		}
	}
	if line.Len() > 0 {
		fmt.Fprintf(&svg, `<path class="cost" d="%s"/>`, line.String())
		fmt.Fprintf(&svg, `<text class="label cost-label" x="%d" y="%.1f">$%.4f</text>`, chartW-chartPad+4, float64(chartPad/2)+8, c.Cost)
	}
	svg.WriteString(`</svg>`)
	// Built of numbers and the fixed words above: nothing to escape.
	c.SVG = svg.String()
	return c
}
