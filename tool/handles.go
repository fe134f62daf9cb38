package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/trace"
)

// Background handles, as the execution contract describes them.
const (
	// MaxHandles is how many handles may be live in a run at once.
	MaxHandles = 8
	// PollBytes is the most one shell_poll returns: the newest bytes, with
	// the number skipped stated.
	PollBytes = 16 << 10
)

// StartArgs are shell_start's arguments.
type StartArgs struct {
	Line    string `json:"line" jsonschema:"a command line in rein's shell grammar, run in the background"`
	Timeout string `json:"timeout,omitempty" jsonschema:"how long it may run, such as 5m; at most the policy's ceiling"`
}

// HandleArgs name a handle.
type HandleArgs struct {
	Handle string `json:"handle" jsonschema:"the handle shell_start returned"`
}

// handle is one background line.
type handle struct {
	id, line string
	capture  string
	out      *os.File // the capture, appended to by the sandbox
	h        *sandbox.Handle
	capped   *cappedWriter
	cancel   context.CancelFunc
	cursor   int64
	ended    bool // its end was reported
	egress   *egressLog
}

// MaxCaptureBytes bounds what a handle's capture file keeps; beyond it the
// output is dropped, and polls say so.
const MaxCaptureBytes = 1 << 30

// cappedWriter writes to f until left runs out, then drops the rest and
// counts it: eight handles cannot fill the disk.
type cappedWriter struct {
	mu      sync.Mutex
	f       *os.File
	left    int64
	dropped int64
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(int64(len(p)), max(w.left, 0))
	if n > 0 {
		if _, err := w.f.Write(p[:n]); err != nil {
			return 0, err
		}
		w.left -= n
	}
	w.dropped += int64(len(p)) - n
	return len(p), nil
}

func (w *cappedWriter) droppedBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

func (h *handle) done() bool {
	select {
	case <-h.h.Done():
		return true
	default:
		return false
	}
}

// handleTable holds a run's handles.
type handleTable struct {
	r        *Router
	mu       sync.Mutex
	all      map[string]*handle
	n        int
	starting int
	ctx      context.Context
	cancel   context.CancelFunc
}

func newHandleTable(r *Router) *handleTable {
	ctx, cancel := context.WithCancel(context.Background())
	return &handleTable{r: r, all: map[string]*handle{}, ctx: ctx, cancel: cancel}
}

// killLive kills every live handle and waits for their ends (at most
// 15 s each), leaving the table open for new ones.
func (t *handleTable) killLive() {
	t.mu.Lock()
	hs := make([]*handle, 0, len(t.all))
	for _, h := range t.all {
		if !h.done() {
			hs = append(hs, h)
		}
	}
	t.mu.Unlock()
	for _, h := range hs {
		h.h.Kill()
	}
	for _, h := range hs {
		select {
		case <-h.h.Done():
		case <-time.After(15 * time.Second):
		}
	}
}

// killAll kills every live handle and waits for their ends: the run is
// over, however it ended.
// killAll kills every handle and returns the connections they made since
// their last poll, for the trace.
func (t *handleTable) killAll(runID string) []trace.Record {
	t.mu.Lock()
	hs := make([]*handle, 0, len(t.all))
	for _, h := range t.all {
		hs = append(hs, h)
	}
	t.mu.Unlock()
	t.cancel()
	for _, h := range hs {
		h.h.Kill()
	}
	for _, h := range hs {
		select {
		case <-h.h.Done():
		case <-time.After(15 * time.Second):
		}
		h.out.Close()
		os.Remove(h.capture)
	}
	var out []trace.Record
	for _, h := range hs {
		out = append(out, h.egress.take(runID)...)
	}
	return out
}

func (t *handleTable) live() int {
	n := 0
	for _, h := range t.all {
		if !h.done() {
			n++
		}
	}
	return n
}

func handleSpecs() []*Spec {
	var out []*Spec
	add := func(s *Spec, err error) {
		if err != nil {
			panic(err)
		}
		out = append(out, s)
	}
	add(Define("shell_start", "Start a command line in the background, through the same checks and sandbox as shell; returns a handle to poll and kill.", false, nil,
		func(ctx context.Context, c *Call, a StartArgs) *Result { return c.start(a) }))
	add(Define("shell_poll", "Read what a background line printed since the last poll (at most 16 KiB, the newest kept) and whether it still runs.", true, nil,
		func(ctx context.Context, c *Call, a HandleArgs) *Result { return c.poll(a.Handle, false) }))
	add(Define("shell_kill", "End a background line and its whole process tree.", false, nil,
		func(ctx context.Context, c *Call, a HandleArgs) *Result { return c.poll(a.Handle, true) }))
	return out
}

