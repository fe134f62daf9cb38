//go:build linux

package bwrap

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// The test binary doubles as the sandbox's init: a View with InitPath set to
// it runs it at SandboxInit, and TestMain then runs the probe its arguments
// name instead of the tests.
func TestMain(m *testing.M) {
	if os.Args[0] == SandboxInit {
		os.Exit(probe(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func probe(args []string) int {
	switch args[0] {
	case "argv":
		for _, a := range os.Args {
			fmt.Printf("%q\n", a)
		}
	case "connect":
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			fmt.Println("refused")
			return 0
		}
		c.Close()
		fmt.Println("connected")
	default:
		fmt.Fprintf(os.Stderr, "unknown probe %q\n", args[0])
		return 2
	}
	return 0
}

var sandboxOnce struct {
	sync.Once
	path string
	err  error
	what string
}

// bwrapPath returns the bubblewrap binary after proving, with a real run,
// that it can create a user namespace here. Without one the test fails
// when REIN_REQUIRE_SANDBOX=1 and is skipped otherwise.
func bwrapPath(t testing.TB) string {
	t.Helper()
	s := &sandboxOnce
	s.Do(func() {
		s.path, s.err = Find()
		s.what = "bubblewrap"
		if s.err != nil {
			return
		}
		s.what = "user namespaces (bwrap --unshare-user)"
		out, err := exec.Command(s.path, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true").CombinedOutput()
		if err != nil {
			s.err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
		}
	})
	if s.err != nil {
		testenv.Missing(t, "REIN_REQUIRE_SANDBOX=1 and %s is unavailable: %v", s.what, s.err)
	}
	return s.path
}

// sandboxFixture is a workspace as rein hands it to the sandbox.
type sandboxFixture struct {
	view View
	ws   string // the workspace; its name needs quoting in any shell
	home string // the sandbox's private home, on the host
}

var testEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + SandboxHome, "TMPDIR=/tmp", "LANG=C.UTF-8"}

func newSandbox(t testing.TB) sandboxFixture {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "work space\nnewline")
	home := filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".rein"), home} {
		mustMkdir(t, d)
	}
	mustWrite(t, filepath.Join(ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n", 0o755)
	mustWrite(t, filepath.Join(ws, ".git", "config"), "[core]\n", 0o644)
	mustWrite(t, filepath.Join(ws, ".rein", "policy.toml"), "rule\n", 0o644)
	mustWrite(t, filepath.Join(ws, ".env"), "TOKEN=s3cret\n", 0o600)
	private, err := PrivateFiles("/etc")
	if err != nil {
		t.Fatal(err)
	}
	return sandboxFixture{
		ws:   ws,
		home: home,
		view: View{
			Workspace:    ws,
			Protected:    []string{".git/hooks", ".git/config", ".rein"},
			Masked:       []string{".env"},
			Home:         home,
			SystemDirs:   DefaultSystemDirs,
			SystemMasked: private,
			Network:      NetworkOff,
			Env:          slices.Clone(testEnv),
			Hostname:     "rein-test",
		},
	}
}

// sh runs script under /bin/sh in the view and returns its standard output;
// standard error goes to the test log.
func sh(t *testing.T, bwrap string, v View, script string) string {
	t.Helper()
	return run(t, bwrap, v, []string{"/bin/sh", "-c", script})
}

func run(t *testing.T, bwrap string, v View, argv []string) string {
	t.Helper()
	cmd, err := Command(bwrap, v, argv)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	CloseFiles(cmd)
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	err = cmd.Wait()
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("sandbox: %v\nstdout: %s", err, stdout.Bytes())
	}
	return stdout.String()
}

// attempts is a shell function printing "<label>: refused" or
// "<label>: DONE" for each command it runs.
const attempts = `try() { label=$1; shift; if "$@" 2>/dev/null; then echo "$label: DONE"; else echo "$label: refused"; fi; }
`

func TestWorkspace(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	got := sh(t, bwrap, f.view, `pwd; echo made > new && cat new`)
	if want := f.ws + "\nmade\n"; got != want {
		t.Errorf("read-write workspace printed %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "new")); err != nil || string(b) != "made\n" {
		t.Errorf("the file written inside is %q, %v on the host", b, err)
	}

	f.view.ReadOnlyWorkspace = true
	got = sh(t, bwrap, f.view, attempts+`try write sh -c 'echo x > new2'; try delete rm new; try mkdir mkdir d`)
	if want := "write: refused\ndelete: refused\nmkdir: refused\n"; got != want {
		t.Errorf("read-only workspace:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "new")); err != nil {
		t.Errorf("read-only run deleted a file: %v", err)
	}
}

func TestProtected(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	before := snapshot(t, f.ws)
	got := sh(t, bwrap, f.view, attempts+`
try hook-write sh -c 'echo evil > .git/hooks/pre-commit'
try hook-add sh -c 'echo evil > .git/hooks/post-checkout'
try hook-chmod chmod 777 .git/hooks/pre-commit
try hooks-rename mv .git/hooks .git/hooks.old
try hooks-remove rm -rf .git/hooks
try config-write sh -c 'echo "[core] hooksPath = /tmp" >> .git/config'
try config-replace mv .git/config .git/config.old
try config-remove rm -f .git/config
try git-rename mv .git .git.old
try git-remove rmdir .git
try rein-write sh -c 'echo x > .rein/policy.toml'
try rein-rename mv .rein .rein.old
try ws-rename mv "$PWD" "$PWD.old"
`)
	want := `hook-write: refused
hook-add: refused
hook-chmod: refused
hooks-rename: refused
hooks-remove: refused
config-write: refused
config-replace: refused
config-remove: refused
git-rename: refused
git-remove: refused
rein-write: refused
rein-rename: refused
ws-rename: refused
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if after := snapshot(t, f.ws); !slices.Equal(after, before) {
		t.Errorf("the host's workspace changed:\nbefore %q\nafter  %q", before, after)
	}
}

func TestProtectedWorktree(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	main := filepath.Join(filepath.Dir(f.ws), "main.git")
	mustMkdir(t, filepath.Join(main, "worktrees", "w", "hooks"))
	testenv.Must(t, os.RemoveAll(filepath.Join(f.ws, ".git")))
	dotgit := "gitdir: " + filepath.Join(main, "worktrees", "w") + "\n"
	mustWrite(t, filepath.Join(f.ws, ".git"), dotgit, 0o644)
	got := sh(t, bwrap, f.view, attempts+`
try redirect sh -c 'echo "gitdir: .evil" > .git'
try replace sh -c 'rm -f .git && echo "gitdir: .evil" > .git'
try gitdir-visible test -e "$MAIN"
`)
	got = strings.ReplaceAll(got, main, "MAIN")
	if want := "redirect: refused\nreplace: refused\ngitdir-visible: refused\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, ".git")); string(b) != dotgit {
		t.Errorf(".git is now %q", b)
	}
}

func TestMasked(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	got := sh(t, bwrap, f.view, attempts+`printf 'size %s\n' "$(wc -c < .env)"
try write sh -c 'echo x > .env'
try remove rm -f .env
try shadow-has-content test -s /etc/shadow
`)
	if want := "size 0\nwrite: refused\nremove: refused\nshadow-has-content: refused\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, ".env")); string(b) != "TOKEN=s3cret\n" {
		t.Errorf(".env on the host is now %q", b)
	}
}

func TestHomeAndHostPaths(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	realHome := filepath.Join(t.TempDir(), "real home")
	mustMkdir(t, filepath.Join(realHome, ".ssh"))
	mustWrite(t, filepath.Join(realHome, ".ssh", "id_ed25519"), "key", 0o600)
	t.Setenv("HOME", realHome)
	got := sh(t, bwrap, f.view, attempts+`echo "HOME=$HOME"; echo mine > "$HOME/file"
for p in '`+realHome+`' /root /home /var /var/run/docker.sock /run/user /run/dbus /var/run; do try "$p" test -e "$p"; done
ls /
`)
	got = strings.ReplaceAll(got, realHome, "REAL")
	want := "HOME=/run/rein/home\nREAL: refused\n/root: refused\n/home: refused\n/var: refused\n/var/run/docker.sock: refused\n/run/user: refused\n/run/dbus: refused\n/var/run: refused\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	top := strings.Fields(strings.TrimPrefix(got, want))
	for _, d := range top {
		if !slices.Contains([]string{"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin", "tmp", "usr"}, d) {
			t.Errorf("/%s is in the sandbox's root", d)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.home, "file")); string(b) != "mine\n" {
		t.Errorf("the private home on the host holds %q", b)
	}
}

func TestTmpIsPrivate(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	f.view.Tmp = 4 << 20
	name := "rein-bwrap-probe-" + strconv.FormatUint(rand.Uint64(), 36)
	got := sh(t, bwrap, f.view, attempts+`echo x > /tmp/`+name+` && echo wrote
try overfill dd if=/dev/zero of=/tmp/big bs=1M count=8
`)
	if want := "wrote\noverfill: refused\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join("/tmp", name)); err == nil {
		t.Errorf("/tmp/%s written inside appeared on the host", name)
	}
}

func TestNetworkOff(t *testing.T) {
	bwrap := bwrapPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode Network
		want string
	}{
		{NetworkOff, "refused\n"},
		{NetworkFull, "connected\n"},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			f := newSandbox(t)
			f.view.Network = tt.mode
			f.view.InitPath = self
			if got := run(t, bwrap, f.view, []string{"connect", ln.Addr().String()}); got != tt.want {
				t.Errorf("connecting to the host's %s: %q, want %q", ln.Addr(), got, tt.want)
			}
			if tt.mode != NetworkOff {
				return
			}
			f.view.InitPath = ""
			got := sh(t, bwrap, f.view, `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`)
			if got != "lo\n" {
				t.Errorf("interfaces in the sandbox: %q, want only lo", got)
			}
		})
	}
}

func TestInitArgv(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.view.InitPath = self
	got := run(t, bwrap, f.view, []string{"argv", "a b", "c\nd", "", "--"})
	if want := "\"/run/rein/init\"\n\"argv\"\n\"a b\"\n\"c\\nd\"\n\"\"\n\"--\"\n"; got != want {
		t.Errorf("the init received\n%s\nwant\n%s", got, want)
	}
}

func TestPidNamespace(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	host := os.Getpid()
	got := sh(t, bwrap, f.view, attempts+`echo "pid $$"
try kill-host kill -0 `+strconv.Itoa(host)+`
try see-host test -e /proc/`+strconv.Itoa(host)+`
ls /proc | grep -c '^[0-9]'
`)
	// The shell (pid 1), and ls and grep or the subshell running them.
	if !strings.HasPrefix(got, "pid 1\nkill-host: refused\nsee-host: refused\n") {
		t.Fatalf("got\n%s", got)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(got[strings.LastIndex(strings.TrimSpace(got), "\n")+1:])); n < 1 || n > 4 {
		t.Errorf("/proc lists %d processes; want only the sandbox's few", n)
	}
}

func TestEnvironment(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	t.Setenv("SECRET_TOKEN", "hunter2")
	out := sh(t, bwrap, f.view, `for p in /proc/[0-9]*; do cat $p/environ; done`)
	got := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	slices.Sort(got)
	got = slices.Compact(got)
	// bubblewrap adds PWD for the directory it changed to.
	want := append(slices.Clone(testEnv), "PWD="+f.ws)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("environments in the sandbox:\n%q\nwant\n%q", got, want)
	}
}

func TestDescriptors(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	// A descriptor without close-on-exec, numbered above those ExtraFiles
	// will occupy in the child.
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	const fd = 200
	if err := syscall.Dup3(int(devnull.Fd()), fd, 0); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// ls runs as the shell's child, so its own descriptors are not listed;
	// no pipe either, whose ends the shell would hold for a moment.
	const list = `ls /proc/$$/fd`

	// The descriptor leaks through os/exec and bubblewrap unless Command
	// marks it close-on-exec.
	args, err := Args(View{Workspace: f.ws, Network: NetworkOff, SystemDirs: DefaultSystemDirs}, []string{"/bin/sh", "-c", list})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bwrap, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(fd); !slices.Contains(strings.Fields(string(out)), want) {
		t.Fatalf("without Command, descriptors %q; want the leaked %s among them, or the check below proves nothing", out, want)
	}

	if got := strings.Join(strings.Fields(sh(t, bwrap, f.view, list)), " "); got != "0 1 2" {
		t.Errorf("descriptors in the sandbox: %q, want 0 1 2", got)
	}
}

func TestKernelInterfaces(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	got := sh(t, bwrap, f.view, attempts+`hostname
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status | tr -d '\t'
try sysctl-vm sh -c 'cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness'
try sysctl-hostname sh -c 'echo other > /proc/sys/kernel/hostname'
try sethostname hostname other
try userns unshare --user true
try mount mount -t tmpfs none /tmp
`)
	want := `rein-test
CapInh:0000000000000000
CapPrm:0000000000000000
CapEff:0000000000000000
CapBnd:0000000000000000
CapAmb:0000000000000000
NoNewPrivs:1
sysctl-vm: refused
sysctl-hostname: refused
sethostname: refused
userns: refused
mount: refused
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if now, _ := os.Hostname(); now != hostname {
		t.Errorf("the host's name changed from %q to %q", hostname, now)
	}
}

func TestSetuidCannotElevate(t *testing.T) {
	bwrap := bwrapPath(t)
	f := newSandbox(t)
	// Every mount in the view is nosuid, and no_new_privs is set: a setuid
	// binary (shipped in the workspace or on the host) runs with the
	// caller's credentials and no capabilities.
	got := sh(t, bwrap, f.view, `cp /bin/cat ./suid-cat && chmod 4755 ./suid-cat && ./suid-cat /proc/self/status | grep -E '^(Uid|CapEff)' | tr -d '\t'
awk '$5 != "/proc" && $5 !~ "^/proc/" && $5 != "/dev/pts" && $6 !~ /nosuid/ { print "suid allowed on " $5 }' /proc/self/mountinfo`)
	if want := "Uid:0000\nCapEff:0000000000000000\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTreeDies(t *testing.T) {
	bwrap := bwrapPath(t)
	for _, how := range []string{"command exits", "bwrap killed"} {
		t.Run(how, func(t *testing.T) {
			f := newSandbox(t)
			token := fmt.Sprintf("3600.%d", rand.Uint32())
			// The shell waits for a line on stdin, so that the test sees the
			// daemon running before the shell exits or bwrap is killed.
			script := `setsid sh -c 'sleep ` + token + ` & sleep ` + token + `' </dev/null >/dev/null 2>&1 & echo started; read line`
			cmd, err := Command(bwrap, f.view, []string{"/bin/sh", "-c", script})
			if err != nil {
				t.Fatal(err)
			}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			CloseFiles(cmd)
			buf := make([]byte, 8)
			if n, _ := stdout.Read(buf); string(buf[:n]) != "started\n" {
				t.Fatalf("the sandbox printed %q", buf[:n])
			}
			// The shell, the daemon's shell and its two sleeps.
			waitFor(t, func() bool { return len(hostPids(token)) >= 3 }, "the daemonised sleeps to start")
			if how == "bwrap killed" {
				cmd.Process.Kill()
			} else {
				stdin.Close()
			}
			cmd.Wait()
			waitFor(t, func() bool { return len(hostPids(token)) == 0 }, "every process of the sandbox to die")
		})
	}
}

// hostPids lists the host processes whose command line contains token.
func hostPids(token string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(token)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// snapshot lists every path under dir with its mode, size and content
// digest, as the host sees it.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
