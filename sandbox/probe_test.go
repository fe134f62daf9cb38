//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/proxy"
	"golang.org/x/sys/unix"
)

// probeMain is the test binary run inside the sandbox as "probe ACTION
// ARG": it tries one thing and exits 0 when it worked, 1 when it was
// refused, printing what happened.
func probeMain(args []string) int {
	if len(args) == 0 {
		return 2
	}
	arg := ""
	if len(args) > 1 {
		arg = args[1]
	}
	err := probeAction(args[0], arg)
	if err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	fmt.Println("worked")
	return 0
}

func probeAction(action, arg string) error {
	switch action {
	case "prlimit":
		// A CPU limit of one second would kill the host process.
		pid, _ := strconv.Atoi(arg)
		return unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: 1, Max: 1}, nil)
	case "renice":
		pid, _ := strconv.Atoi(arg)
		return unix.Setpriority(unix.PRIO_PROCESS, pid, 19)
	case "alloc":
		// Touch every page, so that the memory is really used.
		n, _ := strconv.ParseInt(arg, 10, 64)
		b := make([]byte, n)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return nil
	case "spin":
		// Burn CPU until a limit ends the process.
		x := uint64(1)
		for x != 0 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		return nil
	case "fork":
		// Start up to n sleeping children; report how many started.
		n, _ := strconv.Atoi(arg)
		started := 0
		defer func() { fmt.Println("started", started) }()
		for range n {
			c := exec.Command("/bin/sleep", "60")
			if err := c.Start(); err != nil {
				return err
			}
			started++
		}
		return nil
	case "write":
		return os.WriteFile(arg, []byte("pwned"), 0o644)
	case "read":
		// An empty file is what a masked path reads as.
		data, err := os.ReadFile(arg)
		if err == nil && len(data) == 0 {
			return fmt.Errorf("%s reads empty", arg)
		}
		return err
	case "dial-tcp":
		c, err := net.DialTimeout("tcp", arg, time.Second)
		if err == nil {
			c.Write([]byte("pwned"))
			c.Close()
		}
		return err
	case "send-udp":
		c, err := net.Dial("udp", arg)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("pwned"))
		return err
	case "dial-tcp6":
		c, err := net.DialTimeout("tcp6", arg, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "resolve":
		// Go's own resolver: a query to the nameservers of resolv.conf.
		r := &net.Resolver{PreferGo: true}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := r.LookupHost(ctx, arg)
		return err
	case "fastopen":
		// A TCP connect made by sendto (TCP Fast Open).
		ap, err := netip.ParseAddrPort(arg)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("GET / HTTP/1.0\r\n\r\n"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
	case "listen":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Listen(fd, 1)
	case "raw":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "socks":
		// TCP through the SOCKS5 proxy that ALL_PROXY names.
		u, err := url.Parse(os.Getenv("ALL_PROXY"))
		if err != nil {
			return err
		}
		d, err := proxy.FromURL(u, proxy.Direct)
		if err != nil {
			return err
		}
		c, err := d.Dial("tcp", arg)
		if err != nil {
			return err
		}
		defer c.Close()
		c.Write([]byte("ping"))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			return fmt.Errorf("no echo: %q %v", buf, err)
		}
		fmt.Println("echoed")
		return nil
	case "proxy-env":
		want := "http://127.0.0.1:"
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			if !strings.HasPrefix(os.Getenv(k), want) {
				return fmt.Errorf("%s is %q", k, os.Getenv(k))
			}
		}
		for _, k := range []string{"ALL_PROXY", "all_proxy"} {
			if !strings.HasPrefix(os.Getenv(k), "socks5h://127.0.0.1:") {
				return fmt.Errorf("%s is %q", k, os.Getenv(k))
			}
		}
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			if v, ok := os.LookupEnv(k); !ok || v != "" {
				return fmt.Errorf("%s is %q (set %v)", k, v, ok)
			}
		}
		return nil
	case "dial-unix":
		c, err := net.DialTimeout("unix", arg, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "signal":
		pid, _ := strconv.Atoi(arg)
		return syscall.Kill(pid, syscall.SIGTERM)
	case "environ":
		_, err := os.ReadFile("/proc/" + arg + "/environ")
		return err
	case "msgget":
		key, _ := strconv.Atoi(arg)
		_, _, e := unix.RawSyscall(unix.SYS_MSGGET, uintptr(key), 0, 0)
		if e != 0 {
			return e
		}
		return nil
	case "tiocsti":
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		fd := 0
		if err == nil {
			defer f.Close()
			fd = int(f.Fd())
		}
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return e
		}
		return nil
	case "fds":
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return err
		}
		var extra []string
		for _, e := range entries {
			n, _ := strconv.Atoi(e.Name())
			if n > 2 {
				if t, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && !strings.HasPrefix(t, "/proc/") {
					extra = append(extra, e.Name()+"->"+t)
				}
			}
		}
		if len(extra) > 0 {
			return nil // an inherited descriptor: the escape worked
		}
		return fmt.Errorf("only 0, 1 and 2")
	case "env":
		for _, e := range os.Environ() {
			if strings.Contains(e, "hunter2") {
				return nil
			}
		}
		return fmt.Errorf("no secret")
	case "setuid":
		f, err := os.Create(arg)
		if err != nil {
			return err
		}
		f.Close()
		return unix.Chmod(arg, 0o4755)
	case "mknod":
		return unix.Mknod(arg, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	case "unshare":
		return unix.Unshare(unix.CLONE_NEWUSER)
	case "chroot":
		return unix.Chroot("/")
	case "kill-init":
		// Up the tree to the sandbox's init, then every way to kill it.
		pid := os.Getppid()
		for pid > 1 {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(cmdline), "--rein-sandbox-init") {
				break
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return err
			}
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			pid, _ = strconv.Atoi(f[1])
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			return nil
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, t := range tasks {
			tid, _ := strconv.Atoi(t.Name())
			if unix.Tgkill(pid, tid, unix.SIGKILL) == nil {
				return nil
			}
		}
		return fmt.Errorf("init %d could not be killed", pid)
	case "hostname":
		return unix.Sethostname([]byte("pwned"))
	}
	return fmt.Errorf("unknown probe %q", action)
}
