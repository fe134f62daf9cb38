//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
)

// sessionHelper, in a helper process (REIN_TEST_SESSION_WS set): runs
// REIN_TEST_SESSION_LINE on REIN_TEST_SESSION_RUNG in the workspace and
// prints its result as JSON; or, with REIN_TEST_SESSION_DIE, joins the
// workspace's session and dies at the point it names, as a rein killed
// there would.
func sessionHelper() {
	ws := os.Getenv("REIN_TEST_SESSION_WS")
	if ws == "" {
		return
	}
	whole := Rung(os.Getenv("REIN_TEST_SESSION_RUNG")) != RungBwrap
	switch os.Getenv("REIN_TEST_SESSION_DIE") {
	case "":
	case "joined":
		if _, err := joinSession(context.Background(), ws, whole, true); err != nil {
			os.Exit(3)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "locked":
		// Dies holding the session's lock.
		if _, err := lockWorkspace(context.Background(), ws); err != nil {
			os.Exit(3)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "restored":
		// Dies after putting back, before leaving.
		s, err := joinSession(context.Background(), ws, whole, true)
		if err != nil {
			os.Exit(3)
		}
		s.restore()
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	l, err := shell.Parser{Home: bwrap.SandboxHome}.Parse(os.Getenv("REIN_TEST_SESSION_LINE"))
	if err != nil {
		os.Exit(3)
	}
	res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: Rung(os.Getenv("REIN_TEST_SESSION_RUNG"))}, nil, nil)
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(&Result{Status: "error", Reason: err.Error()})
		os.Exit(0)
	}
	json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// otherProcess starts a line in another process of the test binary, as
// another rein would run it; its result is read with wait.
type otherProcess struct {
	cmd *exec.Cmd
	out strings.Builder
}

func startOther(t *testing.T, ws string, rung Rung, line string, env ...string) *otherProcess {
	t.Helper()
	o := &otherProcess{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	o.cmd.Env = append(os.Environ(), append(env, "REIN_TEST_SESSION_WS="+ws, "REIN_TEST_SESSION_RUNG="+string(rung), "REIN_TEST_SESSION_LINE="+line)...)
	o.cmd.Stdout = &o.out
	o.cmd.Stderr = os.Stderr
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *otherProcess) wait(t *testing.T) *Result {
	t.Helper()
	err := o.cmd.Wait()
	var res Result
	if jerr := json.Unmarshal([]byte(o.out.String()), &res); jerr != nil {
		t.Fatalf("the other process (%v) printed %q", err, o.out.String())
	}
	return &res
}

// waitFile waits for a file a command makes.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// holdLine runs until the test makes release, after saying it started.
const holdLine = `sh -c 'touch started; while [ ! -e release ]; do sleep 0.02; done; echo released'`

// A run of this process starts, runs and ends while another process's run
// is inside the workspace's session: it cannot end before the test lets
// it, so nothing waited for it.
func TestSessionAcrossProcesses(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			other := startOther(t, ws, rung, holdLine)
			waitFile(t, filepath.Join(ws, "started"))
			if n := sessionRuns(ws); n != 1 {
				t.Errorf("the session holds %d runs while the other process's runs, want 1", n)
			}
			res := runLine(t, ws, "echo beside", Profile{Rung: rung})
			if res.Status != OK || res.Stdout.Text != "beside\n" {
				t.Fatalf("the run beside: %s %q %q", res.Status, res.Reason, res.Stdout.Text)
			}
			// The session's files are out of every run's reach.
			prefix, _ := sessionBase(ws)
			state, base := prefix+".session.0", prefix+".baseline.0"
			before, _ := os.ReadFile(state)
			for _, line := range []string{"cat " + state, "cat " + base, "ls " + filepath.Dir(state), "sh -c 'echo forged > " + state + "'", "rm " + base} {
				if res := runLine(t, ws, line, Profile{Rung: rung}); res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "\"runs\"") {
					t.Errorf("%s: %s %q", line, res.Status, res.Stdout.Text)
				}
			}
			if after, _ := os.ReadFile(state); !fileExists(base) || !bytes.Equal(before, after) && !bytes.Contains(after, []byte(`"runs"`)) {
				t.Errorf("a run reached the session's files: %q", after)
			}
			if _, err := os.Lstat(filepath.Join(ws, "release")); err == nil {
				t.Fatal("released before the run beside ended")
			}
			os.WriteFile(filepath.Join(ws, "release"), nil, 0o644)
			if r := other.wait(t); r.Status != OK || r.Stdout.Text != "released\n" {
				t.Fatalf("the other process's run: %s %q %q", r.Status, r.Reason, r.Stdout.Text)
			}
			if n := sessionRuns(ws); n != 0 {
				t.Errorf("the session holds %d runs after both ended", n)
			}
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// A command of this process plants in the protected files while another
// process's run is inside the session: the plant is put back, and both
// runs report it, since runs side by side cannot tell whose it was.
func TestSessionAcrossPlant(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			other := startOther(t, ws, rung, holdLine)
			waitFile(t, filepath.Join(ws, "started"))
			// .claude is guarded on every rung; .git/hooks is writable on
			// the landlock rung only, and bound read-only on bwrap.
			res := runLine(t, ws, `sh -c 'mkdir -p .claude && echo evil > .claude/settings.json; echo evil > .git/hooks/pre-commit; true'`, Profile{Rung: rung})
			if res.Status != Failed || !slices.Contains(res.PutBack, ".claude") {
				t.Fatalf("the planting run: %s %q %v", res.Status, res.Reason, res.PutBack)
			}
			if !strings.Contains(res.Reason, "other runs shared the workspace") {
				t.Errorf("the planting run does not say that other runs shared the session: %q", res.Reason)
			}
			if rung == RungLandlock && !slices.Contains(res.PutBack, ".git/hooks/pre-commit") {
				t.Errorf("the landlock plant in .git/hooks was not put back: %v", res.PutBack)
			}
			for _, p := range []string{".claude", ".git/hooks/pre-commit"} {
				if fileExists(filepath.Join(ws, p)) {
					t.Errorf("%s is still there", p)
				}
			}
			os.WriteFile(filepath.Join(ws, "release"), nil, 0o644)
			r := other.wait(t)
			if r.Status != Failed || !slices.Contains(r.PutBack, ".claude") {
				t.Fatalf("the other process's run does not report the change made while it ran: %s %q %v", r.Status, r.Reason, r.PutBack)
			}
			// A run after both reports nothing.
			if res := runLine(t, ws, "true", Profile{Rung: rung}); res.Status != OK {
				t.Fatalf("a run after: %s %q %v", res.Status, res.Reason, res.PutBack)
			}
		})
	}
}

