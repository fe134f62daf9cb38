package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// The test binary serves as the sandbox's init.
func TestMain(m *testing.M) {
	sandbox.Main()
	if ws := os.Getenv("REIN_TEST_HANDLE_WS"); ws != "" {
		handleHelper(ws, os.Getenv("REIN_TEST_HANDLE_LINE"))
	}
	os.Exit(m.Run())
}

// helperRouter is a router over the workspace's trace store, as rein tool
// makes one.
func helperRouter(ws string, p *policy.Policy) (*Router, error) {
	store, err := sqlite.Open(filepath.Join(filepath.Dir(ws), "trace.db"), nil)
	if err != nil {
		return nil, err
	}
	reg, err := Builtin()
	if err != nil {
		return nil, err
	}
	return NewRouter(reg, Config{Policy: p, Approver: policy.AllowAll{}, Surface: SurfaceCoding, Store: store,
		Profile: sandbox.Profile{Rung: sandbox.RungBwrap}, Source: "test"})
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		testenv.Missing(t, "bubblewrap is missing")
	}
}

type fixture struct {
	ws    string
	store *sqlite.Store
	r     *Router
}

// newFixture makes a workspace with a project policy and a router over it.
func newFixture(t *testing.T, mode policy.Mode, rules []policy.Rule, approver policy.Approver) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	for _, d := range []string{".git/hooks", "src"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	empty := filepath.Join(root, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: empty, UserFile: empty, ProjectFile: empty, Mode: &mode, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(root, "trace.db"), trace.NewRedactor("sekrit-value-123"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(reg, Config{Policy: p, Approver: approver, Surface: SurfaceCoding, Store: store,
		Results: &Results{Dir: filepath.Join(root, "results")}, Redactor: trace.NewRedactor("sekrit-value-123"),
		Profile: sandbox.Profile{Rung: sandbox.RungBwrap, Env: []string{"SEKRIT=sekrit-value-123"}}, PreviewChars: 200, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close("ok") })
	return &fixture{ws: ws, store: store, r: r}
}

func (f *fixture) call(t *testing.T, name string, args any) *Envelope {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return f.r.Call(context.Background(), name, data)
}

type obj = map[string]any

// TestLifeOfACall takes a call to every status through the whole router.
func TestLifeOfACall(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAsk, []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "rm *"}}, policy.DenyAll{})
	for _, c := range []struct {
		tool   string
		args   any
		status Status
		want   string // in the reason or the preview
	}{
		{"read_file", obj{"path": "src/main.go"}, OK, "func main()"},
		{"read_file", obj{"path": "missing.go"}, NotFound, "missing.go"},
		{"read_file", obj{"path": "../../etc/passwd"}, InvalidPath, "outside"},
		{"read_file", obj{"path": 7}, Denied, "do not match the schema"},
		{"read_file", obj{"path": "a", "bogus": 1}, Denied, "do not match the schema"},
		{"no_such_tool", obj{}, NotFound, "no tool \"no_such_tool\" in the coding surface"},
		{"write_file", obj{"path": ".git/config", "content": "x"}, Denied, "protected"},
		{"write_file", obj{"path": "new.txt", "content": "x"}, OK, "+x"},
		{"shell", obj{"line": "rm -rf src"}, Denied, `"rm *"`},
		// Outside the grammar: opaque code, asked (this approver denies).
		{"shell", obj{"line": "ls *.go && ls *.md"}, Denied, "deny-all approver (opaque shell code (glob at byte 14"},
		{"shell", obj{"line": "ls 'unterminated"}, Denied, "refused by the grammar"},
		{"shell", obj{"line": "cat src/main.go"}, OK, "package main"},
		{"shell", obj{"line": "sh -c 'exit 3'"}, Denied, "deny-all approver"},
		{"exec", obj{"argv": []string{"ls", "src"}}, OK, "main.go"},
		{"exec", obj{"argv": []string{"cat", "no-such-file"}}, Failed, ""},
		{"exec", obj{"argv": []string{"ls"}, "timeout": "1h"}, Denied, "ceiling"},
		{"read_result", obj{"id": "r-0000000000000000"}, NotFound, "no result"},
	} {
		env := f.call(t, c.tool, c.args)
		if env.Status != c.status || !strings.Contains(env.Reason+env.Preview, c.want) {
			t.Errorf("%s %v: %s %q %q, want %s containing %q", c.tool, c.args, env.Status, env.Reason, env.Preview, c.status, c.want)
		}
	}
	// The refusal by rule names it, with its layer, in the envelope and
	// in the trace.
	env := f.call(t, "shell", obj{"line": "rm -rf src"})
	if env.Rule != "rm *" || env.Layer != "flags" {
		t.Fatalf("%+v", env)
	}
	ev, _ := f.store.PolicyEvents(context.Background(), f.r.RunID())
	found := false
	for _, e := range ev {
		if e.Kind == "refusal" && e.Rule == "rm *" && e.Layer == "flags" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no refusal with its rule in the trace: %+v", ev)
	}
	if err := f.store.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTimeoutAndCancel: the sandbox's timeout and the caller's cancel
