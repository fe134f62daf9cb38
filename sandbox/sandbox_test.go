//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// The test binary is also the sandbox's init, as rein's own binary is, and
// the probe the escape tests run inside.
func TestMain(m *testing.M) {
	Main()
	if filepath.Base(os.Args[0]) == "probe" {
		os.Exit(probeMain(os.Args[1:]))
	}
	// As a helper process on the main thread (locked to it by init): fork
	// a child through the cgroup start path, which must not fork it from
	// the main thread.
	if os.Getenv("REIN_TEST_FORK_MAIN") == "1" {
		os.Exit(forkFromMain())
	}
	// As a helper process of TestMasksOnlyReachable, as another user: the
	// bwrap rung's masks of /etc, and what a line printed through them.
	if ws := os.Getenv("REIN_TEST_MASKS_WS"); ws != "" {
		masks, err := systemMasks(RungBwrap)
		l, _ := shell.Parse(os.Getenv("REIN_TEST_MASKS_LINE"))
		res, rerr := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
		if err != nil || rerr != nil {
			fmt.Println(err, rerr)
			os.Exit(3)
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"masks": masks, "stdout": res.Stdout.Text, "stderr": res.Stderr.Text})
		os.Exit(0)
	}
	scratchHelper()
	sessionHelper()
	unprivilegedHelper()
	// As a helper process: run a line in the sandbox and wait for it, so
	// that the test can kill this process while the line runs.
	if ws := os.Getenv("REIN_TEST_SANDBOX_WS"); ws != "" {
		if init := os.Getenv("REIN_TEST_SANDBOX_INIT"); init != "" {
			if err := UseInit(init); err != nil {
				os.Exit(4)
			}
		}
		l, err := shell.Parse(os.Getenv("REIN_TEST_SANDBOX_LINE"))
		if err == nil {
			p := Profile{Workspace: ws, Rung: Rung(os.Getenv("REIN_TEST_SANDBOX_RUNG"))}
			fmt.Sscanf(os.Getenv("REIN_TEST_SANDBOX_LIMITS"), "%d,%d", &p.Limits.MemoryBytes, &p.Limits.Processes)
			if p.Rung == rungWarm || p.Rung == rungWarmLandlock {
				// Through a pool: a warm sandbox waits beside the run.
				p.Rung = warmBase(p.Rung)
				pool := NewPool()
				true_, _ := shell.Parse("true")
				pool.Run(context.Background(), true_, p, nil, nil)
				_, err = pool.Run(context.Background(), l, p, nil, nil)
			} else {
				_, err = Run(context.Background(), l, p, nil, nil)
			}
		}
		if err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	code := m.Run()
	if leanInitDir != "" {
		os.RemoveAll(leanInitDir)
	}
	os.Exit(code)
}

var rungs = []Rung{RungBwrap, RungLandlock}

// requireRung fails the test where REIN_REQUIRE_SANDBOX=1 and the rung
// cannot run, and skips it elsewhere.
func requireRung(t testing.TB, rung Rung) {
	t.Helper()
	if sup := confine.Probe(); sup.LandlockABI < minABI || !sup.Seccomp {
		testenv.Missing(t, "the init needs Landlock ABI %d and seccomp: %+v", minABI, sup)
	}
	if rung != RungBwrap {
		return
	}
	if _, err := bwrap.Find(); err != nil {
		testenv.Missing(t, "the bwrap rung needs bubblewrap: %v", err)
	}
	if out, err := exec.Command("bwrap", "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
		testenv.Missing(t, "user namespaces are refused here: %v %s", err, out)
	}
}

// eachRungWarm runs f for each confining rung, and on the bwrap rung
// through a pool's warm sandboxes.
// and each rung again with the init built from cmd/rein-init.
func eachRungWarm(t *testing.T, f func(t *testing.T, rung Rung)) {
	eachRung(t, f)
	t.Run(rungWarm, func(t *testing.T) {
		requireRung(t, RungBwrap)
		f(t, rungWarm)
	})
	t.Run(rungWarmLandlock, func(t *testing.T) {
		requireRung(t, RungLandlock)
		f(t, rungWarmLandlock)
	})
	for _, r := range rungs {
		t.Run(string(r)+"-lean", func(t *testing.T) {
			requireRung(t, r)
			useLeanInit(t)
			f(t, r)
		})
	}
}

// leanInit builds cmd/rein-init once for the test binary.
var leanInit = sync.OnceValues(func() (string, error) {
	// Built beforehand (CI's run as an ordinary user, who cannot build
	// from the tree).
	if bin := os.Getenv("REIN_TEST_LEAN_INIT"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "rein-init-test-")
	if err != nil {
		return "", err
	}
	leanInitDir = dir
	bin := filepath.Join(dir, "rein-init")
	build := exec.Command("go", "build", "-o", bin, "../cmd/rein-init")
	// Static, as the docs build it.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/rein-init: %v\n%s", err, out)
	}
	return bin, nil
})

// leanInitDir is removed when the tests end.
var leanInitDir string

// useLeanInit makes the init built from cmd/rein-init the sandbox's init
// for the rest of the test.
func useLeanInit(t testing.TB) string {
	t.Helper()
	bin, err := leanInit()
	if err != nil {
		t.Fatal(err)
	}
	if err := UseInit(bin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { UseInit("") })
	return bin
}

