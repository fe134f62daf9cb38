// Package tracetest is the conformance suite every durable trace store
// (trace.Durable) passes: the SQLite store of trace/sqlite now, and any
// other (PostgreSQL) written after it. It checks what the agent's drivers
// build on: one lease per run, taken over at once from a driver whose
// process died and with its generation bumped, so that the dead driver's
// commits are fenced out; a commit that writes its checkpoint and its
// records together or not at all; blobs, requests and their answers read
// back as written.
//
// A package that runs the suite calls Child first in its TestMain, and
// Run from a test, with the same Opener.
//
// tracetest imports trace and the standard library; nothing of rein
// imports it but tests.
package tracetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

// Opener opens the durable store at dir (a directory of its own, made
// for the test), making it on the first open: a second open of the same
// dir, in this process or another, is the same store.
type Opener func(ctx context.Context, dir string) (trace.Durable, error)

// childEnv, when set, makes the test binary a driver that takes a lease
// and dies (see Child).
const childEnv = "REIN_TRACETEST_CHILD"

type childConfig struct {
	Dir, Run string
}

// Child, called first by the TestMain of a package that runs the suite,
// makes the test binary the driver the suite started: it takes a run's
// lease, prints it, and dies with SIGKILL holding it. It returns the exit
// code for TestMain, with ok; otherwise ok is false.
func Child(open Opener) (code int, ok bool) {
	env := os.Getenv(childEnv)
	if env == "" {
		return 0, false
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	s, err := open(context.Background(), cfg.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	l, err := s.AcquireLease(context.Background(), cfg.Run, time.Hour)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	json.NewEncoder(os.Stdout).Encode(l)
	os.Stdout.Sync()
	p, _ := os.FindProcess(os.Getpid())
	p.Kill()
	select {}
}

// Run runs every conformance test of the suite against the stores open
// opens.
func Run(t *testing.T, open Opener) {
	t.Run("Lease", func(t *testing.T) { Lease(t, open) })
	t.Run("Commit", func(t *testing.T) { Commit(t, open) })
}

func openIn(t *testing.T, open Opener, dir string) trace.Durable {
	t.Helper()
	s, err := open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// deadDriver starts a driver of run in a child process that takes the
// run's lease and dies holding it, and returns that lease.
func deadDriver(t *testing.T, dir, run string) trace.Lease {
	t.Helper()
	cfg, _ := json.Marshal(childConfig{Dir: dir, Run: run})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the dead driver did not die by its signal: %v (%s)", err, stderr.String())
	}
	var l trace.Lease
	if err := json.Unmarshal(stdout.Bytes(), &l); err != nil || l.Generation == 0 {
		t.Fatalf("the dead driver's lease %q: %v (%s)", stdout.String(), err, stderr.String())
	}
	return l
}

// Lease: a run no one drives is taken at generation 1; a second driver
// beside a live one is refused, naming it; a dead driver's lease is taken
// over at once, its generation bumped, and the dead driver's commits and
// renewals are fenced out; a lease released is taken at once by the next,
// and the released one commits nothing more.
func Lease(t *testing.T, open Opener) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, open, dir)
	l, err := s.AcquireLease(ctx, "run-a", time.Minute)
	if err != nil || l.Generation != 1 || l.PID != os.Getpid() || l.RunID != "run-a" {
		t.Fatalf("the first lease: %+v %v", l, err)
	}
	var held *trace.LeaseHeldError
	if _, err := s.AcquireLease(ctx, "run-a", time.Minute); !errors.As(err, &held) || held.Lease.PID != os.Getpid() || held.Lease.Generation != 1 {
		t.Fatalf("a second driver beside a live one: %v", err)
	}
	if err := s.RenewLease(ctx, l, time.Minute); err != nil {
		t.Fatalf("renewing a live lease: %v", err)
	}

	dead := deadDriver(t, dir, "run-b")
	if dead.PID == os.Getpid() || dead.Generation != 1 {
		t.Fatalf("the dead driver's lease: %+v", dead)
	}
	taken, err := s.AcquireLease(ctx, "run-b", time.Minute)
	if err != nil || taken.Generation != 2 {
		t.Fatalf("taking a dead driver's run over: %+v %v", taken, err)
	}
	var fenced *trace.FencedError
	if err := s.Commit(ctx, dead, time.Minute, trace.Checkpoint{Seq: 1, Format: 1, Status: "running", State: "{}", At: time.Now()}); !errors.As(err, &fenced) || fenced.Held != 1 || fenced.Current != 2 {
		t.Fatalf("the dead driver's commit: %v", err)
	}
	if err := s.RenewLease(ctx, dead, time.Minute); !errors.As(err, &fenced) {
		t.Fatalf("the dead driver's renewal: %v", err)
	}
	if cp, err := s.LastCheckpoint(ctx, "run-b"); err != nil || cp != nil {
		t.Fatalf("a fenced commit wrote %+v (%v)", cp, err)
	}

	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, l, time.Minute, trace.Checkpoint{Seq: 1, Format: 1, Status: "running", State: "{}", At: time.Now()}); !errors.As(err, &fenced) || fenced.Current != 0 {
		t.Fatalf("a commit under a released lease: %v", err)
	}
	next, err := s.AcquireLease(ctx, "run-a", time.Minute)
	if err != nil || next.Generation != 2 {
		t.Fatalf("the next driver after a release: %+v %v", next, err)
	}
	// A release of a lease taken over leaves the new one as it is.
	if err := s.ReleaseLease(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewLease(ctx, taken, time.Minute); err != nil {
		t.Fatalf("the lease taken over, after the dead driver's release: %v", err)
	}
	// Another open of the same store sees the same leases.
	other := openIn(t, open, dir)
	if _, err := other.AcquireLease(ctx, "run-b", time.Minute); !errors.As(err, &held) || held.Lease.Generation != 2 {
		t.Fatalf("the lease seen from another open: %v", err)
	}
}

