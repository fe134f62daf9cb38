package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/files"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/workspace"
)

// The built-in surfaces.
const (
	SurfaceCoding   = "coding"
	SurfaceReadOnly = "read-only"
)

var writeModes = []policy.Mode{policy.ModeAsk, policy.ModeAuto}

// ExecArgs are exec's arguments.
type ExecArgs struct {
	Argv    []string `json:"argv" jsonschema:"the program and its arguments, used verbatim (no shell)"`
	Timeout string   `json:"timeout,omitempty" jsonschema:"how long the command may run, such as 30s or 5m; at most the policy's ceiling"`
}

// ShellArgs are shell's arguments.
type ShellArgs struct {
	Line    string `json:"line" jsonschema:"a command line: pipes, redirects, && || ; newlines, cd, comments, here-documents (<<'EOF'), {a,b}, globs, NAME=value before a program, $HOME, $PWD, for loops over words and a final & are seen exactly; anything else (other $VAR, $(...), if, while) runs as opaque bash code, which is asked first"`
	Timeout string `json:"timeout,omitempty" jsonschema:"how long the line may run, such as 30s or 5m; at most the policy's ceiling"`
}

// ReadResultArgs are read_result's arguments.
type ReadResultArgs struct {
	ID     string `json:"id" jsonschema:"the result id an envelope named"`
	Offset int64  `json:"offset,omitempty" jsonschema:"the byte offset to read from"`
	Limit  int64  `json:"limit,omitempty" jsonschema:"how many bytes to read, at most 50000 (the default)"`
}

// Builtin returns a registry with rein's tools and the coding and
// read-only surfaces.
func Builtin() (*Registry, error) {
	b, err := builtins()
	if err != nil {
		return nil, err
	}
	// Each registry has specs of its own (a caller may change one); their
	// schemas, derived once, are shared.
	own := func(in []*Spec) []*Spec {
		out := make([]*Spec, len(in))
		for i, s := range in {
			c := *s
			out[i] = &c
		}
		return out
	}
	reg := NewRegistry()
	specs := own(b.coding)
	if err := reg.Add(specs...); err != nil {
		return nil, err
	}
	// The web tools are in the registry, on no surface of its own:
	// WebSurface adds them to one.
	if err := reg.Add(own(b.web)...); err != nil {
		return nil, err
	}
	var all []string
	for _, s := range specs {
		all = append(all, s.Name)
	}
	if err := reg.DefineSurface(SurfaceCoding, all...); err != nil {
		return nil, err
	}
	if err := reg.DefineSurface(SurfaceReadOnly, "read_file", "list_dir", "find_files", "search_files", "read_result"); err != nil {
		return nil, err
	}
	return reg, nil
}

// builtinSpecs are the built-in tools' specs, made once: deriving and
// resolving their schemas is most of what building a registry costs.
type builtinSpecs struct{ coding, web []*Spec }

