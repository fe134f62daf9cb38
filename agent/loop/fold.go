package loop

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Summaries: when the transcript passes its share of the model's window
// (or the provider refuses a prompt as too long, or an operator asks), the
// oldest steps are folded into one summary the model writes, in a call of
// its own that offers no tools, over a bounded view of what it folds. The
// goal, the last turns, the system block (the boundary section, the plan,
// the todo list) stay as they are.

// SummaryInstruction is the fixed instruction of every summarising call.
const SummaryInstruction = `You summarise the earlier part of a coding agent's work so that the agent can go on with its goal within its context window: what you write replaces the steps shown, which the agent will not see again.

Write plain text, at most a few hundred words. Keep every fact the rest of the work may need, exactly as it was seen: file paths, names, identifiers, values, numbers, commands and what they printed that mattered, errors and what fixed them, decisions taken and why, and what remains to do. Leave out what no later step needs. Do not address the user; do not ask anything; call no tool.`

// FoldPlan is a fold the loop asks for: the transcript's messages
// [From, To) into one summary. Half says the view is halved (the
// summarising call's own window was passed once); Request is the
// operator's request the fold answers ("" for one the window asked for).
type FoldPlan struct {
	From    int    `json:"from"`
	To      int    `json:"to"`
	Half    bool   `json:"half,omitempty"`
	Request string `json:"request,omitempty"`
	// FirstStep and LastStep are the steps the fold covers.
	FirstStep int `json:"first_step"`
	LastStep  int `json:"last_step"`
}

// Summary is a fold made: the steps it covers, its size, and what its
// call cost.
type Summary struct {
	// Before is the step the fold was made before.
	Before    int    `json:"before"`
	FirstStep int    `json:"first_step"`
	LastStep  int    `json:"last_step"`
	Messages  int    `json:"messages"`
	Chars     int    `json:"chars"`
	Tokens    Usage  `json:"tokens"`
	Request   string `json:"request,omitempty"`
}

// Summarize asks for a summary of the plan's messages: a model call that
// offers no tools, safe to repeat.
type Summarize struct {
	Key  Key
	Plan FoldPlan
}

// EffectKey returns the effect's key.
func (e Summarize) EffectKey() Key { return e.Key }

// Recovery: a summarising call is asked again (nothing of the world
// changed).
func (Summarize) Recovery() Recovery { return SafeToRepeat }

// KindSummary is the effect kind of a summarising call.
const KindSummary EffectKind = "summary"

// Summarized is a summarising call's text and usage.
type Summarized struct {
	Text  string
	Usage Usage
}

// SummaryFailed is a summarising call that failed.
type SummaryFailed struct {
	Class   FailureClass
	Message string
}

// FoldAsked is an operator's request to fold now (rein run fold): taken
// before the next model step.
type FoldAsked struct{ Request string }

func (Summarized) input()    {}
func (SummaryFailed) input() {}
func (FoldAsked) input()     {}

// The bounds of a fold's view and its summary, in characters of the
// window (its tokens times charsPerToken): the view is at most half the
// window, each message of it at most viewMessageChars (halved with the
// view), and a summary at most an eighth of the window.
const (
	viewShare        = 0.5
	viewMessageChars = 4000
	summaryShare     = 0.125
	foldedPrefix     = "[rein: steps %d to %d were folded into this summary, written by the model when the transcript passed its window; the trace keeps them whole]\n"
)

// SummaryTokens is the cap of a summarising call's response for a window
// of n tokens.
func SummaryTokens(window, responseMax int) int {
	return max(256, min(int(float64(window)*summaryShare), responseMax))
}

// viewLimits are the view's bound and each message's, in characters.
func (s *State) viewLimits(half bool) (total, each int) {
	total = int(float64(s.Contract.ContextTokens) * viewShare * charsPerToken)
	each = min(viewMessageChars, total/4)
	if half {
		total, each = total/2, each/2
	}
	return total, each
}

// SummaryView is what a summarising call is shown of the plan's
// messages: each as its role says, bounded (its head and its tail).
func (s *State) SummaryView(p FoldPlan) string {
	_, each := s.viewLimits(p.Half)
	var b strings.Builder
	for _, m := range s.Transcript[p.From:p.To] {
		b.WriteString(viewOf(m, each))
	}
	return b.String()
}

// viewOf is one message of a view, at most about each characters.
func viewOf(m Message, each int) string {
	var b strings.Builder
	switch m.Role {
	case RoleAssistant:
		b.WriteString("## the agent\n")
	case RoleTool:
		fmt.Fprintf(&b, "## the result of %s\n", m.ToolCallID)
	default:
		b.WriteString("## rein\n")
	}
	text := m.Text
	for _, c := range m.ToolCalls {
		text += fmt.Sprintf("\n[call %s: %s %s]", c.ID, c.Name, c.Args)
	}
	b.WriteString(clip(text, each))
	b.WriteString("\n\n")
	return b.String()
}

// clip is s cut to its head and tail, n characters in all, with what was
// cut said between them.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, n/2
	cutAt := func(i int) int {
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return i
	}
	h, t := cutAt(head), cutAt(len(s)-tail)
	if t < h {
		t = h
	}
	return s[:h] + fmt.Sprintf("\n[... %d characters not shown ...]\n", t-h) + s[t:]
}

// transcriptChars is the transcript's size as fit counts it.
func (s *State) transcriptChars(from int) int {
	size := 0
	for _, m := range s.Transcript[from:] {
		size += len(m.Text)
		for _, c := range m.ToolCalls {
			size += len(c.Args)
		}
	}
	return size
}

