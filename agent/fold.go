package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/trace"
)

// Summarize is the loop's effect of a summarising call.
type Summarize = loop.Summarize

// maxGoalInView bounds the goal a summarising call is shown with its
// view.
const maxGoalInView = 2000

// SummaryRequest is the summarising call of the fold p of s: the fixed
// instruction, the goal and the view of the steps it folds, and no tools.
func SummaryRequest(s *State, p loop.FoldPlan) Request {
	goal := s.Contract.Goal
	if len(goal) > maxGoalInView {
		goal = goal[:maxGoalInView] + "[...]"
	}
	text := fmt.Sprintf("The agent's goal:\n%s\n\nSummarise its steps %d to %d, shown below.\n\n%s", goal, p.FirstStep, p.LastStep, s.SummaryView(p))
	// No tools, as an empty list (which the trace keeps as one, so a
	// replay asks the same).
	return Request{System: loop.SummaryInstruction, Messages: []Message{{Role: RoleUser, Text: text}}, Tools: []ToolDef{},
		MaxTokens: loop.SummaryTokens(s.Contract.ContextTokens, s.Contract.ResponseMaxTokens)}
}

// Summarize makes the summarising call of the effect's fold: its text or
// its failure as the loop's input, and its records (the call, and the
// summary the trace keeps). A call cut short by ctx is no input (nil).
func (x *Executors) Summarize(ctx context.Context, e Summarize) (loop.Input, Records) {
	d, s := x.d, x.d.state
	req := SummaryRequest(s, e.Plan)
	d.at(fmt.Sprintf("summary-before %d.%d.%d", e.Key.Step, e.Key.Index, e.Key.Attempt))
	start := time.Now()
	resp, err := d.o.Provider.Stream(ctx, req)
	if err != nil && ctx.Err() != nil {
		return nil, nil
	}
	if err == nil && strings.TrimSpace(resp.Text) == "" {
		err = &ProviderError{Class: FailMalformed, Err: errors.New("the summary is empty")}
	}
	recs := Records{d.callRecord(e.Key.Step, e.Key.Attempt, req, resp, err, time.Since(start))}
	for _, r := range recs[0] {
		if pc, ok := r.(trace.ProviderCall); ok {
			pc.Purpose = "summary"
			recs[0] = []trace.Record{pc}
		}
	}
	if err != nil {
		class, _ := classOf(err)
		d.emit(Event{Kind: EventCompacted, Step: s.Steps, Tokens: s.Tokens, Status: "failed",
			Reason: fmt.Sprintf("the summary of steps %d to %d failed (%s): %v", e.Plan.FirstStep, e.Plan.LastStep, class, err)})
		return loop.SummaryFailed{Class: class, Message: err.Error()}, recs
	}
	in := loop.Summarized{Text: resp.Text, Usage: resp.Usage}
	if d.o.Tool.Store != nil {
		recs = append(recs, []trace.Record{trace.Summary{RunID: d.router.RunID(), Step: s.Steps + 1, FirstStep: e.Plan.FirstStep, LastStep: e.Plan.LastStep,
			Messages: e.Plan.To - e.Plan.From, Chars: len(resp.Text), Input: resp.Usage.Input, Output: resp.Usage.Output, Request: e.Plan.Request, Text: resp.Text, At: time.Now()}})
	}
	if e.Plan.Request != "" && d.durable != nil {
		recs = append(recs, []trace.Record{trace.ApprovalDecision{RunID: d.router.RunID(), Request: e.Plan.Request, Answer: "yes",
			Note: fmt.Sprintf("steps %d to %d folded before step %d", e.Plan.FirstStep, e.Plan.LastStep, s.Steps+1), By: "rein", At: time.Now()}})
	}
	d.emit(Event{Kind: EventCompacted, Step: s.Steps, Tokens: s.Tokens.Add(resp.Usage), Status: "summarized",
		Reason: fmt.Sprintf("steps %d to %d folded into a summary of %d characters (%d in, %d out tokens)", e.Plan.FirstStep, e.Plan.LastStep, len(resp.Text), resp.Usage.Input, resp.Usage.Output)})
	return in, recs
}

// foldAsked is an operator's request to fold (rein run fold) not yet
// taken, as the loop's input, when the model is asked next; a request the
// run answered without a summary (nothing to fold, or the summary failed)
// is answered no in the trace here.
func (d *driver) foldAsked(ctx context.Context) loop.Input {
	s := d.state
	if d.durable == nil || s.Fold != nil {
		return nil
	}
	if _, ok := s.Next(d.o.Now()).(CallModel); !ok {
		return nil
	}
	reqs, err := d.durable.ApprovalRequests(ctx, d.router.RunID())
	if err != nil {
		d.fail(err)
		return nil
	}
	for _, r := range reqs {
		if r.Kind != "fold" || r.Request == s.FoldAsked {
			continue
		}
		dec, err := d.durable.Decision(ctx, r.RunID, r.Request)
		if err != nil {
			d.fail(err)
			return nil
		}
		if dec != nil {
			continue
		}
		for _, m := range s.Summaries {
			if m.Request == r.Request && m.LastStep == 0 {
				why := "nothing to fold: the transcript holds no more than the goal and the last turns"
				if s.FoldFailures > 0 {
					why = "the summary failed; the oldest observations were set aside instead"
				}
				if _, err := d.durable.AppendAll(ctx, trace.ApprovalDecision{RunID: r.RunID, Request: r.Request, Answer: "no", Note: why, By: "rein", At: time.Now()}); err != nil {
					d.fail(err)
				}
				return nil
			}
		}
		if !slicesHasRequest(s.Summaries, r.Request) {
			return loop.FoldAsked{Request: r.Request}
		}
	}
	return nil
}

func slicesHasRequest(ms []loop.Summary, req string) bool {
	for _, m := range ms {
		if m.Request == req {
			return true
		}
	}
	return false
}
