package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary is also the confined program: with helperEnv set, TestMain
// runs one action instead of the tests, as os/exec's tests do.
const (
	helperEnv     = "REIN_CONFINE_HELPER" // the action to run
	specEnv       = "REIN_CONFINE_SPEC"   // the Spec, as JSON; unset means unconfined
	argEnv        = "REIN_CONFINE_ARG"    // the action's argument
	presetNNPEnv  = "REIN_CONFINE_NNP"    // set: no_new_privs on the calling thread before Apply
	requireEnv    = "REIN_REQUIRE_SANDBOX"
	resultPrefix  = "result: "
	applyFailure  = "apply: "
	addrNoRandom  = 0x0040000 // ADDR_NO_RANDOMIZE
	personaQuery  = 0xffffffff
	pipeReadyByte = 'x'
)

func TestMain(m *testing.M) {
	if action := os.Getenv(helperEnv); action != "" {
		runHelper(action)
		return
	}
	os.Exit(m.Run())
}

// runHelper applies the Spec from the environment, runs one action and
// prints its outcome on a line of its own: "ok", an errno name, or a value.
func runHelper(action string) {
	runtime.LockOSThread()
	f, ok := actions[action]
	if !ok {
		fmt.Printf("%sunknown action %q\n", resultPrefix, action)
		os.Exit(2)
	}
	if js, ok := os.LookupEnv(specEnv); ok {
		var s Spec
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			fmt.Printf("%s%v\n", applyFailure, err)
			os.Exit(2)
		}
		if os.Getenv(presetNNPEnv) != "" {
			// no_new_privs on this thread alone, as a program might set
			// it before calling Apply.
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				fmt.Printf("%s%v\n", applyFailure, err)
				os.Exit(2)
			}
		}
		if err := Apply(s); err != nil {
			fmt.Printf("%s%v\n", applyFailure, err)
			os.Exit(2)
		}
	}
	fmt.Printf("%s%s\n", resultPrefix, f(os.Getenv(argEnv)))
	os.Exit(0)
}

// outcome names an error by its errno, the way the tests assert it.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == 0 {
			return "ok"
		}
		return unix.ErrnoName(errno)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "exit " + strconv.Itoa(exit.ExitCode())
	}
	return "error " + err.Error()
}

func rawOutcome(_, _ uintptr, errno syscall.Errno) string { return outcome(errno) }

func socketOutcome(domain, typ uintptr) string { return socketProtoOutcome(domain, typ, 0) }

func socketProtoOutcome(domain, typ, proto uintptr) string {
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, domain, typ, proto)
	if errno == 0 {
		unix.Close(int(fd))
	}
	return outcome(errno)
}

// ioctlOnPipe issues request on a fresh pipe: without the filter the kernel
// answers ENOTTY, so EPERM can only come from seccomp.
func ioctlOnPipe(request uintptr) string {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return outcome(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	b := byte(pipeReadyByte)
	return rawOutcome(unix.Syscall(unix.SYS_IOCTL, uintptr(p[0]), request, uintptr(unsafe.Pointer(&b))))
}

func dialTCP(port string) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return outcome(err)
	}
	defer unix.Close(fd)
	n, _ := strconv.Atoi(port)
	return outcome(unix.Connect(fd, &unix.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}}))
}

func shell(script string) string {
	out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	if err != nil && len(out) > 0 {
		return outcome(err) + " " + strings.TrimSpace(string(out))
	}
	return outcome(err)
}

