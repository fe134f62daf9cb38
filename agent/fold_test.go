package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// foldModel reads a file of facts, then reads big files one a step, then
// answers with the code word it finds in what it was sent. Asked for a
// summary (the summarising instruction, no tools), it keeps the lines of
// facts it is shown. It counts its steps across folds (the summary's
// message names the steps it covers), and notes each request larger than
// the window.
type foldModel struct {
	window, reads int
	mu            sync.Mutex
	over          []string
	summaries     int
	last          Request
}

var foldedSteps = regexp.MustCompile(`^\[rein: steps \d+ to (\d+) were folded`)

func requestChars(req Request) int {
	n := len(req.SystemText())
	for _, m := range req.Messages {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return n
}

func (m *foldModel) Name() string  { return "fold" }
func (m *foldModel) Model() string { return "fold-1" }
func (m *foldModel) Stream(_ context.Context, req Request) (*Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	size := requestChars(req)
	if size/4 > m.window {
		m.over = append(m.over, fmt.Sprintf("a request of %d characters (%d tokens) for a window of %d", size, size/4, m.window))
	}
	usage := Usage{Input: int64(size / 4), Output: 50}
	if req.System == loop.SummaryInstruction {
		if len(req.Tools) > 0 {
			m.over = append(m.over, "a summarising call offered tools")
		}
		m.summaries++
		var facts []string
		for _, l := range strings.Split(req.Messages[0].Text, "\n") {
			if strings.Contains(l, "FACT:") && !strings.HasPrefix(l, "[call") {
				facts = append(facts, strings.TrimSpace(l))
			}
		}
		return &Response{Text: fmt.Sprintf("Read %d files so far.\n%s", m.reads, strings.Join(facts, "\n")), Finish: FinishStop, Usage: usage}, nil
	}
	m.last = req
	step := 0
	for _, msg := range req.Messages {
		if sm := foldedSteps.FindStringSubmatch(msg.Text); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			step += n
		}
		if msg.Role == RoleAssistant {
			step++
		}
	}
	switch {
	case step == 0:
		return &Response{ToolCalls: []ToolCall{{Name: "read_file", Args: `{"path":"facts.txt"}`}}, Finish: FinishToolCalls, Usage: usage}, nil
	case step <= m.reads:
		return &Response{ToolCalls: []ToolCall{{Name: "read_file", Args: fmt.Sprintf(`{"path":"big-%d.txt"}`, step)}}, Finish: FinishToolCalls, Usage: usage}, nil
	}
	word := "UNKNOWN"
	for _, msg := range req.Messages {
		if w := regexp.MustCompile(`FACT: the code word is (\w+)`).FindStringSubmatch(msg.Text); w != nil {
			word = w[1]
		}
	}
	return &Response{Text: fmt.Sprintf(`{"word": %q}`, word), Finish: FinishStop, Usage: usage}, nil
}

// TestLongRunFolds: a run whose transcript is ten times its window ends
// through summaries: no request passes the window, no summarising call
// offers tools, and the model's last answer needs a fact that only a
// summary still holds; the summaries are in the trace, their cost in the
// run's tokens; a replay of the run makes the same requests.
func TestLongRunFolds(t *testing.T) {
	ws := t.TempDir()
	const window, reads, size = 16384, 110, 6000
	os.WriteFile(filepath.Join(ws, "facts.txt"), []byte("FACT: the code word is PAPAYA\n"), 0o644)
	for i := 1; i <= reads; i++ {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("big-%d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line %d of a big file\n", i), size/22)), 0o644)
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	c := Contract{Goal: "read the files, then say the code word", Workspace: ws, ContextTokens: window, Budget: Budget{Steps: reads + 10},
		OutputSchema: json.RawMessage(`{"type":"object","required":["word"]}`)}
	m := &foldModel{window: window, reads: reads}
	out, err := Run(context.Background(), c, Options{Provider: m, Tool: tool.Config{Policy: p, Store: store}})
	if err != nil || out.Kind != Finished || string(out.Answer) != `{"word":"PAPAYA"}` {
		t.Fatalf("%+v %v", out, err)
	}
	if len(m.over) > 0 {
		t.Errorf("%d requests passed the window, the first: %s", len(m.over), m.over[0])
	}
	// The fact is in the last request only in a summary.
	for _, msg := range m.last.Messages {
		if strings.Contains(msg.Text, "PAPAYA") && !foldedSteps.MatchString(msg.Text) {
			t.Errorf("the fact is outside a summary: %.100q", msg.Text)
		}
	}
	sums, err := store.Summaries(context.Background(), out.Run)
	if err != nil || len(sums) != m.summaries || len(sums) < 2 {
		t.Fatalf("%d summaries recorded, %d made: %v", len(sums), m.summaries, err)
	}
	calls, _ := store.ProviderCalls(context.Background(), out.Run)
	var in, outTok int64
	summary := 0
	for _, pc := range calls {
		if pc.Purpose == "summary" {
			summary++
			in, outTok = in+pc.Input, outTok+pc.Output
		}
	}
	total := 0
	for _, pc := range calls {
		total += int(pc.Input)
	}
	if summary != len(sums) || out.Tokens.Input < in {
		t.Errorf("%d summarising calls recorded, %d summaries; %d input tokens in all", summary, len(sums), out.Tokens.Input)
	}
	var transcript int
	for i := 1; i <= reads; i++ {
		transcript += size
	}
	t.Logf("a transcript of about %d tokens (%.1f windows) in %d steps: %d summaries cost %d input and %d output tokens, %.1f%% of the run's %d input tokens",
		transcript/4, float64(transcript/4)/window, out.Steps, len(sums), in, outTok, 100*float64(in)/float64(out.Tokens.Input), out.Tokens.Input)
	if transcript/4 < 10*window {
		t.Errorf("the transcript is %d tokens, less than ten windows", transcript/4)
	}

	t.Logf("system %d characters, tools %d", len(m.last.System), requestChars(Request{Tools: m.last.Tools}))
	// Replayed, the run makes the same requests, summaries and all.
	store2, _ := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	defer store2.Close()
	rout, err := Run(context.Background(), c, Options{Provider: Replay(calls), Tool: tool.Config{Policy: p, Store: store2}})
	if err != nil || rout.Kind != Finished || string(rout.Answer) != `{"word":"PAPAYA"}` {
		t.Fatalf("replayed: %+v %v", rout, err)
	}
}