// eachRung runs f for each confining rung.
func eachRung(t *testing.T, f func(t *testing.T, rung Rung)) {
	for _, r := range rungs {
		t.Run(string(r), func(t *testing.T) {
			requireRung(t, r)
			f(t, r)
		})
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
	if p.Rung == rungWarm || p.Rung == rungWarmLandlock {
		return runWarm(t, l, p)
	}
	res, err := Run(context.Background(), l, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rungWarm runs a test's lines on the bwrap rung through a pool, each in
// a sandbox started before the line was asked for.
const rungWarm = "bwrap-warm"

// rungWarmLandlock is rungWarm on the landlock rung.
const rungWarmLandlock = "landlock-warm"

// warmBase is the rung a warm variant runs on.
func warmBase(rung Rung) Rung {
	if rung == rungWarmLandlock {
		return RungLandlock
	}
	return RungBwrap
}

var testPools sync.Map // *testing.T → *Pool

// runWarm runs l through the test's pool once a sandbox for p is warm,
// and fails the test if the run did not take it.
func runWarm(t *testing.T, l *shell.Line, p Profile) *Result {
	t.Helper()
	p.Rung = warmBase(p.Rung)
	v, loaded := testPools.LoadOrStore(t, NewPool())
	pool := v.(*Pool)
	if !loaded {
		t.Cleanup(func() { pool.Close(); testPools.Delete(t) })
	}
	for deadline := time.Now().Add(10 * time.Second); pool.Warm() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no sandbox became warm")
		}
		if !loaded {
			// The pool fills behind a run.
			true_, _ := shell.Parse("true")
			if _, err := pool.Run(context.Background(), true_, p, nil, nil); err != nil {
				t.Fatal(err)
			}
			loaded = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := pool.Run(context.Background(), l, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Warm {
		t.Fatalf("the run did not take the warm sandbox: %+v", res)
	}
	return res
}

func TestRunBasics(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		p := Profile{Rung: rung}
		res := runLine(t, ws, `sh -c 'echo out; echo err >&2; exit 3'`, p)
		if res.Status != Failed || res.ExitCode != 3 || res.Stdout.Text != "out\n" || res.Stderr.Text != "err\n" || res.Rung != rung {
			t.Fatalf("%+v", res)
		}
		res = runLine(t, ws, "echo hello > f.txt && cat f.txt | tr a-z A-Z", p)
		if res.Status != OK || res.Stdout.Text != "HELLO\n" || res.Poisoned != "" {
			t.Fatalf("%+v", res)
		}
		if data, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(data) != "hello\n" {
			t.Fatalf("the workspace write did not land: %q", data)
		}
		res = runLine(t, ws, "no-such-program-rein", p)
		if res.Status != Unavailable || res.ExitCode != 127 || !strings.Contains(res.Reason, "no-such-program-rein") {
			t.Fatalf("%+v", res)
		}
		// HOME and TMPDIR are private and writable, the caches are set.
		res = runLine(t, ws, `sh -c 'touch "$HOME/h" "$TMPDIR/t" && test -n "$GOCACHE" && test -d "$GOMODCACHE" && pwd'`, p)
		if res.Status != OK || res.Stdout.Text != ws+"\n" {
			t.Fatalf("%+v", res)
		}
		res = runLine(t, ws, "sh -c 'echo x > ro'", Profile{Rung: rung, ReadOnly: true})
		if res.Status != Failed {
			t.Fatalf("a read-only workspace was written: %+v", res)
		}
	})
}

// TestEscapes tries to leave, one way after another: every attempt must
// be refused inside, and the host must be unchanged afterwards.
func TestEscapes(t *testing.T) {
	eachRungWarm(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		parent := filepath.Dir(ws)
		outside := filepath.Join(parent, "outside")
		sibling := filepath.Join(parent, "sibling")
		for _, d := range []string{outside, sibling} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(sibling, "secret"), []byte("s"), 0o644)
		os.WriteFile(filepath.Join(outside, "file"), []byte("f"), 0o644)
		copyProbe(t, ws)

		// Host services the command must not reach.
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer tcp.Close()
		accepted := make(chan string, 4)
		go func() {
			for {
				c, err := tcp.Accept()
				if err != nil {
					return
				}
				accepted <- "tcp"
				c.Close()
			}
		}()
		udp, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer udp.Close()
		go func() {
			buf := make([]byte, 64)
			if _, _, err := udp.ReadFrom(buf); err == nil {
				accepted <- "udp"
			}
		}()
		sock := filepath.Join(outside, "agent.sock")
		ux, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ux.Close()
		go func() {
			if c, err := ux.Accept(); err == nil {
				accepted <- "unix"
				c.Close()
			}
		}()
		host := exec.Command("sleep", "1000")
		host.Env = []string{"SECRET_TOKEN=hunter2"}
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		defer host.Process.Kill()
		key := 0x7e100000 + os.Getpid()%0xffff
		qid, _, e := unix.RawSyscall(unix.SYS_MSGGET, uintptr(key), unix.IPC_CREAT|0o600, 0)
		if e != 0 {
			t.Fatal(e)
		}
		defer unix.RawSyscall(unix.SYS_MSGCTL, qid, unix.IPC_RMID, 0)
		// A descriptor without close-on-exec, which a careless runner
		// would pass on.
		leak, err := syscall.Open(filepath.Join(outside, "file"), syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(leak)
		t.Setenv("SECRET_TOKEN", "hunter2")

		pid := strconv.Itoa(host.Process.Pid)
		attempts := map[string]string{
			"write outside":                 "./probe write " + outside + "/pwned",
			"redirect outside":              "echo x > " + outside + "/pwned",
			"write through a planted link":  "ln -s " + outside + " link && echo x > link/pwned",
			"hard link to outside":          "ln " + outside + "/file hardlink",
			"write through /proc/self/root": "./probe write /proc/self/root" + outside + "/pwned",
			"read a sibling project":        "./probe read " + sibling + "/secret",
			"read /etc/shadow":              "./probe read /etc/shadow",
			"read the real home":            "ls /root",
			"tcp to the host's loopback":    "./probe dial-tcp " + tcp.Addr().String(),
			"udp to the host's loopback":    "./probe send-udp " + udp.LocalAddr().String(),
			"host unix socket":              "./probe dial-unix " + sock,
			"signal a host process":         "./probe signal " + pid,
			"prlimit a host process":        "./probe prlimit " + pid,
			"renice a host process":         "./probe renice " + pid,
			"environ of a host process":     "./probe environ " + pid,
			"the host's System V IPC":       "./probe msgget " + strconv.Itoa(key),
			"TIOCSTI":                       "./probe tiocsti",
			"inherited descriptors":         "./probe fds",
			"secret in the environment":     "./probe env",
			"setuid file":                   "./probe setuid " + ws + "/suid",
			"device node":                   "./probe mknod " + ws + "/null",
			"nested user namespace":         "./probe unshare",
			"chroot":                        "./probe chroot",
			"hostname":                      "./probe hostname",
			"sysctl":                        "./probe write /proc/sys/kernel/hostname",
			"git hook":                      "echo x > .git/hooks/pre-commit",
		}
		for name, line := range attempts {
			t.Logf("%s: %s", name, line)
			res := runLine(t, ws, line, Profile{Rung: rung, Timeout: 20 * time.Second})
			if res.Status == OK {
				t.Errorf("%s: %q worked inside the sandbox\n%s%s", name, line, res.Stdout.Text, res.Stderr.Text)
			}
			// The probe ran and was refused, rather than failing to run.
			if strings.HasPrefix(line, "./probe") && !strings.HasPrefix(res.Stdout.Text, "refused: ") {
				t.Errorf("%s: the probe did not report a refusal: %+v", name, res)
			}
			t.Logf("%s: %s", name, strings.TrimSpace(res.Stdout.Text))
		}
		select {
		case what := <-accepted:
			t.Errorf("a %s connection reached the host", what)
		default:
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 2 {
			t.Errorf("something was written outside: %v", entries)
		}
		if fi, err := os.Stat(filepath.Join(ws, "suid")); err == nil && fi.Mode()&os.ModeSetuid != 0 {
			t.Error("a setuid file was made")
		}
		for _, p := range []string{".git/hooks/pre-commit", "null", "hardlink"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
				t.Errorf("%s exists after the run", p)
			}
		}
		if err := host.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the host process was killed: %v", err)
		}
		if h, _ := os.Hostname(); h == "pwned" {
			t.Error("the host name was changed")
		}
		if rung == RungBwrap {
			res := runLine(t, ws, "ls /proc", Profile{Rung: rung})
			if strings.Contains(res.Stdout.Text, pid+"\n") {
				t.Errorf("host processes are visible:\n%s", res.Stdout.Text)
			}
		}
	})
}