// A protected path that appears while the session lasts (a submodule's
// hooks, here made by another process's command beside a long run) is
// bound read-only for every run that starts after it appeared.
func TestSessionAcrossNewProtected(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	other := startOther(t, ws, RungBwrap, holdLine)
	defer func() {
		os.WriteFile(filepath.Join(ws, "release"), nil, 0o644)
		other.wait(t)
	}()
	waitFile(t, filepath.Join(ws, "started"))
	if res := runLine(t, ws, "mkdir -p .git/modules/sub/hooks", Profile{Rung: RungBwrap}); res.Status != OK {
		t.Fatalf("making the submodule's hooks: %s %q", res.Status, res.Reason)
	}
	res := runLine(t, ws, `sh -c 'echo evil > .git/modules/sub/hooks/post-checkout'`, Profile{Rung: RungBwrap})
	if res.ExitCode == 0 || fileExists(filepath.Join(ws, ".git/modules/sub/hooks/post-checkout")) {
		t.Fatalf("a run after the submodule's hooks appeared wrote there: %s %q", res.Status, res.Reason)
	}
	// One planted as a link is never followed: the run is refused.
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git/modules/sub2"), 0o755)
	os.Symlink(outside, filepath.Join(ws, ".git/modules/sub2/hooks"))
	l, _ := shell.Parse(`sh -c 'echo evil > .git/modules/sub2/hooks/post-checkout'`)
	res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
	if err == nil || fileExists(filepath.Join(outside, "post-checkout")) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a run beside a linked submodule's hooks: %+v %v", res, err)
	}
}

