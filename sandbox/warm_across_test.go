//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

func warmProfile(ws string) Profile {
	return Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"},
		Hidden: func(path string) bool { b := filepath.Base(path); return b == ".env" || strings.HasSuffix(b, ".pem") }}
}

// Warm sandboxes across calls: what happens between two calls (the host
// user's edits, a previous call's command, another process's run) is
// seen by the next as by a cold run.

// The host user's edits to agent and editor configuration between two
// calls are kept: the next call's session takes its baseline afresh.
func TestWarmAcrossStaleBaselineAgentConfig(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("old\n"), 0o644)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	t.Logf("first: %+v", poolRun(t, pool, "true", p).Status)
	waitWarm(t, pool)
	// the host user (not a command) edits their editor settings and adds a claude settings file
	os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("user edit\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte("{}\n"), 0o644)
	res := poolRun(t, pool, "true", p)
	t.Logf("second: warm=%v status=%s reason=%q putback=%v", res.Warm, res.Status, res.Reason, res.PutBack)
	data, _ := os.ReadFile(filepath.Join(ws, ".vscode", "settings.json"))
	_, cerr := os.Stat(filepath.Join(ws, ".claude", "settings.json"))
	t.Logf("after: .vscode/settings.json=%q .claude/settings.json err=%v", data, cerr)
	if string(data) != "user edit\n" || cerr != nil {
		t.Errorf("the host user's edits were reverted by the next call")
	}
}

// Nothing of a call (its /tmp, its HOME, a daemon it left) reaches the
// next.
func TestWarmAcrossCrossCallState(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	// call N: write /tmp, HOME, leave a daemon that tries to write later
	res := poolRun(t, pool, "sh -c 'echo a > /tmp/mark; echo b > $HOME/mark; (setsid sh -c \"sleep 0.5; echo late > /tmp/late; echo late > "+ws+"/late\" &) ; echo done'", p)
	t.Logf("N: warm=%v %s %q %q containment=%s", res.Warm, res.Status, res.Stdout.Text, res.Stderr.Text, res.Containment)
	time.Sleep(time.Second)
	if _, err := os.Stat(filepath.Join(ws, "late")); err == nil {
		t.Errorf("a process of call N survived its result and wrote to the workspace")
	}
	waitWarm(t, pool)
	res = poolRun(t, pool, "sh -c 'cat /tmp/mark /tmp/late $HOME/mark; ls -la /tmp $HOME; ps -ef 2>/dev/null || ls /proc'", p)
	t.Logf("N+1: warm=%v %s %q %q", res.Warm, res.Status, res.Stdout.Text, res.Stderr.Text)
	for _, f := range []string{"/tmp/mark", "/tmp/late", "/run/rein/home/mark"} {
		if !strings.Contains(res.Stderr.Text, "cat: "+f+": No such file or directory") {
			t.Errorf("%s of the call before is seen: %q %q", f, res.Stdout.Text, res.Stderr.Text)
		}
	}
}