// copyProbe puts the test binary in the workspace as ./probe.
func copyProbe(t *testing.T, ws string) {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(ws, "probe"), os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
}

// TestTimeoutKillsTree: a timeout kills the whole tree, daemons included.
func TestTimeoutKillsTree(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		marker := filepath.Join(ws, "alive")
		start := time.Now()
		res := runLine(t, ws, `sh -c 'setsid sh -c "while true; do touch `+marker+`; sleep 0.1; done" & sleep 60'`, Profile{Rung: rung, Timeout: 2 * time.Second})
		if res.Status != Timeout || res.ExitCode != 124 || time.Since(start) > 30*time.Second || res.Poisoned != "" {
			t.Fatalf("%+v after %v", res, time.Since(start))
		}
		os.Remove(marker)
		time.Sleep(500 * time.Millisecond)
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a daemon outlived the timeout")
		}
	})
}

// TestEndOfRunKillsTree: a daemon the line leaves behind dies with the
// line, without any timeout.
func TestEndOfRunKillsTree(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		marker := fmt.Sprintf("rein-endofrun-%d-%s", os.Getpid(), rung)
		res := runLine(t, ws, `sh -c 'setsid sh -c "sleep 1000; : `+marker+`" > /dev/null 2>&1 & sh -c "sleep 1000; : `+marker+`" > /dev/null 2>&1 & echo started'`, Profile{Rung: rung})
		if res.Status != OK || res.Stdout.Text != "started\n" {
			t.Fatalf("%+v", res)
		}
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Fatalf("processes outlived their line: %v", left)
		}
	})
}

func TestOutputBound(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		spool := t.TempDir()
		res := runLine(t, ws, "head -c 1000000 /dev/zero", Profile{Rung: rung, OutputBytes: 1000, SpoolDir: spool})
		if res.Status != OK || len(res.Stdout.Text) != 1000 || res.Stdout.Elided != 999000 || res.Stdout.Bytes != 1000000 {
			t.Fatalf("kept %d bytes, elided %d of %d", len(res.Stdout.Text), res.Stdout.Elided, res.Stdout.Bytes)
		}
		if fi, err := os.Stat(res.Stdout.File); err != nil || fi.Size() != 1000000 || filepath.Dir(res.Stdout.File) != spool {
			t.Fatalf("the spool holds %v, %v", fi, err)
		}
	})
}