// Processes killed at every point of joining and leaving leave nothing
// that holds a later run: their runs are reaped, the lock is the kernel's.
func TestSessionAcrossKilled(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			for _, at := range []string{"locked", "joined", "restored", "joined"} {
				o := startOther(t, ws, rung, "true", "REIN_TEST_SESSION_DIE="+at)
				o.cmd.Wait()
				if ws, ok := o.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("%s: the helper was not killed: %v %q", at, o.cmd.ProcessState, o.out.String())
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				l, _ := shell.Parse("echo after")
				res, err := Run(ctx, l, Profile{Workspace: ws, Rung: rung}, nil, nil)
				cancel()
				if err != nil || res.Status != OK || res.Stdout.Text != "after\n" {
					t.Fatalf("a run after a rein killed %s: %+v %v", at, res, err)
				}
				if n := sessionRuns(ws); n != 0 {
					t.Fatalf("after a rein killed %s, %d runs are left in the session", at, n)
				}
			}
			// A rein killed while it wrote the state cut its slot short:
			// the other slot, whole, is read, and the cut one written next.
			f, err := openSessionFile(ws)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.read(); err != nil || f.slot < 0 {
				t.Fatalf("the session's state: slot %d, %v", f.slot, err)
			}
			newest := f.statePath(f.slot)
			data, _ := os.ReadFile(newest)
			os.WriteFile(newest, data[:len(data)/2], 0o600)
			if res := runLine(t, ws, "echo after", Profile{Rung: rung}); res.Status != OK || res.Stdout.Text != "after\n" {
				t.Errorf("a run after a state cut short: %s %q", res.Status, res.Reason)
			}
		})
	}
}

// Processes beginning the session at once all run, side by side.
func TestSessionAcrossBeginTogether(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			var others []*otherProcess
			for range 6 {
				others = append(others, startOther(t, ws, rung, `sh -c 'echo x >> begun; sleep 0.3; echo done'`))
			}
			for i, o := range others {
				if r := o.wait(t); r.Status != OK || r.Stdout.Text != "done\n" {
					t.Errorf("%d: %s %q %q", i, r.Status, r.Reason, r.Stdout.Text)
				}
			}
			if data, _ := os.ReadFile(filepath.Join(ws, "begun")); string(data) != strings.Repeat("x\n", 6) {
				t.Errorf("begun: %q", data)
			}
			if n := sessionRuns(ws); n != 0 {
				t.Errorf("%d runs left in the session", n)
			}
		})
	}
}

