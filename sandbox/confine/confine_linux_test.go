package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// hostDirs are the system directories every test Spec grants read-only, so
// that /bin/true and /bin/sh can run.
var hostDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// world is the filesystem and sockets one test case runs against.
type world struct {
	rw, ro, outside string // granted read-write, granted read-only, not granted
	tcpPort         int    // a listener of the parent on 127.0.0.1
	abstract        string // an abstract unix socket of the parent, without "@"
	unixPath        string // a pathname unix socket of the parent, outside
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{rw: t.TempDir(), ro: t.TempDir(), outside: t.TempDir()}
	for _, dir := range []string{w.rw, w.ro, w.outside} {
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	w.tcpPort = ln.Addr().(*net.TCPAddr).Port
	w.abstract = fmt.Sprintf("rein-confine-test-%d-%d", os.Getpid(), abstractSeq.Add(1))
	ul, err := net.Listen("unix", "@"+w.abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	w.unixPath = filepath.Join(w.outside, "sock")
	pl, err := net.Listen("unix", w.unixPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	return w
}

// spec is what most cases run under: the host's system directories and ro
// read-only, rw and /dev/null read-write, no network, both scopes.
func (w *world) spec() Spec {
	s := Spec{
		ReadOnly:          []string{w.ro},
		ReadWrite:         []string{w.rw, "/dev/null"},
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
	}
	for _, d := range hostDirs {
		if _, err := os.Stat(d); err == nil {
			s.ReadOnly = append(s.ReadOnly, d)
		}
	}
	return s
}

var abstractSeq atomic.Int64

var (
	supportOnce sync.Once
	support     Support
)

// requireSandbox skips the test when this host cannot confine, or fails it
// when REIN_REQUIRE_SANDBOX=1 says the host must.
func requireSandbox(t *testing.T, abi int) {
	t.Helper()
	supportOnce.Do(func() { support = Probe() })
	var missing string
	switch {
	case support.LandlockABI < abi:
		missing = fmt.Sprintf("Landlock ABI %d (kernel has %d)", abi, support.LandlockABI)
	case !support.Seccomp:
		missing = "seccomp filters"
	}
	if missing == "" {
		return
	}
	if testenv.Required() {
		t.Fatalf("%s=1 but this host lacks %s", requireEnv, missing)
	}
	t.Skipf("this host lacks %s", missing)
}

// runHelperProcess runs action in a child of the test binary, confined by s
// unless s is nil, and returns what it printed after "result: ".
func runHelperProcess(t *testing.T, s *Spec, action, arg string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+action, argEnv+"="+arg)
	if s != nil {
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, specEnv+"="+string(js))
	}
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, resultPrefix); ok {
			return r
		}
	}
	t.Fatalf("helper %s printed no result (%v):\n%s", action, err, out)
	return ""
}

type confineCase struct {
	name   string
	action string
	arg    func(w *world) string
	spec   func(w *world, s *Spec) // changes to w.spec(); nil keeps it
	want   string
	// minABI, when set, is the Landlock ABI below which the kernel cannot
	// give want at all, whatever the Spec; the case is skipped there.
	minABI int
}

func path(elem ...string) func(w *world) string {
	return func(w *world) string {
		base := map[string]string{"rw": w.rw, "ro": w.ro, "outside": w.outside}[elem[0]]
		return filepath.Join(append([]string{base}, elem[1:]...)...)
	}
}

func text(s string) func(*world) string { return func(*world) string { return s } }

func withTCP(ports ...func(w *world) int) func(w *world, s *Spec) {
	return func(w *world, s *Spec) {
		for _, p := range ports {
			s.NetworkTCP = append(s.NetworkTCP, uint16(p(w)))
		}
	}
}

func listenerPort(w *world) int { return w.tcpPort }
func otherPort(w *world) int    { return w.tcpPort%60000 + 1024 }