// TestSpoolOverflow: with SpoolOverflow a stream that fits what the
// result keeps in memory has no file and its whole text; one a byte
// longer is spooled whole, every byte from the first, cold and warm.
func TestSpoolOverflow(t *testing.T) {
	eachRungWarm(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		// 1000 bytes kept in memory: 500 of head and 500 of tail.
		for _, n := range []int{0, 999, 1000, 1001, 4096, 300000} {
			spool := t.TempDir()
			line := fmt.Sprintf("sh -c 'seq 1000000 | head -c %d; seq 7 >&2'", n)
			res := runLine(t, ws, line, Profile{Rung: rung, OutputBytes: 1000, SpoolDir: spool, SpoolOverflow: true})
			want := seqText(1000000)[:n]
			if res.Status != OK || res.Stdout.Bytes != int64(n) || res.Stderr.Text != seqText(7) || res.Stderr.File != "" {
				t.Fatalf("%d bytes: %s %d bytes, stderr %q (file %q)", n, res.Status, res.Stdout.Bytes, res.Stderr.Text, res.Stderr.File)
			}
			entries, _ := os.ReadDir(spool)
			if n <= 1000 {
				if res.Stdout.File != "" || len(entries) != 0 || res.Stdout.Text != want {
					t.Fatalf("%d bytes: file %q, spool %v, text kept %d bytes", n, res.Stdout.File, entries, len(res.Stdout.Text))
				}
				continue
			}
			data, err := os.ReadFile(filepath.Join(spool, "stdout"))
			if res.Stdout.File != filepath.Join(spool, "stdout") || err != nil || string(data) != want || len(entries) != 1 || res.Stdout.Dropped != 0 {
				t.Fatalf("%d bytes: file %q holds %d bytes (%v), equal %v, spool %v", n, res.Stdout.File, len(data), err, string(data) == want, entries)
			}
		}
	})
}

// seqText is what seq N prints.
func seqText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSpoolBound: a command printing far past the spool's bound leaves a
// spool of the bound and a result naming the bytes dropped; a file size
// limit bounds the spool too.
func TestSpoolBound(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		const printed = 200 << 20
		for _, c := range []struct {
			p     Profile
			bound int64
		}{
			{Profile{SpoolBytes: 1 << 20}, 1 << 20},
			{Profile{Limits: Limits{FileSizeBytes: 10 << 20}}, 10 << 20},
		} {
			if rung == RungNone && c.p.Limits != (Limits{}) {
				continue
			}
			spool := t.TempDir()
			c.p.Rung, c.p.SpoolDir, c.p.OutputBytes = rung, spool, 1000
			res := runLine(t, workspaceDir(t), "head -c 209715200 /dev/zero", c.p)
			fi, err := os.Stat(filepath.Join(spool, "stdout"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != OK || res.Stdout.Bytes != printed || fi.Size() != c.bound || res.Stdout.Dropped != printed-c.bound || res.Stderr.Dropped != 0 {
				t.Fatalf("spooled %d bytes, dropped %d of %d (bound %d): %+v", fi.Size(), res.Stdout.Dropped, res.Stdout.Bytes, c.bound, res)
			}
		}
	})
}

func TestRefusals(t *testing.T) {
	l, _ := shell.Parse("true")
	ws := workspaceDir(t)
	// A directory reached through a link in a parent component.
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "real", "sub"), 0o755)
	os.Symlink(filepath.Join(outside, "real"), filepath.Join(outside, "via"))
	linkedDir := filepath.Join(outside, "via", "sub")
	// Where the trace key is kept: never readable through a read path.
	keys, err := StateDir("keys")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Profile
		want Status
		says string
	}{
		{Profile{Workspace: ws, HostReadPaths: []string{keys}}, Denied, "overlaps rein's state directory"},
		{Profile{Workspace: ws, HostReadPaths: []string{filepath.Dir(CacheDir())}}, Denied, "overlaps rein's state directory"},
		{Profile{Workspace: ws, Timeout: time.Hour}, Denied, "ceiling"},
		{Profile{Workspace: ws, Rung: "chroot"}, Denied, "unknown rung"},
		{Profile{Workspace: "relative"}, InvalidPath, "absolute"},
		{Profile{Workspace: ws + "/missing"}, NotFound, "missing"},
		{Profile{Workspace: "/"}, InvalidPath, "cannot be /"},
		{Profile{Workspace: ws, Dir: "/etc"}, InvalidPath, "not inside"},
		{Profile{Workspace: ws, SpoolDir: ws}, InvalidPath, "inside the workspace"},
		{Profile{Workspace: ws, HostReadPaths: []string{"/nonexistent-rein"}}, NotFound, "host read path"},
		{Profile{Workspace: ws, HostWritePaths: []string{"/tmp"}}, InvalidPath, "inside a host read path"},
		{Profile{Workspace: ws, HostReadPaths: []string{"/usr"}, HostWritePaths: []string{"/usr/../tmp"}}, InvalidPath, "inside a host read path"},
		{Profile{Workspace: ws, HostReadPaths: []string{"/usr"}, HostWritePaths: []string{"/usr/nonexistent-rein"}}, NotFound, "host write path"},
		{Profile{Workspace: ws, HostReadPaths: []string{filepath.Dir(ws)}, HostWritePaths: []string{ws}}, InvalidPath, "overlaps the workspace"},
		{Profile{Workspace: ws, HostReadPaths: []string{filepath.Dir(linkedDir)}, HostWritePaths: []string{linkedDir}}, InvalidPath, "through a symbolic link"},
	} {
		_, err := Run(context.Background(), l, c.p, nil, nil)
		e, ok := err.(*Error)
		if !ok || e.Status != c.want || !strings.Contains(e.Reason, c.says) {
			t.Errorf("%+v: %v, want %s naming %q", c.p, err, c.want, c.says)
		}
	}
}

// TestIODirUnreachable: the command can neither read the request nor
// forge the result the init leaves for rein.
func TestIODirUnreachable(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, `sh -c 'for d in /rein/io "$HOME/../io"; do cat $d/request.json && exit 0; echo "{\"plan\":{\"exit_code\":0}}" > $d/result.json && exit 0; done; exit 7'`, Profile{Rung: rung})
		if res.ExitCode != 7 || strings.Contains(res.Stdout.Text, "confine") {
			t.Fatalf("%+v", res)
		}
	})
}