func (c *Call) start(a StartArgs) *Result {
	line, res := c.parseLine(a.Line)
	if res != nil {
		return res
	}
	return c.startLine(line, a)
}

// startLine starts the plan of a.Line, decided here, as a handle: what
// shell_start does, and what the shell tool does with a line of one
// command ended by &.
func (c *Call) startLine(line *shell.Line, a StartArgs) *Result {
	r := c.Router
	t := r.handles
	timeout, bad := c.timeout(a.Timeout)
	if bad != nil {
		return bad
	}
	p := r.cfg.Policy
	res := &Result{}
	log := &egressLog{}
	prof := c.profile(timeout, log)
	sandbox.ResolvePrograms(line, prof)
	check := checkFrom(p, line, prof.Dir)
	v := c.decide(res, check(), check)
	if v.Decision != policy.Allow {
		res.Status, res.Reason, res.Rule = Denied, v.Reason, v.Rule
		return res
	}
	t.mu.Lock()
	if n := t.live() + t.starting; n >= MaxHandles {
		t.mu.Unlock()
		return &Result{Status: Denied, Reason: fmt.Sprintf("%d handles are live, the most a run may have: kill one with shell_kill or wait for one to end", n)}
	}
	t.n++
	t.starting++
	id := fmt.Sprintf("%s/h%d", r.runID, t.n)
	t.mu.Unlock()
	// The table is not held while the sandbox starts, which may wait for
	// another process's runs in the workspace.
	defer func() {
		t.mu.Lock()
		t.starting--
		t.mu.Unlock()
	}()
	dir, err := sandbox.StateDir("handles")
	if err != nil {
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	capture := filepath.Join(dir, strings.ReplaceAll(id, "/", "-")+".out")
	out, err := os.OpenFile(capture, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return &Result{Status: Unavailable, Reason: "the handle's capture file: " + err.Error()}
	}
	// The handle lives as long as the run, not the call; but a call that
	// ends while the start still waits (for another process's runs in the
	// workspace) gives up the start.
	runCtx, cancel := context.WithCancel(t.ctx)
	watch := context.AfterFunc(c.ctx, cancel)
	capped := &cappedWriter{f: out, left: MaxCaptureBytes}
	h, err := t.r.start(runCtx, line, prof, capped, capped)
	if !watch() && err == nil {
		h.Kill()
	}
	if err != nil {
		cancel()
		out.Close()
		os.Remove(capture)
		if se, ok := err.(*sandbox.Error); ok {
			if se.Status == sandbox.Unavailable {
				r.markDown(se.Reason)
			}
			return &Result{Status: Status(se.Status), Reason: se.Reason}
		}
		return &Result{Status: Unavailable, Reason: err.Error()}
	}
	t.mu.Lock()
	t.all[id] = &handle{id: id, line: a.Line, capture: capture, out: out, h: h, capped: capped, cancel: cancel, egress: log}
	t.mu.Unlock()
	res.Status, res.Rung = OK, h.Rung()
	res.Output = fmt.Sprintf("started %s on the %s rung: poll it with shell_poll {\"handle\": %q}", id, h.Rung(), id)
	res.Data = map[string]any{"handle": id, "rung": h.Rung()}
	res.records = append(res.records, trace.Handle{RunID: r.runID, Handle: id, Line: a.Line, Rung: string(h.Rung()), Capture: capture, StartedAt: time.Now()})
	return res
}

// poll reads what the handle printed since the last poll; with kill, it
// first ends the handle's tree.
func (c *Call) poll(id string, kill bool) *Result {
	r := c.Router
	t := r.handles
	t.mu.Lock()
	h := t.all[id]
	t.mu.Unlock()
	if h == nil {
		return r.unknownHandle(c.ctx, id)
	}
	if kill {
		h.h.Kill()
		select {
		case <-h.h.Done():
		case <-time.After(15 * time.Second):
			return &Result{Status: Failed, Reason: fmt.Sprintf("%s did not end 15 s after it was killed", id)}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	done := h.done()
	data, offset, skipped, err := readNew(h.capture, &h.cursor)
	if err != nil {
		return &Result{Status: Failed, Reason: "reading the handle's output: " + err.Error()}
	}
	res := &Result{Status: OK, Output: data, Rung: h.h.Rung()}
	info := map[string]any{"handle": id, "running": !done, "offset": offset, "skipped": skipped, "bytes": len(data)}
	if skipped > 0 {
		res.Output = fmt.Sprintf("[%d bytes skipped; the newest %d follow]\n", skipped, len(data)) + res.Output
	}
	res.records = append(res.records, trace.HandleOutput{RunID: r.runID, Handle: id, Offset: offset, Skipped: skipped, Data: data, At: time.Now()})
	// The connections made since the last poll.
	res.records = append(res.records, h.egress.take(r.runID)...)
	if d := h.capped.droppedBytes(); d > 0 {
		res.Output += fmt.Sprintf("\n[rein: the capture keeps the first %d bytes; %d more were dropped]", MaxCaptureBytes, d)
		info["dropped"] = d
	}
	if done {
		sr := h.h.Wait()
		code := sr.ExitCode
		res.ExitCode, res.Limits, res.LimitHit, res.Poisoned = &code, sr.Limits, sr.LimitHit, sr.Poisoned
		info["status"], info["exit_code"] = sr.Status, sr.ExitCode
		res.Output += fmt.Sprintf("\n[%s: %s, exit %d]", id, sr.Status, sr.ExitCode)
		if sr.Reason != "" {
			res.Output += " " + sr.Reason
		}
		if !h.ended {
			h.ended = true
			res.records = append(res.records, trace.SandboxEvent{RunID: r.runID, Kind: "handle_end",
				Detail: mustJSON(map[string]any{"handle": id, "status": sr.Status, "exit_code": sr.ExitCode, "killed": kill, "limit_hit": sr.LimitHit, "poisoned": sr.Poisoned}), At: time.Now()})
		}
		if sr.Poisoned != "" {
			r.markDown(sr.Poisoned)
		}
	} else {
		res.Output += fmt.Sprintf("\n[%s: running]", id)
	}
	res.Data = info
	return res
}

// unknownHandle says why a handle is not this run's: one of an earlier
// run, whose process is gone, is orphaned and never re-attached.
func (r *Router) unknownHandle(ctx context.Context, id string) *Result {
	run, _, ok := strings.Cut(id, "/")
	if ok && r.cfg.Store != nil {
		// A handle of this run that the table lacks was started by its
		// process before the run was resumed.
		if hs, err := r.cfg.Store.Handles(ctx, run); err == nil {
			for _, h := range hs {
				if h.Handle != id {
					continue
				}
				if run == r.runID {
					return &Result{Status: NotFound, Reason: fmt.Sprintf("%s is orphaned: it was started before this run was resumed, by a process that has ended and killed it; a handle is never re-attached", id)}
				}
				return &Result{Status: NotFound, Reason: fmt.Sprintf("%s is orphaned: it belonged to run %s, whose process has ended and killed it; a handle is never re-attached", id, run)}
			}
		}
	}
	return &Result{Status: NotFound, Reason: fmt.Sprintf("no handle %q in this run", id)}
}

// readNew reads what the capture holds beyond *cursor, at most PollBytes:
// the newest, starting at a character boundary. It returns the text, the
// offset it starts at and how many bytes were skipped, and moves the
// cursor to the end.
func readNew(path string, cursor *int64) (string, int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, 0, err
	}
	size := fi.Size()
	from := *cursor
	var skipped int64
	if size-from > PollBytes {
		skipped = size - PollBytes - from
		from = size - PollBytes
	}
	buf := make([]byte, size-from)
	n, err := f.ReadAt(buf, from)
	if err != nil && n < len(buf) {
		return "", 0, 0, err
	}
	buf = buf[:n]
	// Skip to the next character when the cut fell inside one.
	for skipped > 0 && len(buf) > 0 && !utf8.RuneStart(buf[0]) {
		buf, from, skipped = buf[1:], from+1, skipped+1
	}
	*cursor = from + int64(len(buf))
	return string(buf), from, skipped, nil
}
