package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
)

// syncBuffer is a stream written from the sandbox's copying goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLive: a call's command streams to the caller through the run's
// redactor, the verdict is shown before it runs, and the call is recorded
// as any other; a caller's spool directory is left in place and named.
func TestLive(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "touch *"}}, policy.AllowAll{})
	f.r.cfg.Profile.Env = []string{"SEKRIT=sekrit-value-123", "PATH=/usr/bin:/bin"}
	var out, errOut syncBuffer
	var decided []*policy.Verdict
	live := Live{Stdout: &out, Stderr: &errOut, Decided: func(v *policy.Verdict) { decided = append(decided, v) }}
	ctx := WithLive(context.Background(), live)
	env := f.r.Call(ctx, "shell", json.RawMessage(`{"line":"sh -c 'echo out $SEKRIT; echo err >&2'"}`))
	if env.Status != OK || out.String() != "out [redacted]\n" || errOut.String() != "err\n" {
		t.Fatalf("%+v\nstdout %q stderr %q", env, out.String(), errOut.String())
	}
	if len(decided) != 1 || decided[0].Decision != policy.Allow {
		t.Fatalf("decided %+v", decided)
	}
	if env.Preview != "out [redacted]\n[stderr]\nerr\n" {
		t.Fatalf("the envelope: %q", env.Preview)
	}
	env = f.r.Call(ctx, "exec", json.RawMessage(`{"argv":["touch","x"]}`))
	if env.Status != Denied || len(decided) != 2 || decided[1].Decision != policy.Deny || decided[1].Rule.Rule != "touch *" {
		t.Fatalf("%+v, decided %+v", env, decided)
	}
	steps, _ := f.store.Steps(context.Background(), f.r.RunID())
	if len(steps) != 2 || steps[0].Status != "ok" || steps[1].Status != "denied" {
		t.Fatalf("steps %+v", steps)
	}
	spool := t.TempDir()
	env = f.r.Call(WithLive(context.Background(), Live{SpoolDir: spool}), "exec", json.RawMessage(`{"argv":["echo","kept"]}`))
	var sr sandbox.Result
	data, _ := json.Marshal(env.Result().Data)
	if err := json.Unmarshal(data, &sr); err != nil || env.Status != OK || sr.Stdout.File != filepath.Join(spool, "stdout") {
		t.Fatalf("%+v %v\n%s", env, err, data)
	}
	if got, _ := os.ReadFile(sr.Stdout.File); string(got) != "kept\n" {
		t.Fatalf("the spool holds %q", got)
	}
}

// TestStartDir: a line, and a handle's, is decided from the profile's
// start directory, and starts there; a cold router keeps no sandbox warm behind its command.
func TestStartDir(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, []policy.Rule{{Act: policy.ActRead, Effect: policy.Deny, Pattern: "src/**"}}, policy.AllowAll{})
	f.r.cfg.Profile.Dir = filepath.Join(f.ws, "src")
	f.r.cfg.Cold = true
	// main.go is src/main.go from there, which a read rule denies.
	env := f.call(t, "shell", obj{"line": "cat main.go"})
	if env.Status != Denied || env.Rule != "src/**" {
		t.Fatalf("%+v", env)
	}
	if env := f.call(t, "shell_start", obj{"line": "cat main.go"}); env.Status != Denied || env.Rule != "src/**" {
		t.Fatalf("a handle: %+v", env)
	}
	env = f.call(t, "shell", obj{"line": "pwd"})
	if env.Status != OK || env.Preview != filepath.Join(f.ws, "src")+"\n" || env.Result().Warm {
		t.Fatalf("%+v", env)
	}
	// Its next command starts cold too, and nothing waits in the pool.
	if env = f.call(t, "shell", obj{"line": "pwd"}); env.Status != OK || env.Result().Warm || f.r.pool.Warm() != 0 {
		t.Fatalf("%+v, %d warm", env, f.r.pool.Warm())
	}
}
