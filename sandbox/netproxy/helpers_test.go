package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait in the tests; it only keeps a broken test
// from hanging.
const waitLimit = 20 * time.Second

// denyVerdict is what fakePolicy answers for a host it does not know.
var denyVerdict = Verdict{Rule: "deny-all", Layer: "project", File: "rein.toml", Reason: "not in the allow list"}

// fakePolicy answers by host and records every call.
type fakePolicy struct {
	mu      sync.Mutex
	verdict map[string]Verdict // by Request.Host
	block   map[string]bool    // hosts whose Decide waits for its ctx to end
	decided []Request
	events  []Event
	calls   chan Request // every Decide, if non-nil
}

func newFakePolicy() *fakePolicy {
	return &fakePolicy{verdict: map[string]Verdict{}, block: map[string]bool{}}
}

// allow grants host; byName says the grant names it exactly.
func (f *fakePolicy) allow(host string, byName bool) *fakePolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	rule := "*.test"
	if byName {
		rule = host
	}
	f.verdict[host] = Verdict{Allow: true, ByName: byName, Rule: rule, Layer: "user"}
	return f
}

func (f *fakePolicy) set(host string, v Verdict) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verdict[host] = v
}

func (f *fakePolicy) Decide(ctx context.Context, r Request) Verdict {
	f.mu.Lock()
	f.decided = append(f.decided, r)
	v, ok := f.verdict[r.Host]
	block := f.block[r.Host]
	calls := f.calls
	f.mu.Unlock()
	if calls != nil {
		calls <- r
	}
	if block {
		<-ctx.Done()
		return Verdict{Reason: "gone"}
	}
	if !ok {
		return denyVerdict
	}
	return v
}

func (f *fakePolicy) Record(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakePolicy) decisions() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.decided...)
}

func (f *fakePolicy) recorded() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.events...)
}

// waitEvents waits until at least n events are recorded and returns them.
func (f *fakePolicy) waitEvents(t testing.TB, n int) []Event {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ev := f.recorded()
		if len(ev) >= n {
			return ev
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %d events, have %d: %+v", n, len(ev), ev)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeResolver maps names to addresses and records every lookup.
type fakeResolver struct {
	mu      sync.Mutex
	addrs   map[string][]netip.Addr
	lookups []string
}

func newFakeResolver() *fakeResolver { return &fakeResolver{addrs: map[string][]netip.Addr{}} }

func (r *fakeResolver) add(name string, addrs ...string) *fakeResolver {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range addrs {
		r.addrs[name] = append(r.addrs[name], netip.MustParseAddr(a))
	}
	return r
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	if network != "ip" {
		return nil, fmt.Errorf("unexpected network %q", network)
	}
	a, ok := r.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), a...), nil
}

func (r *fakeResolver) looked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

// testProxy is a Proxy serving one listener.
type testProxy struct {
	*Proxy
	network, addr string
	served        chan error
}

// dial connects to the proxy.
func (tp *testProxy) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(tp.network, tp.addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialContext dials the proxy whatever address it is asked for (for a
// client Transport).
func (tp *testProxy) dialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, tp.network, tp.addr)
}

// startProxy serves a Proxy on a loopback TCP port or a unix socket.
func startProxy(t testing.TB, network string, o Options) *testProxy {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	switch network {
	case "tcp":
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case "unix":
		l, err = net.Listen("unix", filepath.Join(t.TempDir(), "proxy.sock"))
	default:
		t.Fatalf("network %q", network)
	}
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProxy{Proxy: p, network: network, addr: l.Addr().String(), served: make(chan error, 1)}
	go func() { tp.served <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		select {
		case err := <-tp.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Serve did not return after Close")
		}
	})
	return tp
}

// echoServer echoes every connection on a loopback port.
func echoServer(t testing.TB) *net.TCPAddr {
	t.Helper()
	return serveTCP(t, func(c net.Conn) { io.Copy(c, c) })
}

// serveTCP runs handle for every connection on a loopback port.
func serveTCP(t testing.TB, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					c.Close()
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr)
}

// connectRaw sends CONNECT target on c and reads the answer's head;
// extra is sent in the same write, after the headers.
func connectRaw(t testing.TB, c net.Conn, target, extra string) (*http.Response, *bufio.Reader) {
	t.Helper()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s", target, target, extra); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp, br
}

// readBody reads a (non-CONNECT) response's body.
func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// socksDial does a SOCKS5 handshake on c by hand for a request of atyp
// with addr (4 or 16 bytes, or a name) and port, and returns the reply.
func socksDial(t testing.TB, c net.Conn, atyp byte, addr []byte, port uint16, extra []byte) []byte {
	t.Helper()
	c.SetDeadline(time.Now().Add(waitLimit))
	msg := []byte{5, 1, 0, 5, 1, 0, atyp}
	if atyp == socksAtypDomain {
		msg = append(msg, byte(len(addr)))
	}
	msg = append(msg, addr...)
	msg = append(msg, byte(port>>8), byte(port))
	msg = append(msg, extra...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	method := make([]byte, 2)
	if _, err := io.ReadFull(c, method); err != nil {
		t.Fatal(err)
	}
	if method[0] != 5 || method[1] != 0 {
		t.Fatalf("method selection % x", method)
	}
	reply := make([]byte, 4)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatal(err)
	}
	n := 0
	switch reply[3] {
	case socksAtypIPv4:
		n = 4
	case socksAtypIPv6:
		n = 16
	default:
		t.Fatalf("reply address type %d", reply[3])
	}
	rest := make([]byte, n+2)
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatal(err)
	}
	return append(reply, rest...)
}

// expectClosed checks that the peer closes c (after what it sends).
func expectClosed(t testing.TB, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the proxy did not close the connection")
	}
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, fmt.Sprint(port))
}
