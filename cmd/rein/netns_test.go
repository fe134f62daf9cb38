//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/internal/testenv"
)

// The Claude Code tests run the CLI in a network namespace of its own
// holding only loopback, so that nothing it tries beyond the scripted API
// can leave the machine: the test binary, started in the namespace,
// brings loopback up, forwards the API's port there to the scripted
// server's unix socket, and runs the CLI.

const netnsEnv = "REIN_TEST_NETNS"

// serveUnix serves h on a unix socket too, for the namespace's forwarder.
func serveUnix(t testing.TB, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// inLoopbackNetns makes cmd run in a network namespace holding only
// loopback, with port forwarded to the unix socket sock; it fails the test
// where such a namespace cannot be made (it needs root).
func inLoopbackNetns(t testing.TB, cmd *exec.Cmd, port, sock string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "a network namespace for Claude Code needs root")
	}
	cmd.Args = append([]string{os.Args[0], "--"}, cmd.Args...)
	cmd.Path = os.Args[0]
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, netnsEnv+"="+port+","+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
}

// netnsMain is the test binary in the namespace: loopback up, the
// forwarder, then the command, whose status it exits with.
func netnsMain(spec string, argv []string) int {
	port, sock, _ := strings.Cut(spec, ",")
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "netns: loopback: %v\n", err)
		return 125
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netns: %v\n", err)
		return 125
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "netns: %v\n", err)
		return 127
	}
	return 0
}

// loopbackUp sets lo up, the namespace's one interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var req [unix.IFNAMSIZ + 24]byte
	copy(req[:], "lo")
	flags := (*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ]))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return e
	}
	*flags |= unix.IFF_UP
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return e
	}
	return nil
}

// TestLoopbackNetns: a command in the namespace reaches the forwarded
// port and nothing of the host's network (its other loopback ports).
func TestLoopbackNetns(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "scripted") })
	sock := serveUnix(t, h)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hostPort := fmt.Sprint(host.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/18123 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; exec 4<>/dev/tcp/127.0.0.1/"+hostPort+" && echo host-reached")
	inLoopbackNetns(t, cmd, "18123", sock)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "scripted") || strings.Contains(string(out), "host-reached") {
		t.Fatalf("in the namespace: %s", out)
	}
}
