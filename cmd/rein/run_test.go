//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestShellRedactsLive: a declared secret the command prints is redacted
// on the terminal as it streams, also when the command writes it in two
// pieces with a pause between them.
func TestShellRedactsLive(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	const secret = "s3cr3t-streamed-value"
	t.Setenv("REIN_TEST_DECLARED", secret)
	if err := os.WriteFile(os.Getenv("REIN_ORG_POLICY"), []byte("[env]\nsecrets = [\"REIN_TEST_DECLARED\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ line, stdout, stderr string }{
		{"printenv REIN_TEST_DECLARED", "[redacted]\n", ""},
		{`sh -c 'printf "the value s3cr3t-str"; sleep 0.3; echo "eamed-value ends"; echo "on stderr: s3cr3t-streamed-value" >&2'`,
			"the value [redacted] ends\n", "on stderr: [redacted]\n"},
	} {
		code, out, errOut := rein(t, "shell", "--approve", "all", c.line)
		if code != 0 || out != c.stdout || errOut != c.stderr {
			t.Errorf("%s: exit %d\nstdout %q, want %q\nstderr %q, want %q", c.line, code, out, c.stdout, errOut, c.stderr)
		}
	}
}

// TestExecPolicyLimits: the policy file's [limits] bound rein exec's
// command, as they bound every call of the router.
func TestExecPolicyLimits(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	if err := os.WriteFile(os.Getenv("REIN_ORG_POLICY"), []byte("[limits]\nopen_files = 100\nprocesses = 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := rein(t, "exec", "--approve", "all", "--", "sh", "-c", "ulimit -n"); code != 0 || out != "100\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	code, out, errOut := rein(t, "exec", "--json", "--approve", "all", "--", "true")
	var v struct{ Result sandbox.Result }
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errOut)
	}
	got := map[string]int64{}
	for _, a := range v.Result.Limits {
		got[a.Limit] = a.Value
	}
	if got["open_files"] != 100 || got["processes"] != 64 {
		t.Fatalf("limits %+v, want open_files 100 and processes 64", v.Result.Limits)
	}
	// A fork past the policy's process limit is refused.
	code, _, errOut = rein(t, "exec", "--approve", "all", "--", "sh", "-c", "for i in $(seq 100); do sleep 5 & done; wait")
	if code == 0 || !strings.Contains(errOut, "rein: failed: the process limit of 64 was reached") {
		t.Fatalf("past the process limit: exit %d: %s", code, errOut)
	}
}

// TestShellRefusalNamesRuleAndFile: a refusal prints the rule and the
// file that made it, runs nothing and exits 11; so does a [tool] deny of
// the shell tool itself.
func TestShellRefusalNamesRuleAndFile(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	org := os.Getenv("REIN_ORG_POLICY")
	if err := os.WriteFile(org, []byte("[exec]\ndeny = [\"touch *\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rein(t, "shell", "--approve", "all", "touch made")
	want := `rein: not run: deny: stage 0 (touch made): denied by deny rule "touch *" (org layer, ` + org + ":2)\n"
	if code != exitDeny || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q\nstderr %q\nwant   %q", code, out, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err == nil {
		t.Fatal("a denied line ran")
	}
	if err := os.WriteFile(org, []byte("[tool]\ndeny = [\"shell\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = rein(t, "shell", "--approve", "all", "true")
	want = `rein: not run: deny: denied by deny rule "shell" (org layer, ` + org + ":2)\n"
	if code != exitDeny || errOut != want {
		t.Fatalf("[tool] deny: exit %d\nstderr %q\nwant   %q", code, errOut, want)
	}
	// The exec tool is another tool.
	if code, _, errOut := rein(t, "exec", "--approve", "all", "--", "true"); code != 0 {
		t.Fatalf("exec: exit %d: %s", code, errOut)
	}
}

// lineWriter is a terminal a test reads while the command runs.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.lines <- line
	}
}

// TestShellStreams: a line the command prints reaches the terminal while
// the command still runs; the command ends only when the test lets it.
func TestShellStreams(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	out := &lineWriter{lines: make(chan string, 16)}
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"shell", "--approve", "all", "--timeout", "2m", `sh -c 'echo first; while [ ! -e go-on ]; do sleep 0.05; done; echo second'`}, out, &errOut)
	}()
	select {
	case line := <-out.lines:
		if line != "first\n" {
			t.Fatalf("the first line: %q", line)
		}
	case code := <-done:
		t.Fatalf("ended (exit %d) before its first line was shown: %s", code, errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("no line after a minute")
	}
	select {
	case code := <-done:
		t.Fatalf("ended (exit %d) while it waits for the test", code)
	default:
	}
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if line := <-out.lines; line != "second\n" {
		t.Fatalf("the second line: %q", line)
	}
}

// TestShellTraced: a run of rein shell is a run of the trace, its call a
// step with the sandbox's run, the declared secret redacted there too.
func TestShellTraced(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	tr := filepath.Join(filepath.Dir(ws), "trace.db")
	t.Setenv("REIN_TRACE", tr)
	t.Setenv("REIN_TEST_DECLARED", "s3cr3t-traced-value")
	if err := os.WriteFile(os.Getenv("REIN_ORG_POLICY"), []byte("[env]\nsecrets = [\"REIN_TEST_DECLARED\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := rein(t, "shell", "--approve", "all", "echo traced; printenv REIN_TEST_DECLARED"); code != 0 || out != "traced\n[redacted]\n" {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	if code, _, _ := rein(t, "exec", "--deny", "false", "--", "false"); code != exitDeny {
		t.Fatalf("denied exec: exit %d", code)
	}
	store, err := sqlite.Open(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	runs, err := store.Runs(ctx, 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	// Newest first.
	for i, want := range []struct{ tool, args, status, runStatus string }{
		{"exec", `{"argv":["false"]}`, "denied", "denied"},
		{"shell", `{"line":"echo traced; printenv REIN_TEST_DECLARED"}`, "ok", "ok"},
	} {
		r := runs[i]
		steps, err := store.Steps(ctx, r.ID)
		if err != nil || len(steps) != 1 || r.Source != "cli" || r.Status != want.runStatus {
			t.Fatalf("run %+v, steps %+v %v", r, steps, err)
		}
		if s := steps[0]; s.Tool != want.tool || s.Args != want.args || s.Status != want.status {
			t.Errorf("step %+v, want %s %s -> %s", s, want.tool, want.args, want.status)
		}
		if strings.Contains(steps[0].Observation, "s3cr3t-traced-value") {
			t.Errorf("the secret is in the trace: %q", steps[0].Observation)
		}
	}
	if steps, _ := store.Steps(ctx, runs[1].ID); steps[0].Observation != "shell: ok (exit 0)\ntraced\n[redacted]\n" {
		t.Errorf("the observation: %q", steps[0].Observation)
	}
}

// TestShellOpaqueNeedsConfinement: a line outside the grammar is asked on
// the premise that it runs confined; on the none rung, approved or not,
// it does not run.
func TestShellOpaqueNeedsConfinement(t *testing.T) {
	_, ws := docFixture(t)
	code, _, errOut := rein(t, "shell", "--rung", "none", "--approve", "all", "--", "for f in a; do touch $f.txt; done | cat")
	if code != exitSandbox || !strings.Contains(errOut, "runs only in a sandbox, and the rung is none") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Fatal("the opaque line ran unconfined")
	}
}
