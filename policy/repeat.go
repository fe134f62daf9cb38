package policy

import (
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/reinhq/rein/shell"
)

// RepeatTracker counts refusals within a run. A refusal is deterministic,
// so asking again cannot change it; when the same refused operation comes
// back Limit times, the run is stopped with an answer that names it.
type RepeatTracker struct {
	// Limit is how many identical refusals stop the run; zero means
	// DefaultRepeatedRefusals.
	Limit int

	mu     sync.Mutex
	counts map[string]int
}

// Stop is the answer given when the tracker stops a run.
type Stop struct {
	Tool    string
	Target  string
	Refusal string
	Count   int
}

func (s *Stop) Error() string {
	return fmt.Sprintf("stopped: %s on %q was refused %d times for the same reason (%s); a refusal does not change when asked again: change the approach or ask the user",
		s.Tool, s.Target, s.Count, s.Refusal)
}

// Note records one refusal of tool on target with the refusal's text, and
// returns a *Stop when that same refusal has now reached the limit.
// Spacing, quoting, a leading ./ and trailing slashes do not make a
// refusal different.
func (t *RepeatTracker) Note(tool, target, refusal string) *Stop {
	limit := t.Limit
	if limit <= 0 {
		limit = DefaultRepeatedRefusals
	}
	key := tool + "\x00" + normalizeTarget(target) + "\x00" + refusal
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]int{}
	}
	t.counts[key]++
	if n := t.counts[key]; n >= limit {
		return &Stop{Tool: tool, Target: target, Refusal: refusal, Count: n}
	}
	return nil
}

// Counts are the refusals counted so far, by the operation refused and
// its refusal: what a run that goes on in another process carries over.
func (t *RepeatTracker) Counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.counts)
}

// Restore sets the counts to c, the Counts of the run's process before.
func (t *RepeatTracker) Restore(c map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts = maps.Clone(c)
}

// normalizeTarget sets aside what does not change an operation: spacing,
// quoting, a leading ./ and trailing slashes of each word.
func normalizeTarget(target string) string {
	var words []string
	if line, err := (shell.Parser{Home: "~"}).Parse(target); err == nil {
		words = lineWords(line, stageWords)
	} else {
		words = strings.Fields(strings.NewReplacer(`"`, "", `'`, "").Replace(target))
	}
	for i, w := range words {
		for strings.HasPrefix(w, "./") && len(w) > 2 {
			w = w[2:]
		}
		for len(w) > 1 && strings.HasSuffix(w, "/") {
			w = w[:len(w)-1]
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// lineWords lays a line out as words: each stage's, as words makes
// them, with the connectors and pipes between.
func lineWords(l *shell.Line, words func(*shell.Stage) []string) []string {
	var parts []string
	for i, pl := range l.Pipelines {
		if i > 0 {
			parts = append(parts, l.Connectors[i-1].String())
		}
		for j, st := range pl.Stages {
			if j > 0 {
				parts = append(parts, "|")
			}
			parts = append(parts, words(st)...)
		}
	}
	return parts
}

func stageWords(st *shell.Stage) []string {
	if st.Kind == shell.Cd {
		return []string{"cd", st.Dir}
	}
	w := append([]string(nil), st.Argv...)
	for _, r := range st.Redirects {
		w = append(w, fmt.Sprint(r.Fd)+r.Op.String(), r.Path+r.Data)
	}
	return w
}