// reach the result.
func TestTimeoutAndCancel(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	env := f.call(t, "shell", obj{"line": "sleep 30", "timeout": "1s"})
	if env.Status != Timeout || env.ExitCode == nil || *env.ExitCode != 124 {
		t.Fatalf("%+v", env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	e := f.r.Call(ctx, "shell", json.RawMessage(`{"line":"sleep 30"}`))
	if e.Status != Cancelled {
		t.Fatalf("%+v", e)
	}
	e = f.call(t, "exec", obj{"argv": []string{"no-such-program-rein"}})
	if e.Status != Unavailable || e.ExitCode == nil || *e.ExitCode != 127 {
		t.Fatalf("%+v", e)
	}
}

// TestEnvelopeAndReadResult: a large output is shown bounded, head and
// tail, with the elided size, and read_result reads the whole of it.
func TestEnvelopeAndReadResult(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	env := f.call(t, "shell", obj{"line": "seq 1 2000"})
	if env.Status != OK || env.ElidedChars == 0 || env.ResultID == "" || !strings.HasPrefix(env.Preview, "1\n2\n") || !strings.HasSuffix(env.Preview, "1999\n2000\n") {
		t.Fatalf("%+v", env)
	}
	want := ""
	for i := 1; i <= 2000; i++ {
		want += fmt.Sprintf("%d\n", i)
	}
	if env.Chars != len(want) || env.ElidedChars != len(want)-200 {
		t.Fatalf("chars %d elided %d, want %d and %d", env.Chars, env.ElidedChars, len(want), len(want)-200)
	}
	if !strings.Contains(env.Text(), `read_result {"id": "`+env.ResultID) {
		t.Fatalf("the envelope does not say how to read the rest: %s", env.Text())
	}
	var got strings.Builder
	for off := 0; off < len(want); {
		e := f.call(t, "read_result", obj{"id": env.ResultID, "offset": off, "limit": 3000})
		d := e.Result().Data.(map[string]any)
		if e.Status != OK {
			t.Fatalf("%+v", e)
		}
		n := int(num(d["bytes"]))
		got.WriteString(e.Result().Output[:n])
		off += n
	}
	if got.String() != want {
		t.Fatalf("read_result gave back %d bytes, not the %d of the result", got.Len(), len(want))
	}
}

// TestSecretsRedacted: a command that prints a secret shows and records
// [redacted] in its place.
func TestSecretsRedacted(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	f.r.cfg.Profile.Env = []string{"SEKRIT=sekrit-value-123", "PATH=/usr/bin:/bin"}
	env := f.call(t, "shell", obj{"line": "sh -c 'echo $SEKRIT; echo GITHUB_TOKEN=ghp_" + strings.Repeat("x", 36) + "'"})
	if env.Status != OK || strings.Contains(env.Preview, "sekrit-value-123") || strings.Contains(env.Preview, "ghp_") || !strings.Contains(env.Preview, "[redacted]") {
		t.Fatalf("%+v", env)
	}
	steps, _ := f.store.Steps(context.Background(), f.r.RunID())
	for _, s := range steps {
		if strings.Contains(s.Observation+s.Args, "sekrit-value-123") {
			t.Fatalf("the trace holds the secret: %+v", s)
		}
	}
	// The structured result (what --json prints) is redacted too.
	if data, _ := json.Marshal(env.Result()); strings.Contains(string(data), "sekrit-value-123") || strings.Contains(string(data), "ghp_") {
		t.Fatalf("the result object holds the secret: %s", data)
	}
	os.WriteFile(filepath.Join(f.ws, "creds.txt"), []byte("sekrit-value-123\n"), 0o644)
	env = f.call(t, "read_file", obj{"path": "creds.txt"})
	if data, _ := json.Marshal(env.Result()); env.Status != OK || strings.Contains(string(data), "sekrit-value-123") {
		t.Fatalf("read_file's result object holds the secret: %s", data)
	}
}

// TestTraceDownStops: a call the trace cannot record stops the run.
func TestTraceDownStops(t *testing.T) {
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	f.store.Close()
	env := f.call(t, "read_file", obj{"path": "src/main.go"})
	if !strings.Contains(env.Preview, "the trace could not record a call") {
		t.Fatalf("%+v", env)
	}
	env = f.call(t, "read_file", obj{"path": "src/main.go"})
	if env.Status != Denied || !strings.Contains(env.Reason, "the run was stopped: the trace could not record") {
		t.Fatalf("%+v", env)
	}
}

// TestRepeatedRefusalStops: the same refusal five times stops the run.
func TestRepeatedRefusalStops(t *testing.T) {
	f := newFixture(t, policy.ModeAsk, []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "curl *"}}, nil)
	var env *Envelope
	// Reordered keys, spacing and another timeout are the same refusal.
	for _, args := range []string{`{"argv":["curl","http://x"]}`, `{ "argv" : ["curl", "http://x"] }`, `{"timeout":"5s","argv":["curl","http://x"]}`,
		`{"argv":["curl","http://x"],"timeout":"9s"}`, `{"argv":["curl","http://x"]}`} {
		env = f.r.Call(context.Background(), "exec", json.RawMessage(args))
	}
	if env.Status != Denied || !strings.Contains(env.Reason, "refused 5 times") {
		t.Fatalf("%+v", env)
	}
	env = f.call(t, "read_file", obj{"path": "src/main.go"})
	if env.Status != Denied || !strings.Contains(env.Reason, "the run was stopped") {
		t.Fatalf("after the stop: %+v", env)
	}
}

