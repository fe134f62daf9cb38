package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/workspace"
)

// maxConfinedBytes bounds the command the hook rewrites a call to: the
// agent runs it as one argument of its shell, and Linux takes no argument
// longer than 128 KiB.
const maxConfinedBytes = 120 << 10

// maxHookInput bounds what the hook reads of its input.
const maxHookInput = 8 << 20

// Send writes d as the agent of a reads it, on one line; a decision that
// cannot be written is written as a denial.
func Send(w io.Writer, a Adapter, d Decision) error {
	data, err := a.Encode(d)
	if err != nil {
		if data, err = a.Encode(Denied("the answer could not be written: " + err.Error())); err != nil {
			return err
		}
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// ReadInput reads a hook's input, at most 8 MiB.
func ReadInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading the hook input: %w", err)
	}
	if len(data) > maxHookInput {
		return nil, fmt.Errorf("the hook input is larger than 8 MiB")
	}
	return data, nil
}

// Options are how one hook input is answered.
type Options struct {
	// Workspace is the project ("": the agent's project variable, else
	// the call's directory); Policy names the policy's files (its
	// Workspace is set from the project).
	Workspace string
	Policy    policy.Options
	// Confined says the agent's commands run through rein, confined, as
	// Confiner rewrites them (made for the policy and the directory the
	// call runs from).
	Confined bool
	Confiner func(p *policy.Policy, dir string) (Confiner, error)
	// Record records the decision; a decision that cannot be recorded is
	// a denial.
	Record func(*policy.Policy, Call, Decision) error
	// Pre, when set, may decide a call first.
	Pre func(Call) (Decision, bool)
}

// Respond decides one call of the agent a under the project's policy, as
// it is when asked (an edit to a policy file holds from the next call),
// and records the decision; anything that goes wrong is a denial.
func Respond(a Adapter, data []byte, o Options) Decision {
	c, err := a.Parse(data)
	if err != nil {
		return Denied(err.Error())
	}
	ws := o.Workspace
	if env := a.ProjectEnv(); ws == "" && env != "" {
		ws = os.Getenv(env)
	}
	if ws == "" {
		ws = c.Cwd()
	}
	if ws == "" || !filepath.IsAbs(ws) {
		hint := ""
		if env := a.ProjectEnv(); env != "" {
			hint = fmt.Sprintf(" or run from %s (%s)", a.Agent(), env)
		}
		return Denied("no project directory: pass --workspace" + hint)
	}
	// The agent runs its tools on the host, where ~ is the user's HOME.
	po := o.Policy
	po.Workspace, po.OnHost = ws, true
	p, err := policy.Load(po)
	if err != nil {
		return Denied("the policy: " + err.Error())
	}
	if p.Mode == policy.ModeAuto {
		// Auto mode grants what rein's sandbox confines; the agent's own
		// tools run unconfined, so the hook decides them as ask mode does.
		ask := policy.ModeAsk
		po.Mode = &ask
		if p, err = policy.Load(po); err != nil {
			return Denied("the policy: " + err.Error())
		}
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		return Denied("the workspace: " + err.Error())
	}
	e := &Engine{Policy: p, Workspace: w, Cwd: c.Cwd(), Confined: o.Confined, Agent: a.Agent(), OwnConfig: a.OwnConfig(p.Workspace, p.Home)}
	d, done := Decision{}, false
	if o.Pre != nil {
		d, done = o.Pre(c)
	}
	if !done {
		d = a.Decide(e, c)
	}
	d = e.Finish(d)
	if o.Confined {
		if o.Confiner == nil {
			return Denied("the hook confines commands and has no way to")
		}
		x, err := o.Confiner(p, e.dir())
		if err != nil {
			return Denied(err.Error())
		}
		d = a.Confine(c, d, x)
		for _, v := range d.UpdatedInput {
			if s, ok := v.(string); ok && len(s) > maxConfinedBytes {
				// The agent hands the command to its shell as one
				// argument, which the kernel bounds (128 KiB).
				d = Denied(fmt.Sprintf("the command, with the plan rein decided for it, is %d bytes, more than the %d a shell can be given: write large files with the agent's file tools", len(s), maxConfinedBytes))
			}
		}
	}
	if o.Record != nil {
		if err := o.Record(p, c, d); err != nil {
			return Denied("the trace could not record the decision: " + err.Error())
		}
	}
	return d
}

// Records are the trace records of one hook decision: a step and its
// policy event.
func Records(run string, c Call, d Decision) []trace.Record {
	reason := headOf(d.Reason, hookKeptBytes)
	step := trace.Step{RunID: run, Tool: headOf(c.Tool(), 256), Args: headOf(string(c.Input()), hookKeptBytes), Status: string(d.Answer), Reason: reason,
		Observation: reason, StartedAt: time.Now()}
	ev := trace.PolicyEvent{RunID: run, Kind: "refusal", Decision: string(d.Answer), Reason: reason, At: time.Now()}
	if d.Answer != Deny {
		ev.Kind = "decision"
	}
	if d.Verdict != nil && d.Verdict.Rule != nil {
		ev.Rule, ev.Layer, ev.File = d.Verdict.Rule.Rule, d.Verdict.Rule.Layer.String(), d.Verdict.Rule.File
	}
	return []trace.Record{step, ev}
}

// hookKeptBytes is how much of a hook call's input (and of the reason of
// its decision) the trace keeps: the head, with the size and digest of the
// whole. The input can be megabytes (a Write's content), and anything in a
// launched session can send one.
const hookKeptBytes = 16 << 10

// headOf is s when it is at most n bytes, else its first n bytes (to a
// character's start) and a note of its size and SHA-256.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[rein: %d bytes in all, sha256 %s; the trace keeps the first %d]", len(s), hex.EncodeToString(sum[:]), cut)
}
