//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

// waitWarm waits until pool has a sandbox waiting.
func waitWarm(t *testing.T, pool *Pool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); pool.Warm() == 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no sandbox became warm")
		}
	}
}

func poolRun(t *testing.T, pool *Pool, line string, p Profile) *Result {
	t.Helper()
	l, err := shell.Parser{Home: "/run/rein/home"}.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pool.Run(context.Background(), l, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWarm: the run after a run takes a sandbox started before it was
// asked for, with its own output, status, directory and spool, and each
// warm sandbox serves one run.
func TestWarm(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	pool := NewPool()
	defer pool.Close()
	p := Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"}}
	if res := poolRun(t, pool, "echo cold", p); res.Status != OK || res.Warm || res.Stdout.Text != "cold\n" {
		t.Fatalf("the first run: %+v", res)
	}
	for i := range 3 {
		waitWarm(t, pool)
		q := p
		q.Dir = filepath.Join(ws, "sub")
		q.SpoolDir = t.TempDir()
		res := poolRun(t, pool, "sh -c 'pwd; echo to stderr >&2; exit 3'", q)
		if !res.Warm || res.Status != Failed || res.ExitCode != 3 || res.Stdout.Text != q.Dir+"\n" || res.Stderr.Text != "to stderr\n" {
			t.Fatalf("warm run %d: %+v", i, res)
		}
		if data, _ := os.ReadFile(filepath.Join(q.SpoolDir, "stdout")); string(data) != q.Dir+"\n" {
			t.Errorf("warm run %d's spool: %q", i, data)
		}
	}
	// The timeout is the call's, counted from when the plan arrives.
	waitWarm(t, pool)
	q := p
	q.Timeout = 300 * time.Millisecond
	if res := poolRun(t, pool, "sleep 5", q); !res.Warm || res.Status != Timeout {
		t.Errorf("a warm run's timeout: %+v", res)
	}
	// Another profile is not served by this one's sandbox.
	waitWarm(t, pool)
	q = p
	q.Env = []string{"PATH=/usr/bin:/bin", "X=1"}
	if res := poolRun(t, pool, "sh -c 'echo $X'", q); res.Warm || res.Stdout.Text != "1\n" {
		t.Errorf("a changed profile took the warm sandbox: %+v", res)
	}
}

// TestWarmPremises: a warm sandbox whose view was built on what no longer
// holds is never used: a new repository (new protected paths), a new file
// the protected set hides, a protected path renamed away and replaced on
// the host.
func TestWarmPremises(t *testing.T) {
	requireRung(t, RungBwrap)
	for _, c := range []struct {
		name   string
		change func(t *testing.T, ws string)
		check  string // a line that must fail after the change
	}{
		{"a new repository", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, "inner", ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
		}, "sh -c 'echo x >> .git/config'"},
		{"a new hidden file", func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=1\n"), 0o600)
		}, "grep SECRET .env"},
		{"hooks replaced on the host", func(t *testing.T, ws string) {
			if err := os.Rename(filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "hooks.old")); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(ws, ".git", "hooks"), 0o755)
		}, "sh -c 'echo x > .git/hooks/pre-commit'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := workspaceDir(t)
			pool := NewPool()
			defer pool.Close()
			p := Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"},
				Hidden: func(path string) bool { return filepath.Base(path) == ".env" }}
			poolRun(t, pool, "true", p)
			waitWarm(t, pool)
			c.change(t, ws)
			res := poolRun(t, pool, c.check, p)
			if res.Warm {
				t.Errorf("the warm sandbox was used after %s: %+v", c.name, res)
			}
			if res.Status == OK {
				t.Errorf("%q worked after %s: %q %q", c.check, c.name, res.Stdout.Text, res.Stderr.Text)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
				t.Error("a hook was planted")
			}
		})
	}
}

// TestWarmIdle: a warm sandbox that waits longer than WarmIdle is ended,
// and a closed pool leaves nothing running.
func TestWarmClose(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	pool := NewPool()
	p := Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"}}
	poolRun(t, pool, "true", p)
	waitWarm(t, pool)
	if len(testenv.ProcessesWith(ws)) == 0 {
		t.Fatal("no warm sandbox is running")
	}
	pool.Close()
	if left := testenv.ProcessesWith(ws); len(left) > 0 {
		t.Errorf("left running after Close: %v", left)
	}
	if res := poolRun(t, pool, "echo after", p); res.Warm || strings.TrimSpace(res.Stdout.Text) != "after" {
		t.Errorf("a closed pool: %+v", res)
	}
	if pool.Warm() != 0 {
		t.Error("a closed pool made a sandbox ready")
	}
}