var confineCases = []confineCase{
	// Filesystem (Landlock).
	{name: "write inside ReadWrite", action: "write", arg: path("rw", "new"), want: "ok"},
	{name: "read inside ReadWrite", action: "read", arg: path("rw", "file"), want: "ok"},
	{name: "read inside ReadOnly", action: "read", arg: path("ro", "file"), want: "ok"},
	{name: "write outside", action: "write", arg: path("outside", "new"), want: "EACCES"},
	{name: "overwrite outside", action: "write", arg: path("outside", "file"), want: "EACCES"},
	{name: "read outside", action: "read", arg: path("outside", "file"), want: "EACCES"},
	{name: "write inside ReadOnly", action: "write", arg: path("ro", "file"), want: "EACCES"},
	{name: "truncate inside ReadOnly", action: "truncate", arg: path("ro", "file"), want: "EACCES"},
	{name: "remove outside", action: "remove", arg: path("outside", "file"), want: "EACCES"},
	{name: "hard link from outside", action: "link", arg: func(w *world) string { return path("outside", "file")(w) + "|" + path("rw", "link")(w) }, want: "EXDEV"},
	{name: "rename to outside", action: "rename", arg: func(w *world) string { return path("rw", "file")(w) + "|" + path("outside", "moved")(w) }, want: "EACCES"},
	{name: "device node inside ReadWrite", action: "mknod-char", arg: path("rw", "null"), want: "EACCES"},
	{name: "write through a symlink to outside", action: "write", arg: path("rw", "escape", "new"), want: "EACCES"},
	{name: "read a path not granted", action: "read", arg: text("/proc/self/environ"), want: "EACCES"},
	{name: "exec from a read-only system dir", action: "exec", arg: text("/bin/true"), want: "ok"},
	{name: "exec'd shell cannot write outside", action: "shell", arg: func(w *world) string {
		return "{ echo x > " + path("outside", "fromsh")(w) + "; } 2>/dev/null || exit 7"
	}, want: "exit 7"},
	{name: "exec'd shell cannot read outside", action: "shell", arg: func(w *world) string { return "cat " + path("outside", "file")(w) + " 2>/dev/null || exit 7" }, want: "exit 7"},
	{name: "exec'd shell can write inside", action: "shell", arg: func(w *world) string { return "echo x > " + path("rw", "fromsh")(w) }, want: "ok"},

	// Setuid and setgid files (seccomp).
	{name: "chmod inside ReadWrite", action: "chmod", arg: path("rw", "file"), want: "ok"},
	{name: "chmod setuid", action: "chmod-setid", arg: path("rw", "file"), want: "EPERM"},
	{name: "create setgid", action: "create-setid", arg: path("rw", "setgid"), want: "EPERM"},

	// The syscall table (seccomp).
	{name: "ptrace", action: "ptrace", want: "EPERM"},
	{name: "process_vm_readv", action: "process_vm_readv", want: "EPERM"},
	{name: "unshare user namespace", action: "unshare-user", want: "EPERM"},
	{name: "clone user namespace", action: "clone-user", want: "EPERM"},
	{name: "clone3", action: "clone3", want: "ENOSYS"},
	{name: "setns", action: "setns", want: "EPERM"},
	{name: "mount", action: "mount", arg: path("rw"), want: "EPERM"},
	{name: "keyctl", action: "keyctl", want: "EPERM"},
	{name: "bpf", action: "bpf", want: "EPERM"},
	{name: "io_uring_setup", action: "io_uring_setup", want: "EPERM"},
	{name: "perf_event_open", action: "perf_event_open", want: "EPERM"},
	{name: "userfaultfd", action: "userfaultfd", want: "EPERM"},
	{name: "personality ADDR_NO_RANDOMIZE", action: "personality", want: "EPERM"},
	{name: "personality with upper bits set", action: "personality-high", want: "EPERM"},
	{name: "personality query", action: "personality-query", want: "ok"},
	{name: "open_by_handle_at", action: "open_by_handle_at", want: "EPERM"},
	{name: "prlimit of another process", action: "prlimit-other", want: "EPERM"},
	{name: "prlimit of itself", action: "prlimit-self", want: "ok"},
	{name: "setpriority of another process", action: "setpriority-other", want: "EPERM"},
	{name: "setpriority of every process of the user", action: "setpriority-user", want: "EPERM"},
	{name: "setpriority of itself", action: "setpriority-self", want: "ok"},
	{name: "sched_setaffinity of another process", action: "setaffinity-other", want: "EPERM"},
	{name: "ioctl TIOCSTI", action: "tiocsti", want: "EPERM"},
	{name: "ioctl TIOCSTI with upper bits set", action: "tiocsti-high", want: "EPERM"},
	{name: "ioctl TIOCLINUX", action: "tioclinux", want: "EPERM"},
	{name: "ioctl FIONREAD", action: "fionread", want: "ok"},

	// Network off (seccomp and Landlock).
	{name: "socket inet stream", action: "socket-inet-stream", want: "EPERM"},
	{name: "socket inet dgram", action: "socket-inet-dgram", want: "EPERM"},
	{name: "socket inet raw", action: "socket-inet-raw", want: "EPERM"},
	{name: "socket inet6", action: "socket-inet6", want: "EPERM"},
	{name: "socket inet with upper bits set", action: "socket-inet-high", want: "EPERM"},
	{name: "socket packet", action: "socket-packet", want: "EPERM"},
	{name: "socket vsock (no network namespace isolates it)", action: "socket-vsock", want: "EPERM"},
	{name: "socket alg", action: "socket-alg", want: "EPERM"},
	{name: "socket unix", action: "socket-unix", want: "ok"},
	{name: "socket unix with NoUnixSockets", action: "socket-unix", spec: func(w *world, s *Spec) { s.NoUnixSockets = true }, want: "EPERM"},
	{name: "dial a pathname socket with NoUnixSockets", action: "dial-unix", arg: func(w *world) string { return w.unixPath },
		spec: func(w *world, s *Spec) { s.NoUnixSockets = true }, want: "EPERM"},
	{name: "socketpair with NoUnixSockets", action: "socketpair-unix", spec: func(w *world, s *Spec) { s.NoUnixSockets = true }, want: "ok"},
	{name: "netlink with NoUnixSockets", action: "socket-netlink", spec: func(w *world, s *Spec) { s.NoUnixSockets = true }, want: "ok"},

	// System V IPC (seccomp).
	{name: "shmget", action: "shmget", want: "ok"},
	{name: "shmget with NoSysVIPC", action: "shmget", spec: func(w *world, s *Spec) { s.NoSysVIPC = true }, want: "EPERM"},
	{name: "msgget with NoSysVIPC", action: "msgget", spec: func(w *world, s *Spec) { s.NoSysVIPC = true }, want: "EPERM"},

	// TCP ports (Landlock).
	{name: "connect to a port not granted", action: "connect", arg: func(w *world) string { return strconv.Itoa(w.tcpPort) }, spec: withTCP(otherPort), want: "EACCES"},
	{name: "connect to a granted port", action: "connect", arg: func(w *world) string { return strconv.Itoa(w.tcpPort) }, spec: withTCP(listenerPort), want: "ok"},
	{name: "bind with ports granted", action: "bind", spec: withTCP(listenerPort), want: "EACCES"},
	{name: "fast open to a port not granted", action: "fastopen", arg: func(w *world) string { return strconv.Itoa(w.tcpPort) }, spec: withTCP(otherPort), want: "EPERM"},
	{name: "fast open to a granted port", action: "fastopen", arg: func(w *world) string { return strconv.Itoa(w.tcpPort) }, spec: withTCP(listenerPort), want: "EPERM"},
	{name: "listen with ports granted", action: "listen", spec: withTCP(listenerPort), want: "ok"},
	{name: "listen with NoListen", action: "listen", spec: func(w *world, s *Spec) { withTCP(listenerPort)(w, s); s.NoListen = true }, want: "EPERM"},
	{name: "udp with ports granted", action: "socket-inet-dgram", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "udp6 with ports granted", action: "socket-inet6-dgram", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "udp in the upper half with ports granted", action: "socket-inet-dgram-high", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "raw inet with ports granted", action: "socket-inet-raw", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "sctp with ports granted", action: "socket-inet-sctp", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "tcp with flags with ports granted", action: "socket-inet-tcp", spec: withTCP(listenerPort), want: "ok"},
	{name: "tcp6 with ports granted", action: "socket-inet6", spec: withTCP(listenerPort), want: "ok"},
	{name: "unix with ports granted", action: "socket-unix", spec: withTCP(listenerPort), want: "ok"},
	{name: "packet socket with ports granted", action: "socket-packet", spec: withTCP(listenerPort), want: "EPERM"},
	{name: "vsock socket with ports granted", action: "socket-vsock", spec: withTCP(listenerPort), want: "EPERM"},

	// Scopes (Landlock ABI 6).
	{name: "connect to a pathname unix socket outside", action: "dial-unix", arg: func(w *world) string { return w.unixPath }, want: "EACCES", minABI: 9},
	{name: "signal the parent", action: "signal-parent", want: "EPERM"},
	{name: "connect to the parent's abstract socket", action: "abstract", arg: func(w *world) string { return w.abstract }, want: "EPERM"},

	// Process state.
	{name: "no_new_privs, seccomp and capabilities", action: "state", want: "no_new_privs=1 seccomp=2 caps=0x0"},
	{name: "no_new_privs and capabilities survive exec", action: "shell",
		arg:  text("grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status && grep -q '^CapPrm:[[:space:]]*0*$' /proc/self/status && grep -q '^Seccomp_filters:[[:space:]]*2$' /proc/self/status"),
		spec: func(w *world, s *Spec) { s.ReadOnly = append(s.ReadOnly, "/proc") }, want: "ok"},
	{name: "rlimits", action: "rlimits",
		spec: func(w *world, s *Spec) { s.Rlimits = Rlimits{CPUSeconds: 60, OpenFiles: 64, FileSize: 4096} },
		want: "core=0/0 cpu=60/61 nofile=64/64 fsize=4096/4096"},
	{name: "file size limit", action: "write-big", arg: path("rw", "big"),
		spec: func(w *world, s *Spec) { s.Rlimits.FileSize = 4096 }, want: "EFBIG"},
	{name: "open files limit", action: "open-many", arg: path("rw", "file"),
		spec: func(w *world, s *Spec) { s.Rlimits.OpenFiles = 16 }, want: "EMFILE"},
}

