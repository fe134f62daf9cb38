package netproxy

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/net/proxy"
)

// TestSOCKS connects to an echo server through SOCKS5 with a name and
// with an IPv4 address.
func TestSOCKS(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("echo.test", true).allow("127.0.0.1", true)
	res := newFakeResolver().add("echo.test", "127.0.0.1")
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res})

	d, err := proxy.SOCKS5("tcp", tp.addr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	for i, target := range []string{hostPort("echo.test", echo.Port), echo.String()} {
		c, err := d.Dial("tcp", target)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		msg := []byte("ping " + target)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%s: echo %q, %v", target, got, err)
		}
		c.Close()
		ev := pol.waitEvents(t, i+1)[i]
		host, _, _ := net.SplitHostPort(target)
		want := Request{Proto: ProtoSOCKS5, Host: host, Port: uint16(echo.Port), Target: target}
		if ev.Request != want || ev.Addr != echo.String() || ev.Up != int64(len(msg)) || ev.Down != int64(len(msg)) || ev.Err != "" || ev.Refused != "" {
			t.Errorf("event %+v", ev)
		}
	}
	if l := res.looked(); !slices.Equal(l, []string{"echo.test"}) {
		t.Errorf("lookups %v", l)
	}
}

// TestSOCKSPending: data sent right after the request, before the
// reply, is forwarded; the reply does not tell the host's address.
func TestSOCKSPending(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("127.0.0.1", true)
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: newFakeResolver()})
	c := tp.dial(t)
	reply := socksDial(t, c, socksAtypIPv4, []byte{127, 0, 0, 1}, uint16(echo.Port), []byte("early"))
	if reply[1] != repSucceeded || reply[3] != socksAtypIPv4 || !bytes.Equal(reply[4:10], []byte{0, 0, 0, 0, 0, 0}) {
		t.Fatalf("reply % x", reply)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "early" {
		t.Fatalf("echo %q, %v", got, err)
	}
	c.(*net.UnixConn).CloseWrite()
	expectClosed(t, c)
	if ev := pol.waitEvents(t, 1)[0]; ev.Up != 5 || ev.Down != 5 {
		t.Errorf("event %+v", ev)
	}
}

// TestSOCKSRefusal: a refused target gets reply 0x02 and is not resolved.
func TestSOCKSRefusal(t *testing.T) {
	pol := newFakePolicy().allow("rebind.test", false)
	res := newFakeResolver().add("denied.test", "8.8.8.8").add("rebind.test", "127.0.0.1")
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res})

	for _, tc := range []struct {
		atyp byte
		addr []byte
		want Request
	}{
		{socksAtypDomain, []byte("Denied.Test"), Request{Proto: ProtoSOCKS5, Host: "denied.test", Port: 443, Target: "denied.test:443"}},
		{socksAtypIPv6, netip.MustParseAddr("2001:4860::8888").AsSlice(), Request{Proto: ProtoSOCKS5, Host: "2001:4860::8888", Port: 443, Target: "[2001:4860::8888]:443"}},
		{socksAtypIPv4, []byte{8, 8, 4, 4}, Request{Proto: ProtoSOCKS5, Host: "8.8.4.4", Port: 443, Target: "8.8.4.4:443"}},
		{socksAtypDomain, []byte("rebind.test"), Request{Proto: ProtoSOCKS5, Host: "rebind.test", Port: 443, Target: "rebind.test:443"}},
	} {
		c := tp.dial(t)
		reply := socksDial(t, c, tc.atyp, tc.addr, 443, nil)
		if reply[1] != repNotAllowed {
			t.Errorf("%s: reply % x", tc.want.Target, reply)
		}
		expectClosed(t, c)
	}
	if l := res.looked(); !slices.Equal(l, []string{"rebind.test"}) {
		t.Errorf("lookups %v", l)
	}
	ev := pol.waitEvents(t, 4)
	if ev[0].Refused != "not in the allow list" || ev[0].Verdict != denyVerdict {
		t.Errorf("event %+v", ev[0])
	}
	if ev[3].Refused != "it resolves to 127.0.0.1, a loopback address, which only a grant naming the host exactly can reach" {
		t.Errorf("event %+v", ev[3])
	}
	d := pol.decisions()
	if len(d) != 4 || d[0].Host != "denied.test" || d[1].Target != "[2001:4860::8888]:443" || d[2].Host != "8.8.4.4" {
		t.Errorf("decisions %+v", d)
	}
}