// TestNoCapabilitiesInside: a command has every capability set empty on
// both rungs, whether the init dropped them (landlock, as root) or found
// them dropped by bubblewrap and skipped the broadcast (bwrap), and runs
// with no_new_privs. An ordinary user on the landlock rung cannot empty
// the bounding set (that needs CAP_SETPCAP), and need not: with
// no_new_privs no exec can gain a capability.
func TestNoCapabilitiesInside(t *testing.T) {
	eachRungWarm(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, "grep -E '^(Cap|NoNewPrivs)' /proc/self/status", Profile{Rung: rung})
		bnd := "0000000000000000"
		if os.Getuid() != 0 && (rung == RungLandlock || rung == rungWarmLandlock) {
			bnd = "[0-9a-f]{16}"
		}
		want := regexp.MustCompile("^CapInh:\t0{16}\nCapPrm:\t0{16}\nCapEff:\t0{16}\nCapBnd:\t" + bnd + "\nCapAmb:\t0{16}\nNoNewPrivs:\t1\n$")
		if res.Status != OK || !want.MatchString(res.Stdout.Text) {
			t.Errorf("%s: %q %s", rung, res.Stdout.Text, res.Reason)
		}
	})
}

// TestWarmProcessBound: the pools of a process keep at most
// MaxWarmProcess sandboxes together.
func TestWarmProcessBound(t *testing.T) {
	requireRung(t, RungBwrap)
	var pools []*Pool
	defer func() {
		for _, pl := range pools {
			pl.Close()
		}
	}()
	for range MaxWarmProcess + 3 {
		ws := workspaceDir(t)
		pl := NewPool()
		pools = append(pools, pl)
		poolRun(t, pl, "true", Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"}})
	}
	time.Sleep(2 * time.Second)
	n := 0
	for _, pl := range pools {
		n += pl.Warm()
	}
	if n != MaxWarmProcess {
		t.Errorf("%d sandboxes warm in %d pools, want %d", n, len(pools), MaxWarmProcess)
	}
	if c := warmCount.Load(); int(c) != n {
		t.Errorf("the count says %d, the pools hold %d", c, n)
	}
}

// TestWarmSavedFilesIdle: a warm sandbox's saved files are made empty
// while it waits, so that the taking makes no file; empty, they give the
// sweep nothing to put back, should rein die before the sandbox is
// taken (the host user's edits since are kept). Once taken they hold the
// session's baseline (TestKill9LeavesNothing's warm variants).
func TestWarmSavedFilesIdle(t *testing.T) {
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			requireRung(t, rung)
			ws := workspaceDir(t)
			pool := NewPool()
			defer pool.Close()
			p := warmProfile(ws)
			p.Rung = rung
			poolRun(t, pool, "true", p)
			waitWarm(t, pool)
			pool.mu.Lock()
			var scratch string
			for _, w := range pool.warm {
				scratch = w.r.scratch
			}
			pool.mu.Unlock()
			os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
			os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("{}"), 0o644)
			for _, name := range []string{"guard.json", "repos.json"} {
				fi, err := os.Stat(filepath.Join(scratch, name))
				if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s of the idle warm sandbox: %v, %v", name, fi, err)
				}
			}
			if err := restoreSaved(filepath.Join(scratch, "guard.json")); err == nil {
				t.Fatal("the sweep would put back from an idle warm sandbox's empty file")
			}
			repoMetaSaved(filepath.Join(scratch, "repos.json"))
			if data, err := os.ReadFile(filepath.Join(ws, ".vscode", "settings.json")); err != nil || string(data) != "{}" {
				t.Fatalf("the host's edit made while the sandbox waited: %q %v", data, err)
			}
			if res := poolRun(t, pool, "true", p); !res.Warm || res.Status != OK {
				t.Fatalf("the warm run: warm=%v %s %s", res.Warm, res.Status, res.Reason)
			}
		})
	}
}
