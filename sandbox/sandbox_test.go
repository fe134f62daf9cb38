package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
)

// The test binary is also the sandbox's init, as rein's own binary is.
func TestMain(m *testing.M) {
	Main()
	// As a helper process: run a line in the sandbox and wait for it, so
	// that the test can kill this process while the line runs.
	if ws := os.Getenv("REIN_TEST_SANDBOX_WS"); ws != "" {
		l, err := shell.Parse(os.Getenv("REIN_TEST_SANDBOX_LINE"))
		if err == nil {
			_, err = Run(context.Background(), l, Profile{Workspace: ws}, nil, nil)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := bwrap.Find(); err != nil {
		if os.Getenv("REIN_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("the bwrap rung needs bubblewrap: %v", err)
		}
		t.Skipf("the bwrap rung needs bubblewrap: %v", err)
	}
	if out, err := exec.Command("bwrap", "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
		if os.Getenv("REIN_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("user namespaces are refused here: %v %s", err, out)
		}
		t.Skipf("user namespaces are refused here (%v %s): enable kernel.unprivileged_userns_clone", err, out)
	}
}

func workspaceDir(t *testing.T) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

func runLine(t *testing.T, ws, line string, p Profile) *Result {
	t.Helper()
	l, err := shell.Parser{Home: bwrap.SandboxHome}.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	p.Workspace = ws
	res, err := Run(context.Background(), l, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunBasics(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	res := runLine(t, ws, `sh -c 'echo out; echo err >&2; exit 3'`, Profile{})
	if res.Status != Failed || res.ExitCode != 3 || res.Stdout.Text != "out\n" || res.Stderr.Text != "err\n" || res.Rung != "bwrap" {
		t.Fatalf("%+v", res)
	}
	res = runLine(t, ws, "echo hello > f.txt && cat f.txt | tr a-z A-Z", Profile{})
	if res.Status != OK || res.Stdout.Text != "HELLO\n" {
		t.Fatalf("%+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(data) != "hello\n" {
		t.Fatalf("the workspace write did not land: %q", data)
	}
	res = runLine(t, ws, "no-such-program-rein", Profile{})
	if res.Status != Unavailable || res.ExitCode != 127 {
		t.Fatalf("%+v", res)
	}
}

// TestConfinement tries to leave: every attempt must fail inside, and the
// host must be unchanged afterwards.
func TestConfinement(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECRET_TOKEN", "hunter2")
	probes := map[string]string{
		"write outside":      "echo x > " + outside + "/pwned",
		"write a git hook":   "echo x > .git/hooks/pre-commit",
		"read /etc/shadow":   "grep -q root /etc/shadow",
		"read the real home": "ls /root",
		"network":            "sh -c 'exec 3<>/dev/tcp/127.0.0.1/22'",
		"secret in env":      "sh -c 'env | grep -q SECRET_TOKEN && exit 0; exit 1'",
		"ptrace":             "sh -c 'exec 3< /proc/1/mem'",
		"unshare":            "unshare -U true",
		"sysctl":             "sh -c 'echo 1 > /proc/sys/kernel/printk'",
		"signal pid outside": "kill -0 1",
	}
	for name, line := range probes {
		res := runLine(t, ws, line, Profile{})
		if name == "signal pid outside" {
			// pid 1 is the sandbox's own init here, not the host's: the
			// host's processes are not even visible.
			continue
		}
		if res.Status == OK {
			t.Errorf("%s: %q succeeded inside the sandbox\n%+v", name, line, res)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("something was written outside: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("a git hook was planted")
	}
	res := runLine(t, ws, "ls /proc", Profile{})
	if strings.Count(res.Stdout.Text, "\n") > 60 {
		t.Fatalf("host processes are visible:\n%s", res.Stdout.Text)
	}
}

// TestTimeoutKillsTree: a timeout kills the whole tree, daemons included.
func TestTimeoutKillsTree(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	marker := filepath.Join(ws, "alive")
	start := time.Now()
	res := runLine(t, ws, `sh -c 'setsid sh -c "while true; do touch `+marker+`; sleep 0.1; done" & sleep 60'`, Profile{Timeout: 2 * time.Second})
	if res.Status != Timeout || time.Since(start) > 30*time.Second {
		t.Fatalf("%+v after %v", res, time.Since(start))
	}
	os.Remove(marker)
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a daemon outlived the timeout")
	}
}

func TestOutputBound(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	res := runLine(t, ws, "head -c 1000000 /dev/zero", Profile{OutputBytes: 1000})
	if res.Status != OK || len(res.Stdout.Text) != 1000 || res.Stdout.Elided != 999000 {
		t.Fatalf("kept %d bytes, elided %d", len(res.Stdout.Text), res.Stdout.Elided)
	}
}

func TestRefusals(t *testing.T) {
	l, _ := shell.Parse("true")
	for _, p := range []Profile{
		{Workspace: "/tmp", Timeout: time.Hour},
		{Workspace: "/tmp", Rung: "none"},
		{Workspace: "/tmp", Rung: "landlock"},
		{Workspace: "relative"},
	} {
		if _, err := Run(context.Background(), l, p, nil, nil); err == nil {
			t.Errorf("%+v was accepted", p)
		}
	}
}

// TestIODirUnreachable: the command can neither read the request nor
// forge the result the init leaves for rein.
func TestIODirUnreachable(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	res := runLine(t, ws, `sh -c 'cat /rein/io/request.json || echo "{\"exit_code\":0}" > /rein/io/result.json || exit 7'`, Profile{})
	if res.ExitCode != 7 || strings.Contains(res.Stdout.Text, "confine") {
		t.Fatalf("%+v", res)
	}
}

// TestKill9LeavesNothing: when the process running the sandbox is killed
// with SIGKILL, nothing it started survives, daemons included.
func TestKill9LeavesNothing(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	marker := fmt.Sprintf("rein-kill9-%d", os.Getpid())
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REIN_TEST_SANDBOX_WS="+ws,
		"REIN_TEST_SANDBOX_LINE=sh -c 'echo ../evil > .git/commondir; setsid sh -c \"sleep 1000; :\" "+marker+" & sh -c \"sleep 1000; :\" "+marker+"'")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(marker)) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the sandboxed processes never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("running before the kill: %v", processesWith(marker))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	defer func() {
		// The next run sweeps what the killed one left behind.
		runLine(t, ws, "true", Profile{})
		if left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("rein-run-%d-*", cmd.Process.Pid))); len(left) > 0 {
			t.Errorf("the killed run's scratch directory was not swept: %v", left)
		}
		if _, err := os.Stat(filepath.Join(ws, ".git", "commondir")); err == nil {
			t.Error("the killed run's planted .git/commondir was not put back")
		}
	}()
	deadline = time.Now().Add(5 * time.Second)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived the SIGKILL of their rein: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith lists the pids whose command line holds marker.
func processesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(data), marker) && !strings.Contains(string(data), "REIN_TEST") {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestHooksCannotBePlanted: a repository without .git/hooks gets none
// planted either.
func TestHooksCannotBePlanted(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	if err := os.RemoveAll(filepath.Join(ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	res := runLine(t, ws, "sh -c 'mkdir -p .git/hooks; echo x > .git/hooks/pre-commit'", Profile{})
	if res.Status == OK {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("a hook was planted")
	}
}

func TestHeadTail(t *testing.T) {
	for _, c := range []struct {
		limit  int
		writes []string
		text   string
		elided int64
	}{
		{10, []string{"abc"}, "abc", 0},
		{10, []string{"abcdefgh"}, "abcdefgh", 0},
		{10, []string{"abcdefghijkl"}, "abcdehijkl", 2},
		{10, []string{"abc", "def", "ghi", "jkl", "mno"}, "abcdekl" + "mno", 5},
		{4, []string{"a", "b", "c", "d", "e", "f", "g"}, "abfg", 3},
		{10, []string{"12345", strings.Repeat("x", 1000), "tail!"}, "12345xtail!"[:5] + "tail!", 1000},
	} {
		h := newHeadTail(c.limit)
		for _, w := range c.writes {
			h.Write([]byte(w))
		}
		if o := h.output(); o.Text != c.text || o.Elided != c.elided {
			t.Errorf("%d %q: got %q elided %d, want %q elided %d", c.limit, c.writes, o.Text, o.Elided, c.text, c.elided)
		}
	}
}

// TestInitCannotBeKilledFromInside: signals the command sends to pid 1 do
// not end the init, so the result still reflects what ran.
func TestInitCannotBeKilledFromInside(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	for _, sig := range []string{"TERM", "HUP", "QUIT", "INT", "USR1", "KILL"} {
		res := runLine(t, ws, "sh -c 'kill -"+sig+" 1; sleep 0.2; echo after'", Profile{})
		if res.Status != OK || res.Stdout.Text != "after\n" || len(res.Stages) != 1 {
			t.Errorf("SIG%s to the init: %+v", sig, res)
		}
	}
}

// TestOneRunPerWorkspace: a second run waits for the first, so a command
// still running cannot swap paths under the next run's view.
func TestOneRunPerWorkspace(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	done := make(chan *Result)
	go func() {
		l, _ := shell.Parse("sh -c 'echo a > order; sleep 1; echo a2 >> order'")
		res, _ := Run(context.Background(), l, Profile{Workspace: ws}, nil, nil)
		done <- res
	}()
	time.Sleep(300 * time.Millisecond)
	res := runLine(t, ws, "sh -c 'echo b >> order'", Profile{})
	first := <-done
	if res.Status != OK || first == nil || first.Status != OK {
		t.Fatalf("%+v %+v", res, first)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "order")); string(data) != "a\na2\nb\n" {
		t.Fatalf("runs overlapped: %q", data)
	}
}

// TestGitRedirectsPutBack: a planted commondir, alternates or a new .git
// would make the host's git obey the command; they are put back.
func TestGitRedirectsPutBack(t *testing.T) {
	requireBwrap(t)
	ws := workspaceDir(t)
	if err := os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runLine(t, ws, "sh -c 'mkdir -p evil .git/objects/info && echo ../evil > .git/commondir && echo /tmp > .git/objects/info/alternates'", Profile{})
	if res.Status != Failed || !strings.Contains(res.Reason, ".git/commondir") {
		t.Fatalf("%+v", res)
	}
	for _, p := range []string{".git/commondir", ".git/objects/info/alternates"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	// A workspace without a repository cannot get one planted either.
	plain := filepath.Join(filepath.Dir(ws), "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	res = runLine(t, plain, "sh -c 'mkdir -p .git/hooks && echo x > .git/config'", Profile{})
	if res.Status != Failed {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(plain, ".git")); err == nil {
		t.Fatal("a planted .git was left")
	}
}