var builtins = sync.OnceValues(func() (builtinSpecs, error) {
	var specs []*Spec
	add := func(s *Spec, err error) {
		if err == nil {
			specs = append(specs, s)
		} else {
			panic(err)
		}
	}
	add(Define("read_file", "Read a text file of the workspace, whole or a range of its lines.", true, nil,
		func(ctx context.Context, c *Call, a files.ReadFileArgs) *Result {
			return c.fileTool(policy.ActRead, a.Path, func(t *files.Tools) (any, string, error) {
				r, err := t.ReadFile(ctx, a)
				if err != nil {
					return nil, "", err
				}
				return r, r.Content, nil
			})
		}))
	add(Define("list_dir", "List a directory of the workspace: every entry with its type and size.", true, nil,
		func(ctx context.Context, c *Call, a files.ListDirArgs) *Result {
			return c.fileTool(policy.ActRead, a.Path, func(t *files.Tools) (any, string, error) {
				r, err := t.ListDir(ctx, a)
				return r, jsonText(r), err
			})
		}))
	add(Define("find_files", "Find the workspace's files whose path matches a glob, as git would track them.", true, nil,
		func(ctx context.Context, c *Call, a files.FindFilesArgs) *Result {
			return c.fileTool(policy.ActRead, a.Path, func(t *files.Tools) (any, string, error) {
				r, err := t.FindFiles(ctx, a)
				return r, jsonText(r), err
			})
		}))
	add(Define("search_files", "Search the workspace's files for lines matching a regular expression.", true, nil,
		func(ctx context.Context, c *Call, a files.SearchFilesArgs) *Result {
			return c.fileTool(policy.ActRead, a.Path, func(t *files.Tools) (any, string, error) {
				r, err := t.SearchFiles(ctx, a)
				return r, jsonText(r), err
			})
		}))
	add(Define("write_file", "Create or replace a file of the workspace, atomically.", false, writeModes,
		func(ctx context.Context, c *Call, a files.WriteFileArgs) *Result {
			return c.fileChange(policy.ActWrite, a.Path, func(t *files.Tools) (*files.Change, error) { return t.WriteFile(ctx, a) })
		}))
	add(Define("edit_file", "Replace exact text in a file of the workspace.", false, writeModes,
		func(ctx context.Context, c *Call, a files.EditFileArgs) *Result {
			return c.fileChange(policy.ActWrite, a.Path, func(t *files.Tools) (*files.Change, error) { return t.EditFile(ctx, a) })
		}))
	add(Define("apply_patch", "Apply a unified diff to the workspace, all of it or nothing.", false, writeModes,
		func(ctx context.Context, c *Call, a files.ApplyPatchArgs) *Result {
			return c.fileChange(policy.ActWrite, "", func(t *files.Tools) (*files.Change, error) { return t.ApplyPatch(ctx, a) })
		}))
	add(Define("delete_file", "Delete a file (or, with recursive, a directory) of the workspace.", false, writeModes,
		func(ctx context.Context, c *Call, a files.DeleteFileArgs) *Result {
			return c.fileChange(policy.ActDelete, a.Path, func(t *files.Tools) (*files.Change, error) { return t.DeleteFile(ctx, a) })
		}))
	add(Define("exec", "Run a program with its arguments (no shell) in the sandbox, after the policy allows it.", false, nil,
		func(ctx context.Context, c *Call, a ExecArgs) *Result {
			if len(a.Argv) == 0 {
				return &Result{Status: Denied, Reason: "argv is empty"}
			}
			line, err := shell.FromArgv(a.Argv)
			if err != nil {
				return &Result{Status: Denied, Reason: err.Error()}
			}
			return c.command(ctx, line, a.Timeout)
		}))
	add(Define("shell", "Run a command line in the sandbox, after the policy allows every stage. rein reads pipes, redirects, && || ; newlines, cd, comments, quoted here-documents, brace expansion, NAME=value before a program, globs in arguments, $HOME and $PWD, for loops over words and source .venv/bin/activate itself and runs each program directly; a line of one command ended by & starts it in the background and returns a handle to poll with shell_poll; a line with anything else (other $VAR, $(...), if, while) runs as opaque bash code, which is always asked first: prefer plain lines.", false, nil,
		func(ctx context.Context, c *Call, a ShellArgs) *Result {
			line, res := c.parseLine(a.Line)
			if res != nil {
				return res
			}
			if decided, ok := ctx.Value(decidedKey{}).(*shell.Line); ok {
				// Another process decided this line: what runs is its
				// plan, and only while the line still parses to it here.
				if why := shell.Differs(decided, line); why != "" {
					return &Result{Status: Denied, Reason: "the line parses here to another plan than the one decided before it was sent here (" + why + "): run it again"}
				}
				line = decided
			}
			if line.Background {
				// One command ended by &: it starts as a handle, which
				// the caller polls as shell_start's.
				return c.startLine(line, StartArgs(a))
			}
			if granted, ok := ctx.Value(gateGrantKey{}).(string); ok && granted == a.Line && line.Opaque == nil {
				ctx = context.WithValue(ctx, grantedKey{}, true)
			}
			return c.command(ctx, line, a.Timeout)
		}))
	add(Define("read_result", "Read a range of a whole result whose envelope elided part of it.", true, nil,
		func(ctx context.Context, c *Call, a ReadResultArgs) *Result {
			limit := a.Limit
			if limit <= 0 || limit > DefaultPreviewChars {
				limit = DefaultPreviewChars
			}
			text, size, err := c.Router.cfg.Results.Read(a.ID, a.Offset, limit)
			if err != nil {
				return &Result{Status: NotFound, Reason: err.Error()}
			}
			end := a.Offset + int64(len(text))
			out := text
			if end < size {
				out += fmt.Sprintf("\n[bytes %d to %d of %d; read on from offset %d]", a.Offset, end, size, end)
			}
			return &Result{Status: OK, Output: out, Data: map[string]any{"offset": a.Offset, "bytes": len(text), "size": size}}
		}))
	specs = append(specs, handleSpecs()...)
	specs = append(specs, gitSpecs()...)
	return builtinSpecs{coding: specs, web: webSpecs()}, nil
})