// A session state not sealed with the user's key is refused, naming it,
// and its baseline is never used; so is a baseline whose digest is not
// the sealed one.
func TestSessionForged(t *testing.T) {
	ws := workspaceDir(t)
	f, err := openSessionFile(ws)
	if err != nil {
		t.Fatal(err)
	}
	// A well-formed state of a live run (of the parent process), sealed
	// with another key.
	start, _ := procStart(os.Getppid())
	forged := &sessionState{Version: sessionVersion, Workspace: ws, BaselineAt: time.Now(), Runs: []sessionRun{{ID: "x", PID: os.Getppid(), Start: start}}}
	other := *f
	other.key = []byte("not the user's key, 32 bytes long")
	if err := other.write(forged); err != nil {
		t.Fatal(err)
	}
	if _, err := joinSession(context.Background(), ws, false, true); err == nil || !strings.Contains(err.Error(), "does not carry the seal") {
		t.Fatalf("a state sealed with another key: %v", err)
	}
	// Sealed for another workspace.
	forged.Workspace = ws + "-other"
	f2 := *f
	f2.ws = forged.Workspace
	if err := f2.write(forged); err != nil {
		t.Fatal(err)
	}
	if _, err := joinSession(context.Background(), ws, false, true); err == nil || !strings.Contains(err.Error(), "does not carry the seal") {
		t.Fatalf("a state sealed for another workspace: %v", err)
	}
	// Sealed, naming a baseline that is not the one on disk.
	forged.Workspace = ws
	g, err := newGuard(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.writeBaseline(forged, &baseline{Guard: g}); err != nil {
		t.Fatal(err)
	}
	forged.Seq = 10
	if err := f.write(forged); err != nil {
		t.Fatal(err)
	}
	baselines.Lock()
	clear(baselines.m)
	baselines.Unlock()
	os.WriteFile(f.baselinePath(forged.BaselineSlot), []byte(`{"workspace":"`+ws+`","entries":{}}`), 0o600)
	if _, err := joinSession(context.Background(), ws, false, true); err == nil || !strings.Contains(err.Error(), "not the one its sealed state names") {
		t.Fatalf("a baseline changed under a sealed state: %v", err)
	}
}

// A session older than rebaselineEvery takes its baseline again when a
// run joins: the host's own edit made meanwhile is kept, not put back,
// and reported by the runs that were going on.
func TestSessionRebaseline(t *testing.T) {
	ws := workspaceDir(t)
	os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("{}\n"), 0o644)
	long, err := joinSession(context.Background(), ws, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer long.leave()
	f, _ := openSessionFile(ws)
	unlock, _ := lockWorkspace(context.Background(), ws)
	st, err := f.read()
	if err != nil {
		t.Fatal(err)
	}
	st.BaselineAt = time.Now().Add(-rebaselineEvery - time.Second)
	f.write(st)
	unlock()
	// The user's edit on the host, while the long run goes on.
	os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("{\"editor.tabSize\": 2}\n"), 0o644)
	next, err := joinSession(context.Background(), ws, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := next.restore(); len(got) != 0 {
		t.Errorf("the run that joined after the baseline was taken again reports %v", got)
	}
	next.leave()
	if data, _ := os.ReadFile(filepath.Join(ws, ".vscode", "settings.json")); string(data) != "{\"editor.tabSize\": 2}\n" {
		t.Errorf("the host's edit was put back: %q", data)
	}
	got := long.restore()
	if len(got) != 1 || !strings.HasPrefix(got[0], ".vscode/settings.json (changed while the session's runs went on, by one of them (rein pid "+strconv.Itoa(os.Getpid())+") or on the host; kept as the new baseline)") {
		t.Errorf("the run that was going on reports %q", got)
	}
}

// A run on the other rung than the session's is refused at once, naming
// why, while another process's runs hold it.
func TestSessionAcrossOtherRung(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	other := startOther(t, ws, RungBwrap, holdLine)
	waitFile(t, filepath.Join(ws, "started"))
	l, _ := shell.Parse("true")
	_, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungLandlock}, nil, nil)
	os.WriteFile(filepath.Join(ws, "release"), nil, 0o644)
	if r := other.wait(t); r.Status != OK {
		t.Errorf("the other process's run: %s %q", r.Status, r.Reason)
	}
	if err == nil || !strings.Contains(err.Error(), "runs on the bwrap rung hold the workspace's session") {
		t.Fatalf("a landlock run beside another process's bwrap run: %v", err)
	}
}

// BenchmarkSessionJoin: a run's part in the workspace's shared session,
// joined and left, beginning it (no other run in it: the sweep, the
// baseline taken and written) and joining it (another run in it: the
// sealed state read, checked and written), against the bare mechanism
// under both, the session's lock taken and released.
//
//	go test ./sandbox -run '^$' -bench SessionJoin
func BenchmarkSessionJoin(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	ctx := context.Background()
	b.Run("bare-lock", func(b *testing.B) {
		for b.Loop() {
			unlock, err := lockWorkspace(ctx, ws)
			if err != nil {
				b.Fatal(err)
			}
			unlock()
		}
	})
	b.Run("begin", func(b *testing.B) {
		for b.Loop() {
			s, err := joinSession(ctx, ws, false, true)
			if err != nil {
				b.Fatal(err)
			}
			s.leave()
		}
	})
	b.Run("join", func(b *testing.B) {
		other, err := joinSession(ctx, ws, false, true)
		if err != nil {
			b.Fatal(err)
		}
		defer other.leave()
		for b.Loop() {
			s, err := joinSession(ctx, ws, false, true)
			if err != nil {
				b.Fatal(err)
			}
			s.leave()
		}
	})
}

