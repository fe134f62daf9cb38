package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// scriptedResponder approves plans and answers questions with a fixed
// text: a person who says the same thing every time.
type scriptedResponder struct{ answer string }

func (s scriptedResponder) Respond(_ context.Context, a Ask) (Reply, error) {
	if a.Kind == AskPlan {
		return Reply{Answer: ReplyYes, By: "the test"}, nil
	}
	return Reply{Answer: ReplyAnswer, Text: s.answer, By: "the test"}, nil
}

// TestReplayDepth: a run that goes through the plan gate, asks a
// question, keeps a todo list, commits with git_commit and ends with
// --commit replays against its own recording to the same outcome and
// the same canonical trace, three times over (git's dates fixed, so that
// git_commit's hash, which the model sees, is the same; --commit's
// message names the run, so its hash is the run's own); a different answer to the question
// makes the replay fail on the first request that differs.
func TestReplayDepth(t *testing.T) {
	requireSandbox(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	t.Setenv("REIN_CACHE_DIR", filepath.Join(root, "cache"))
	dated := []string{"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}
	for _, kv := range dated {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // the host's git (--commit) too
	}
	git := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(testenv.Git(t, ws, args...))
	}
	reset := func() {
		os.RemoveAll(ws)
		os.MkdirAll(ws, 0o755)
		git("init", "-q", "-b", "main")
		git("config", "user.email", "dev@example.com")
		git("config", "user.name", "Dev")
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
		git("add", ".")
		git("commit", "-qm", "start")
	}
	store, err := sqlite.Open(filepath.Join(root, "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := Contract{Goal: "make a.txt say two, and commit it", Workspace: ws, PlanGate: true, Commit: true, Verify: &Gate{Line: "cat a.txt"}}
	run := func(p Provider, answer string) Outcome {
		t.Helper()
		reset()
		mode := policy.ModeAuto
		pol, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), NoFiles: true, Mode: &mode,
			Rules: []policy.Rule{{Act: policy.ActExec, Effect: policy.Allow, Pattern: "git *"}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(context.Background(), c, Options{Provider: p, Responder: scriptedResponder{answer},
			Tool: tool.Config{Policy: pol, Store: store, Profile: sandbox.Profile{Env: append([]string{"PATH=" + os.Getenv("PATH")}, dated...)}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cs := newChatServer(t,
		turn{calls: []ToolCall{call("c1", "propose_plan", `{"steps":["write two into a.txt","commit it"]}`)}},
		turn{calls: []ToolCall{call("c2", "ask_question", `{"question":"With a newline at the end?"}`)}},
		turn{calls: []ToolCall{call("c3", "todo_write", `{"items":[{"text":"write a.txt","state":"in_progress"},{"text":"commit","state":"pending"}]}`)}},
		turn{calls: []ToolCall{call("c4", "write_file", `{"path":"a.txt","content":"two\n"}`)}},
		turn{calls: []ToolCall{call("c5", "git_add", `{"paths":["a.txt"]}`)}},
		turn{calls: []ToolCall{call("c6", "git_commit", `{"message":"a.txt says two"}`)}},
		turn{text: "Done: a.txt says two, committed."},
	)
	first := run(chatFor(cs), "yes, with one")
	if first.Kind != Succeeded || first.Commit == nil {
		t.Fatalf("%+v", first)
	}
	want, err := CanonicalTrace(context.Background(), store, first.Run)
	for _, s := range []string{"propose_plan", "approved by the test", "yes, with one", "todo_write", "commit "} {
		if err != nil || !strings.Contains(want, s) {
			t.Fatalf("the trace lacks %q: %v\n%s", s, err, want)
		}
	}
	calls, err := store.ProviderCalls(context.Background(), first.Run)
	if err != nil || len(calls) != 7 {
		t.Fatalf("%d calls %v", len(calls), err)
	}
	for i := range 3 {
		out := run(Replay(calls), "yes, with one")
		got, err := CanonicalTrace(context.Background(), store, out.Run)
		if err != nil || out.Kind != Succeeded || got != want || out.Commit == nil || out.Commit.Branch != "rein/"+out.Run || out.Commit.Error != "" {
			t.Fatalf("replay %d: %+v %+v %v\n%s", i, out, out.Commit, err, firstDifference(want, got))
		}
	}
	if out := run(Replay(calls), "no"); out.Kind != ProviderFailed || !strings.Contains(out.Reason, "differs from the recording") {
		t.Fatalf("another answer: %+v", out)
	}
}