// Many runs leave no descriptor behind.
func TestWarmAcrossFDLeak(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	p := warmProfile(ws)
	count := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	before := count()
	warm := 0
	for i := 0; i < 40; i++ {
		r := poolRun(t, pool, "echo hi", p)
		if r.Warm {
			warm++
		}
		if r.Status != OK {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	waitWarm(t, pool)
	time.Sleep(500 * time.Millisecond)
	after := count()
	t.Logf("fds before=%d after=%d warm=%d/40", before, after, warm)
	pool.Close()
	t.Logf("fds after close=%d", count())
	if after > before+2 {
		t.Errorf("fd leak %d -> %d", before, after)
	}
}

// A large output and the exit status come whole through the early result.
func TestWarmAcrossBigOutput(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	p.OutputBytes = 64 << 20
	poolRun(t, pool, "true", p)
	for i := 0; i < 5; i++ {
		waitWarm(t, pool)
		res := poolRun(t, pool, "sh -c 'head -c 20000000 /dev/zero; echo END; exit 7'", p)
		t.Logf("warm=%v status=%s exit=%d bytes=%d trunc=%v end=%v", res.Warm, res.Status, res.ExitCode, res.Stdout.Bytes, res.Stdout.Elided, strings.HasSuffix(res.Stdout.Text, "END\n"))
		if res.ExitCode != 7 || res.Stdout.Bytes != 20000004 {
			t.Errorf("lost output or exit code")
		}
	}
}

func parse(t *testing.T, line string) *shell.Line {
	l, err := shell.Parser{Home: "/run/rein/home"}.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var _ = context.Background

// A .rein the host user creates while a call runs is read-only to the
// calls after it.
func TestWarmAcrossReinAppearsConcurrent(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	done := make(chan *Result)
	go func() { done <- poolRun(t, pool, "sleep 2", p) }() // call A: a long call (e.g. a build), cold, starts session S
	waitWarm(t, pool)
	// host user creates the project policy while A runs
	os.MkdirAll(filepath.Join(ws, ".rein"), 0o755)
	os.WriteFile(filepath.Join(ws, ".rein", "policy.toml"), []byte("# owner's policy\n"), 0o644)
	rb := poolRun(t, pool, "true", p) // call B: beside A
	t.Logf("B: warm=%v %s", rb.Warm, rb.Status)
	<-done
	waitWarm(t, pool)
	// call C: sequential, nothing else running
	rc := poolRun(t, pool, "sh -c 'echo planted > .rein/policy.toml'", p)
	data, _ := os.ReadFile(filepath.Join(ws, ".rein", "policy.toml"))
	t.Logf("C: warm=%v %s %q; policy now %q", rc.Warm, rc.Status, rc.Stderr.Text, data)
	if strings.Contains(string(data), "planted") {
		t.Errorf("a command wrote .rein through a warm sandbox")
	}
	// the same line cold, now
	os.WriteFile(filepath.Join(ws, ".rein", "policy.toml"), []byte("# owner's policy\n"), 0o644)
	pool.Close()
	rd := runLine(t, ws, "sh -c 'echo planted > .rein/policy.toml'", p)
	data, _ = os.ReadFile(filepath.Join(ws, ".rein", "policy.toml"))
	t.Logf("cold: %s %q; policy now %q", rd.Status, rd.Stderr.Text, data)
}

// A .rein one call's command makes is read-only to the next call.
func TestWarmAcrossReinAppearsSequential(t *testing.T) {
	requireRung(t, RungBwrap)
	hits := 0
	for i := 0; i < 10; i++ {
		ws := workspaceDir(t)
		pool := NewPool()
		p := warmProfile(ws)
		poolRun(t, pool, "true", p)
		waitWarm(t, pool)
		poolRun(t, pool, "sh -c 'mkdir .rein; echo a > .rein/policy.toml; sleep 0.3'", p)
		waitWarm(t, pool)
		r := poolRun(t, pool, "sh -c 'echo planted > .rein/policy.toml'", p)
		data, _ := os.ReadFile(filepath.Join(ws, ".rein", "policy.toml"))
		if strings.Contains(string(data), "planted") {
			hits++
		}
		t.Logf("%d: warm=%v %s %q", i, r.Warm, r.Status, data)
		pool.Close()
	}
	if hits > 0 {
		t.Errorf("%d of 10 warm calls wrote the .rein the call before made", hits)
	}
}

// Another process's run (the workspace's lock taken on a file description
// of its own, as another rein takes it) gets in between the calls of a
// busy pool: a warm sandbox does not hold the lock while it waits.
func TestWarmAcrossLockStarvation(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	poolRun(t, pool, "true", p)
	got := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		unlock, err := lockWorkspace(ctx, ws)
		if err != nil {
			got <- -1
			return
		}
		got <- time.Since(start)
		unlock()
	}()
	var last time.Time
	for time.Since(start) < 15*time.Second {
		time.Sleep(2 * time.Second) // an agent calling a tool every 2 s
		r := poolRun(t, pool, "true", p)
		last = time.Now()
		select {
		case d := <-got:
			t.Logf("the other process got the lock after %v (warm=%v)", d, r.Warm)
			return
		default:
		}
	}
	d := <-got
	t.Errorf("the other process got the lock only %v after it asked, %v after the busy pool's last call", d, time.Since(last))
}

// A landlock call right after a bwrap call through the same pool runs.
func TestWarmAcrossLandlockAfterBwrap(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	l := p
	l.Rung = RungLandlock
	fails := 0
	for i := 0; i < 10; i++ {
		poolRun(t, pool, "true", p)
		ll, _ := shell.Parser{Home: "/run/rein/home"}.Parse("echo ll")
		res, err := pool.Run(context.Background(), ll, l, nil, nil)
		if err != nil {
			fails++
			t.Logf("%d: landlock refused: %v", i, err)
			continue
		}
		t.Logf("%d: landlock %s %q", i, res.Status, res.Stdout.Text)
	}
	if fails > 0 {
		t.Errorf("landlock refused %d of 10 times after a bwrap call", fails)
	}
}

// A workspace replaced on the host between a warm sandbox's start and its
// use is not run in: the warm sandbox is thrown away.
func TestWarmAcrossWorkspaceReplaced(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	os.RemoveAll(filepath.Join(ws, ".git"))
	os.WriteFile(filepath.Join(ws, "file"), []byte("old\n"), 0o644)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	old := ws + ".old"
	if err := os.Rename(ws, old); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "file"), []byte("new\n"), 0o644)
	// the host user keeps a key in the moved-away copy, which the new workspace's scan never sees
	os.WriteFile(filepath.Join(old, "id.pem"), []byte("SECRET KEY\n"), 0o600)
	res := poolRun(t, pool, "sh -c 'cat file; cat id.pem; echo made > made'", p)
	_, errNew := os.Stat(filepath.Join(ws, "made"))
	_, errOld := os.Stat(filepath.Join(old, "made"))
	t.Logf("warm=%v %s stdout=%q stderr=%q made-in-new=%v made-in-old=%v", res.Warm, res.Status, res.Stdout.Text, res.Stderr.Text, errNew == nil, errOld == nil)
	if strings.Contains(res.Stdout.Text, "SECRET") || errOld == nil {
		t.Errorf("the warm sandbox ran in the replaced workspace")
	}
}

