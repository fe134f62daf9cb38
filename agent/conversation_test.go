package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// echoModel replies to the last message with R(that message), keeping
// what it was sent: it answers from what it was sent, nothing else.
type echoModel struct {
	mu   sync.Mutex
	reqs []Request
}

func (m *echoModel) Name() string  { return "echo" }
func (m *echoModel) Model() string { return "echo-1" }
func (m *echoModel) Stream(_ context.Context, req Request) (*Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1].Text
	return &Response{Text: "R(" + last + ")", Finish: FinishStop, Usage: Usage{Input: 10, Output: 2}}, nil
}

// texts are the texts of msgs, joined by |.
func texts(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return strings.Join(out, "|")
}

// racingStore lets another sender take the next turn between a Send's
// reading of the head and its claim of the turn after it.
type racingStore struct {
	*sqlite.Store
	once sync.Once
}

func (r *racingStore) ConversationTurns(ctx context.Context, conv string) ([]trace.ConversationTurn, error) {
	turns, err := r.Store.ConversationTurns(ctx, conv)
	r.once.Do(func() {
		r.Store.Append(ctx, trace.ConversationTurn{Conv: conv, Turn: turns[len(turns)-1].Turn + 1, RunID: "the-other-sender", At: time.Now()})
	})
	return turns, err
}

// TestConversation: a conversation of three turns goes on from each
// turn's transcript (each request holds every turn before, and the
// model's replies); branched at turn 2, the branch goes on from turn 2's
// transcript, and the two have their own heads; a sender whose turn was
// taken meanwhile is refused, its run ended before any model call.
func TestConversation(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("REIN_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
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
	m := &echoModel{}
	o := Options{Provider: m, Tool: tool.Config{Policy: p, Store: store}}
	ctx := context.Background()
	conv, err := NewConversation(ctx, store, &RunConfig{Provider: "echo", Model: "echo-1"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(conv, msg string) Outcome {
		t.Helper()
		out, err := Send(ctx, conv, Contract{Goal: msg, Workspace: ws}, o)
		if err != nil || out.Kind != Finished {
			t.Fatalf("send %q: %+v %v", msg, out, err)
		}
		return out
	}
	for _, msg := range []string{"one", "two", "three"} {
		send(conv, msg)
	}
	if got := texts(m.reqs[2].Messages); got != "one|R(one)|two|R(two)|three" {
		t.Fatalf("turn 3 was sent %q", got)
	}
	branch, err := BranchConversation(ctx, store, conv, 2)
	if err != nil {
		t.Fatal(err)
	}
	send(branch, "three, again")
	if got := texts(m.reqs[3].Messages); got != "one|R(one)|two|R(two)|three, again" {
		t.Fatalf("the branch's turn was sent %q", got)
	}
	for _, c := range []struct {
		conv string
		turn int
		want string
	}{
		{conv, 3, "one|R(one)|two|R(two)|three|R(three)"},
		{branch, 1, "one|R(one)|two|R(two)|three, again|R(three, again)"},
		{branch, 0, "one|R(one)|two|R(two)"},
	} {
		h, err := ConversationHistory(ctx, store, c.conv, c.turn)
		if err != nil || texts(h) != c.want {
			t.Errorf("%s turn %d: %q %v, want %q", c.conv, c.turn, texts(h), err, c.want)
		}
	}
	heads := map[string]int{}
	for _, c := range []string{conv, branch} {
		turns, _ := store.ConversationTurns(ctx, c)
		heads[c] = turns[len(turns)-1].Turn
	}
	if heads[conv] != 3 || heads[branch] != 1 {
		t.Errorf("heads %v", heads)
	}
	if starts, _ := store.ConversationStarts(ctx); len(starts) != 2 || starts[1].From != conv || starts[1].FromTurn != 2 || !strings.Contains(starts[0].Config, `"echo-1"`) {
		t.Errorf("the conversations: %+v", starts)
	}
	if _, err := BranchConversation(ctx, store, conv, 7); err == nil {
		t.Error("a branch from a turn there is not")
	}

	// Another sender takes turn 4 between this one's reading of the
	// head and its claim.
	calls := len(m.reqs)
	race := &racingStore{Store: store}
	ro := o
	ro.Tool.Store = race
	out, err := Send(ctx, conv, Contract{Goal: "four", Workspace: ws}, ro)
	var taken *trace.TurnTakenError
	if !errors.As(err, &taken) || taken.Turn != 4 || out.Kind != Cancelled || len(m.reqs) != calls {
		t.Fatalf("a taken turn: %+v %v (%d model calls, %d before)", out, err, len(m.reqs), calls)
	}
	if cp, _ := store.LastCheckpoint(ctx, out.Run); cp == nil || cp.Status != "cancelled" {
		t.Errorf("the refused sender's run: %+v", cp)
	}

	// A turn that waits for a person is resumed before the next; one
	// cancelled while it waited leaves a call with no result, which the
	// next turn is sent answered (a provider refuses a call left
	// unanswered).
	conv3, _ := NewConversation(ctx, store, nil)
	ao := o
	seen := &seenModel{scriptModel: scriptModel{turns: [][]ToolCall{{call("", QuestionTool, `{"question":"Which?"}`)}}}}
	ao.Provider, ao.Responder = seen, Defer{}
	waiting, err := Send(ctx, conv3, Contract{Goal: "ask me", Workspace: ws}, ao)
	if err != nil || waiting.Kind != AwaitingAnswer {
		t.Fatalf("%+v %v", waiting, err)
	}
	if _, err := Send(ctx, conv3, Contract{Goal: "next", Workspace: ws}, ao); err == nil || !strings.Contains(err.Error(), "which has not ended (awaiting_answer): rein run resume") {
		t.Fatalf("a turn after one that waits: %v", err)
	}
	store.Append(ctx, trace.ApprovalRequest{RunID: waiting.Run, Request: "x9", Kind: CancelRequest, Shown: "cancel", At: time.Now()})
	if out, err := Resume(ctx, waiting.Run, ao); err != nil || out.Kind != Cancelled {
		t.Fatalf("the cancelled wait: %+v %v", out, err)
	}
	if out, err := Send(ctx, conv3, Contract{Goal: "next", Workspace: ws}, ao); err != nil || out.Kind != Finished {
		t.Fatalf("the turn after a cancelled one: %+v %v", out, err)
	}
	last := seen.reqs[len(seen.reqs)-1].Messages
	calls, results := 0, 0
	for _, m := range last {
		calls += len(m.ToolCalls)
		if m.Role == RoleTool {
			results++
		}
	}
	if calls != 1 || results != 1 || !strings.Contains(texts(last), "ask_question: not run: the turn ended before this call ran|next") {
		t.Fatalf("the next turn was sent %d calls and %d results: %q", calls, results, texts(last))
	}
	if _, err := Send(ctx, branch, Contract{Goal: "elsewhere", Workspace: t.TempDir()}, o); err == nil || !strings.Contains(err.Error(), "which worked in "+ws) {
		t.Fatalf("a turn in another workspace: %v", err)
	}
}