// TestGates: a tool outside the mode's set, and writes after the sandbox
// went down in the run, are refused before anything runs.
func TestGates(t *testing.T) {
	f := newFixture(t, policy.ModeSafe, nil, policy.AllowAll{})
	env := f.call(t, "write_file", obj{"path": "x.txt", "content": "x"})
	if env.Status != Denied || !strings.Contains(env.Reason, "write_file does not run in safe mode") {
		t.Fatalf("%+v", env)
	}
	g := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	g.r.markDown("preflight failed (test)")
	env = g.call(t, "write_file", obj{"path": "x.txt", "content": "x"})
	if env.Status != Denied || !strings.Contains(env.Reason, "the sandbox is down in this run") {
		t.Fatalf("%+v", env)
	}
	if _, err := os.Stat(filepath.Join(g.ws, "x.txt")); err == nil {
		t.Fatal("the write happened")
	}
	if env := g.call(t, "read_file", obj{"path": "src/main.go"}); env.Status != OK {
		t.Fatalf("reads go on: %+v", env)
	}
	// A write that lands is recorded as a diff.
	h := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	if env := h.call(t, "write_file", obj{"path": "x.txt", "content": "hello\n"}); env.Status != OK || !strings.Contains(env.Preview, "+hello") {
		t.Fatalf("%+v", env)
	}
	edits, _ := h.store.Edits(context.Background(), h.r.RunID())
	if len(edits) != 1 || edits[0].Path != "x.txt" || !strings.Contains(edits[0].Diff, "+hello") {
		t.Fatalf("%+v", edits)
	}
}

