package tool

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
)

// stdoutFile is the spool file a command's structured result names for
// its stdout, if it names one.
func stdoutFile(t *testing.T, env *Envelope) string {
	t.Helper()
	data, err := json.Marshal(env.Result().Data)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Stdout struct {
			File string `json:"file"`
		} `json:"stdout"`
	}
	json.Unmarshal(data, &d)
	return d.Stdout.File
}

// TestAttack3SpoolFileOfAnotherCall: a command's result names no spool
// file that a later command's output fills. The router removes the file
// once the result is read and reuses its directory for the next command:
// read while that one runs, the first result's file was the second
// command's output.
func TestAttack3SpoolFileOfAnotherCall(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	first := f.call(t, "shell", obj{"line": "sh -c 'yes first | head -c 300000'"})
	if first.Status != OK {
		t.Fatalf("first: %s %s", first.Status, first.Reason)
	}
	file := stdoutFile(t, first)
	done := make(chan *Envelope)
	go func() { done <- f.call(t, "shell", obj{"line": "sh -c 'yes second | head -c 300000; sleep 1'"}) }()
	seen := ""
	for deadline := time.Now().Add(3 * time.Second); file != "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(file); err == nil && len(data) > 0 {
			seen = string(data[:min(len(data), 6)])
			break
		}
	}
	if second := <-done; second.Status != OK {
		t.Fatalf("second: %s %s", second.Status, second.Reason)
	}
	if file != "" && seen != "" {
		t.Fatalf("the first command's result names %s, which held %q... of the second command's output", file, seen)
	}
}

// TestAttack3SpoolConcurrent: commands run at once each get their own
// output whole, spooled or not.
func TestAttack3SpoolConcurrent(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			n := []int{10, 300000, 999, 1001, 70000, 1}[i]
			word := fmt.Sprintf("w%d", i)
			env := f.call(t, "shell", obj{"line": fmt.Sprintf("sh -c 'yes %s | head -c %d'", word, n)})
			want := strings.Repeat(word+"\n", n/len(word+"\n")+1)[:n]
			if env.Status != OK || env.Result().Output != want {
				errs <- fmt.Sprintf("%d: %s %q... (%d chars)", i, env.Status, env.Result().Output[:min(20, len(env.Result().Output))], len(env.Result().Output))
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