// Commit: a commit writes its records and its checkpoint together; the
// newest checkpoint, the blobs and the requests read back as written;
// a request has no answer until one is recorded.
func Commit(t *testing.T, open Opener) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, open, dir)
	l, err := s.AcquireLease(ctx, "run-c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	blob := trace.Blob{RunID: "run-c", Hash: "sha256:0001", Data: "the transcript's first part", At: at}
	req := trace.ApprovalRequest{RunID: "run-c", Request: "r1", Kind: "approval", CallID: "call_1_0", Tool: "shell", Args: `{"line":"make"}`, Shown: "shell make\n", At: at}
	for seq := int64(1); seq <= 3; seq++ {
		cp := trace.Checkpoint{Seq: seq, Format: 1, Status: "running", State: fmt.Sprintf(`{"steps":%d}`, seq), At: at}
		var batches [][]trace.Record
		switch seq {
		case 2:
			batches = append(batches, []trace.Record{blob})
		case 3:
			cp.Status, cp.Waiting = "awaiting_approval", "r1"
			batches = append(batches, []trace.Record{req})
		}
		if err := s.Commit(ctx, l, time.Minute, cp, batches...); err != nil {
			t.Fatalf("commit %d: %v", seq, err)
		}
	}
	cp, err := s.LastCheckpoint(ctx, "run-c")
	if err != nil || cp == nil {
		t.Fatalf("the last checkpoint: %v", err)
	}
	if cp.Seq != 3 || cp.Format != 1 || cp.Status != "awaiting_approval" || cp.Waiting != "r1" || cp.State != `{"steps":3}` || cp.RunID != "run-c" || cp.Generation != l.Generation {
		t.Errorf("the last checkpoint: %+v", cp)
	}
	blobs, err := s.Blobs(ctx, "run-c")
	if err != nil || len(blobs) != 1 || blobs[blob.Hash] != blob.Data {
		t.Errorf("the blobs: %v %v", blobs, err)
	}
	reqs, err := s.ApprovalRequests(ctx, "run-c")
	if err != nil || len(reqs) != 1 || reqs[0].Request != "r1" || reqs[0].Shown != req.Shown || reqs[0].CallID != req.CallID || reqs[0].Args != req.Args {
		t.Errorf("the requests: %+v %v", reqs, err)
	}
	if d, err := s.Decision(ctx, "run-c", "r1"); err != nil || d != nil {
		t.Errorf("a decision no one made: %+v %v", d, err)
	}
	// Another run's state is its own.
	if cp, err := s.LastCheckpoint(ctx, "run-d"); err != nil || cp != nil {
		t.Errorf("a run with no checkpoint: %+v %v", cp, err)
	}
	if b, err := s.Blobs(ctx, "run-d"); err != nil || len(b) != 0 {
		t.Errorf("a run with no blobs: %v %v", b, err)
	}
	// What was committed is there for the next process.
	reopened := openIn(t, open, filepath.Clean(dir))
	if cp, err := reopened.LastCheckpoint(ctx, "run-c"); err != nil || cp == nil || cp.Seq != 3 {
		t.Errorf("the last checkpoint from another open: %+v %v", cp, err)
	}
}
