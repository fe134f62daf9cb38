//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/netproxy"
)

const (
	// sandboxNet is where the bwrap rung mounts the proxy's socket
	// directory.
	sandboxNet = "/rein/net"
	// maxEgressEvents bounds the connections a result lists.
	maxEgressEvents = 256
	// netReadyWait bounds how long the user-mode network may take to come
	// up.
	netReadyWait = 10 * time.Second
	// slirpDNS is the resolver slirp4netns serves in the namespace.
	slirpDNS = "10.0.2.3"
)

// egressResolver resolves the names the egress proxy allowed; nil is the
// host's resolver. Tests set it.
var egressResolver netproxy.Resolver

// egress is a run's proxy and what it recorded.
type egress struct {
	proxy  *netproxy.Proxy
	port   int // the port the command's proxy variables name
	policy netproxy.Policy

	mu      sync.Mutex
	events  []netproxy.Event
	dropped int
}

func (e *egress) Decide(ctx context.Context, r netproxy.Request) netproxy.Verdict {
	return e.policy.Decide(ctx, r)
}

func (e *egress) Record(ev netproxy.Event) {
	e.policy.Record(ev)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.events) < maxEgressEvents {
		e.events = append(e.events, ev)
	} else {
		e.dropped++
	}
}

// startEgress starts the run's proxy: on a unix socket in the scratch
// directory for the bwrap rung, which binds it into the sandbox, or on a
// loopback TCP port for the landlock rung, which has no network
// namespace to run a forwarder in.
func (r *run) startEgress() error {
	e := &egress{policy: r.p.Egress}
	var l net.Listener
	var err error
	if r.rung == RungBwrap {
		if err := r.netDir(); err != nil {
			return err
		}
		var ul *net.UnixListener
		if ul, err = ListenUnixIn(r.hostNet, "proxy.sock"); err == nil {
			l = newFDListener(ul)
		}
		e.port = sandboxProxyPort
	} else if l, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
		e.port = l.Addr().(*net.TCPAddr).Port
	}
	if err != nil {
		return refuse(Unavailable, "listening for the egress proxy: %v", err)
	}
	if e.proxy, err = netproxy.New(netproxy.Options{Policy: e, Resolver: egressResolver}); err != nil {
		l.Close()
		return refuse(Unavailable, "starting the egress proxy: %v", err)
	}
	r.egress = e
	go e.proxy.Serve(l)
	return nil
}

// netDir makes the bwrap rung's socket directory, bound into the sandbox
// at sandboxNet, once.
func (r *run) netDir() error {
	if r.hostNet != "" {
		return nil
	}
	dir := filepath.Join(r.scratch, "net")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return refuse(Unavailable, "making the sandbox's socket directory: %v", err)
	}
	r.hostNet = dir
	return nil
}

// serviceSocket is the socket of a session's service on port.
func serviceSocket(port uint16) string { return fmt.Sprintf("service-%d.sock", port) }

// startServices listens for each of a session's services, on a unix
// socket of the bwrap rung's socket directory, and starts its server;
// the init's forwarder on the port hands it each connection.
func (r *run) startServices() error {
	if r.p.Session == nil || len(r.p.Session.Services) == 0 {
		return nil
	}
	if err := r.netDir(); err != nil {
		return err
	}
	for _, svc := range r.p.Session.Services {
		ul, err := ListenUnixIn(r.hostNet, serviceSocket(svc.Port))
		if err != nil {
			r.stopServices()
			return refuse(Unavailable, "listening for the session's service on port %d: %v", svc.Port, err)
		}
		l := newFDListener(ul)
		r.services = append(r.services, l)
		go svc.Serve(l)
	}
	return nil
}

// stopServices closes the services' listeners; their servers end their
// connections themselves.
func (r *run) stopServices() {
	for _, l := range r.services {
		l.Close()
	}
	r.services = nil
}