// A run that starts while another process's command has planted an
// agent's configuration below the top takes no plant for the original:
// the repository metadata it puts back is the session's, taken before
// any command ran, so the plant, removed by its own command, is not made
// again by the other run's end.
func TestSessionAcrossNoPlantInBaseline(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			os.Mkdir(filepath.Join(ws, "sub"), 0o755)
			plant := filepath.Join(ws, "sub", ".claude", "settings.json")
			a := startOther(t, ws, rung, `sh -c 'mkdir -p sub/.claude && echo evil > sub/.claude/settings.json; touch planted; while [ ! -e go ]; do sleep 0.02; done; rm -rf sub/.claude; touch removed; while [ ! -e release ]; do sleep 0.02; done'`)
			waitFile(t, filepath.Join(ws, "planted"))
			done := make(chan *Result, 1)
			go func() {
				l, _ := shell.Parse(`sh -c 'touch b-started; while [ ! -e b-release ]; do sleep 0.02; done'`)
				res, _ := Run(context.Background(), l, Profile{Workspace: ws, Rung: rung}, nil, nil)
				done <- res
			}()
			waitFile(t, filepath.Join(ws, "b-started"))
			os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
			waitFile(t, filepath.Join(ws, "removed"))
			os.WriteFile(filepath.Join(ws, "b-release"), nil, 0o644)
			b := <-done
			if fileExists(plant) {
				data, _ := os.ReadFile(plant)
				t.Fatalf("the other run's end made the plant again: %q (%s %q)", data, b.Status, b.Reason)
			}
			os.WriteFile(filepath.Join(ws, "release"), nil, 0o644)
			a.wait(t)
			if fileExists(plant) {
				t.Fatal("the plant is there after both runs")
			}
		})
	}
}

// A run that plants and then outlives its timeout still names what was
// put back.
func TestSessionPlantThenTimeout(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, `sh -c 'mkdir -p .claude && echo evil > .claude/settings.json; sleep 30'`, Profile{Rung: rung, Timeout: time.Second})
		if res.Status != Timeout || !slices.Contains(res.PutBack, ".claude") || !strings.Contains(res.Reason, "rein put them back: ") {
			t.Fatalf("%s %q %v", res.Status, res.Reason, res.PutBack)
		}
		if fileExists(filepath.Join(ws, ".claude")) {
			t.Fatal("the plant is still there")
		}
	})
}

// What a killed rein's guardian puts back is reported by the runs that
// were going on beside it.
func TestSessionAcrossGuardianReports(t *testing.T) {
	for _, rung := range rungs {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			done := make(chan *Result, 1)
			go func() {
				l, _ := shell.Parse(`sh -c 'touch a-started; while [ ! -e a-release ]; do sleep 0.02; done'`)
				res, _ := Run(context.Background(), l, Profile{Workspace: ws, Rung: rung}, nil, nil)
				done <- res
			}()
			waitFile(t, filepath.Join(ws, "a-started"))
			b := startOther(t, ws, rung, `sh -c 'mkdir -p .claude && echo evil > .claude/settings.json; touch planted; sleep 60'`)
			waitFile(t, filepath.Join(ws, "planted"))
			b.cmd.Process.Kill()
			b.cmd.Wait()
			for deadline := time.Now().Add(20 * time.Second); fileExists(filepath.Join(ws, ".claude")) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if fileExists(filepath.Join(ws, ".claude")) {
				t.Fatal("the killed rein's guardian did not put the plant back")
			}
			os.WriteFile(filepath.Join(ws, "a-release"), nil, 0o644)
			a := <-done
			if a.Status != Failed || !slices.Contains(a.PutBack, ".claude") {
				t.Fatalf("the run going on does not report what the guardian put back: %s %q %v", a.Status, a.Reason, a.PutBack)
			}
		})
	}
}

