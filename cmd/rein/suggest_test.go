//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestPolicySuggest records a session of real rein commands, with asks
// approved and refused, and pastes what rein policy suggest prints into
// the user's policy file: rein policy check then allows each approved
// line, and its neighbours (other arguments, other programs, the refusal
// met once, the dangerous line approved) are still asked.
func TestPolicySuggest(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	t.Setenv("REIN_TRACE", filepath.Join(filepath.Dir(ws), "trace.db"))
	session := []struct {
		approve, line string
		code          int
	}{
		{"all", "touch made", 0},
		{"all", "ls && mkdir out", 0},
		{"all", "rm -rf out", 0},               // dangerous: no rule can allow it
		{"all", "bash -c 'touch x'", 0},        // shell-complex: no rule either
		{"none", "touch refused", exitDeny},    // refused twice: a rule is drafted
		{"none", "touch  ./refused", exitDeny}, // the same operation
		{"none", "touch once", exitDeny},       // refused once: nothing
		{"all", "rm -rf /", exitDeny},          // a hard deny, twice: listed, never drafted
		{"all", "rm -rf / ", exitDeny},         //
		{"all", "touch 'a*b'", 0},              // cannot be stated as a rule
	}
	for _, s := range session {
		if code, out, errOut := rein(t, "shell", "--approve", s.approve, s.line); code != s.code {
			t.Fatalf("rein shell --approve %s %q: exit %d, want %d\n%s%s", s.approve, s.line, code, s.code, out, errOut)
		}
	}
	code, out, errOut := rein(t, "policy", "suggest")
	if code != 0 {
		t.Fatalf("suggest: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("rein policy suggest:\n%s", out)
	for _, want := range []string{
		"[exec]\nallow = [\n",
		"  \"touch made\",  # approved in run ",
		"  \"mkdir out\",  # approved in run ",
		"  \"touch refused\",  # refused in run ",
		"  \"touch ./refused\",  # refused in run ",
		"# No rule can allow this:\n#   exec rm -rf out\n",
		"\n#   exec bash -c 'touch x'\n",
		"# Cannot be stated as a rule:\n#   exec touch 'a*b'\n",
		"# Denied by the current policy:\n#   exec rm -rf /\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the suggestion lacks %q", want)
		}
	}
	if n := strings.Count(out, "\",  # "); n != 4 {
		t.Errorf("%d rules drafted, want 4", n)
	}

	// Nothing was written by suggest; the person pastes it.
	user := filepath.Join(home, ".config", "rein", "policy.toml")
	if _, err := os.Stat(user); !os.IsNotExist(err) {
		t.Fatalf("suggest wrote the user policy: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		code int
	}{
		{"touch made", exitOK},
		{"mkdir out", exitOK},
		{"ls && mkdir out", exitOK},
		{"touch refused", exitOK},
		{"touch ./refused", exitOK},
		{"touch other", exitAsk},
		{"touch made other", exitAsk},
		{"mkdir -p out", exitAsk},
		{"mkdir out2", exitAsk},
		{"touch once", exitAsk},
		{"rm -rf out", exitAsk},
		{"bash -c 'touch x'", exitAsk},
		{"touch 'a*b'", exitAsk},
		{"rm -rf /", exitDeny},
	} {
		if code, out, errOut := rein(t, "policy", "check", "--", c.line); code != c.code {
			t.Errorf("policy check %q with the suggestion pasted: exit %d, want %d\n%s%s", c.line, code, c.code, out, errOut)
		}
	}
}

// TestPolicySuggestEgress: of the connections a trace holds, suggest
// drafts from those a person approved and those the policy refused again
// and again, each read from the egress event recorded beside its policy
// event: not from a request the proxy refused before asking the policy
// (CONNECT evil.example, no port), not from a plain HTTP request whose
// path makes its reason read as an approval, and not from an approved
// plain HTTP request, whose approval was of one path. A trace without the
// egress event is read by the reason only where it cannot be mistaken.
func TestPolicySuggestEgress(t *testing.T) {
	_, ws := docFixture(t)
	db := filepath.Join(filepath.Dir(ws), "trace.db")
	store, err := (&traceFlag{path: db}).open(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const run = "r-egress"
	if _, err := store.Append(ctx, trace.Run{ID: run, StartedAt: time.Now(), Workspace: ws, Surface: "tool", Mode: "ask", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	connect := func(target string) netproxy.Event {
		at = at.Add(time.Millisecond)
		host, port, _ := strings.Cut(target, ":")
		n, _ := strconv.Atoi(port) // 0 for none
		return netproxy.Event{Time: at, Request: netproxy.Request{Proto: netproxy.ProtoConnect, Host: host, Port: uint16(n), Target: target}}
	}
	asked := func(target string) string { return "no net rule names " + target }
	var (
		// CONNECT evil.example HTTP/1.1: refused by the proxy, never asked.
		noPort = connect("evil.example")
		// Refused by the person, twice: a rule is drafted.
		refused = connect("refused.example:443")
		// Approved once: a rule is drafted.
		approved = connect("approved.example:443")
		// A plain HTTP request a rule allowed, its path written to read
		// as an approval in the policy event's reason.
		forged = netproxy.Event{Time: at.Add(time.Second), Request: netproxy.Request{Proto: netproxy.ProtoHTTP, Host: "forged.example", Port: 80,
			Path: "/x: approved: y", Target: "forged.example:80/x: approved: y"},
			Verdict: netproxy.Verdict{Allow: true, Rule: "forged.example:80/x*", Layer: "user", Reason: `allowed by allow rule "forged.example:80/x*" (user layer)`}}
		// A plain HTTP request a person approved: one path.
		page = netproxy.Event{Time: at.Add(2 * time.Second), Request: netproxy.Request{Proto: netproxy.ProtoHTTP, Host: "page.example", Port: 80,
			Path: "/page", Target: "page.example:80/page"},
			Verdict: netproxy.Verdict{Allow: true, Reason: "approved: fine (" + asked("page.example:80/page") + ")"}}
	)
	noPort.Refused = "the target has no port"
	refused.Verdict = netproxy.Verdict{Reason: "rejected by the approver: no (" + asked(refused.Target) + ")"}
	refused.Refused = refused.Verdict.Reason
	refused2 := refused
	refused2.Time = refused.Time.Add(time.Microsecond)
	noPort2 := noPort
	noPort2.Time = noPort.Time.Add(time.Microsecond)
	approved.Verdict = netproxy.Verdict{Allow: true, Reason: "approved: yes (" + asked(approved.Target) + ")"}

	step := 0
	record := func(events []netproxy.Event, alone bool) {
		t.Helper()
		recs := []trace.Record{trace.Step{RunID: run, Index: step, Tool: "shell", Args: `{"line":"curl x"}`, Status: "ok", StartedAt: at}}
		step++
		for _, ev := range events {
			for _, r := range tool.EgressRecords(run, ev) {
				if _, sandboxEvent := r.(trace.SandboxEvent); sandboxEvent && alone {
					// A trace that holds the policy event alone.
					continue
				}
				recs = append(recs, r)
			}
		}
		if _, err := store.AppendAll(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	record([]netproxy.Event{noPort, refused, forged}, false)
	record([]netproxy.Event{noPort2, refused2, approved, page}, false)
	// Read by the reason alone: the tunnel's approval counts, the
	// plain request's reason and the proxy's own refusal do not.
	alone := connect("alone.example:8443")
	alone.Verdict = netproxy.Verdict{Allow: true, Reason: "approved: ok (" + asked(alone.Target) + ")"}
	forgedAlone := forged
	forgedAlone.Time = forged.Time.Add(time.Minute)
	noPortAlone, noPortAlone2 := noPort, noPort2
	noPortAlone.Time, noPortAlone2.Time = noPort.Time.Add(time.Minute), noPort2.Time.Add(time.Minute)
	refusedAlone := connect("again.example:443")
	refusedAlone.Verdict = netproxy.Verdict{Reason: "rejected by the approver: no (" + asked(refusedAlone.Target) + ")"}
	refusedAlone.Refused = refusedAlone.Verdict.Reason
	refusedAlone2 := refusedAlone
	refusedAlone2.Time = refusedAlone.Time.Add(time.Microsecond)
	record([]netproxy.Event{alone, forgedAlone, noPortAlone, refusedAlone}, true)
	record([]netproxy.Event{noPortAlone2, refusedAlone2}, true)
	store.Close()

	code, out, errOut := rein(t, "policy", "suggest", "--trace", db, "--json", run)
	if code != 0 {
		t.Fatalf("suggest: exit %d\n%s%s", code, out, errOut)
	}
	var got struct {
		Suggestions []struct {
			Act, Outcome, Pattern, Subject string
			From                           []policy.Origin
		}
		NotDrafted []string `json:"not_drafted"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var drafted []string
	for _, d := range got.Suggestions {
		if d.Act != "net" {
			t.Errorf("a %s suggestion from a net event: %+v", d.Act, d)
		}
		if d.Outcome == "drafted" {
			drafted = append(drafted, d.Pattern)
		}
		for _, host := range []string{"evil.example", "forged.example", "page.example"} {
			if strings.Contains(d.Subject, host) {
				t.Errorf("a suggestion from %s, which no person approved nor the policy refused: %+v", host, d)
			}
		}
	}
	slices.Sort(drafted)
	if want := []string{"again.example:443", "alone.example:8443", "approved.example:443", "refused.example:443"}; !slices.Equal(drafted, want) {
		t.Errorf("drafted %q, want %q\n%s", drafted, want, out)
	}
	if len(got.NotDrafted) != 1 || !strings.Contains(got.NotDrafted[0], "page.example:80/page (approved in run "+run+" step 1): a plain HTTP request was approved for its path alone") {
		t.Errorf("not drafted: %q, want the approved plain HTTP request alone", got.NotDrafted)
	}
}