// ListenUnixIn listens on a unix socket named name in the directory dir,
// however long dir's path: a socket's address holds at most 107 bytes,
// and rein's state lies below the user's HOME, which may be deep (a CI
// runner's temporary home). The socket is bound through a descriptor of
// the directory (/proc/self/fd/N/name), so only that short path is the
// address; dir's own path is never one. The listener does not unlink the
// name on Close: remove dir.
func ListenUnixIn(dir, name string) (*net.UnixListener, error) {
	if strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("socket name %q holds a slash", name)
	}
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name)
	if len(addr) >= 108 {
		return nil, fmt.Errorf("socket name %q is too long for a unix socket", name)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}

// proxyEnv sets the proxy variables, in both cases, over whatever env
// says: every client that honours them goes through the proxy, and none
// is told to go around it.
//
// A session with services of its own loopback is told to reach them
// directly (NO_PROXY the loopback): nothing else listens there, and
// Landlock lets a command connect to no other port of it.
func proxyEnv(env []string, port int, services bool) []string {
	http := "http://127.0.0.1:" + strconv.Itoa(port)
	set := map[string]string{
		"HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": "socks5h://127.0.0.1:" + strconv.Itoa(port), "NO_PROXY": "",
	}
	if services {
		set["NO_PROXY"] = "127.0.0.1,localhost,::1"
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[strings.ToUpper(k)]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"} {
		out = append(out, k+"="+set[k], strings.ToLower(k)+"="+set[k])
	}
	return out
}

// stopEgress closes the proxy and every connection through it, and puts
// what it recorded in the result.
func (r *run) stopEgress(res *Result) {
	r.stopServices()
	if r.egress == nil {
		return
	}
	r.egress.proxy.Close()
	if res != nil {
		r.egress.mu.Lock()
		res.Egress = append([]netproxy.Event(nil), r.egress.events...)
		res.EgressDropped = r.egress.dropped
		r.egress.mu.Unlock()
	}
}

// forward is the init's forwarder on the sandbox's loopback, to the
// proxy's socket.
type forward struct {
	Listen string `json:"listen"`
	Socket string `json:"socket"`
}

// listen opens the forwarder's port. It must be called before the
// confinement, which refuses binding.
func (f *forward) listen() (net.Listener, error) {
	l, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return nil, fmt.Errorf("opening the egress forwarder on %s: %w", f.Listen, err)
	}
	return l, nil
}

// serve hands each connection to the proxy until l closes: the accepted
// socket itself, passed over the proxy's unix socket (SCM_RIGHTS), so
// that the proxy reads and writes the client's socket directly and no
// byte is copied twice.
func (f *forward) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go f.hand(c)
	}
}

func (f *forward) hand(c net.Conn) {
	defer c.Close()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	file, err := tc.File()
	if err != nil {
		return
	}
	defer file.Close()
	u, err := net.Dial("unix", f.Socket)
	if err != nil {
		return
	}
	defer u.Close()
	u.(*net.UnixConn).WriteMsgUnix([]byte{0}, syscall.UnixRights(int(file.Fd())), nil)
}

// fdListener accepts the client sockets the init's forwarder passes over
// the proxy's unix socket. Anything else that connects to that socket (a
// command can, where Landlock does not cover unix sockets) gets only as
// far as a TCP socket of its own sandbox would: a message without one, or
// with anything but a connected TCP socket, is dropped.
type fdListener struct {
	l     *net.UnixListener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// maxHandoffs bounds the handoffs read at once.
const maxHandoffs = 64

func newFDListener(l *net.UnixListener) *fdListener {
	fl := &fdListener{l: l, conns: make(chan net.Conn), done: make(chan struct{})}
	go fl.run()
	return fl
}

func (fl *fdListener) run() {
	sem := make(chan struct{}, maxHandoffs)
	for {
		u, err := fl.l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				fl.Close()
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			u.Close()
			continue
		}
		go func() {
			defer func() { <-sem }()
			c := receiveConn(u)
			if c == nil {
				return
			}
			select {
			case fl.conns <- c:
			case <-fl.done:
				c.Close()
			}
		}()
	}
}

