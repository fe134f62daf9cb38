//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent"
)

// TestRunDeferred: rein run --approve defer ends at an ask with exit 6
// and a request; rein runs lists the run as waiting on it; rein approve
// records a yes and refuses a second answer; rein run resume runs the
// approved call and ends the run.
func TestRunDeferred(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	srv, n := scriptedModel(t, `shell {"line":"touch approved.txt"}`, "Done.")
	model := []string{"--provider", "ollama", "--base-url", srv.URL + "/v1", "--model", "m"}
	code, out, errOut := rein(t, append(append([]string{"run"}, model...), "--approve", "defer", "--json", "touch it")...)
	var o agent.Outcome
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 6 || o.Kind != agent.AwaitingApproval || o.Waiting == nil {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	req := o.Waiting.Request
	code, out, _ = rein(t, "runs")
	if code != 0 || !strings.Contains(out, o.Run) || !strings.Contains(out, "awaiting_approval") || !strings.Contains(out, "request "+req+`: shell {"line":"touch approved.txt"}`) {
		t.Errorf("rein runs: exit %d\n%s", code, out)
	}
	// From another workspace, whose trace is another: the run is not
	// there, and rein says so.
	other := t.TempDir()
	if code, _, errOut := rein(t, "approve", "--workspace", other, o.Run, req, "--yes"); code != exitUsage || !strings.Contains(errOut, "run "+o.Run+" is not in this workspace's trace") || !strings.Contains(errOut, "--workspace") {
		t.Errorf("rein approve from another workspace: exit %d %s", code, errOut)
	}
	if code, _, errOut := rein(t, append(append([]string{"run", "resume", "--workspace", other}, model...), o.Run)...); code != exitUsage || !strings.Contains(errOut, "run "+o.Run+" is not in this workspace's trace") {
		t.Errorf("rein run resume from another workspace: exit %d %s", code, errOut)
	}
	if code, _, errOut := rein(t, "approve", o.Run, req); code != exitUsage || !strings.Contains(errOut, "give one of --yes, --no and --revise NOTE") {
		t.Errorf("rein approve without an answer: exit %d %s", code, errOut)
	}
	if code, out, errOut := rein(t, "approve", o.Run, req, "--yes", "--note", "looked at it"); code != 0 || !strings.Contains(out, "answered yes") {
		t.Fatalf("rein approve: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := rein(t, "approve", o.Run, req, "--no"); code != 1 || !strings.Contains(errOut, "was already answered yes") {
		t.Errorf("a second answer: exit %d %s", code, errOut)
	}
	if code, _, errOut := rein(t, "approve", o.Run, "r0", "--no"); code != exitUsage || !strings.Contains(errOut, "has no request r0") {
		t.Errorf("an answer to no request: exit %d %s", code, errOut)
	}
	code, out, errOut = rein(t, append(append([]string{"run", "resume"}, model...), o.Run)...)
	if code != 0 || !strings.Contains(out, "finished") {
		t.Fatalf("rein run resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "approved.txt")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	if *n != 2 {
		t.Errorf("%d model calls, the script has 2", *n)
	}
	if code, _, errOut := rein(t, append(append([]string{"run", "resume"}, model...), o.Run)...); code != exitUsage || !strings.Contains(errOut, "has ended (finished") {
		t.Errorf("resuming an ended run: exit %d %s", code, errOut)
	}
	code, out, _ = rein(t, "runs", "--json")
	var runs []runState
	if err := json.Unmarshal([]byte(out), &runs); err != nil || code != 0 || len(runs) != 1 || runs[0].State != "finished" {
		t.Errorf("rein runs --json: %v %s", err, out)
	}
}

// TestResumeKeepsConfig: rein run resume with no flag drives the run with
// the configuration it was started with (its provider's base URL and key
// variable, its mode and its command line's rules), not the preset's or
// the policy files' (here the user's file says auto); a flag that would
// widen it is refused, naming it.
func TestResumeKeepsConfig(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte("mode = \"auto\"\n"), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	t.Setenv("MY_MODEL_KEY", "k-123456")
	srv, n := scriptedModel(t, `shell {"line":"mkdir made"}`, `shell {"line":"touch evil.txt"}`, "Done.")
	code, out, errOut := rein(t, "run", "--provider", "vllm", "--base-url", srv.URL+"/v1", "--api-key-env", "MY_MODEL_KEY", "--model", "m",
		"--mode", "ask", "--deny", "touch *", "--approve", "defer", "--json", "make a directory")
	var o agent.Outcome
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 6 || o.Waiting == nil {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if code, _, errOut := rein(t, "approve", o.Run, o.Waiting.Request, "--yes"); code != 0 {
		t.Fatalf("rein approve: %s", errOut)
	}
	for _, flags := range [][]string{{"--mode", "auto"}, {"--allow", "touch *"}, {"--approve", "all"}} {
		if code, _, errOut := rein(t, append(append([]string{"run", "resume"}, flags...), o.Run)...); code != exitUsage || !strings.Contains(errOut, flags[0]+" "+flags[1]+" would widen") {
			t.Errorf("resume %s: exit %d %s", flags, code, errOut)
		}
	}
	if *n != 1 {
		t.Fatalf("a refused resumption called the model: %d calls", *n)
	}
	code, out, errOut = rein(t, "run", "resume", o.Run)
	if code != 0 || !strings.Contains(out, "finished") || *n != 3 {
		t.Fatalf("rein run resume: exit %d, %d model calls\n%s\n%s", code, *n, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "evil.txt")); err == nil {
		t.Error("the resumed run ran what its --deny refuses")
	}
}