func TestApply(t *testing.T) {
	for _, c := range confineCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			s := w.spec()
			if c.spec != nil {
				c.spec(w, &s)
			}
			requireSandbox(t, s.RequiredABI())
			if support.LandlockABI < c.minABI {
				t.Skipf("Landlock ABI %d cannot enforce this (kernel has %d); the confinement does not stop it here", c.minABI, support.LandlockABI)
			}
			if err := os.Symlink(w.outside, filepath.Join(w.rw, "escape")); err != nil {
				t.Fatal(err)
			}
			arg := ""
			if c.arg != nil {
				arg = c.arg(w)
			}
			if got := runHelperProcess(t, &s, c.action, arg); got != c.want {
				t.Errorf("%s(%q) confined = %q, want %q", c.action, arg, got, c.want)
			}
			if _, err := os.Stat(filepath.Join(w.outside, "fromsh")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file appeared outside the confinement: %v", err)
			}
		})
	}
}

// TestUnconfinedBaseline runs some of the same actions without Apply, to
// show that the outcomes TestApply asserts come from the confinement and not
// from the kernel's usual answer to those arguments.
func TestUnconfinedBaseline(t *testing.T) {
	for _, c := range []struct{ action, want string }{
		{"tiocsti", "ENOTTY"},
		{"tiocsti-high", "ENOTTY"},
		{"prlimit-other", "ok"},
		{"setaffinity-other", "ok"},
		{"setns", "EBADF"},
		{"clone3", "EINVAL"},
		{"personality-query", "ok"},
		{"socket-unix", "ok"},
		{"state", "no_new_privs=0 seccomp=0"},
	} {
		t.Run(c.action, func(t *testing.T) {
			t.Parallel()
			got := runHelperProcess(t, nil, c.action, "")
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("%s unconfined = %q, want prefix %q", c.action, got, c.want)
			}
		})
	}
	t.Run("write outside", func(t *testing.T) {
		w := newWorld(t)
		if got := runHelperProcess(t, nil, "write", filepath.Join(w.outside, "new")); got != "ok" {
			t.Errorf("write unconfined = %q, want ok", got)
		}
	})
}