// TestSOCKSDialFailure: nothing listens, so the reply is 0x05; a name
// that does not resolve gets 0x04.
func TestSOCKSDialFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pol := newFakePolicy().allow("127.0.0.1", true).allow("nx.test", true)
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: newFakeResolver()})
	if reply := socksDial(t, tp.dial(t), socksAtypIPv4, []byte{127, 0, 0, 1}, uint16(port), nil); reply[1] != repConnectionRefused {
		t.Errorf("reply % x", reply)
	}
	if reply := socksDial(t, tp.dial(t), socksAtypDomain, []byte("nx.test"), 80, nil); reply[1] != repHostUnreachable {
		t.Errorf("reply % x", reply)
	}
	for _, e := range pol.waitEvents(t, 2) {
		if e.Err == "" || e.Refused != "" {
			t.Errorf("event %+v", e)
		}
	}
}

// TestSOCKSHandshake drives the parser with the messages it refuses.
func TestSOCKSHandshake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		written []byte
		reply   byte
		ok      bool
		host    string
	}{
		{"domain", []byte{5, 1, 0, 5, 1, 0, 3, 1, 'a', 0, 80}, []byte{5, 0}, 0, true, "a"},
		{"ipv4", []byte{5, 2, 2, 0, 5, 1, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0}, 0, true, "1.2.3.4"},
		{"ipv6", append(append([]byte{5, 1, 0, 5, 1, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0, 80), []byte{5, 0}, 0, true, "::1"},
		{"user/password only", []byte{5, 1, 2}, []byte{5, 0xff}, 0, false, ""},
		{"no methods", []byte{5, 0}, []byte{5, 0xff}, 0, false, ""},
		{"bind", []byte{5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0}, repCommandUnsupported, false, "1.2.3.4"},
		{"udp associate", []byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0}, []byte{5, 0}, repCommandUnsupported, false, "0.0.0.0"},
		{"bad atyp", []byte{5, 1, 0, 5, 1, 0, 5, 1, 2, 3, 4, 0, 80}, []byte{5, 0}, repAddressUnsupported, false, ""},
		{"bad request version", []byte{5, 1, 0, 4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0}, repGeneralFailure, false, ""},
		{"short", []byte{5, 1, 0, 5, 1, 0, 3, 9, 'a'}, []byte{5, 0}, 0, false, ""},
		{"socks4", []byte{4, 1, 0, 80, 1, 2, 3, 4, 0}, nil, 0, false, ""},
	} {
		var w bytes.Buffer
		req, reply, err := socksHandshake(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(tc.in), &w})
		if (err == nil) != tc.ok || reply != tc.reply || !bytes.Equal(w.Bytes(), tc.written) || req.host != tc.host {
			t.Errorf("%s: %+v reply %d err %v wrote % x", tc.name, req, reply, err, w.Bytes())
		}
	}
}

// TestSOCKSUnsupported: BIND gets 0x07 on the wire, and a client
// offering no acceptable method gets 0xFF and is closed.
func TestSOCKSUnsupported(t *testing.T) {
	pol := newFakePolicy()
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: newFakeResolver()})
	c := tp.dial(t)
	c.Write([]byte{5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80})
	got, _ := io.ReadAll(c)
	if !bytes.Equal(got, []byte{5, 0, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("BIND: % x", got)
	}
	c = tp.dial(t)
	c.Write([]byte{5, 1, 2})
	got, _ = io.ReadAll(c)
	if !bytes.Equal(got, []byte{5, 0xff}) {
		t.Errorf("no acceptable method: % x", got)
	}
	if d := pol.decisions(); len(d) != 0 {
		t.Errorf("decided %+v", d)
	}
	pol.waitEvents(t, 2)
}

// FuzzSOCKS feeds arbitrary bytes to the SOCKS5 handshake parser.
func FuzzSOCKS(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 1, 187})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add(append(append([]byte{5, 1, 0, 5, 1, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0, 80))
	f.Add([]byte{5, 255})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 255})
	f.Add([]byte{5, 1, 0, 5, 2, 0, 9})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var w bytes.Buffer
		req, reply, err := socksHandshake(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), &w})
		if w.Len() > 2 {
			t.Fatalf("wrote % x", w.Bytes())
		}
		if err == nil {
			if req.cmd != socksCmdConnect || reply != 0 || len(req.host) > 255 {
				t.Fatalf("accepted %+v reply %d", req, reply)
			}
			// What the proxy does next must not panic either.
			newTarget(ProtoSOCKS5, req.host, req.port, "")
		}
	})
}
