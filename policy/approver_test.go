package policy

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

type approverFunc func(context.Context, *Verdict) (Approval, error)

func (f approverFunc) Approve(ctx context.Context, v *Verdict) (Approval, error) { return f(ctx, v) }

func askedVerdict() *Verdict {
	return &Verdict{Decision: Ask, Reason: "asked by rule", Stages: []StageVerdict{{Index: 0, Argv: []string{"git", "commit"}, Decision: Ask, Reason: "asked by rule"}}}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	allowed := func() *Verdict { return &Verdict{Decision: Ask} }
	cases := []struct {
		name     string
		approver Approver
		recheck  func() *Verdict
		want     Decision
		reason   string
	}{
		{"allow-all", AllowAll{}, allowed, Allow, "approved"},
		{"deny-all", DenyAll{}, allowed, Deny, "rejected"},
		{"no approver", nil, allowed, Deny, "no approver"},
		{"error", approverFunc(func(context.Context, *Verdict) (Approval, error) { return Approval{}, errors.New("boom") }), allowed, Deny, "boom"},
		{"defer", approverFunc(func(context.Context, *Verdict) (Approval, error) { return Approval{Answer: Defer}, nil }), allowed, Deny, "deferred"},
		{"unreadable answer", approverFunc(func(context.Context, *Verdict) (Approval, error) { return Approval{Answer: 42}, nil }), allowed, Deny, "rejected"},
		{"approval cannot cross a deny", AllowAll{}, func() *Verdict { return &Verdict{Decision: Deny, Reason: "now denied"} }, Deny, "now denied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Resolve(ctx, c.approver, askedVerdict(), c.recheck)
			if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("got %s (%s), want %s containing %q", v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
	// An allowed or denied verdict never reaches the approver.
	called := false
	spy := approverFunc(func(context.Context, *Verdict) (Approval, error) {
		called = true
		return Approval{Answer: Approve}, nil
	})
	for _, d := range []Decision{Allow, Deny} {
		if v := Resolve(ctx, spy, &Verdict{Decision: d}, nil); v.Decision != d || called {
			t.Fatalf("%s reached the approver", d)
		}
	}
}

func TestTerminalApprover(t *testing.T) {
	cases := []struct {
		input string
		want  Answer
	}{
		{"y\n", Approve}, {"yes\n", Approve}, {" Y \n", Approve},
		{"n\n", Reject}, {"\n", Reject}, {"", Reject}, {"yep\n", Reject},
	}
	for _, c := range cases {
		var out strings.Builder
		a := Terminal{In: strings.NewReader(c.input), Out: &out, Timeout: 5 * time.Second}
		got, err := a.Approve(context.Background(), askedVerdict())
		if err != nil || got.Answer != c.want {
			t.Errorf("input %q: got %v, %v; want %v", c.input, got, err, c.want)
		}
		if !strings.Contains(out.String(), "git commit") || !strings.Contains(out.String(), "[y/N]") {
			t.Errorf("prompt does not show the stage: %q", out.String())
		}
	}
	// No answer before the timeout is an error, which Resolve turns into a deny.
	r, w := io.Pipe()
	defer w.Close()
	a := Terminal{In: r, Out: io.Discard, Timeout: 20 * time.Millisecond}
	if v := Resolve(context.Background(), a, askedVerdict(), nil); v.Decision != Deny || !strings.Contains(v.Reason, "no answer") {
		t.Fatalf("timeout: %s (%s)", v.Decision, v.Reason)
	}
	if _, err := (Terminal{}).Approve(context.Background(), askedVerdict()); err == nil {
		t.Fatal("a terminal approver without a terminal approved")
	}
	// The prompt that timed out took no line: the one typed next answers
	// the next prompt.
	go io.WriteString(w, "y\n")
	a.Timeout = 5 * time.Second
	if got, err := a.Approve(context.Background(), askedVerdict()); err != nil || got.Answer != Approve {
		t.Fatalf("after a timeout: %v %v", got, err)
	}
}

// TestTerminalLinesTypedAhead: lines typed ahead answer the prompts in
// order, each one line, whoever prompts (the approver or another reader
// of TerminalLines): none is read ahead into one prompt's buffer and
// lost.
func TestTerminalLinesTypedAhead(t *testing.T) {
	in := strings.NewReader("yes\nthe answer\ny\nn\n")
	a := Terminal{In: in, Out: io.Discard, Timeout: 5 * time.Second}
	if got, _ := a.Approve(context.Background(), askedVerdict()); got.Answer != Approve {
		t.Fatalf("first: %v", got)
	}
	if l := <-TerminalLines(in); l != "the answer\n" {
		t.Fatalf("another reader's line: %q", l)
	}
	for _, want := range []Answer{Approve, Reject, Reject} {
		if got, _ := a.Approve(context.Background(), askedVerdict()); got.Answer != want {
			t.Fatalf("got %v, want %v", got.Answer, want)
		}
	}
}

func TestRepeatTracker(t *testing.T) {
	tr := &RepeatTracker{Limit: 5}
	variants := []string{"rm -rf build/", "rm  -rf 'build'", `rm -rf "./build"`, "rm -rf ./build//", "rm -rf build"}
	for i, target := range variants {
		stop := tr.Note("shell", target, "dangerous")
		if (stop != nil) != (i == 4) {
			t.Fatalf("note %d (%q): stop=%v", i, target, stop)
		}
		if stop != nil && (stop.Count != 5 || !strings.Contains(stop.Error(), "refused 5 times")) {
			t.Fatalf("stop: %v", stop)
		}
	}
	// A different tool, target or refusal is counted apart.
	tr = &RepeatTracker{Limit: 2}
	for _, n := range [][3]string{{"shell", "rm a", "x"}, {"exec", "rm a", "x"}, {"shell", "rm b", "x"}, {"shell", "rm a", "y"}} {
		if tr.Note(n[0], n[1], n[2]) != nil {
			t.Fatalf("%v stopped too early", n)
		}
	}
	if tr.Note("shell", "rm a", "x") == nil {
		t.Fatal("second identical refusal did not stop at limit 2")
	}
	if (&RepeatTracker{}).Note("a", "b", "c") != nil {
		t.Fatal("default limit stopped at 1")
	}
}

func TestForMode(t *testing.T) {
	if g := ForMode(ModeSafe); g != (Grant{}) {
		t.Errorf("safe grants %+v", g)
	}
	if g := ForMode(ModeAuto); !g.WorkspaceWrite || !g.UnknownPrograms {
		t.Errorf("auto grants %+v", g)
	}
}