func TestSurfaces(t *testing.T) {
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := reg.Surface(SurfaceReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ro {
		if !s.ReadOnly {
			t.Errorf("%s is in the read-only surface but mutates", s.Name)
		}
	}
	coding, _ := reg.Surface(SurfaceCoding)
	names := map[string]bool{}
	for _, s := range coding {
		names[s.Name] = true
		if s.Schema == nil || s.Schema.Type != "object" {
			t.Errorf("%s has no object schema", s.Name)
		}
	}
	for _, n := range []string{"read_file", "write_file", "exec", "shell", "read_result"} {
		if !names[n] {
			t.Errorf("the coding surface lacks %s", n)
		}
	}
	if err := reg.DefineSurface("mine", "read_file", "nope"); err == nil {
		t.Fatal("a surface naming an unknown tool was accepted")
	}
	if _, err := reg.Surface("nope"); err == nil || !strings.Contains(err.Error(), "coding") {
		t.Fatalf("%v", err)
	}
}

// TestReadResultBounds: offsets at and past the end read nothing or are
// refused, never crash the router.
func TestReadResultBounds(t *testing.T) {
	dir := t.TempDir()
	s := &Results{Dir: dir}
	id, err := s.Put("héllo wörld")
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len("héllo wörld"))
	for _, c := range []struct {
		off, limit int64
		want       string
		err        bool
	}{
		{0, 100, "héllo wörld", false},
		{size, 10, "", false},
		{size + 1, 10, "", true},
		{-1, 10, "", true},
		{2, 1, "é", false}, // inside é: widened to the whole character
		{0, 0, "", false},
		{0, 1 << 62, "héllo wörld", false},
	} {
		got, _, err := s.Read(id, c.off, c.limit)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("Read(%d, %d) = %q, %v; want %q, error %v", c.off, c.limit, got, err, c.want, c.err)
		}
	}
	for _, bad := range []string{"../x", "r-../../etc", "r-0123456789abcdef/x", ""} {
		if _, _, err := s.Read(bad, 0, 1); err == nil {
			t.Errorf("id %q was read", bad)
		}
	}
}

// num reads a JSON number of a result's data.
func num(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return -1
}

// TestSpoolDirsReused: a command's output is whole in the result store
// whether it outgrew what the sandbox keeps in memory (spooled) or not
// (no file made); the spool directory is emptied after each command,
// kept for the next, and removed at Close.
func TestSpoolDirsReused(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	var dirs []string
	for _, n := range []int{100000, 10, 100000} {
		env := f.call(t, "shell", obj{"line": fmt.Sprintf("seq 1 %d", n)})
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(strconv.Itoa(i) + "\n")
		}
		want := b.String()
		if env.Status != OK || env.Chars != len(want) || env.Result().Output != want {
			t.Fatalf("seq 1 %d: %s, %d chars of %d", n, env.Status, env.Chars, len(want))
		}
		f.r.mu.Lock()
		dirs = append(dirs, f.r.spools...)
		f.r.mu.Unlock()
	}
	if len(dirs) != 3 || dirs[0] != dirs[1] || dirs[1] != dirs[2] {
		t.Fatalf("spool directories after each command: %v", dirs)
	}
	if entries, err := os.ReadDir(dirs[0]); err != nil || len(entries) != 0 {
		t.Fatalf("the kept spool directory holds %v (%v)", entries, err)
	}
	f.r.Close("ok")
	if _, err := os.Stat(dirs[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the spool directory outlived Close: %v", err)
	}
}

