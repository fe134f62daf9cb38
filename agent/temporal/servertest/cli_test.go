package servertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testenv"
)

// fleet is rein's own binary (built with the Temporal driver) and the
// environment its processes share: the test's Temporal server, one
// PostgreSQL trace, one trace key, no policy file but an empty org one.
type fleet struct {
	t             testing.TB
	bin, ws, root string
	env           []string
	temporal      []string
}

// provider makes the scripted model at url the org policy's provider
// ollama, as a fleet's operator names the endpoints its workers may
// reach: a run's base URL is taken only from a preset or from there.
func (f *fleet) provider(url string) {
	f.t.Helper()
	testenv.WriteFiles(f.t, f.root, map[string]string{"org.toml": "[[provider]]\nname = \"ollama\"\nbase_url = \"" + url + "/v1\"\n"}, 0o644)
}

// built is rein's binary with the Temporal driver: REIN_TEST_REIN_TEMPORAL,
// else built once for the tests (in dir, which TestMain removes).
var built struct {
	once     sync.Once
	bin, dir string
	err      error
}

func reinBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		// CI builds it beside the suite's own build.
		if built.bin = os.Getenv("REIN_TEST_REIN_TEMPORAL"); built.bin != "" {
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "rein-fleet-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "rein")
		build := exec.Command("go", "build", "-tags", "temporal", "-o", built.bin, "./cmd/rein")
		build.Dir = "../../.."
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building rein with the Temporal driver: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func newFleet(t testing.TB) *fleet {
	t.Helper()
	server(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := reinBinary(t)
	pg, err := testenv.PostgresDatabase(root)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	testenv.WriteFiles(t, ws, map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n",
	}, 0o644)
	testenv.WriteFiles(t, root, map[string]string{"org.toml": "", "home/.keep": ""}, 0o644)
	env := append(os.Environ(), "HOME="+filepath.Join(root, "home"), "XDG_CONFIG_HOME=", "REIN_TRACE="+pg,
		"REIN_TRACE_KEY="+filepath.Join(root, "keys", "trace.key"), "REIN_ORG_POLICY="+filepath.Join(root, "org.toml"),
		"REIN_USER_POLICY=", "REIN_PROJECT_POLICY=")
	return &fleet{t: t, bin: bin, ws: ws, root: root, env: env,
		temporal: []string{"--temporal", os.Getenv(addrEnv), "--temporal-namespace", os.Getenv(namespaceEnv)}}
}

// command is rein with args, in the workspace, the server named.
func (f *fleet) command(args ...string) *exec.Cmd {
	c := exec.Command(f.bin, args...)
	c.Dir, c.Env = f.ws, f.env
	return c
}

// rein runs rein with args, the server named after them: its exit
// status, stdout and stderr.
func (f *fleet) rein(args ...string) (int, string, string) {
	f.t.Helper()
	var out, errOut bytes.Buffer
	c := f.command(append(args, f.temporal...)...)
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	code := c.ProcessState.ExitCode()
	if err != nil && code < 0 {
		f.t.Fatalf("rein %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// lockedBuffer is a worker's output, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// worker starts a rein worker of queue; it is killed when the test ends.
func (f *fleet) worker(queue string) (*exec.Cmd, *lockedBuffer) {
	f.t.Helper()
	out := &lockedBuffer{}
	c := f.command(append([]string{"worker", "--task-queue", queue}, f.temporal...)...)
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "rein worker: serving task queue "+queue) {
		if time.Now().After(deadline) || c.ProcessState != nil {
			f.t.Fatalf("the worker did not start:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c, out
}

// TestFleetCLI is docs/scale-out.md's walkthrough with rein's own
// binary: two rein worker processes serve one task queue; rein run
// --temporal starts a run there and prints its steps. The worker that
// holds the run is killed with SIGKILL while the run waits for its
// second model call; the other takes the run over from its last
// checkpoint (the edit made once), and rein run --temporal ends as a run
// never killed: its steps printed, the gate passed, exit 0. rein runs and
// rein trace verify read the one PostgreSQL trace.
func TestFleetCLI(t *testing.T) {
	f := newFleet(t)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv, _ := testenv.Chat{ByTurn: true, Answers: []string{
		`edit_file {"path":"calc.go","old":"a - b","new":"a + b"}`,
		"Fixed.",
	}, Before: func(i int) {
		if i == 1 {
			once.Do(func() { close(held) })
			<-release
		}
	}}.Start(t)
	f.provider(srv.URL)
	w1, out1 := f.worker("calc")
	w2, out2 := f.worker("calc")
	var run struct {
		code        int
		out, errOut string
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run.code, run.out, run.errOut = f.rein("run", "--task-queue", "calc", "--temporal-heartbeat", "2s", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m",
			"--approve", "all", "--verify", "grep -q 'a + b' calc.go", "--protect", "*_test.go", "make the tests pass")
	}()
	select {
	case <-held:
	case <-done:
		t.Fatalf("rein run --temporal ended before its second model call: exit %d\n%s\n%s", run.code, run.out, run.errOut)
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run never made its second model call\nworker 1:\n%s\nworker 2:\n%s", out1, out2)
	}
	// The worker that printed the run's first steps holds it.
	holder, other, otherOut := w1, w2, out2
	if !strings.Contains(out1.String(), "edit_file") {
		holder, other, otherOut = w2, w1, out1
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	close(release)
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not end after its worker's death\nthe other worker:\n%s", otherOut)
	}
	t.Logf("rein run --temporal printed:\n%s", run.out)
	if run.code != 0 || !strings.Contains(run.out, "edit_file") || !strings.Contains(run.out, `succeeded: the gate "grep -q 'a + b' calc.go" passed`) {
		t.Fatalf("rein run --temporal: exit %d\n%s\n%s\nthe other worker:\n%s", run.code, run.out, run.errOut, otherOut)
	}
	if other.ProcessState != nil {
		t.Fatal("the other worker died too")
	}
	if !strings.Contains(otherOut.String(), "gate") {
		t.Errorf("the other worker did not go on with the run:\n%s", otherOut)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "calc.go")); !strings.Contains(string(data), "a + b") {
		t.Errorf("calc.go is %q", data)
	}
	runID := run.out[strings.Index(run.out, "  run ")+6:]
	runID = runID[:strings.Index(runID, ",")]
	if out, err := f.command("runs").CombinedOutput(); err != nil || !strings.Contains(string(out), runID) || !strings.Contains(string(out), "succeeded") {
		t.Errorf("rein runs: %v\n%s", err, out)
	}
	c := f.command("trace", "verify")
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("rein trace verify: %v\n%s", err, out)
	}
}

// TestFleetDecisions: a run on the fleet that waits for an operator
// costs no worker, and rein run --temporal exits 6 naming the request;
// rein approve --temporal records the answer and tells the workflow,
// and rein run resume --temporal follows the run to its end. rein run
// cancel --temporal ends a waiting run cancelled. A run whose workspace is
// outside the worker's --workspaces is refused.
func TestFleetDecisions(t *testing.T) {
	f := newFleet(t)
	f.worker("decide")
	// Every run of the test is the script's first turns: it answers by
	// the turn.
	srv, _ := testenv.Chat{ByTurn: true, Answers: []string{`shell {"line":"touch marked.txt"}`, "Done."}}.Start(t)
	f.provider(srv.URL)
	start := func() agent.Outcome {
		t.Helper()
		code, out, errOut := f.rein("run", "--task-queue", "decide", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--json", "touch it")
		var o agent.Outcome
		if err := json.Unmarshal([]byte(out), &o); err != nil || code != 6 || o.Kind != agent.AwaitingApproval || o.Waiting == nil {
			t.Fatalf("rein run --temporal: exit %d\n%s\n%s", code, out, errOut)
		}
		return o
	}

	o := start()
	if code, out, errOut := f.rein("approve", o.Run, o.Waiting.Request, "--yes"); code != 0 || !strings.Contains(out, "its workflow goes on") {
		t.Fatalf("rein approve --temporal: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := f.rein("run", "resume", "--json", o.Run)
	var res agent.Outcome
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Kind != agent.Finished {
		t.Fatalf("rein run resume --temporal: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marked.txt")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	os.Remove(filepath.Join(f.ws, "marked.txt"))

	// A workspace outside the worker's --workspaces (its directory,
	// here) is refused, whoever starts the run.
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = f.rein("run", "--workspace", other, "--task-queue", "decide", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "look around")
	if code != 2 || !strings.Contains(errOut, "is outside this worker's --workspaces ("+f.ws+"): refused") {
		t.Fatalf("a run outside the worker's workspaces: exit %d\n%s%s", code, out, errOut)
	}
	// Whoever starts a run cannot have a worker send one of its
	// variables to a host of the starter's choosing, nor read its files.
	for _, bad := range [][]string{
		{"--provider", "openai", "--base-url", srv.URL + "/v1", "--api-key-env", "REIN_TRACE", "--model", "m"},
		{"--provider", "ollama", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"},
		{"--provider", "ollama", "--base-url", srv.URL + "/v1", "--model", "m", "--read-path", "/usr/share"},
	} {
		code, out, errOut = f.rein(append(append([]string{"run", "--task-queue", "decide"}, bad...), "look around")...)
		if code != 2 || !strings.Contains(errOut, ": refused") {
			t.Errorf("a run with %v: exit %d\n%s%s", bad, code, out, errOut)
		}
	}

	o = start()
	if code, out, errOut := f.rein("run", "cancel", o.Run); code != 0 || !strings.Contains(out, "is cancelled") {
		t.Fatalf("rein run cancel --temporal: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = f.rein("run", "resume", "--json", o.Run)
	res = agent.Outcome{}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 130 || res.Kind != agent.Cancelled {
		t.Fatalf("rein run resume --temporal of the cancelled run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marked.txt")); err == nil {
		t.Error("the command of the cancelled run ran")
	}
}
