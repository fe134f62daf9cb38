package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// The test binary serves as the sandbox's init, as rein's binary does.
func TestMain(m *testing.M) {
	sandbox.Main()
	if code, ok := spawnKillChild(); ok {
		os.Exit(code)
	}
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

const (
	calcBroken = "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n"
	calcFixed  = "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"
	calcTest   = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"
	weakTest   = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"
)

var (
	fixtureOnce sync.Once
	fixtureRoot string
)

// fixture lays out a Go module with a failing test, always at the same
// path, so that the workspace's build cache is warm after the first run.
func fixture(t *testing.T, extra map[string]string) string {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the agent's tests run commands in the sandbox: %v", err)
	}
	fixtureOnce.Do(func() {
		d, err := os.MkdirTemp("", "rein-agent-test-")
		if err != nil {
			t.Fatal(err)
		}
		fixtureRoot, _ = filepath.EvalSymlinks(d)
	})
	t.Setenv("REIN_CACHE_DIR", filepath.Join(fixtureRoot, "state"))
	ws := filepath.Join(fixtureRoot, "ws")
	os.RemoveAll(ws)
	files := map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": calcBroken, "calc_test.go": calcTest,
		"AGENTS.md": "Run go test ./... before you say you are done.\n"}
	for k, v := range extra {
		files[k] = v
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// runScript runs a contract against a scripted model on a Chat
// Completions server, with the policy in auto mode and the contract's
// protect globs as the verification layer; it returns the outcome, the
// events and the server.
func runScript(t *testing.T, ws string, c Contract, turns ...turn) (Outcome, []Event, *chatServer) {
	t.Helper()
	return runScriptCtx(t, context.Background(), ws, c, turns...)
}

// runScriptCtx is runScript under the caller's context.
func runScriptCtx(t *testing.T, ctx context.Context, ws string, c Contract, turns ...turn) (Outcome, []Event, *chatServer) {
	t.Helper()
	cs := newChatServer(t, turns...)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode, Verification: c.Protect})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor("sk-test-key"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c.Workspace = ws
	var mu sync.Mutex
	var events []Event
	// A clock that a retry's wait moves on at once.
	clock := time.Now()
	out, err := Run(ctx, c, Options{
		Provider: chatFor(cs),
		Tool:     tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}},
		Observer: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		Now:      func() time.Time { mu.Lock(); defer mu.Unlock(); return clock },
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			clock = clock.Add(d)
			mu.Unlock()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, events, cs
}

func call(id, name, args string) ToolCall { return ToolCall{ID: id, Name: name, Args: args} }

func gateGoTest() *Gate { return &Gate{Line: "go test ./...", Timeout: 5 * time.Minute} }

// TestRunSucceeds: the model reads the code, fixes it, runs the tests and
// claims done; the gate passes and the run succeeds.
func TestRunSucceeds(t *testing.T) {
	ws := fixture(t, nil)
	out, events, cs := runScript(t, ws, Contract{Goal: "make go test pass", Verify: gateGoTest(), Protect: []string{"*_test.go"}},
		turn{calls: []ToolCall{call("c1", "read_file", `{"path":"calc.go"}`), call("c2", "read_file", `{"path":"calc_test.go"}`)},
			check: func(t *testing.T, req map[string]any) {
				sys := req["messages"].([]any)[0].(map[string]any)["content"].(string)
				for _, want := range []string{"## Your boundary", "sandbox (as its preflight found it here), with the network off", "quoted here-documents (<<'EOF')", "Protected, never to be written or deleted (the gate's own files): *_test.go", "`go test ./...`", "Run go test ./... before you say you are done."} {
					if !contains(sys, want) {
						t.Errorf("the system block lacks %q:\n%s", want, sys)
					}
				}
			}},
		turn{calls: []ToolCall{call("c3", "edit_file", `{"path":"calc.go","old":"a - b","new":"a + b"}`)},
			check: func(t *testing.T, req map[string]any) {
				if !contains(lastToolMessage(req), "Add(2, 3) = %d, want 5") {
					t.Errorf("the test file's read did not reach the model: %q", lastToolMessage(req))
				}
			}},
		turn{calls: []ToolCall{call("c4", "shell", `{"line":"go test ./..."}`)}},
		turn{text: "Fixed: Add subtracted.", check: func(t *testing.T, req map[string]any) {
			if !contains(lastToolMessage(req), "ok  \texample.com/calc") {
				t.Errorf("the test run did not reach the model: %q", lastToolMessage(req))
			}
		}},
	)
	if out.Kind != Succeeded || out.Steps != 4 || out.Gate == nil || out.Gate.Status != GatePassed || out.Tokens.Input != 48000 || out.Rung == "" {
		t.Fatalf("%+v", out)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "calc.go")); string(data) != calcFixed {
		t.Fatalf("calc.go: %q", data)
	}
	if cs.requestCount() != 4 || events[len(events)-1].Kind != EventFinished {
		t.Fatalf("%d requests, events %+v", cs.requestCount(), events)
	}
}

