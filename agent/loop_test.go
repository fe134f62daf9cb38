package agent

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileServers: counts below zero or past the bound are taken at
// the bound and added without wrapping, so a budget still ends the run;
// calls get ids of rein's own; a protected file too large to read is a
// change, never read whole.
func TestHostileServers(t *testing.T) {
	if count(-5) != 0 || count(math.MaxInt64) != maxCount {
		t.Fatal("count")
	}
	ws := t.TempDir()
	f, err := os.Create(filepath.Join(ws, "big_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 40)
	f.Close()
	if _, err := hashProtected(ws, []string{"*_test.go"}, true); err == nil {
		t.Fatal("a 1 TiB protected file was taken at the start")
	}
	now, err := hashProtected(ws, []string{"*_test.go"}, false)
	if err != nil || !strings.HasPrefix(now["big_test.go"].hash, "too large") {
		t.Fatalf("%v %+v", err, now)
	}
}

// TestResponseBound: a response that streams far past its cap is cut as
// at the cap, its calls never run, without holding it all.
func TestResponseBound(t *testing.T) {
	huge := strings.Repeat("y", 2<<20)
	cs := newChatServer(t, turn{text: huge, calls: []ToolCall{{ID: "c", Name: "write_file", Args: `{"path":"a","content":"b"}`}}})
	resp, err := chatFor(cs).Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, MaxTokens: 10})
	if err != nil || resp.Finish != FinishLength || len(resp.ToolCalls) != 0 || len(resp.Text) > 1<<20 {
		t.Fatalf("%v %s %d calls, %d bytes", err, resp.Finish, len(resp.ToolCalls), len(resp.Text))
	}
}

// TestUntimed: the times go test prints are taken out of the output the
// model is shown, nothing else.
func TestUntimed(t *testing.T) {
	in := "=== RUN   TestAdd\n    calc_test.go:7: Add(2, 3) != 5 (took 0.5s)\n--- FAIL: TestAdd (0.00s)\n    --- PASS: TestAdd/sub (12.34s)\nFAIL\nFAIL\texample.com/calc\t0.008s\nok  \texample.com/calc/sub\t0.003s\nok  \texample.com/x\t(cached)\n"
	want := "=== RUN   TestAdd\n    calc_test.go:7: Add(2, 3) != 5 (took 0.5s)\n--- FAIL: TestAdd\n    --- PASS: TestAdd/sub\nFAIL\nFAIL\texample.com/calc\nok  \texample.com/calc/sub\nok  \texample.com/x\t(cached)\n"
	if got := untimed(in); got != want {
		t.Fatalf("untimed:\n%q\nwant\n%q", got, want)
	}
}