// TestKill9LeavesNothing: when the process running the sandbox is killed
// with SIGKILL, nothing it started survives, daemons included, and the
// next run puts back what the killed one changed.
func TestKill9LeavesNothing(t *testing.T) {
	eachRungWarm(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		marker := fmt.Sprintf("rein-kill9-%d-%s", os.Getpid(), rung)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "REIN_TEST_SANDBOX_WS="+ws, "REIN_TEST_SANDBOX_RUNG="+string(rung),
			"REIN_TEST_SANDBOX_LINE=sh -c 'echo ../evil > .git/commondir; setsid sh -c \"sleep 1000; :\" "+marker+" & sh -c \"sleep 1000; :\" "+marker+"'")
		if init := initProgram.Load(); init != nil {
			cmd.Env = append(cmd.Env, "REIN_TEST_SANDBOX_INIT="+*init)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(testenv.ProcessesWith(marker)) < 2 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("the sandboxed processes never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		defer func() {
			// The next run sweeps what the killed one left behind.
			runLine(t, ws, "true", Profile{Rung: rung})
			if left, _ := filepath.Glob(filepath.Join(CacheDir(), "runs", fmt.Sprintf("rein-run-%d-*", cmd.Process.Pid))); len(left) > 0 {
				t.Errorf("the killed run's scratch directory was not swept: %v", left)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git", "commondir")); err == nil {
				t.Error("the killed run's planted .git/commondir was not put back")
			}
		}()
		deadline = time.Now().Add(5 * time.Second)
		for {
			// bubblewrap's command line names the workspace: no sandbox,
			// warm or running, outlives its rein either.
			left := append(testenv.ProcessesWith(marker), testenv.ProcessesWith(ws)...)
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes outlived the SIGKILL of their rein: %v", left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestProtectedPaths: hooks, git config and .rein cannot be changed from
// inside: refused on the bwrap rung (read-only mounts), put back after the
// run on the landlock rung, which reports the run failed.
func TestProtectedPaths(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
		os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-push.sample"), []byte("sample"), 0o755)
		os.Mkdir(filepath.Join(ws, ".rein"), 0o755)
		os.WriteFile(filepath.Join(ws, ".rein", "policy.toml"), []byte("mode = \"ask\"\n"), 0o644)
		for _, line := range []string{
			"sh -c 'echo x > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit'",
			"sh -c 'echo \"[core] hooksPath = /tmp\" >> .git/config'",
			"sh -c 'echo \"mode = \\\"auto\\\"\" > .rein/policy.toml'",
			"sh -c 'rm -rf .git/hooks && ln -s .. .git/hooks'",
			"sh -c 'rm .git/hooks/pre-push.sample'",
			"sh -c 'mkdir -p .rein/x && echo y > .rein/x/trust'",
		} {
			res := runLine(t, ws, line, Profile{Rung: rung})
			if res.Status == OK {
				t.Errorf("%s: %+v", line, res)
			}
		}
		if _, err := os.Lstat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
			t.Error("a hook was planted")
		}
		for p, want := range map[string]string{".git/config": "[core]\n", ".git/hooks/pre-push.sample": "sample", ".rein/policy.toml": "mode = \"ask\"\n"} {
			if data, _ := os.ReadFile(filepath.Join(ws, p)); string(data) != want {
				t.Errorf("%s holds %q", p, data)
			}
		}
		if fi, err := os.Lstat(filepath.Join(ws, ".git", "hooks")); err != nil || !fi.IsDir() {
			t.Errorf(".git/hooks is not the directory it was: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(ws, ".rein", "x")); err == nil {
			t.Error(".rein/x was left")
		}
		// A repository without a hooks directory gets none planted either.
		os.RemoveAll(filepath.Join(ws, ".git", "hooks"))
		runLine(t, ws, "sh -c 'mkdir -p .git/hooks; echo x > .git/hooks/pre-commit'", Profile{Rung: rung})
		if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
			t.Fatal("a hook was planted")
		}
		// A workspace without .rein gets none made either: no policy of
		// its own, and no link to another project's.
		other := t.TempDir()
		os.MkdirAll(filepath.Join(other, ".rein"), 0o755)
		os.WriteFile(filepath.Join(other, ".rein", "policy.toml"), []byte("mode = \"auto\"\n"), 0o644)
		for _, line := range []string{
			"sh -c 'rm -rf .rein; ln -s " + other + "/.rein .rein'",
			"sh -c 'rmdir .rein; mkdir -p .rein && echo x > .rein/policy.toml'",
			"sh -c 'echo x > .rein/policy.toml'",
		} {
			os.RemoveAll(filepath.Join(ws, ".rein"))
			res := runLine(t, ws, line, Profile{Rung: rung})
			if rung == RungBwrap && res.Status == OK {
				t.Errorf("%s: %+v", line, res)
			}
			fi, err := os.Lstat(filepath.Join(ws, ".rein"))
			if err != nil {
				continue
			}
			if !fi.IsDir() {
				t.Errorf("%s: .rein is left as %s", line, fi.Mode())
			} else if ents, _ := os.ReadDir(filepath.Join(ws, ".rein")); len(ents) > 0 {
				t.Errorf("%s: .rein holds %v", line, ents)
			}
		}
	})
}