// TestApplyRefusesOldABI checks that Apply fails closed, before changing
// anything, when the kernel's Landlock ABI is below what the Spec needs.
func TestApplyRefusesOldABI(t *testing.T) {
	abi := Probe().LandlockABI
	if abi >= 6 {
		t.Skipf("kernel has Landlock ABI %d; the refusal needs a kernel below 6", abi)
	}
	err := Apply(Spec{ScopeSignals: true})
	var ce *Error
	var ae *ABIError
	if !errors.As(err, &ce) || ce.Mechanism != MechanismLandlock || !errors.As(err, &ae) || ae.Required != 6 || ae.Found != abi {
		t.Fatalf("Apply = %v, want a landlock *Error wrapping ABIError{6, %d}", err, abi)
	}
}

func TestApplyRejectsInvalidSpec(t *testing.T) {
	for _, s := range []Spec{
		{ReadOnly: []string{"usr"}},
		{ReadWrite: []string{"./project"}},
		{NetworkTCP: []uint16{0}},
	} {
		err := Apply(s)
		var ce *Error
		if !errors.As(err, &ce) || ce.Mechanism != MechanismSpec {
			t.Errorf("Apply(%+v) = %v, want a spec *Error", s, err)
		}
	}
}

func TestApplyMissingPath(t *testing.T) {
	requireSandbox(t, 4)
	missing := filepath.Join(t.TempDir(), "missing")
	got := runHelperProcessApplyError(t, Spec{ReadOnly: []string{missing}})
	if !strings.Contains(got, "confine: spec: cannot grant "+missing) {
		t.Errorf("Apply with a missing path = %q, want a spec error naming it", got)
	}
}