// receiveConn reads one message with one descriptor from u, and returns it
// as a connection if it is a connected TCP socket.
func receiveConn(u *net.UnixConn) net.Conn {
	defer u.Close()
	u.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4*4))
	_, oobn, _, _, err := u.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) == 0 {
		return nil
	}
	for _, fd := range fds[1:] {
		syscall.Close(fd)
	}
	syscall.CloseOnExec(fds[0])
	f := os.NewFile(uintptr(fds[0]), "client")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil
	}
	if _, ok := c.(*net.TCPConn); !ok || c.RemoteAddr() == nil {
		c.Close()
		return nil
	}
	return c
}

func (fl *fdListener) Accept() (net.Conn, error) {
	select {
	case c := <-fl.conns:
		return c, nil
	case <-fl.done:
		return nil, net.ErrClosed
	}
}

func (fl *fdListener) Close() error {
	fl.once.Do(func() {
		close(fl.done)
		fl.l.Close()
	})
	return nil
}

func (fl *fdListener) Addr() net.Addr { return fl.l.Addr() }

// slirpPath is the user-mode network helper full mode needs, looked up
// where a package manager installs it.
func slirpPath() (string, error) {
	for _, p := range []string{"/usr/bin/slirp4netns", "/bin/slirp4netns"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("slirp4netns"); err == nil {
		return p, nil
	}
	return "", errors.New("slirp4netns is not installed (apt-get install slirp4netns)")
}

// fullNet is the user-mode network of a run in full mode.
type fullNet struct {
	info    *os.File // read end of bubblewrap's --info-fd
	infoW   *os.File
	goR     *os.File // the init's end of its go pipe
	goW     *os.File // rein's end: one byte written means the network is up
	upR     *os.File // rein's end of the init's up pipe: one byte read means bubblewrap's setup is done
	upW     *os.File
	exitW   *os.File // slirp4netns's --exit-fd: closing it ends slirp4netns
	slirp   *exec.Cmd
	scratch string
	// attaching is set once attach runs; started is closed when it ends.
	attaching bool
	err       error
	started   chan struct{}
}

// prepareFull makes the pipes and files full mode needs before bubblewrap
// starts.
func (r *run) prepareFull() (*fullNet, error) {
	if _, err := slirpPath(); err != nil {
		return nil, refuse(Unavailable, "network full needs user-mode networking: %v", err)
	}
	n := &fullNet{started: make(chan struct{}), scratch: r.scratch}
	var err error
	if n.info, n.infoW, err = os.Pipe(); err != nil {
		return nil, refuse(Unavailable, "making bubblewrap's info pipe: %v", err)
	}
	if n.goR, n.goW, err = os.Pipe(); err == nil {
		n.upR, n.upW, err = os.Pipe()
	}
	if err != nil {
		n.stop()
		return nil, refuse(Unavailable, "making the init's network pipes: %v", err)
	}
	return n, nil
}

// resolvConf returns the resolv.conf the sandbox needs in full mode, as
// (sandbox path, host file), or "" when the host's serves as it is: a
// nameserver on the host's loopback is the sandbox's own loopback inside
// its namespace, so such a file is replaced by one naming slirp4netns's
// resolver.
func (r *run) resolvConf() (dest, host string, err error) {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	loopback, servers := false, 0
	var keep []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			servers++
			if ip := net.ParseIP(f[1]); ip == nil || ip.IsLoopback() {
				loopback = true
			}
			continue
		}
		if len(f) >= 1 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
			keep = append(keep, sc.Text())
		}
	}
	if servers > 0 && !loopback {
		return "", "", nil
	}
	dest = "/etc/resolv.conf"
	if target, err := filepath.EvalSymlinks(dest); err == nil {
		dest = target
	} else if link, lerr := os.Readlink(dest); lerr == nil && filepath.IsAbs(link) {
		return "", "", fmt.Errorf("/etc/resolv.conf is a link to %s, which does not exist", link)
	}
	host = filepath.Join(r.scratch, "resolv.conf")
	body := "nameserver " + slirpDNS + "\n" + strings.Join(keep, "\n") + "\n"
	if err := os.WriteFile(host, []byte(body), 0o644); err != nil {
		return "", "", err
	}
	return dest, host, nil
}