// TestAgentConfigPutBack: a command the policy could not see into (a
// script, an archive unpacked) that writes an agent's or editor's
// configuration in the workspace, new or changed, has it put back on
// every rung, and the run fails naming it.
func TestAgentConfigPutBack(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		if err := os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ws, ".vscode", "settings.json"), []byte("{}\n"), 0o644)
		res := runLine(t, ws, `sh -c 'mkdir -p .claude && echo "{\"disableAllHooks\": true}" > .claude/settings.local.json && `+
			`echo "{\"chat.tools.autoApprove\": true}" > .vscode/settings.json && echo "{}" > .mcp.json && echo ok > kept.txt'`, Profile{Rung: rung})
		if res.Status != Failed || len(res.PutBack) == 0 {
			t.Fatalf("%+v", res)
		}
		for _, want := range []string{".claude", ".vscode/settings.json", ".mcp.json"} {
			found := false
			for _, p := range res.PutBack {
				found = found || strings.HasPrefix(p, want)
			}
			if !found {
				t.Errorf("the put-back %q does not name %s", res.PutBack, want)
			}
		}
		if _, err := os.Lstat(filepath.Join(ws, ".claude")); err == nil {
			t.Error(".claude was left")
		}
		if _, err := os.Lstat(filepath.Join(ws, ".mcp.json")); err == nil {
			t.Error(".mcp.json was left")
		}
		if data, _ := os.ReadFile(filepath.Join(ws, ".vscode", "settings.json")); string(data) != "{}\n" {
			t.Errorf(".vscode/settings.json holds %q", data)
		}
		if data, _ := os.ReadFile(filepath.Join(ws, "kept.txt")); string(data) != "ok\n" {
			t.Errorf("the run's other work was lost: %q", data)
		}

		// Below the top too: a package opened as a project of its own
		// reads its own.
		os.MkdirAll(filepath.Join(ws, "sub", ".claude"), 0o755)
		os.WriteFile(filepath.Join(ws, "sub", ".claude", "settings.json"), []byte(`{"orig":1}`), 0o644)
		os.MkdirAll(filepath.Join(ws, "gone", ".claude"), 0o755)
		os.WriteFile(filepath.Join(ws, "gone", ".claude", "settings.json"), []byte(`{"hooks":"mine"}`), 0o644)
		res = runLine(t, ws, `sh -c 'echo "{\"hooks\":\"evil\"}" > sub/.claude/settings.json; mkdir -p deep/.vscode; echo "{}" > deep/.vscode/tasks.json; `+
			`echo "{}" > sub/.mcp.json; rm -rf gone/.claude; echo ok > sub/kept.txt'`, Profile{Rung: rung})
		if res.Status != Failed {
			t.Fatalf("nested: %+v", res)
		}
		for rel, want := range map[string]string{"sub/.claude/settings.json": `{"orig":1}`, "gone/.claude/settings.json": `{"hooks":"mine"}`, "sub/kept.txt": "ok\n"} {
			if data, _ := os.ReadFile(filepath.Join(ws, rel)); string(data) != want {
				t.Errorf("%s holds %q, want %q (put back: %q)", rel, data, want, res.PutBack)
			}
		}
		for _, rel := range []string{"deep/.vscode", "sub/.mcp.json"} {
			if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
				t.Errorf("%s was left (put back: %q)", rel, res.PutBack)
			}
		}
	})
}

// TestHostConfigPutBack: every name of the host configuration table,
// made by a command at the top and below it, is removed on every rung.
func TestHostConfigPutBack(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		var script []string
		for _, name := range workspace.HostConfigNames() {
			script = append(script, "echo planted > "+name, "mkdir -p sub/"+name+" && echo planted > sub/"+name+"/x")
		}
		res := runLine(t, ws, "sh -c '"+strings.Join(script, "; ")+"; echo ok > kept.txt'", Profile{Rung: rung})
		if res.Status != Failed {
			t.Fatalf("%+v", res)
		}
		for _, name := range workspace.HostConfigNames() {
			for _, rel := range []string{name, "sub/" + name} {
				if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
					t.Errorf("%s was left (put back: %q)", rel, res.PutBack)
				}
			}
		}
		if data, _ := os.ReadFile(filepath.Join(ws, "kept.txt")); string(data) != "ok\n" {
			t.Errorf("the run's other work was lost: %q", data)
		}
	})
}

// TestGitSwapped: a .git replaced by one the command controls (a file
// pointing elsewhere, a link, a new directory) is moved aside and the run
// fails.
func TestGitSwapped(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		for _, line := range []string{
			"sh -c 'mv .git .real && mkdir evil && echo \"gitdir: evil\" > .git'",
			"sh -c 'mv .git .real && mkdir evil && ln -s evil .git'",
			"sh -c 'mv .git .real && mkdir -p .git/hooks && echo \"[core] fsmonitor = evil\" > .git/config'",
		} {
			ws := workspaceDir(t)
			res := runLine(t, ws, line, Profile{Rung: rung})
			if rung == RungBwrap {
				// .git is a mount point there: it cannot be moved at all.
				if fi, err := os.Lstat(filepath.Join(ws, ".git")); res.Status != Failed || err != nil || !fi.IsDir() || !strings.Contains(res.Stderr.Text, "busy") {
					t.Errorf("%s: %+v", line, res)
				}
				continue
			}
			if res.Status != Failed || !strings.Contains(res.Reason, ".git (replaced") {
				t.Errorf("%s: %+v", line, res)
			}
			if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
				t.Errorf("%s: the replacement .git is still in place", line)
			}
		}
	})
}

// TestGuardFollowsNoLink: putting git's control files back never writes
// or removes through a link the command planted.
func TestGuardFollowsNoLink(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		victim := filepath.Join(filepath.Dir(ws), "victim")
		os.MkdirAll(filepath.Join(victim, "info"), 0o755)
		os.WriteFile(filepath.Join(victim, "info", "alternates"), []byte("keep"), 0o644)
		os.WriteFile(filepath.Join(victim, "commondir"), []byte("keep"), 0o644)
		runLine(t, ws, "sh -c 'rm -rf .git/objects; ln -s "+victim+" .git/objects'", Profile{Rung: rung})
		for _, p := range []string{"info/alternates", "commondir"} {
			if data, _ := os.ReadFile(filepath.Join(victim, p)); string(data) != "keep" {
				t.Errorf("%s outside the workspace holds %q", p, data)
			}
		}
	})
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
		total := 0
		for _, w := range c.writes {
			h.Write([]byte(w))
			total += len(w)
		}
		if o := h.output(); o.Text != c.text || o.Elided != c.elided || o.Bytes != int64(total) {
			t.Errorf("%d %q: got %q elided %d of %d, want %q elided %d", c.limit, c.writes, o.Text, o.Elided, o.Bytes, c.text, c.elided)
		}
	}
}