// A session begun by runs that could not write has no repository
// metadata in its baseline; the first run that may write takes it, and
// its end puts back what changed below the top.
func TestSessionReposTakenByFirstWriter(t *testing.T) {
	ws := workspaceDir(t)
	settings := filepath.Join(ws, "sub", ".vscode", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte("{}\n"), 0o644)
	ctx := context.Background()
	ro, err := joinSession(ctx, ws, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.leave()
	if ro.baseline.Repos != nil {
		t.Fatal("a read-only run's session took the repository metadata")
	}
	w, err := joinSession(ctx, ws, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.leave()
	if w.baseline.Repos == nil {
		t.Fatal("the first run that may write did not take the repository metadata")
	}
	os.WriteFile(settings, []byte(`{"task.allowAutomaticTasks":"on"}`), 0o644)
	got := w.restore()
	if data, _ := os.ReadFile(settings); string(data) != "{}\n" || !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "sub/.vscode/settings.json") }) {
		t.Fatalf("after the writer's end: %q, reported %q", data, got)
	}
}

// The 10-minute re-baseline keeps the host's edit of the guarded files,
// but never adopts a plant in the repository metadata below the top (a
// running command's nested hook): that stays the session's first, and is
// put back.
func TestSessionRebaselineKeepsNoNestedPlant(t *testing.T) {
	ws := workspaceDir(t)
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	ctx := context.Background()
	long, err := joinSession(ctx, ws, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer long.leave()
	f, _ := openSessionFile(ws)
	unlock, _ := lockWorkspace(ctx, ws)
	st, err := f.read()
	if err != nil {
		t.Fatal(err)
	}
	st.BaselineAt = time.Now().Add(-rebaselineEvery - time.Second)
	f.write(st)
	unlock()
	// What a command still running planted.
	plant := filepath.Join(ws, "sub", ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(plant), 0o755)
	os.WriteFile(plant, []byte(`{"hooks":{}}`), 0o644)
	next, err := joinSession(ctx, ws, false, true)
	if err != nil {
		t.Fatal(err)
	}
	got := next.restore()
	next.leave()
	if fileExists(plant) || !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "sub/.claude") && !strings.Contains(s, keptNote) }) {
		t.Fatalf("the nested plant after the re-baseline: there %v, reported %q", fileExists(plant), got)
	}
}

// A nested repository that appeared while a run went on (a plant, or a
// repository the user made on the host beside a session's runs) leaves
// the workspace whole: moved into rein's state directory, where nothing
// runs it, never deleted with the commits it may hold.
func TestNestedRepoKeptAside(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, `sh -c 'mkdir -p lib/.git && printf "[core]\n\tfsmonitor = touch m\n" > lib/.git/config && echo mine > lib/.git/work'`, Profile{Rung: rung})
		const say = "lib/.git (made by the command; lib/.git/config sets core.fsmonitor): removed, kept in "
		i := strings.Index(res.Reason, say)
		if res.Status != Failed || i < 0 || fileExists(filepath.Join(ws, "lib", ".git")) {
			t.Fatalf("%s %q", res.Status, res.Reason)
		}
		kept := strings.FieldsFunc(res.Reason[i+len(say):], func(r rune) bool { return r == ',' || r == ' ' })[0]
		if !strings.HasPrefix(kept, CacheDir()+"/quarantine/") {
			t.Fatalf("kept in %q, not in rein's state directory", kept)
		}
		if data, err := os.ReadFile(filepath.Join(kept, "work")); err != nil || string(data) != "mine\n" {
			t.Fatalf("what was kept: %q %v", data, err)
		}
		os.RemoveAll(kept)
	})
}