// attach waits for bubblewrap's report of the sandbox's pid, attaches
// slirp4netns to its network namespace, waits for the network to be up
// and tells the init to go on. On failure the init is told nothing and
// ends with the network down; n.err says why.
func (n *fullNet) attach() {
	defer close(n.started)
	defer n.goW.Close()
	defer n.upR.Close()
	n.infoW.Close()
	pid, err := readChildPid(n.info)
	n.info.Close()
	if err != nil {
		n.err = err
		return
	}
	// bubblewrap configures the namespace's loopback before it starts the
	// init; slirp4netns, which configures loopback too, must wait for it.
	n.upR.SetReadDeadline(time.Now().Add(netReadyWait))
	var up [1]byte
	if k, err := n.upR.Read(up[:]); k != 1 {
		n.err = fmt.Errorf("the sandbox's init did not start: %v", err)
		return
	}
	path, err := slirpPath()
	if err != nil {
		n.err = err
		return
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		n.err = err
		return
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		n.err = err
		return
	}
	// The sandbox's first process is in a user namespace nested in the
	// one that owns its network namespace (--disable-userns), where
	// slirp4netns, which joins the process's user namespace, would have no
	// power over the network: it is given the owner instead.
	owner, err := netnsOwner(pid)
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		n.err = err
		return
	}
	defer owner.Close()
	args := []string{"--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox", "--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4", "--userns-path=/proc/self/fd/5", "--netns-type=path", "/proc/" + strconv.Itoa(pid) + "/ns/net", "tap0"}
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{readyW, exitR, owner}
	cmd.Env = []string{"PATH=" + hostPATH}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	logPath := filepath.Join(n.scratch, "slirp4netns.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		n.err = err
		return
	}
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Start()
	log.Close()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		n.err = fmt.Errorf("starting slirp4netns: %w", err)
		return
	}
	n.slirp, n.exitW = cmd, exitW
	ready := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := readyR.Read(b[:])
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			n.err = fmt.Errorf("slirp4netns did not bring the network up (%v): %s", err, strings.Join(strings.Fields(readHead(logPath, 2048)), " "))
			return
		}
	case <-time.After(netReadyWait):
		n.err = fmt.Errorf("slirp4netns did not bring the network up within %s", netReadyWait)
		return
	}
	if _, err := n.goW.Write([]byte{1}); err != nil {
		n.err = fmt.Errorf("the sandbox ended before its network was up: %w", err)
	}
}

// stop ends slirp4netns, or closes the pipes of a run that never
// started.
func (n *fullNet) stop() {
	if !n.attaching {
		for _, f := range []*os.File{n.info, n.infoW, n.goR, n.goW, n.upR, n.upW} {
			if f != nil {
				f.Close()
			}
		}
		return
	}
	<-n.started
	if n.exitW != nil {
		n.exitW.Close()
	}
	if n.slirp != nil {
		n.slirp.Process.Kill()
		n.slirp.Wait()
	}
}

// nsGetUserns is NS_GET_USERNS of ioctl_ns(2).
const nsGetUserns = 0xb701

// netnsOwner opens the user namespace that owns pid's network namespace.
func netnsOwner(pid int) (*os.File, error) {
	netns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer netns.Close()
	fd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, netns.Fd(), nsGetUserns, 0)
	if errno != 0 {
		return nil, fmt.Errorf("finding the owner of the sandbox's network namespace: %w", errno)
	}
	syscall.CloseOnExec(int(fd))
	return os.NewFile(fd, "userns"), nil
}

// readChildPid reads bubblewrap's --info-fd report.
func readChildPid(f *os.File) (int, error) {
	f.SetReadDeadline(time.Now().Add(netReadyWait))
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 4096)).Decode(&info); err != nil {
		return 0, fmt.Errorf("reading bubblewrap's report of the sandbox's pid: %w", err)
	}
	if info.ChildPid <= 0 {
		return 0, errors.New("bubblewrap reported no sandbox pid")
	}
	return info.ChildPid, nil
}

// readHead returns at most n bytes of the start of a file.
func readHead(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, n))
	return string(data)
}
