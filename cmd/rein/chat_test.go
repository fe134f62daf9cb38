//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestChat: rein chat new starts a conversation with the provider flags;
// send runs a turn (a reply with no tool call ends it) and prints the
// reply; three turns, then a branch at turn 2 that goes on with its own
// head; show and list say so; rein chat reads a turn a line.
func TestChat(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	srv, n := scriptedModel(t, "reply one", "reply two", "reply three", `write_file {"path":"b.txt","content":"branch\n"}`, "reply on the branch", "reply four")
	code, out, errOut := rein(t, "chat", "new", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--approve", "all", "--json")
	var c struct {
		Conversation string `json:"conversation"`
	}
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.Conversation == "" {
		t.Fatalf("chat new: exit %d %v\n%s%s", code, err, out, errOut)
	}
	conv := c.Conversation
	for i, msg := range []string{"one", "two", "three"} {
		code, out, errOut := rein(t, "chat", "send", conv, msg)
		if code != 0 || !strings.Contains(out, "\n"+[]string{"reply one", "reply two", "reply three"}[i]+"\n") {
			t.Fatalf("send %q: exit %d\n%s%s", msg, code, out, errOut)
		}
	}
	if code, _, errOut := rein(t, "chat", "send", conv, "later", "--approve", "defer"); code != 2 || !strings.Contains(errOut, "a conversation's turn is answered at once") {
		t.Fatalf("send --approve defer: exit %d %s", code, errOut)
	}
	code, out, errOut = rein(t, "chat", "branch", conv, "2")
	branch := strings.TrimSpace(out)
	if code != 0 || branch == "" || branch == conv {
		t.Fatalf("branch: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := rein(t, "chat", "send", branch, "again, on the branch"); code != 0 || !strings.Contains(out, "reply on the branch") {
		t.Fatalf("send on the branch: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = rein(t, "chat", "show", conv)
	if code != 0 || !strings.Contains(out, ", 3 turns\n") || !strings.Contains(out, "> two\nreply two\n") || !strings.Contains(out, "> three\nreply three\n") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "chat", "show", branch)
	if code != 0 || !strings.Contains(out, "(branched from "+conv+" at turn 2), 1 turns") || !strings.Contains(out, "> again, on the branch\nreply on the branch\n") {
		t.Fatalf("show the branch: exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "chat", "list")
	if code != 0 || !strings.Contains(out, conv+"  ") || !strings.Contains(out, "3 turns") || !strings.Contains(out, "1 turns  (from "+conv+" at turn 2)") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	if code, _, errOut := rein(t, "chat", "branch", conv, "9"); code != 2 || !strings.Contains(errOut, "has no turn 9") {
		t.Errorf("a branch from a turn there is not: exit %d %s", code, errOut)
	}
	// A line a turn, until an empty line.
	var stdout, stderr bytes.Buffer
	code = runIn([]string{"chat", conv}, strings.NewReader("four\n\n"), &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "reply four") || *n != 6 {
		t.Fatalf("rein chat: exit %d, %d model calls\n%s%s", code, *n, stdout.String(), stderr.String())
	}
	code, out, _ = rein(t, "chat", "show", conv, "--json")
	var shown struct {
		Turns []struct {
			Turn  int    `json:"turn"`
			Reply string `json:"reply"`
		} `json:"turns"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || len(shown.Turns) != 4 || shown.Turns[3].Reply != "reply four" {
		t.Fatalf("show --json: %s", out)
	}
}