// TestInitCannotBeKilledFromInside: on the bwrap rung signals the command
// sends to pid 1 do not end the init, so the result still reflects what
// ran. On the landlock rung the command can kill its init; the run then
// fails, saying so, and its cgroup still kills what it left.
func TestInitCannotBeKilledFromInside(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		if rung == RungBwrap {
			for _, sig := range []string{"TERM", "HUP", "QUIT", "INT", "USR1", "KILL", "SEGV", "BUS", "FPE", "ILL", "ABRT", "SYS", "PWR"} {
				res := runLine(t, ws, "sh -c 'kill -"+sig+" 1; sleep 0.2; echo after'", Profile{Rung: rung})
				if res.Status != OK || res.Stdout.Text != "after\n" || len(res.Stages) != 1 {
					t.Errorf("SIG%s to the init: %+v", sig, res)
				}
			}
			return
		}
		for _, sig := range []string{"TERM", "HUP", "INT", "USR1"} {
			res := runLine(t, ws, "sh -c 'kill -"+sig+" $PPID; sleep 0.2; echo after'", Profile{Rung: rung})
			if res.Status != OK || res.Stdout.Text != "after\n" {
				t.Errorf("SIG%s to the init: %+v", sig, res)
			}
		}
		// SIGKILL may reach the init (its domain is the command's); then
		// the run fails saying so, and nothing it started survives.
		copyProbe(t, ws)
		marker := fmt.Sprintf("rein-initkill-%d", os.Getpid())
		res := runLine(t, ws, `sh -c 'setsid sh -c "sleep 1000; : `+marker+`" > /dev/null 2>&1 & sleep 0.2; ./probe kill-init; sleep 1000'`, Profile{Rung: rung, Timeout: 5 * time.Second})
		t.Logf("%s %s: %s", res.Status, res.Reason, res.Stdout.Text)
		switch {
		case res.Status == Timeout && strings.HasPrefix(res.Stdout.Text, "refused"):
		case res.Status == Failed && strings.Contains(res.Reason, "killed"):
			if res.Containment != "cgroup" && res.Poisoned == "" {
				t.Errorf("without a cgroup the lost tree must poison the sandbox: %+v", res)
			}
		default:
			t.Errorf("%+v", res)
		}
		if res.Containment == "cgroup" {
			if left := testenv.ProcessesWith(marker); len(left) > 0 {
				t.Errorf("processes outlived their killed init: %v", left)
			}
		}
	})
}

// TestRunsOfAWorkspace: runs of one process in a workspace share it and
// may overlap (background handles need that), while a run of another
// process waits for all of them; a protected file planted while another
// run goes on is put back, the run started meanwhile does not take the
// plant for the original, and both runs report it.
func TestRunsOfAWorkspace(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	done := make(chan *Result)
	go func() {
		l, _ := shell.Parse("sh -c 'echo a > order; echo ../evil > .git/commondir; sleep 1; echo a2 >> order'")
		res, _ := Run(context.Background(), l, Profile{Workspace: ws}, nil, nil)
		done <- res
	}()
	time.Sleep(400 * time.Millisecond)
	res := runLine(t, ws, "sh -c 'echo b >> order'", Profile{})
	first := <-done
	// Side by side, the runs cannot tell whose change it was: both fail,
	// and say so.
	for _, r := range []*Result{res, first} {
		if r == nil || r.Status != Failed || !strings.Contains(r.Reason, ".git/commondir") {
			t.Fatalf("second %+v\nfirst %+v", res, first)
		}
	}
	if !strings.Contains(res.Reason, "may be theirs") {
		t.Fatalf("%s", res.Reason)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "order")); string(data) != "a\nb\na2\n" {
		t.Fatalf("the runs of one process did not overlap: %q", data)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "commondir")); err == nil {
		t.Fatal("the planted .git/commondir is still there")
	}
	// Another process's run joins the session and runs beside it: it
	// waits for no command of this one.
	os.Remove(filepath.Join(ws, "order"))
	go func() {
		l, _ := shell.Parse("sh -c 'echo a > order; sleep 1; echo a2 >> order'")
		res, _ := Run(context.Background(), l, Profile{Workspace: ws}, nil, nil)
		done <- res
	}()
	time.Sleep(400 * time.Millisecond)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "REIN_TEST_SANDBOX_WS="+ws, "REIN_TEST_SANDBOX_RUNG=bwrap", "REIN_TEST_SANDBOX_LINE=sh -c 'echo b >> order'")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	<-done
	if data, _ := os.ReadFile(filepath.Join(ws, "order")); string(data) != "a\nb\na2\n" {
		t.Fatalf("a run of another process waited: %q", data)
	}
}

// TestGitRedirectsPutBack: a planted commondir, alternates or a new .git
// would make the host's git obey the command; they are put back.
func TestGitRedirectsPutBack(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		if err := os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runLine(t, ws, "sh -c 'mkdir -p evil .git/objects/info && echo ../evil > .git/commondir && echo /tmp > .git/objects/info/alternates'", Profile{Rung: rung})
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
		res = runLine(t, plain, "sh -c 'mkdir -p .git/hooks && echo x > .git/config'", Profile{Rung: rung})
		if res.Status != Failed {
			t.Fatalf("%+v", res)
		}
		if _, err := os.Stat(filepath.Join(plain, ".git")); err == nil {
			t.Fatal("a planted .git was left")
		}
	})
}