func jsonText(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

type decidedKey struct{}

// WithDecided makes the shell call made with ctx run plan, the plan that
// another process (Claude Code's hook) decided for the call's line, and
// refuse, running nothing, when the line parses here to any other plan:
// a second parse may see another HOME, other files or another version of
// the grammar than the decision did. The call's own policy still decides
// the plan.
func WithDecided(ctx context.Context, plan *shell.Line) context.Context {
	return context.WithValue(ctx, decidedKey{}, plan)
}

// parseLine parses a line with rein's grammar into its plan: exact, or,
// for a line outside the grammar, opaque shell code (bash -c LINE), which
// the policy asks about and the sandbox confines. Only a line bash would
// reject too is refused, naming the construct. Its globs are expanded
// against the workspace from the directory the call starts in.
func (c *Call) parseLine(text string) (*shell.Line, *Result) {
	cfg := c.Router.cfg
	dir := cfg.Profile.Dir
	if dir == "" {
		dir = cfg.Policy.Workspace
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	p := cfg.Policy.LineParser(dir)
	p.Home = bwrap.SandboxHome
	line, err := p.Plan(text)
	if err != nil {
		var ref *shell.Refusal
		if errors.As(err, &ref) {
			return nil, &Result{Status: Denied, Reason: "refused by the grammar: " + ref.Error()}
		}
		return nil, &Result{Status: Denied, Reason: err.Error()}
	}
	return line, nil
}

// decide takes a verdict through the approver and records what was
// decided.
func (c *Call) decide(res *Result, v *policy.Verdict, recheck func() *policy.Verdict) *policy.Verdict {
	r := c.Router
	asked := v.Decision == policy.Ask
	out := policy.Resolve(c.ctx, r.cfg.Approver, v, recheck)
	if asked {
		res.note("approval", out)
	}
	if out.Decision != policy.Allow {
		res.note("refusal", out)
	}
	return out
}

// guard is the files Guard of one call: the policy's path rules and its
// protected set, with asks going to the approver.
func (c *Call) guard(res *Result) files.Guard {
	p := c.Router.cfg.Policy
	return func(access files.Access, written string, t *workspace.Target) error {
		if !filepath.IsAbs(written) {
			written = filepath.Join(t.Root.Path, written)
		}
		act := policy.Act(access)
		if a := p.Protection(act, filepath.Clean(written), t.Path); a != nil {
			v := &policy.Verdict{Decision: policy.Deny, Reason: "protected by " + a.String(), Rule: a}
			res.note("refusal", v)
			return &workspace.PathError{Kind: workspace.Protected, Path: written, Component: t.Rel, Reason: v.Reason}
		}
		v := c.decide(res, p.CheckPath(act, t.Path), func() *policy.Verdict { return p.CheckPath(act, t.Path) })
		if v.Decision != policy.Allow {
			res.Rule = v.Rule
			return &denyError{v}
		}
		return nil
	}
}

// fileTool runs a read-only file tool.
func (c *Call) fileTool(act policy.Act, path string, run func(t *files.Tools) (any, string, error)) *Result {
	res := &Result{}
	t := *c.Router.files
	t.Guard = c.guard(res)
	data, text, err := run(&t)
	if err != nil {
		return fileError(res, err)
	}
	res.Status, res.Output, res.Data = OK, text, data
	return res
}

// fileChange runs a mutating file tool; the change comes back as a diff.
func (c *Call) fileChange(act policy.Act, path string, run func(t *files.Tools) (*files.Change, error)) *Result {
	res := &Result{}
	if !policy.ForMode(c.Router.cfg.Policy.Mode).WorkspaceWrite {
		return &Result{Status: Denied, Reason: fmt.Sprintf("%s mode does not write the workspace", c.Router.cfg.Policy.Mode)}
	}
	t := *c.Router.files
	t.Guard = c.guard(res)
	ch, err := run(&t)
	if err != nil {
		return fileError(res, err)
	}
	res.Status, res.Output, res.Changed, res.Diff, res.Data = OK, ch.Diff, ch.Paths, ch.Diff, ch
	return res
}

// denyError is a path the policy refused (or an ask nobody approved).
type denyError struct{ v *policy.Verdict }

func (e *denyError) Error() string { return e.v.Reason }

func fileError(res *Result, err error) *Result {
	var pe *workspace.PathError
	var fe *files.Error
	var de *denyError
	res.Reason = err.Error()
	switch {
	case errors.As(err, &de):
		res.Status, res.Reason, res.Rule = Denied, de.v.Reason, de.v.Rule
	case errors.As(err, &pe):
		switch pe.Kind {
		case workspace.NotFound:
			res.Status = NotFound
		case workspace.Protected:
			res.Status = Denied
		default:
			res.Status = InvalidPath
		}
	case errors.As(err, &fe):
		res.Status = Failed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		res.Status = Cancelled
	default:
		res.Status = Failed
	}
	return res
}

// timeout reads a call's timeout against the policy's default and
// ceiling.
func (c *Call) timeout(s string) (time.Duration, *Result) {
	p := c.Router.cfg.Policy
	if s == "" {
		return p.Sandbox.Timeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, &Result{Status: Denied, Reason: fmt.Sprintf("timeout %q is not a positive duration such as 30s", s)}
	}
	if d > p.Sandbox.MaxTimeout {
		return 0, &Result{Status: Denied, Reason: fmt.Sprintf("timeout %s is above the policy's %s ceiling (sandbox.max_timeout)", d, p.Sandbox.MaxTimeout)}
	}
	return d, nil
}

// profile is the execution profile of one command, whose connections, in
// network proxy, go to log.
func (c *Call) profile(timeout time.Duration, log *egressLog) sandbox.Profile {
	p := c.Router.cfg.Policy
	prof := c.Router.cfg.Profile
	prof.Workspace = p.Workspace
	prof.ReadOnly = prof.ReadOnly || p.ReadOnly || !policy.ForMode(p.Mode).WorkspaceWrite
	prof.Timeout = timeout
	if prof.Rung == "" {
		prof.Rung = sandbox.Rung(p.Sandbox.Rung)
	}
	if prof.Network == "" {
		prof.Network = sandbox.Network(p.Sandbox.Network)
	}
	if !policy.ForMode(p.Mode).Network || (c.ctx != nil && c.ctx.Value(networkOffKey{}) != nil) {
		prof.Network = sandbox.NetworkOff
	}
	if c.ctx != nil {
		if cs, ok := c.ctx.Value(ownCachesKey{}).(*sandbox.CacheSet); ok && cs != nil {
			prof.Caches = cs
		}
	}
	if prof.Network == sandbox.NetworkProxy && prof.Egress == nil {
		approver := c.Router.cfg.Approver
		if c.Router.cfg.NetApprover != nil {
			approver = c.Router.cfg.NetApprover
		}
		prof.Egress = Egress(p, approver, log.add)
	}
	if prof.Env == nil {
		prof.Env = Env(os.Environ(), p)
	}
	if prof.HostCaches == nil {
		prof.HostCaches = HostCaches(os.Environ(), p)
	}
	if prof.Hidden == nil {
		prof.Hidden = Hidden(p)
	}
	prof.HostReadPaths = append(slices.Clip(prof.HostReadPaths), p.Sandbox.ReadPaths...)
	return prof
}

type networkOffKey struct{}

// NetworkOff makes the commands of the calls made with ctx run with the
// network off, whatever the run's mode says: an agent's gate checks the
// workspace, not what a host answers.
func NetworkOff(ctx context.Context) context.Context {
	return context.WithValue(ctx, networkOffKey{}, true)
}

// command decides a line and runs it in the sandbox.
func (c *Call) command(ctx context.Context, line *shell.Line, timeoutArg string) *Result {
	res := &Result{}
	p := c.Router.cfg.Policy
	timeout, bad := c.timeout(timeoutArg)
	if bad != nil {
		return bad
	}
	live := liveOf(ctx)
	log := &egressLog{observe: live.Egress}
	prof := c.profile(timeout, log)
	if g, ok := ctx.Value(gitKey{}).(gitRun); ok {
		// A git built-in's own environment, which the policy does not
		// decide: it only switches git's ways to run programs off.
		prof.Env = append(slices.Clone(prof.Env), g.env...)
		prof.ReadOnly = prof.ReadOnly || g.readOnly
	}
	if r := line.Opaque; r != nil && prof.Rung == sandbox.RungNone {
		// Opaque code is asked on the premise that it runs confined.
		return &Result{Status: Denied, Reason: fmt.Sprintf("opaque shell code (%s at byte %d) runs only in a sandbox, and the rung is none: confine it, or write a line rein sees exactly", r.Construct, r.Offset)}
	}
	// The policy decides the programs the sandbox's PATH finds, which are
	// the ones that run.
	sandbox.ResolvePrograms(line, prof)
	check := checkFrom(p, line, prof.Dir)
	first := check()
	if ctx.Value(grantedKey{}) == true && first.Decision == policy.Ask {
		// A line of the gate's own, which the grant of the run's gate
		// covers: an ask is allowed, a deny stays.
		granted := *first
		granted.Decision, granted.Reason = policy.Allow, "allowed as the run's gate's own line (the gate's grant covers it; the policy alone would ask: "+first.Reason+")"
		first = &granted
	}
	v := c.decide(res, first, check)
	if live.Decided != nil {
		live.Decided(v)
	}
	if v.Decision != policy.Allow {
		res.Status, res.Reason, res.Rule = Denied, v.Reason, v.Rule
		return res
	}
	own := live.SpoolDir == ""
	if !own {
		prof.SpoolDir = live.SpoolDir
	} else {
		dir, err := c.Router.spoolDir()
		if err != nil {
			return &Result{Status: Unavailable, Reason: err.Error()}
		}
		defer c.Router.spoolDone(dir)
		// The result store keeps no more than this of a stream, and a
		// stream short enough to be kept whole in memory needs no file.
		prof.SpoolDir, prof.SpoolBytes, prof.SpoolOverflow = dir, MaxStoredBytes+1, true
	}
	// Whatever is shown live goes through the redactor the result does.
	var stdout, stderr io.Writer
	var shown []*trace.RedactingWriter
	for _, s := range []struct {
		to  io.Writer
		dst *io.Writer
	}{{live.Stdout, &stdout}, {live.Stderr, &stderr}} {
		if s.to != nil {
			w := c.Router.cfg.Redactor.Writer(s.to)
			shown = append(shown, w)
			*s.dst = w
		}
	}
	sr, err := c.Router.run(ctx, line, prof, stdout, stderr)
	for _, w := range shown {
		w.Flush()
	}
	res.records = append(res.records, log.take(c.Router.runID)...)
	if err != nil {
		var se *sandbox.Error
		if errors.As(err, &se) {
			res.Status, res.Reason = Status(se.Status), se.Reason
			if se.Status == sandbox.Unavailable {
				c.Router.markDown(se.Reason)
			}
			return res
		}
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	res = c.Router.fromSandbox(res, sr)
	if own {
		// The router's spool files are read into the result and removed
		// as the call ends, and their directory holds the next command's:
		// the result names none.
		sr.Stdout.File, sr.Stderr.File = "", ""
	}
	return res
}

// checkFrom decides line from where it starts: dir, the profile's Dir,
// else the workspace.
func checkFrom(p *policy.Policy, line *shell.Line, dir string) func() *policy.Verdict {
	return func() *policy.Verdict {
		if dir != "" {
			return p.CheckIn(line, dir)
		}
		return p.Check(line)
	}
}

// fromSandbox turns a sandbox result into the tool result.
func (r *Router) fromSandbox(res *Result, sr *sandbox.Result) *Result {
	code := sr.ExitCode
	res.Status, res.Reason, res.ExitCode = sr.Status, sr.Reason, &code
	res.Rung, res.Limits, res.LimitHit, res.Poisoned, res.Warm = sr.Rung, sr.Limits, sr.LimitHit, sr.Poisoned, sr.Warm
	res.Output = streams(sr.Stdout, sr.Stderr)
	res.Data = sr
	if sr.Poisoned != "" {
		r.markDown(sr.Poisoned)
	}
	return res
}

// streams is a command's output as one text: stdout, then stderr under a
// heading when there is any.
func streams(out, errOut sandbox.Output) string {
	text := readWhole(out)
	if e := readWhole(errOut); e != "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[stderr]\n" + e
	}
	return text
}

// readWhole is a stream's full bytes from its spool file (bounded by the
// result store's ceiling), or what the sandbox kept of it.
func readWhole(o sandbox.Output) string {
	if o.File != "" {
		if f, err := os.Open(o.File); err == nil {
			defer f.Close()
			buf := make([]byte, min(o.Bytes, MaxStoredBytes+1))
			n, _ := f.ReadAt(buf, 0)
			return string(buf[:n])
		}
	}
	return o.Text
}

// run runs a command's line, and start starts a handle's, through the
// router's pool unless it is cold.
func (r *Router) run(ctx context.Context, line *shell.Line, prof sandbox.Profile, stdout, stderr io.Writer) (*sandbox.Result, error) {
	if r.cfg.Cold {
		return sandbox.Run(ctx, line, prof, stdout, stderr)
	}
	return r.pool.Run(ctx, line, prof, stdout, stderr)
}

func (r *Router) start(ctx context.Context, line *shell.Line, prof sandbox.Profile, stdout, stderr io.Writer) (*sandbox.Handle, error) {
	if r.cfg.Cold {
		return sandbox.Start(ctx, line, prof, stdout, stderr)
	}
	return r.pool.Start(ctx, line, prof, stdout, stderr)
}

func (r *Router) markDown(why string) {
	r.mu.Lock()
	if r.sandboxDown == "" {
		r.sandboxDown = why
	}
	r.mu.Unlock()
}

// spoolDir is a directory for one command's spooled output, outside the
// workspace: an emptied one of an earlier command's, or a new one.
func (r *Router) spoolDir() (string, error) {
	r.mu.Lock()
	if n := len(r.spools); n > 0 {
		d := r.spools[n-1]
		r.spools = r.spools[:n-1]
		r.mu.Unlock()
		return d, nil
	}
	r.mu.Unlock()
	base, err := sandbox.StateDir("spool")
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(base, r.runID+"-")
}

// spoolDone empties a command's spool directory, once its output is
// read, and keeps it for the next command; after Close, or when it
// cannot be emptied, it is removed.
func (r *Router) spoolDone(dir string) {
	for _, name := range []string{"stdout", "stderr"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(dir)
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || len(r.spools) >= 4 {
		os.RemoveAll(dir)
		return
	}
	r.spools = append(r.spools, dir)
}

// Env is the environment a decided command runs with: the locale, the
// terminal type, PATH (which the sandbox keeps to the directories its
// view exposes), and what the policy passes by name ([env] pass and
// secrets). Nothing else of the caller's environment goes in.
func Env(env []string, p *policy.Policy) []string {
	var out []string
	names := append(slices.Clone(p.EnvPass), p.EnvSecrets...)
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if k == "LANG" || k == "TERM" || k == "PATH" || strings.HasPrefix(k, "LC_") || slices.Contains(names, k) {
			out = append(out, e)
		}
	}
	return out
}