var actions = map[string]func(arg string) string{
	// The threads without no_new_privs, and how many threads there are.
	"threads-nnp": func(string) string {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return outcome(err)
		}
		var without []string
		for _, task := range tasks {
			data, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
			switch {
			case err != nil:
				without = append(without, task.Name()+" "+outcome(err))
			case !strings.Contains(string(data), "\nNoNewPrivs:\t1\n"):
				without = append(without, task.Name())
			}
		}
		return fmt.Sprintf("%d threads, without no_new_privs: %v", len(tasks), without)
	},
	"write": func(p string) string { return outcome(os.WriteFile(p, []byte("x"), 0o644)) },
	"read": func(p string) string {
		_, err := os.ReadFile(p)
		return outcome(err)
	},
	"truncate": func(p string) string { return outcome(unix.Truncate(p, 0)) },
	"remove":   func(p string) string { return outcome(unix.Unlink(p)) },
	"link": func(arg string) string {
		from, to, _ := strings.Cut(arg, "|")
		return outcome(unix.Link(from, to))
	},
	"rename": func(arg string) string {
		from, to, _ := strings.Cut(arg, "|")
		return outcome(unix.Rename(from, to))
	},
	"mknod-char": func(p string) string {
		return outcome(unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
	},
	"chmod":       func(p string) string { return outcome(unix.Chmod(p, 0o755)) },
	"chmod-setid": func(p string) string { return outcome(unix.Chmod(p, 0o4755)) },
	"create-setid": func(p string) string {
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
		if err == nil {
			unix.Close(fd)
		}
		return outcome(err)
	},
	"exec":  func(p string) string { return outcome(exec.Command(p).Run()) },
	"shell": shell,

	"ptrace": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0))
	},
	"process_vm_readv": func(string) string {
		return rawOutcome(unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(os.Getppid()), 0, 0, 0, 0, 0))
	},
	"unshare-user": func(string) string { return outcome(unix.Unshare(unix.CLONE_NEWUSER)) },
	"clone-user": func(string) string {
		pid, err := syscall.ForkExec("/bin/true", nil, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}})
		if err == nil {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
		return outcome(err)
	},
	"clone3": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0))
	},
	"setns": func(string) string { return outcome(unix.Setns(-1, 0)) },
	"mount": func(p string) string { return outcome(unix.Mount("none", p, "tmpfs", 0, "")) },
	"keyctl": func(string) string {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		return outcome(err)
	},
	"bpf": func(string) string { return rawOutcome(unix.RawSyscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, 0, 0)) },
	"io_uring_setup": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, 0, 0))
	},
	"perf_event_open": func(string) string {
		return rawOutcome(unix.RawSyscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0))
	},
	"userfaultfd": func(string) string { return rawOutcome(unix.RawSyscall(unix.SYS_USERFAULTFD, 0, 0, 0)) },
	"personality": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_PERSONALITY, addrNoRandom, 0, 0))
	},
	"personality-high": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_PERSONALITY, 1<<32|addrNoRandom, 0, 0))
	},
	"personality-query": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_PERSONALITY, personaQuery, 0, 0))
	},
	"open_by_handle_at": func(string) string {
		return rawOutcome(unix.RawSyscall(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0))
	},
	// The parent's limits and priority: calls on another process.
	"prlimit-other": func(string) string {
		var old unix.Rlimit
		return outcome(unix.Prlimit(os.Getppid(), unix.RLIMIT_NOFILE, nil, &old))
	},
	"prlimit-self": func(string) string {
		var old unix.Rlimit
		return outcome(unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &old))
	},
	"setpriority-other": func(string) string { return outcome(unix.Setpriority(unix.PRIO_PROCESS, os.Getppid(), 0)) },
	"setpriority-user":  func(string) string { return outcome(unix.Setpriority(unix.PRIO_USER, 0, 19)) },
	"setpriority-self":  func(string) string { return outcome(unix.Setpriority(unix.PRIO_PROCESS, 0, 1)) },
	"setaffinity-other": func(string) string {
		var set unix.CPUSet
		set.Set(0)
		return outcome(unix.SchedSetaffinity(os.Getppid(), &set))
	},
	"tiocsti":      func(string) string { return ioctlOnPipe(unix.TIOCSTI) },
	"tiocsti-high": func(string) string { return ioctlOnPipe(1<<32 | unix.TIOCSTI) },
	"tioclinux":    func(string) string { return ioctlOnPipe(unix.TIOCLINUX) },
	"fionread":     func(string) string { return ioctlOnPipe(unix.TIOCINQ) },

	"socket-inet-stream": func(string) string { return socketOutcome(unix.AF_INET, unix.SOCK_STREAM) },
	"socket-inet-dgram":  func(string) string { return socketOutcome(unix.AF_INET, unix.SOCK_DGRAM) },
	"socket-inet-raw":    func(string) string { return socketOutcome(unix.AF_INET, unix.SOCK_RAW) },
	"socket-inet-tcp": func(string) string {
		return socketProtoOutcome(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	},
	"socket-inet-sctp":       func(string) string { return socketProtoOutcome(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP) },
	"socket-inet6-dgram":     func(string) string { return socketOutcome(unix.AF_INET6, unix.SOCK_DGRAM) },
	"socket-inet-dgram-high": func(string) string { return socketOutcome(unix.AF_INET, 1<<32|unix.SOCK_DGRAM) },
	"socket-inet6":           func(string) string { return socketOutcome(unix.AF_INET6, unix.SOCK_STREAM) },
	"socket-inet-high":       func(string) string { return socketOutcome(1<<32|unix.AF_INET, unix.SOCK_STREAM) },
	"socket-packet":          func(string) string { return socketOutcome(unix.AF_PACKET, unix.SOCK_DGRAM) },
	"socket-vsock":           func(string) string { return socketOutcome(unix.AF_VSOCK, unix.SOCK_STREAM) },
	"socket-alg":             func(string) string { return socketOutcome(unix.AF_ALG, unix.SOCK_SEQPACKET) },
	"socket-unix":            func(string) string { return socketOutcome(unix.AF_UNIX, unix.SOCK_STREAM) },
	"socket-netlink":         func(string) string { return socketOutcome(unix.AF_NETLINK, unix.SOCK_RAW) },
	"socketpair-unix": func(string) string {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return outcome(err)
	},
	"shmget": func(string) string {
		id, _, errno := unix.RawSyscall(unix.SYS_SHMGET, unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if errno == 0 {
			unix.RawSyscall(unix.SYS_SHMCTL, id, unix.IPC_RMID, 0)
		}
		return outcome(errno)
	},
	"msgget": func(string) string {
		id, _, errno := unix.RawSyscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
		if errno == 0 {
			unix.RawSyscall(unix.SYS_MSGCTL, id, unix.IPC_RMID, 0)
		}
		return outcome(errno)
	},
	"connect": dialTCP,
	"bind": func(string) string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return outcome(err)
		}
		defer unix.Close(fd)
		return outcome(unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	},
	// TCP Fast Open: a connect made by sendto, which Landlock does not see.
	"fastopen": func(port string) string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return outcome(err)
		}
		defer unix.Close(fd)
		p, _ := strconv.Atoi(port)
		return outcome(unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}}))
	},
	// listen without bind: the kernel picks a port.
	"listen": func(string) string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return outcome(err)
		}
		defer unix.Close(fd)
		return outcome(unix.Listen(fd, 1))
	},
	"abstract": func(name string) string {
		c, err := net.Dial("unix", "@"+name)
		if err == nil {
			c.Close()
		}
		return outcome(err)
	},
	"dial-unix": func(p string) string {
		c, err := net.Dial("unix", p)
		if err == nil {
			c.Close()
		}
		return outcome(err)
	},
	"signal-parent": func(string) string { return outcome(unix.Kill(os.Getppid(), unix.SIGURG)) },

	"state": func(string) string {
		nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		mode, _ := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		unix.Capget(&hdr, &data[0])
		caps := data[0].Effective | data[0].Permitted | data[0].Inheritable | data[1].Effective | data[1].Permitted | data[1].Inheritable
		return fmt.Sprintf("no_new_privs=%d seccomp=%d caps=%#x", nnp, mode, caps)
	},
	"rlimits": func(string) string {
		var b strings.Builder
		for _, r := range []struct {
			name string
			res  int
		}{{"core", unix.RLIMIT_CORE}, {"cpu", unix.RLIMIT_CPU}, {"nofile", unix.RLIMIT_NOFILE}, {"fsize", unix.RLIMIT_FSIZE}} {
			var l unix.Rlimit
			unix.Getrlimit(r.res, &l)
			fmt.Fprintf(&b, "%s=%d/%d ", r.name, l.Cur, l.Max)
		}
		return strings.TrimSpace(b.String())
	},
	"write-big": func(p string) string {
		return outcome(os.WriteFile(p, make([]byte, 8192), 0o644))
	},
	"open-many": func(p string) string {
		for range 64 {
			if _, err := os.Open(p); err != nil {
				return outcome(err)
			}
		}
		return "ok"
	},
}
