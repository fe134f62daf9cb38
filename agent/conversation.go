package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/trace"
)

// A conversation is a chain of runs over one transcript, one run a turn:
// Send runs a turn whose transcript is the one the turn before ended
// with, then the person's message. Its turns are rows of the trace
// (trace.ConversationTurn), each appended once, so that two senders
// cannot both extend the same head; BranchConversation starts a new
// conversation from any turn of another, which keeps its own.

// maxBranchDepth bounds the branches of branches a history is read
// through.
const maxBranchDepth = 100

// conversations is o's store, as conversations need it.
func conversations(store trace.Store) (trace.Conversations, error) {
	cs, ok := store.(trace.Conversations)
	if !ok || cs == nil {
		return nil, errors.New("agent: conversations need a durable store that keeps them (the SQLite trace)")
	}
	return cs, nil
}

func newConvID() string {
	var b [6]byte
	rand.Read(b[:])
	return "c" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// NewConversation starts a conversation in store, its runs configured by
// rc (kept with it; nil for none), and returns its id. No model is
// called until Send.
func NewConversation(ctx context.Context, store trace.Store, rc *RunConfig) (string, error) {
	cs, err := conversations(store)
	if err != nil {
		return "", err
	}
	cfg := ""
	if rc != nil {
		data, _ := json.Marshal(rc)
		cfg = string(data)
	}
	id := newConvID()
	_, err = cs.Append(ctx, trace.ConversationTurn{Conv: id, Turn: 0, Config: cfg, At: time.Now()})
	return id, err
}

// BranchConversation starts a new conversation that goes on from turn of
// conv (0: from its start), with conv's configuration, and returns its
// id. conv keeps its turns.
func BranchConversation(ctx context.Context, store trace.Store, conv string, turn int) (string, error) {
	cs, err := conversations(store)
	if err != nil {
		return "", err
	}
	turns, err := conversationTurns(ctx, cs, conv)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(turns, func(t trace.ConversationTurn) bool { return t.Turn == turn }) {
		return "", fmt.Errorf("agent: conversation %s has no turn %d (its head is turn %d)", conv, turn, turns[len(turns)-1].Turn)
	}
	id := newConvID()
	_, err = cs.Append(ctx, trace.ConversationTurn{Conv: id, Turn: 0, From: conv, FromTurn: turn, Config: turns[0].Config, At: time.Now()})
	return id, err
}

// ConversationConfig is how conv's runs are configured, as NewConversation
// kept it (nil for none).
func ConversationConfig(ctx context.Context, store trace.Store, conv string) (*RunConfig, error) {
	cs, err := conversations(store)
	if err != nil {
		return nil, err
	}
	turns, err := conversationTurns(ctx, cs, conv)
	if err != nil {
		return nil, err
	}
	if turns[0].Config == "" {
		return nil, nil
	}
	var rc RunConfig
	if err := json.Unmarshal([]byte(turns[0].Config), &rc); err != nil {
		return nil, fmt.Errorf("agent: conversation %s's configuration: %v", conv, err)
	}
	return &rc, nil
}

// conversationTurns are conv's turns, refusing a conversation there is
// none of.
func conversationTurns(ctx context.Context, cs trace.Conversations, conv string) ([]trace.ConversationTurn, error) {
	turns, err := cs.ConversationTurns(ctx, conv)
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 || turns[0].Turn != 0 {
		return nil, fmt.Errorf("agent: no conversation %s in the trace", conv)
	}
	return turns, nil
}

// ConversationHistory is the transcript of conv after its turn (turn 0:
// what it branched from, or nothing): the messages the next turn's run
// goes on from.
func ConversationHistory(ctx context.Context, store trace.Store, conv string, turn int) ([]Message, error) {
	cs, err := conversations(store)
	if err != nil {
		return nil, err
	}
	run, err := historyRun(ctx, cs, conv, turn)
	if err != nil || run == "" {
		return nil, err
	}
	st, err := LoadState(ctx, cs, run)
	if err != nil {
		return nil, fmt.Errorf("agent: conversation %s's turn %d (run %s): %w", conv, turn, run, err)
	}
	return answered(st.Transcript), nil
}

// historyRun is the run whose transcript conv has after its turn,
// through the branches it came from, or "" for none.
func historyRun(ctx context.Context, cs trace.Conversations, conv string, turn int) (string, error) {
	for range maxBranchDepth {
		turns, err := conversationTurns(ctx, cs, conv)
		if err != nil {
			return "", err
		}
		i := slices.IndexFunc(turns, func(t trace.ConversationTurn) bool { return t.Turn == turn })
		switch {
		case i < 0:
			return "", fmt.Errorf("agent: conversation %s has no turn %d", conv, turn)
		case turn > 0:
			return turns[i].RunID, nil
		case turns[0].From == "":
			return "", nil
		}
		conv, turn = turns[0].From, turns[0].FromTurn
	}
	return "", fmt.Errorf("agent: conversation %s branches from more than %d others", conv, maxBranchDepth)
}

// Send runs the next turn of conv: a run whose transcript is the one the
// head turn ended with, then c.Goal, the person's message (c's other
// fields as for Run; with no Verify, a reply with no tool call ends the
// turn). The run is the conversation's next turn once it starts: a
// sender that finds the turn taken by another (the head moved) is
// refused with a *trace.TurnTakenError, its run ended cancelled before
// any model call.
func Send(ctx context.Context, conv string, c Contract, o Options) (Outcome, error) {
	cs, err := conversations(o.Tool.Store)
	if err != nil {
		return Outcome{}, err
	}
	turns, err := conversationTurns(ctx, cs, conv)
	if err != nil {
		return Outcome{}, err
	}
	head := turns[len(turns)-1].Turn
	from, err := historyRun(ctx, cs, conv, head)
	if err != nil {
		return Outcome{}, err
	}
	var history []Message
	if from != "" {
		st, err := LoadState(ctx, cs, from)
		if err != nil {
			return Outcome{}, err
		}
		// A turn goes on from one that has ended (the run may wait for a
		// person, or have died, and be resumed first), in the same
		// workspace.
		if st.Done == nil || st.Waiting != nil && string(st.Waiting.Kind) == string(st.Done.Kind) {
			status, _ := status(st)
			return Outcome{}, fmt.Errorf("agent: conversation %s goes on from run %s, which has not ended (%s): rein run resume %s first", conv, from, status, from)
		}
		if st.Contract.Workspace != c.Workspace {
			return Outcome{}, fmt.Errorf("agent: conversation %s goes on from run %s, which worked in %s, not %s", conv, from, st.Contract.Workspace, c.Workspace)
		}
		history = answered(st.Transcript)
	}
	if c.Config == nil && turns[0].Config != "" {
		var rc RunConfig
		if json.Unmarshal([]byte(turns[0].Config), &rc) == nil {
			c.Config = &rc
		}
	}
	c.Conversation = &ConversationRef{ID: conv, Turn: head + 1}
	o.history = history
	x, err := Open(ctx, c, o)
	if err != nil {
		return Outcome{}, err
	}
	run := x.d.router.RunID()
	if _, err := cs.Append(ctx, trace.ConversationTurn{Conv: conv, Turn: head + 1, RunID: run, At: time.Now()}); err != nil {
		if now, rerr := cs.ConversationTurns(ctx, conv); rerr == nil && slices.ContainsFunc(now, func(t trace.ConversationTurn) bool { return t.Turn == head+1 }) {
			err = &trace.TurnTakenError{Conv: conv, Turn: head + 1}
		}
		// The run was opened: it ends, recorded, before any model call.
		x.State().Apply(loop.Stopped{Reason: "not the conversation's turn: " + err.Error()}, x.Now())
		out, _ := x.Finish(ctx, *x.State().Done)
		return out, err
	}
	return drive(ctx, x)
}

// answered is msgs with every tool call that has no result given one: a
// turn cancelled while it waited, or in the middle of a group of calls,
// ends with calls no tool message answers, which every provider refuses
// in the next turn's request. Each result goes after those its response
// has.
func answered(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		out = append(out, m)
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		got := map[string]bool{}
		for i+1 < len(msgs) && msgs[i+1].Role == RoleTool {
			i++
			got[msgs[i].ToolCallID] = true
			out = append(out, msgs[i])
		}
		for _, c := range m.ToolCalls {
			if !got[c.ID] {
				out = append(out, Message{Role: RoleTool, ToolCallID: c.ID, Text: c.Name + ": not run: the turn ended before this call ran"})
			}
		}
	}
	return out
}
