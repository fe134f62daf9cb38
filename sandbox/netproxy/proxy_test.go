package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// streamServer sends zeros on every connection until it fails.
func streamServer(t testing.TB) *net.TCPAddr {
	return serveTCP(t, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
}

// TestCloseMidTransfer: Close ends a tunnel in the middle of a transfer,
// makes Serve return nil, and leaves no goroutine behind.
func TestCloseMidTransfer(t *testing.T) {
	upstream := streamServer(t)
	before := runtime.NumGoroutine()

	pol := newFakePolicy().allow("127.0.0.1", true)
	p, err := New(Options{Policy: pol, Resolver: newFakeResolver()})
	if err != nil {
		t.Fatal(err)
	}
	unixL, err := net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	tcpL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 2)
	go func() { served <- p.Serve(unixL) }()
	go func() { served <- p.Serve(tcpL) }()

	var conns []net.Conn
	for _, l := range []net.Listener{unixL, tcpL} {
		c, err := net.Dial(l.Addr().Network(), l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		resp, br := connectRaw(t, c, upstream.String(), "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %s", resp.Status)
		}
		if _, err := io.CopyN(io.Discard, br, 1<<20); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// One HTTP connection idle between requests, one SOCKS handshake
	// half done.
	idle, err := net.Dial("unix", unixL.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	half, err := net.Dial("unix", unixL.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	half.Write([]byte{5, 1})

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("Serve did not return")
		}
	}
	for _, c := range append(conns, idle, half) {
		expectClosed(t, c)
		c.Close()
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(l); err != nil {
		t.Errorf("Serve after Close: %v", err)
	}

	ev := pol.waitEvents(t, 3)
	for _, e := range ev {
		if e.Proto == ProtoConnect && e.Down < 1<<20 {
			t.Errorf("event %+v", e)
		}
	}

	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMaxConns: beyond MaxConns, a connection is answered 503 (or SOCKS
// 0x01) and closed; a place freed is taken again.
func TestMaxConns(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("127.0.0.1", true)
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: newFakeResolver(), MaxConns: 2})

	var held []net.Conn
	for range 2 {
		c := tp.dial(t)
		resp, _ := connectRaw(t, c, echo.String(), "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %s", resp.Status)
		}
		held = append(held, c)
	}

	c := tp.dial(t)
	c.SetDeadline(time.Now().Add(waitLimit))
	fmt.Fprintf(c, "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", echo.Port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("X-Rein-Refused") != "limit" || !strings.Contains(string(b), "too many connections") {
		t.Errorf("third connection: %s %q", resp.Status, b)
	}
	expectClosed(t, c)

	c = tp.dial(t)
	if reply := socksDial(t, c, socksAtypIPv4, []byte{127, 0, 0, 1}, uint16(echo.Port), nil); reply[1] != repGeneralFailure {
		t.Errorf("SOCKS beyond the limit: reply % x", reply)
	}
	expectClosed(t, c)

	ev := pol.waitEvents(t, 2)
	if !strings.HasPrefix(ev[0].Refused, "too many connections") || ev[0].Proto != ProtoHTTP ||
		!strings.HasPrefix(ev[1].Refused, "too many connections") || ev[1].Proto != ProtoSOCKS5 {
		t.Errorf("events %+v", ev)
	}
	if d := pol.decisions(); len(d) != 2 {
		t.Errorf("decided %+v", d)
	}

	held[0].Close()
	deadline := time.Now().Add(waitLimit)
	for {
		c := tp.dial(t)
		resp, _ := connectRaw(t, c, echo.String(), "")
		c.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no place freed: %s", resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