// TestRunEarlyClaim: a model that claims done too early sees the gate's
// output, then fixes the code.
func TestRunEarlyClaim(t *testing.T) {
	ws := fixture(t, nil)
	out, _, _ := runScript(t, ws, Contract{Goal: "make go test pass", Verify: gateGoTest()},
		turn{text: "Done, I think."},
		turn{calls: []ToolCall{call("c1", "write_file", callArgs(map[string]string{"path": "calc.go", "content": calcFixed}))},
			check: func(t *testing.T, req map[string]any) {
				if m := lastToolMessage(req); !contains(m, "the gate ran, and it did not pass") || !contains(m, "Add(2, 3) = -1, want 5") {
					t.Errorf("the gate's output did not reach the model: %q", m)
				}
			}},
		turn{text: "Now it is done."},
	)
	if out.Kind != Succeeded || out.Steps != 3 {
		t.Fatalf("%+v", out)
	}
}

// TestRunProtected: the model cannot pass by weakening the protected
// test: the write is refused by the verification layer, and the run ends
// when the gate keeps failing.
func TestRunProtected(t *testing.T) {
	ws := fixture(t, nil)
	refused := ""
	out, _, _ := runScript(t, ws, Contract{Goal: "make go test pass", Verify: gateGoTest(), Protect: []string{"*_test.go"}, GateRetries: 1},
		turn{calls: []ToolCall{call("c1", "write_file", callArgs(map[string]string{"path": "calc_test.go", "content": weakTest}))}},
		turn{text: "Done.", check: func(t *testing.T, req map[string]any) { refused = lastToolMessage(req) }},
	)
	t.Logf("the refusal: %s", refused)
	if !contains(refused, "denied") || !contains(refused, "verification") {
		t.Fatalf("the write was not refused by the verification layer: %q", refused)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "calc_test.go")); string(data) != calcTest {
		t.Fatalf("the protected test changed: %q", data)
	}
	if out.Kind != GateFailed || out.Kind.ExitCode() != 1 || out.Gate.Status != GateFailedSt {
		t.Fatalf("%+v", out)
	}
}

// TestRunTampered: a program the policy cannot see into rewrites the
// protected test; the gate attempt is tampered, naming the file.
func TestRunTampered(t *testing.T) {
	ws := fixture(t, map[string]string{"tamper/main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.WriteFile(\"calc_test.go\", []byte(" + strings.ReplaceAll(goQuote(weakTest), "\n", "") + "), 0o644) }\n"})
	out, _, _ := runScript(t, ws, Contract{Goal: "make go test pass", Verify: gateGoTest(), Protect: []string{"*_test.go"}, GateRetries: 1},
		turn{calls: []ToolCall{call("c1", "shell", `{"line":"go run ./tamper"}`)}},
		turn{text: "Done."},
	)
	if out.Kind != GateFailed || out.Gate == nil || out.Gate.Status != GateTampered || len(out.Gate.Tampered) != 1 || out.Gate.Tampered[0] != "calc_test.go" {
		t.Fatalf("%+v %+v", out, out.Gate)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "calc_test.go")); string(data) != calcTest {
		t.Fatalf("the tampered test was not put back: %q", data)
	}
}

func goQuote(s string) string {
	return "\"" + strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n", "\t", "\\t").Replace(s) + "\""
}