// A read path replaced on the host is seen new.
func TestWarmAcrossHostReadReplaced(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	hr := filepath.Join(filepath.Dir(filepath.Dir(ws)), "hostread")
	os.MkdirAll(hr, 0o755)
	os.WriteFile(filepath.Join(hr, "v"), []byte("v1\n"), 0o644)
	pool := NewPool()
	defer pool.Close()
	p := warmProfile(ws)
	p.HostReadPaths = []string{hr}
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	os.Rename(hr, hr+".old")
	os.MkdirAll(hr, 0o755)
	os.WriteFile(filepath.Join(hr, "v"), []byte("v2\n"), 0o644)
	res := poolRun(t, pool, "cat "+hr+"/v", p)
	if res.Stdout.Text != "v2\n" || res.Warm {
		t.Errorf("the replaced read path: warm=%v %s %q", res.Warm, res.Status, res.Stdout.Text)
	}
}

// A call cancelled before or while it runs through a warm sandbox ends
// cancelled, and nothing is left after Close.
func TestWarmAcrossCancelWarm(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	p := warmProfile(ws)
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := pool.Run(ctx, parse(t, "sh -c 'echo x > ran'"), p, nil, nil)
	_, ran := os.Stat(filepath.Join(ws, "ran"))
	if err == nil && (res.Status != Cancelled || ran == nil) {
		t.Errorf("pre-cancelled: %s, ran=%v", res.Status, ran == nil)
	}
	waitWarm(t, pool)
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	res, err = pool.Run(ctx, parse(t, "sh -c 'sleep 5 & sleep 5'"), p, nil, nil)
	cancel()
	if err != nil || res.Status != Cancelled {
		t.Errorf("cancelled mid-run: %v %+v", err, res)
	}
	pool.Close()
	if left := testenv.ProcessesWith(ws); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
}