// runHelperProcessApplyError runs a helper whose Apply is expected to fail
// and returns the error it printed.
func runHelperProcessApplyError(t *testing.T, s Spec) string {
	t.Helper()
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=state", specEnv+"="+string(js))
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, applyFailure); ok {
			return r
		}
	}
	t.Fatalf("helper did not fail to apply:\n%s", out)
	return ""
}

func TestErrorSaysWhatToDo(t *testing.T) {
	err := &Error{Mechanism: MechanismLandlock, Err: &ABIError{Required: 6, Found: 4}}
	want := "confine: landlock: Landlock ABI 6 is required but this kernel has ABI 4; " + remedy[MechanismLandlock]
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	for _, m := range []string{MechanismSpec, MechanismNoNewPrivs, MechanismCapabilities, MechanismRlimit, MechanismLandlock, MechanismSeccomp, MechanismPlatform} {
		if remedy[m] == "" {
			t.Errorf("mechanism %s has no remedy", m)
		}
	}
}

// The broadcast that drops every thread's capabilities is skipped only
// when the status shows all five sets, each empty.
func TestNoCapabilities(t *testing.T) {
	empty := "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
	if !noCapabilities(empty) {
		t.Error("every set empty")
	}
	for _, bad := range []string{
		strings.Replace(empty, "CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff", 1),
		strings.Replace(empty, "CapEff:\t0000000000000000", "CapEff:\t0000000000000400", 1),
		strings.Replace(empty, "CapAmb:\t0000000000000000\n", "", 1),
		strings.Replace(empty, "CapPrm:\t0000000000000000", "CapPrm:\t", 1),
		"",
	} {
		if noCapabilities(bad) {
			t.Errorf("taken for empty: %q", bad)
		}
	}
}

// TestAttack2NoNewPrivsOnOneThread: a program that set no_new_privs on
// the calling thread alone before Apply (which then finds it already set
// and skips its per-thread check) still has it on every thread after: the
// seccomp filter's TSYNC gives it to each.
func TestAttack2NoNewPrivsOnOneThread(t *testing.T) {
	requireSandbox(t, Spec{ReadOnly: []string{"/"}}.RequiredABI())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	js, _ := json.Marshal(Spec{ReadOnly: []string{"/"}, LandlockThisThread: true})
	cmd.Env = append(os.Environ(), helperEnv+"=threads-nnp", specEnv+"="+string(js), presetNNPEnv+"=1")
	out, err := cmd.CombinedOutput()
	got := ""
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, resultPrefix); ok {
			got = r
		}
	}
	n, rest, _ := strings.Cut(got, " threads, ")
	if rest != "without no_new_privs: []" || n == "1" {
		t.Fatalf("after Apply on a thread that alone had no_new_privs: %q (%v)\n%s", got, err, out)
	}
}