// TestRunBudgetAndStall: a model that loops runs out of steps; one that
// repeats a call that changes nothing is nudged once, then stalled.
func TestRunBudgetAndStall(t *testing.T) {
	ws := fixture(t, nil)
	read := turn{calls: []ToolCall{call("c", "read_file", `{"path":"calc.go"}`)}}
	out, _, _ := runScript(t, ws, Contract{Goal: "x", Verify: gateGoTest(), Budget: Budget{Steps: 3}}, read, read, read, read)
	if out.Kind != BudgetExhausted || out.Steps != 3 || out.Kind.ExitCode() != 3 || !contains(out.Reason, "step budget of 3") {
		t.Fatalf("%+v", out)
	}
	var turns []turn
	for range 2*loop.StallWindow + 2 {
		turns = append(turns, read)
	}
	out, _, cs := runScript(t, ws, Contract{Goal: "x", Verify: gateGoTest()}, turns...)
	if out.Kind != Stalled || out.Kind.ExitCode() != 4 || out.Steps != 2*loop.StallWindow {
		t.Fatalf("%+v", out)
	}
	nudged := false
	for _, req := range cs.requests {
		nudged = nudged || contains(lastToolMessage(req), "Stop and re-plan")
	}
	if !nudged {
		t.Fatal("the model was never nudged")
	}
}

// TestRunProviderFailures: 429 with Retry-After and 500 are retried, 401
// is not; no gate ends finished, never succeeded.
func TestRunProviderFailures(t *testing.T) {
	ws := fixture(t, nil)
	limited := turn{status: 429, retryAfter: "2", body: `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}
	server := turn{status: 500, body: `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`}
	out, events, cs := runScript(t, ws, Contract{Goal: "say hi"}, limited, server, turn{text: "hi"})
	if out.Kind != Finished || out.Steps != 1 || cs.requestCount() != 3 {
		t.Fatalf("%+v, %d requests", out, cs.requestCount())
	}
	retries := 0
	for _, e := range events {
		if e.Kind == EventRetry {
			retries++
		}
	}
	if retries != 2 {
		t.Fatalf("%d retries", retries)
	}
	out, _, cs = runScript(t, ws, Contract{Goal: "say hi"}, turn{status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`})
	if out.Kind != ProviderFailed || out.Kind.ExitCode() != 7 || !contains(out.Reason, "auth") || cs.requestCount() != 1 {
		t.Fatalf("%+v", out)
	}
}

// TestRunRefusesBadContracts: what cannot run is refused before the first
// model call.
func TestRunRefusesBadContracts(t *testing.T) {
	ws := fixture(t, nil)
	cs := newChatServer(t)
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Contract{
		{Goal: "", Workspace: ws},
		{Goal: "x", Workspace: ws, Verify: &Gate{Line: "go test ./..."}}, // asked in ask mode
		{Goal: "x", Workspace: ws, Verify: &Gate{Line: "rm -rf ~"}},
		{Goal: "x", Workspace: ws, Protect: []string{"**/*_spec.rb"}},
		{Goal: "x", Workspace: ws, Budget: Budget{Steps: -1}},
	} {
		if _, err := Run(context.Background(), c, Options{Provider: chatFor(cs), Tool: tool.Config{Policy: p}}); err == nil {
			t.Errorf("%+v ran", c)
		}
	}
	if cs.requestCount() != 0 {
		t.Fatalf("%d model calls before a refusal", cs.requestCount())
	}
}

// TestRunKeyNeverLeaks: the provider's key reaches neither the sandbox's
// environment, nor any observation, nor the trace.
func TestRunKeyNeverLeaks(t *testing.T) {
	ws := fixture(t, nil)
	t.Setenv("OPENAI_API_KEY", "sk-test-key")
	seen := ""
	cs := newChatServer(t,
		turn{calls: []ToolCall{call("c1", "shell", `{"line":"env"}`)}},
		turn{text: "done", check: func(t *testing.T, req map[string]any) { seen = lastToolMessage(req) }},
	)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "trace.db")
	store, err := sqlite.Open(db, trace.NewRedactor("sk-test-key"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Contract{Goal: "show the environment", Workspace: ws}, Options{Provider: chatFor(cs),
		Tool: tool.Config{Policy: p, Store: store, Profile: sandbox.Profile{Env: tool.Env(os.Environ(), p)}}})
	store.Close()
	if err != nil || out.Kind != Finished {
		t.Fatalf("%+v %v", out, err)
	}
	if !contains(seen, "PATH=") || contains(seen, "sk-test-key") || contains(seen, "OPENAI_API_KEY") {
		t.Fatalf("the command's environment: %q", seen)
	}
	for _, f := range []string{db, db + "-wal"} {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), "sk-test-key") {
			t.Fatalf("the key is in %s", f)
		}
	}
	if cs.auth[0] != "Bearer sk-test-key" {
		t.Fatalf("the key did not reach the provider: %q", cs.auth[0])
	}
}