// prepare readies the transcript for the model's next call: an operator's
// fold, or a fold when the transcript passes its share of the window,
// where there is one to make and a fold was not just given up; else the
// oldest observations set aside (fit).
func (s *State) prepare() {
	if s.Fold != nil {
		return
	}
	limit := s.limit()
	if s.FoldAsked != "" {
		if p, ok := s.planFold(0); ok {
			p.Request = s.FoldAsked
			s.Fold = &p
			return
		}
		// Nothing to fold: the request is answered with no summary.
		s.Summaries = append(s.Summaries, Summary{Before: s.Steps + 1, Request: s.FoldAsked})
		s.FoldAsked = ""
	}
	if s.transcriptChars(0) > limit && s.Steps >= s.NoFoldUntil {
		if p, ok := s.planFold(limit / 2); ok {
			s.Fold = &p
			return
		}
	}
	s.fit()
}

// planFold is the fold of the oldest steps that leaves at most target
// characters after it (or, with target 0, as much as the view holds),
// keeping the goal and the last turns; ok is false when there is none
// (fewer turns than are kept).
func (s *State) planFold(target int) (FoldPlan, bool) {
	total, each := s.viewLimits(false)
	from, to := 1, 0
	view := 0
	// The cut is before an assistant message (a step's start), so that no
	// tool call is parted from its result, and keeps the last turns.
	for i := from; i < len(s.Transcript)-keepLastTurns; i++ {
		if i > from && s.Transcript[i].Role == RoleAssistant {
			if view > total {
				break
			}
			to = i
			if target > 0 && s.transcriptChars(i) <= target {
				break
			}
		}
		view += len(viewOf(s.Transcript[i], each))
	}
	if to == 0 {
		return FoldPlan{}, false
	}
	steps := 0
	for _, m := range s.Transcript[from:to] {
		if m.Role == RoleAssistant {
			steps++
		}
	}
	if steps == 0 {
		return FoldPlan{}, false
	}
	return FoldPlan{From: from, To: to, FirstStep: s.Folded + 1, LastStep: s.Folded + steps}, true
}

// summarized folds a summary in: the plan's messages become one, and the
// reads kept of files are renumbered.
func (s *State) summarized(in Summarized) {
	p := *s.Fold
	s.Fold = nil
	s.Tokens = s.Tokens.Add(in.Usage)
	// A summary is at most an eighth of the window, and a quarter of the
	// transcript's share of it.
	limit := min(int(float64(s.Contract.ContextTokens)*summaryShare*charsPerToken), s.limit()/4)
	text := clip(strings.TrimSpace(in.Text), limit)
	msg := Message{Role: RoleUser, Text: fmt.Sprintf(foldedPrefix, p.FirstStep, p.LastStep) + text}
	n := p.To - p.From
	rest := append([]Message{msg}, s.Transcript[p.To:]...)
	s.Transcript = append(s.Transcript[:p.From], rest...)
	for path, idx := range s.Reads {
		var kept []int
		for _, i := range idx {
			switch {
			case i < p.From:
				kept = append(kept, i)
			case i >= p.To:
				kept = append(kept, i-n+1)
			}
		}
		if len(kept) == 0 {
			delete(s.Reads, path)
		} else {
			s.Reads[path] = kept
		}
	}
	var stale []StaleRead
	for _, r := range s.Stale {
		switch {
		case r.Index < p.From:
			stale = append(stale, r)
		case r.Index >= p.To:
			r.Index += 1 - n
			stale = append(stale, r)
		}
	}
	s.Stale = stale
	s.Folded = p.LastStep
	if p.Request != "" && p.Request == s.FoldAsked {
		s.FoldAsked = ""
	}
	s.Summaries = append(s.Summaries, Summary{Before: s.Steps + 1, FirstStep: p.FirstStep, LastStep: p.LastStep, Messages: n, Chars: len(msg.Text), Tokens: in.Usage, Request: p.Request})
	switch {
	case s.Squeezed:
		// The provider refused the prompt as too long: what the fold
		// left of the older observations goes too.
		s.fitTo(0)
	case s.transcriptChars(0) > s.limit():
		// The fold did not bring the transcript within its share (a long
		// summary, long last turns): no fold again for a few steps, the
		// oldest observations set aside meanwhile.
		s.NoFoldUntil = s.Steps + keepLastTurns
	}
}

// answered says an operator's fold request was taken already.
func (s *State) answered(request string) bool {
	for _, m := range s.Summaries {
		if m.Request == request {
			return true
		}
	}
	return false
}

// summaryFailed folds in a summarising call that failed: a call past its
// own window is made once more over half the view; a request or a key
// refused ends the run; otherwise the fold is given up until the next
// step, and the oldest observations are set aside instead.
func (s *State) summaryFailed(in SummaryFailed) {
	if in.Class == FailContextOverflow && !s.Fold.Half {
		s.Fold.Half = true
		return
	}
	if in.Class == FailAuth || in.Class == FailRequest {
		// What refuses this call refuses the model's next one too (a
		// replay that differs among them): the run ends, saying so.
		s.Fold = nil
		s.end(ProviderFailed, fmt.Sprintf("the summarising call failed (%s): %s", in.Class, in.Message))
		return
	}
	if s.Fold.Request != "" && s.Fold.Request == s.FoldAsked {
		s.Summaries = append(s.Summaries, Summary{Before: s.Steps + 1, Request: s.FoldAsked})
		s.FoldAsked = ""
	}
	s.Fold = nil
	s.NoFoldUntil = s.Steps + 1
	s.FoldFailures++
	if s.Squeezed {
		// The provider refused the prompt as too long: all that can be
		// set aside goes before it is asked once more.
		s.fitTo(0)
		return
	}
	s.fit()
}