// TestResultsPerRun: the result store keeps at most its limit on the
// host, evicting the oldest results, whose ids then answer "evicted"; a
// store opened again over the same directory (a resumed run's) counts
// what is there; and a call never fails for want of room.
func TestResultsPerRun(t *testing.T) {
	dir := t.TempDir()
	s := &Results{Dir: dir, Limit: 1 << 20}
	chunk := strings.Repeat("x", 400<<10)
	var ids []string
	for range 3 {
		id, err := s.Put(chunk)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, _, err := s.Read(ids[0], 0, 10); err == nil || !strings.Contains(err.Error(), "evicted") || !strings.Contains(err.Error(), "results_per_run") {
		t.Errorf("the oldest: %v", err)
	}
	for _, id := range ids[1:] {
		if got, _, err := s.Read(id, 0, 3); err != nil || got != "xxx" {
			t.Errorf("%s: %q %v", id, got, err)
		}
	}
	if u := s.Used(); u != 800<<10 || diskUse(t, dir) != u {
		t.Errorf("used %d, on disk %d", u, diskUse(t, dir))
	}
	again := &Results{Dir: dir, Limit: 1 << 20}
	if u := again.Used(); u != 800<<10 {
		t.Errorf("a store opened again counts %d", u)
	}
	if _, err := again.Put(chunk); err != nil {
		t.Fatal(err)
	}
	if _, _, err := again.Read(ids[1], 0, 1); err == nil || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("the oldest of the earlier process: %v", err)
	}
	// One result larger than the whole store: its head is kept.
	big := strings.Repeat("é", 1<<20)
	id, err := again.Put(big)
	if err != nil {
		t.Fatal(err)
	}
	got, size, err := again.Read(id, 0, 1<<21)
	if err != nil || size > 1<<20 || !strings.HasPrefix(got, "éé") || !strings.Contains(got, "the result store keeps the first") || !utf8.ValidString(got) {
		t.Errorf("size %d, %v, tail %q", size, err, got[max(len(got)-80, 0):])
	}
	if d := diskUse(t, dir); d > 1<<20 {
		t.Errorf("%d bytes on disk, above the limit", d)
	}
}

// TestResultsPerRunRouter: the round's reproduction, scaled down: many
// commands with large output in one run keep the store within
// [limits] results_per_run, every call answers, and an evicted result
// says so to the model.
func TestResultsPerRunRouter(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	f.r.cfg.Results.Limit = 3 << 20
	var ids []string
	for range 4 {
		env := f.call(t, "shell", map[string]any{"line": "seq 1 400000"})
		if env.Status != OK || env.ResultID == "" {
			t.Fatalf("%+v", env)
		}
		ids = append(ids, env.ResultID)
	}
	if d := diskUse(t, f.r.cfg.Results.Dir); d > 3<<20 {
		t.Errorf("the store holds %d bytes, above its 3 MiB", d)
	}
	env := f.call(t, "read_result", map[string]any{"id": ids[0]})
	if env.Status != NotFound || !strings.Contains(env.Reason, "evicted") {
		t.Errorf("read_result of an evicted result: %+v", env)
	}
	if env := f.call(t, "read_result", map[string]any{"id": ids[3], "offset": 0, "limit": 7}); env.Status != OK || !strings.HasPrefix(env.Preview, "1\n2\n3\n4") {
		t.Errorf("the newest: %+v", env)
	}
}

func diskUse(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestRepeatedRefusalByTarget: different edits of one protected file,
// each refused for the same rule, are the same refusal: the tool, its
// target (a leading ./ set aside) and the refusal, whatever the new text.
func TestRepeatedRefusalByTarget(t *testing.T) {
	f := newFixture(t, policy.ModeAuto, []policy.Rule{{Act: policy.ActWrite, Effect: policy.Deny, Pattern: "src/main_test.go"}}, policy.AllowAll{})
	os.WriteFile(filepath.Join(f.ws, "src", "main_test.go"), []byte("package main\n"), 0o644)
	var env *Envelope
	spellings := []string{"src/main_test.go", "./src/main_test.go", "src//main_test.go", "src/./main_test.go", "src/../src/main_test.go"}
	for i := range policy.DefaultRepeatedRefusals {
		path := spellings[i%len(spellings)]
		env = f.call(t, "edit_file", obj{"path": path, "old": "package main", "new": fmt.Sprintf("package main // %d", i)})
	}
	if env.Status != Denied || !strings.Contains(env.Reason, fmt.Sprintf("refused %d times", policy.DefaultRepeatedRefusals)) {
		t.Fatalf("%+v", env)
	}
}