// TestReplay: a recorded run replayed against its own recording gives the
// same canonical trace, ten times over; a run whose requests differ fails
// on the first one, naming where.
func TestReplay(t *testing.T) {
	ws := fixture(t, nil)
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// A gate whose output holds no duration (go test prints its time),
	// so that the run's trace is the same from one run to the next.
	c := Contract{Goal: "make go test pass", Verify: &Gate{Line: "go vet ./..."}, Protect: []string{"*_test.go"}}
	run := func(p Provider, goal string) Outcome {
		fixture(t, nil)
		mode := policy.ModeAuto
		pol, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(fixtureRoot, "home"), NoFiles: true, Mode: &mode, Verification: c.Protect})
		if err != nil {
			t.Fatal(err)
		}
		cc := c
		cc.Workspace, cc.Goal = ws, goal
		out, err := Run(context.Background(), cc, Options{Provider: p, Tool: tool.Config{Policy: pol, Store: store, Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cs := newChatServer(t,
		turn{calls: []ToolCall{call("c1", "read_file", `{"path":"calc.go"}`)}},
		turn{status: 500, body: `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`},
		turn{calls: []ToolCall{call("c2", "edit_file", `{"path":"calc.go","old":"a - b","new":"a + b"}`)}},
		turn{text: "Fixed."},
	)
	first := run(chatFor(cs), c.Goal)
	if first.Kind != Succeeded {
		t.Fatalf("%+v", first)
	}
	want, err := CanonicalTrace(context.Background(), store, first.Run)
	if err != nil || !strings.Contains(want, "provider_call") || !strings.Contains(want, `"failure":"server"`) || !strings.Contains(want, "gate_attempt") {
		t.Fatalf("%v\n%s", err, want)
	}
	calls, err := store.ProviderCalls(context.Background(), first.Run)
	if err != nil || len(calls) != 4 {
		t.Fatalf("%d calls %v", len(calls), err)
	}
	for i := range 10 {
		out := run(Replay(calls), c.Goal)
		got, err := CanonicalTrace(context.Background(), store, out.Run)
		if err != nil || out.Kind != Succeeded || got != want {
			t.Fatalf("replay %d: %+v %v\n%s", i, out, err, firstDifference(want, got))
		}
	}
	out := run(Replay(calls), "another goal")
	if out.Kind != ProviderFailed || !strings.Contains(out.Reason, "differs from the recording") {
		t.Fatalf("%+v", out)
	}
}

const tamperLoop = `package main

import (
	"os"
	"time"
)

func main() {
	for {
		time.Sleep(50 * time.Millisecond)
		os.WriteFile("calc_test.go", []byte("package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"), 0o644)
	}
}
`

// TestRunBackgroundTamper: a background line that keeps rewriting the
// protected test is killed before the gate, its change found and put
// back: never a success on a weakened test, and the workspace keeps the
// test it began with.
func TestRunBackgroundTamper(t *testing.T) {
	ws := fixture(t, map[string]string{"tamper/main.go": tamperLoop})
	out, _, _ := runScript(t, ws, Contract{Goal: "make go test pass", Verify: gateGoTest(), Protect: []string{"*_test.go"}, GateRetries: 1},
		turn{calls: []ToolCall{call("c1", "shell", `{"line":"go build -o tb ./tamper"}`)}},
		turn{calls: []ToolCall{call("c2", "shell_start", `{"line":"./tb"}`)}},
		turn{calls: []ToolCall{call("c3", "shell", `{"line":"sleep 0.5"}`)}},
		turn{text: "Done."},
	)
	if out.Kind != GateFailed || out.Gate == nil || out.Gate.Status != GateTampered || !contains(out.Reason, "tampered") && !contains(out.Reason, "protected files") {
		t.Fatalf("%+v %+v", out, out.Gate)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "calc_test.go")); string(data) != calcTest {
		t.Fatalf("the test was left weakened: %q", data)
	}
}

// TestRunOtherOutcomes: the outcomes of the table not reached above, each
// with its exit status: the caller's cancellation, the same refusal
// repeated, the token and wall-clock budgets, and a prompt the server
// finds too long (compacted, retried once, then a failure).
func TestRunOtherOutcomes(t *testing.T) {
	ws := fixture(t, nil)
	read := turn{calls: []ToolCall{call("c", "read_file", `{"path":"calc.go"}`)}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, _, cs := runScriptCtx(t, ctx, ws, Contract{Goal: "x", Verify: gateGoTest()}, read,
		turn{text: "never sent", check: func(*testing.T, map[string]any) { cancel() }}, read)
	if out.Kind != Cancelled || out.Kind.ExitCode() != 130 || out.Steps != 1 || !contains(out.Reason, "cancelled") {
		t.Fatalf("cancelled: %+v", out)
	}
	if cs.requestCount() != 2 {
		t.Fatalf("cancelled: %d model calls", cs.requestCount())
	}

	// The same denied read, again and again: the router stops the run.
	secret := turn{calls: []ToolCall{call("c", "read_file", `{"path":"~/.ssh/id_rsa"}`)}}
	var turns []turn
	for range policy.DefaultRepeatedRefusals + 2 {
		turns = append(turns, secret)
	}
	out, _, _ = runScript(t, ws, Contract{Goal: "x", Verify: gateGoTest()}, turns...)
	if out.Kind != RefusedRepeatedly || out.Kind.ExitCode() != 5 || out.Steps != policy.DefaultRepeatedRefusals {
		t.Fatalf("refused repeatedly: %+v", out)
	}

	// Each response reports 12000 tokens in and 30 out (the server's usage).
	out, _, _ = runScript(t, ws, Contract{Goal: "x", Verify: gateGoTest(), Budget: Budget{Tokens: 36000}}, read, read, read, read, read)
	if out.Kind != BudgetExhausted || out.Kind.ExitCode() != 3 || out.Steps != 3 || !contains(out.Reason, "token budget of 36000 is spent (36000 in, 90 out)") {
		t.Fatalf("tokens: %+v", out)
	}

	// A command that outlasts the wall clock is ended with the run.
	start := time.Now()
	out, _, _ = runScript(t, ws, Contract{Goal: "x", Verify: gateGoTest(), Budget: Budget{WallClock: 2 * time.Second}},
		turn{calls: []ToolCall{call("c", "shell", `{"line":"sleep 60"}`)}}, read)
	if out.Kind != BudgetExhausted || out.Kind.ExitCode() != 3 || !contains(out.Reason, "wall-clock budget of 2s") || time.Since(start) > 30*time.Second {
		t.Fatalf("wall clock: %+v after %s", out, time.Since(start))
	}

	// Too long for the server: every observation it can is set aside,
	// and the same step is asked for once more.
	overflow := turn{status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
	out, events, cs := runScript(t, ws, Contract{Goal: "x"}, read, read, read, read, overflow,
		turn{text: "done", check: func(t *testing.T, req map[string]any) {
			msgs := req["messages"].([]any)
			if m := msgs[3].(map[string]any)["content"].(string); !contains(m, "was set aside") && !contains(m, "superseded") {
				t.Errorf("the oldest observation was kept: %q", m)
			}
		}})
	compacted := false
	for _, e := range events {
		compacted = compacted || e.Kind == EventCompacted
	}
	if out.Kind != Finished || cs.requestCount() != 6 || !compacted {
		t.Fatalf("overflow: %+v after %d calls (compacted %v)", out, cs.requestCount(), compacted)
	}
	out, _, cs = runScript(t, ws, Contract{Goal: "x"}, read, overflow, overflow, read)
	if out.Kind != ProviderFailed || out.Kind.ExitCode() != 7 || !contains(out.Reason, "context") || cs.requestCount() != 3 {
		t.Fatalf("overflow twice: %+v after %d calls", out, cs.requestCount())
	}
}
