package policy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Answer is what an approver says about an asked action.
type Answer int

// The answers. Anything but Approve ends in a denial.
const (
	// Defer leaves the decision to someone else; with no one else, the
	// action is denied.
	Defer Answer = iota
	Approve
	Reject
)

// Approval is an approver's answer with its reason.
type Approval struct {
	Answer Answer
	Reason string
}

// Approver decides actions the policy asks about. An implementation must
// return promptly when ctx is done.
type Approver interface {
	Approve(ctx context.Context, v *Verdict) (Approval, error)
}

// AllowAll approves everything it is asked (tests, CI, trusted runs). It
// cannot cross a deny: only asked actions reach an approver.
type AllowAll struct{}

// Approve approves.
func (AllowAll) Approve(context.Context, *Verdict) (Approval, error) {
	return Approval{Answer: Approve, Reason: "allow-all approver"}, nil
}

// DenyAll rejects everything it is asked.
type DenyAll struct{}

// Approve rejects.
func (DenyAll) Approve(context.Context, *Verdict) (Approval, error) {
	return Approval{Answer: Reject, Reason: "deny-all approver"}, nil
}

// Refuse rejects everything it is asked, giving Reason.
type Refuse struct{ Reason string }

// Approve rejects, saying why.
func (r Refuse) Approve(context.Context, *Verdict) (Approval, error) {
	return Approval{Answer: Reject, Reason: r.Reason}, nil
}

// Terminal asks a person at a terminal: it prints the stages that need an
// answer to Out and reads one line from In. Only "y" or "yes" approves;
// anything else, end of input or the timeout rejects.
type Terminal struct {
	In      io.Reader
	Out     io.Writer
	Timeout time.Duration // zero means 60 seconds
}

// Approve prompts and waits for the answer.
func (t Terminal) Approve(ctx context.Context, v *Verdict) (Approval, error) {
	if t.In == nil || t.Out == nil {
		return Approval{}, errors.New("terminal approver has no terminal")
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var b strings.Builder
	b.WriteString("rein: this needs your approval:\n")
	for _, s := range v.Stages {
		if s.Decision == Ask {
			fmt.Fprintf(&b, "  stage %d: %s\n    %s\n", s.Index, Printable(strings.Join(s.Argv, " ")), Printable(s.Reason))
		}
	}
	for _, p := range v.Paths {
		if p.Decision == Ask {
			fmt.Fprintf(&b, "  %s %s\n    %s\n", p.Access.verb(), Printable(p.Path), Printable(p.Reason))
		}
	}
	if len(v.Stages) == 0 && len(v.Paths) == 0 {
		fmt.Fprintf(&b, "  %s\n", Printable(v.Reason))
	}
	fmt.Fprintf(&b, "allow? [y/N] (%s) ", timeout)
	if _, err := io.WriteString(t.Out, b.String()); err != nil {
		return Approval{}, err
	}
	select {
	case line := <-TerminalLines(t.In):
		if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
			return Approval{Answer: Approve, Reason: "approved at the terminal"}, nil
		}
		return Approval{Answer: Reject, Reason: "rejected at the terminal"}, nil
	case <-ctx.Done():
		return Approval{}, fmt.Errorf("no answer at the terminal: %w", ctx.Err())
	}
}

// Resolve settles an asked verdict with the approver. No approver, an
// approver error, a timeout, a deferral or a rejection is a deny. An
// approval never crosses a deny: the action is checked again by recheck
// and runs only if nothing in the fresh verdict is denied.
func Resolve(ctx context.Context, a Approver, v *Verdict, recheck func() *Verdict) *Verdict {
	if v.Decision != Ask {
		return v
	}
	deny := func(why string) *Verdict {
		out := *v
		out.Decision, out.Reason = Deny, why+" ("+v.Reason+")"
		return &out
	}
	if a == nil {
		return deny("asked, and no approver is configured")
	}
	ans, err := a.Approve(ctx, v)
	switch {
	case err != nil:
		return deny("the approver failed: " + err.Error())
	case ans.Answer == Defer:
		return deny("the approver deferred and no one else decides")
	case ans.Answer != Approve:
		why := "rejected by the approver"
		if ans.Reason != "" {
			why += ": " + ans.Reason
		}
		return deny(why)
	}
	fresh := v
	if recheck != nil {
		fresh = recheck()
	}
	if fresh.Decision == Deny {
		return fresh
	}
	out := *fresh
	out.Decision, out.Reason = Allow, "approved: "+ans.Reason+" ("+v.Reason+")"
	return &out
}

// lineSources are the terminals' readers: one per input, each line read
// once and given to one prompt, none read ahead and lost, and none
// swallowed by a prompt that timed out.
var lineSources sync.Map

// TerminalLines is the lines of in, read by one reader for every prompt
// of the process that reads in (Terminal's and the agent's): a line typed
// ahead is kept for the next prompt, and a prompt that timed out takes
// none.
func TerminalLines(in io.Reader) <-chan string {
	var key any = in
	if !reflect.TypeOf(in).Comparable() {
		// An input that cannot key the map is read by one reader per
		// prompt.
		key = new(int)
	}
	v, loaded := lineSources.LoadOrStore(key, make(chan string))
	ch := v.(chan string)
	if !loaded {
		go func() {
			br := bufio.NewReader(in)
			for {
				l, err := br.ReadString('\n')
				if l != "" || err == nil {
					ch <- l
				}
				if err != nil {
					close(ch)
					return
				}
			}
		}()
	}
	return ch
}