// TestHandle: a started run can be killed, with its whole tree.
func TestHandle(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		marker := fmt.Sprintf("rein-handle-%d-%s", os.Getpid(), rung)
		l, _ := shell.Parse(`sh -c 'setsid sh -c "sleep 1000; : ` + marker + `" & sleep 1000'`)
		h, err := Start(context.Background(), l, Profile{Workspace: ws, Rung: rung}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.Rung() != rung {
			t.Fatalf("rung %s", h.Rung())
		}
		for deadline := time.Now().Add(5 * time.Second); len(testenv.ProcessesWith(marker)) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the daemon never started")
			}
		}
		h.Kill()
		res := h.Wait()
		if res.Status != Cancelled || res.ExitCode != 130 {
			t.Fatalf("%+v", res)
		}
		if left := testenv.ProcessesWith(marker); len(left) > 0 {
			t.Fatalf("killed handle left %v", left)
		}
	})
}

// TestAutoAndPreflight: auto takes the strongest rung whose preflight
// passed, and the preflight is cached.
func TestAutoAndPreflight(t *testing.T) {
	requireRung(t, RungBwrap)
	t.Setenv("REIN_CACHE_DIR", t.TempDir())
	ws := workspaceDir(t)
	first := Preflight(context.Background(), RungLandlock, ws, false)
	again := Preflight(context.Background(), RungLandlock, ws, false)
	if !first.OK || !again.At.Equal(first.At) {
		t.Fatalf("%+v then %+v", first, again)
	}
	preflightMem.Clear()
	fromDisk := Preflight(context.Background(), RungLandlock, ws, false)
	if !fromDisk.At.Equal(first.At) {
		t.Fatalf("not read from disk: %+v", fromDisk)
	}
	if fresh := Preflight(context.Background(), RungLandlock, ws, true); !fresh.OK || fresh.At.Equal(first.At) {
		t.Fatalf("fresh: %+v", fresh)
	}
	res := runLine(t, ws, "true", Profile{})
	if res.Rung != RungBwrap || res.Status != OK {
		t.Fatalf("%+v", res)
	}
	// A remembered terminal failure sends auto to the next rung.
	key := preflightKey(string(RungBwrap), ws)
	preflightMem.Store(key, PreflightResult{Rung: RungBwrap, Terminal: true, Problem: "user namespaces are refused (refused)", Key: key})
	defer preflightMem.Delete(key)
	res = runLine(t, ws, "true", Profile{})
	if res.Rung != RungLandlock || res.Status != OK || !strings.Contains(res.RungNote, "refused") {
		t.Fatalf("%+v", res)
	}
}

// TestNoneRung: unconfined, by name only, but the tree still dies.
func TestNoneRung(t *testing.T) {
	ws := workspaceDir(t)
	outside := filepath.Join(filepath.Dir(ws), "outside-none")
	res := runLine(t, ws, "sh -c 'echo x > "+outside+"'", Profile{Rung: RungNone})
	if res.Status != OK || res.Rung != RungNone {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatal("the none rung confined the write")
	}
	marker := fmt.Sprintf("rein-none-%d", os.Getpid())
	res = runLine(t, ws, `sh -c 'setsid sh -c "sleep 1000; : `+marker+`" > /dev/null 2>&1 &'`, Profile{Rung: RungNone})
	if res.Status != OK {
		t.Fatalf("%+v", res)
	}
	if left := testenv.ProcessesWith(marker); len(left) > 0 {
		t.Fatalf("processes outlived their line: %v", left)
	}
}

// TestSessionPinsProtected: a command of one run that makes a protected
// path appear (a submodule's hooks and config) and swaps it for a link
// cannot make the next run's view follow the link out of the workspace:
// the next run binds the new path by descriptor, opened without following
// a link, and is refused, naming it.
func TestSessionPinsProtected(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	os.Mkdir(outside, 0o755)
	target := filepath.Join(outside, "pwned")
	done := make(chan *Result)
	go func() {
		l, _ := shell.Parse("sh -c 'mkdir -p .git/modules/x/hooks && ln -s " + target + " .git/modules/x/config && sleep 1.5'")
		res, _ := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
		done <- res
	}()
	time.Sleep(500 * time.Millisecond)
	l, _ := shell.Parse("true")
	res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: RungBwrap}, nil, nil)
	<-done
	if _, err := os.Lstat(target); err == nil {
		t.Fatalf("the next run's view followed a planted link out of the workspace: %s exists", target)
	}
	if err == nil || !strings.Contains(err.Error(), `".git/modules/x/config": is or passes through a symbolic link`) {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestTildeIsHome: ~ in a line is the sandbox's HOME on every rung: the
// directory HOME names, there for the command to use, in words, redirects
// and cds alike.
func TestTildeIsHome(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		res := runLine(t, ws, `touch ~/made && echo hi > ~/out && ls ~ && cat ~/out && cd ~ && sh -c 'test "$(pwd)" = "$HOME" && test -f "$HOME/made" && echo same'`, Profile{Rung: rung})
		if res.Status != OK || res.Stdout.Text != "made\nout\nhi\nsame\n" {
			t.Fatalf("%s: %+v", rung, res)
		}
		// A .. after ~ climbs from the sandbox's HOME as the policy read
		// it: ~/../../../WS/f is WS/f, not a path beside the private HOME.
		up := strings.Repeat("../", strings.Count(bwrap.SandboxHome, "/"))
		res = runLine(t, ws, "touch ~/"+up+strings.TrimPrefix(ws, "/")+"/climbed", Profile{Rung: rung})
		if _, err := os.Stat(filepath.Join(ws, "climbed")); res.Status != OK || err != nil {
			t.Fatalf("%s: ~/..: %+v (%v)", rung, res, err)
		}
	})
}
