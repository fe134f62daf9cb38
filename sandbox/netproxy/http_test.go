package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewNeedsPolicy(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a Policy did not fail")
	}
}

// TestConnectTLS fetches from an HTTPS server through a CONNECT tunnel,
// with the proxy on a unix socket and on a TCP port.
func TestConnectTLS(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			const body = "hello through the tunnel"
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, body)
			}))
			defer srv.Close()
			srvAddr := srv.Listener.Addr().(*net.TCPAddr)

			pol := newFakePolicy().allow("127.0.0.1", true)
			res := newFakeResolver()
			tp := startProxy(t, network, Options{Policy: pol, Resolver: res})

			tr := srv.Client().Transport.(*http.Transport).Clone()
			if network == "unix" {
				tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "rein-proxy"})
				tr.DialContext = tp.dialContext
			} else {
				tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})
			}
			client := &http.Client{Transport: tr, Timeout: waitLimit}
			resp, err := client.Get(srv.URL + "/file")
			if err != nil {
				t.Fatal(err)
			}
			if got := readBody(t, resp); got != body {
				t.Fatalf("body %q", got)
			}
			tr.CloseIdleConnections()

			ev := pol.waitEvents(t, 1)
			if len(ev) != 1 {
				t.Fatalf("events %+v", ev)
			}
			e := ev[0]
			target := srvAddr.String()
			want := Request{Proto: ProtoConnect, Host: "127.0.0.1", Port: uint16(srvAddr.Port), Target: target}
			if e.Request != want || e.Addr != target || !e.Verdict.Allow || e.Refused != "" || e.Err != "" {
				t.Errorf("event %+v", e)
			}
			if e.Up <= 0 || e.Down <= 0 || e.Duration <= 0 || e.Time.IsZero() {
				t.Errorf("event counts %+v", e)
			}
			if d := pol.decisions(); len(d) != 1 || d[0] != want {
				t.Errorf("decisions %+v", d)
			}
			if l := res.looked(); len(l) != 0 {
				t.Errorf("an IP literal was looked up: %v", l)
			}
		})
	}
}

// TestConnectPending: bytes the client sends right after the CONNECT
// headers, before the 200, are forwarded.
func TestConnectPending(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("echo.test", true)
	res := newFakeResolver().add("echo.test", "127.0.0.1")
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: res})

	c := tp.dial(t)
	resp, br := connectRaw(t, c, hostPort("Echo.Test.", echo.Port), "ping")
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q, %v", got, err)
	}
	if _, err := c.Write([]byte("pong!")); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "pong!" {
		t.Fatalf("echo %q, %v", got, err)
	}
	c.(*net.UnixConn).CloseWrite()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("after the echo: %q", rest)
	}
	ev := pol.waitEvents(t, 1)[0]
	if ev.Host != "echo.test" || ev.Up != 9 || ev.Down != 9 || ev.Addr != echo.String() || ev.Err != "" {
		t.Errorf("event %+v", ev)
	}
	if l := res.looked(); !slices.Equal(l, []string{"echo.test"}) {
		t.Errorf("lookups %v", l)
	}
}

// TestPlainHTTPKeepAlive sends two absolute-URI requests for two hosts
// on one connection.
func TestPlainHTTPKeepAlive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s uri=%s pa=%q pc=%q xff=%q ua=%q", r.Host, r.RequestURI,
			r.Header.Get("Proxy-Authorization"), r.Header.Get("Proxy-Connection"),
			r.Header.Get("X-Forwarded-For"), r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	pol := newFakePolicy().allow("a.test", true).allow("b.test", true)
	res := newFakeResolver().add("a.test", "127.0.0.1").add("b.test", "127.0.0.1")
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res})

	c := tp.dial(t)
	c.SetDeadline(time.Now().Add(waitLimit))
	br := bufio.NewReader(c)
	get := func(host, path, extra string) string {
		t.Helper()
		hp := hostPort(host, port)
		fmt.Fprintf(c, "GET http://%s%s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Connection: keep-alive\r\nUser-Agent: test\r\n%s\r\n", hp, path, hp, extra)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("status %s", resp.Status)
		}
		return readBody(t, resp)
	}
	if got, want := get("a.test", "/one?x=1;y", ""), fmt.Sprintf(`host=a.test:%d uri=/one?x=1;y pa="" pc="" xff="" ua="test"`, port); got != want {
		t.Errorf("first: %s, want %s", got, want)
	}
	if got, want := get("B.test", "/two", "X-Forwarded-For: 192.0.2.1\r\n"), fmt.Sprintf(`host=B.test:%d uri=/two pa="" pc="" xff="192.0.2.1" ua="test"`, port); got != want {
		t.Errorf("second: %s, want %s", got, want)
	}

	ev := pol.waitEvents(t, 2)
	for i, want := range []Request{
		{Proto: ProtoHTTP, Host: "a.test", Port: uint16(port), Path: "/one", Target: hostPort("a.test", port) + "/one"},
		{Proto: ProtoHTTP, Host: "b.test", Port: uint16(port), Path: "/two", Target: hostPort("b.test", port) + "/two"},
	} {
		e := ev[i]
		if e.Request != want || e.Addr != hostPort("127.0.0.1", port) || e.Err != "" || e.Refused != "" || e.Up <= 0 || e.Down <= 0 {
			t.Errorf("event %d: %+v", i, e)
		}
		if d := pol.decisions(); d[i] != want {
			t.Errorf("decision %d: %+v", i, d[i])
		}
	}
}

// TestPlainHTTPStreams: a response reaches the client while the upstream
// is still writing it.
func TestPlainHTTPStreams(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "-last")
	}))
	defer srv.Close()
	defer close(release)
	pol := newFakePolicy().allow("127.0.0.1", true)
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: newFakeResolver()})
	c := tp.dial(t)
	c.SetDeadline(time.Now().Add(waitLimit))
	fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", srv.URL, srv.Listener.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != "first" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestPlainHTTPNotProxyRequest(t *testing.T) {
	pol := newFakePolicy()
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: newFakeResolver()})
	for _, tc := range []struct {
		line, body string
	}{
		{"GET / HTTP/1.1", "rein egress proxy: not a proxy request\n"},
		{"OPTIONS * HTTP/1.1", "rein egress proxy: not a proxy request\n"},
		{"GET https://example.com/ HTTP/1.1", "use CONNECT"},
		{"GET ftp://example.com/ HTTP/1.1", "only http"},
		{"CONNECT /path HTTP/1.1", "host:port"},
		{"CONNECT example.com HTTP/1.1", "no port"},
		{"CONNECT example.com: HTTP/1.1", "no port"},
		{"CONNECT example.com:0 HTTP/1.1", "port 0"},
		{"CONNECT example.com:99999 HTTP/1.1", "not a port"},
		{"GET http://example.com:0/ HTTP/1.1", "port 0"},
	} {
		c := tp.dial(t)
		c.SetDeadline(time.Now().Add(waitLimit))
		fmt.Fprintf(c, "%s\r\nHost: example.com\r\n\r\n", tc.line)
		req := &http.Request{Method: strings.Fields(tc.line)[0]}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		var body []byte
		if resp.StatusCode != 200 {
			body, _ = io.ReadAll(resp.Body)
		}
		if resp.StatusCode != 400 || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: %s %q", tc.line, resp.Status, body)
		}
		if tc.body[len(tc.body)-1] == '\n' && string(body) != tc.body {
			t.Errorf("%s: body %q", tc.line, body)
		}
	}
	if d := pol.decisions(); len(d) != 0 {
		t.Errorf("decided %+v", d)
	}
	if ev := pol.recorded(); len(ev) != 10 {
		t.Errorf("events %+v", ev)
	}
}

// TestRefusal: a refused name gets 403 with the verdict and is never
// resolved.
func TestRefusal(t *testing.T) {
	pol := newFakePolicy()
	pol.set("quiet.test", Verdict{Reason: "no"})
	res := newFakeResolver().add("denied.test", "8.8.8.8").add("quiet.test", "8.8.8.8")
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res})

	check := func(resp *http.Response, rule, body string) {
		t.Helper()
		if resp.StatusCode != 403 {
			t.Errorf("status %s", resp.Status)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain" {
			t.Errorf("Content-Type %q", ct)
		}
		if r := resp.Header.Get("X-Rein-Refused"); r != rule {
			t.Errorf("X-Rein-Refused %q, want %q", r, rule)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != body {
			t.Errorf("body %q\nwant %q", b, body)
		}
	}
	resp, _ := connectRaw(t, tp.dial(t), "denied.test:443", "")
	check(resp, "deny-all", "rein: connect denied.test:443 refused: not in the allow list (rule \"deny-all\", layer project, rein.toml)\n")
	resp, _ = connectRaw(t, tp.dial(t), "quiet.test:443", "")
	check(resp, "policy", "rein: connect quiet.test:443 refused: no\n")

	c := tp.dial(t)
	c.SetDeadline(time.Now().Add(waitLimit))
	fmt.Fprintf(c, "GET http://denied.test/a/b?q HTTP/1.1\r\nHost: denied.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	check(resp, "deny-all", "rein: http denied.test:80/a/b refused: not in the allow list (rule \"deny-all\", layer project, rein.toml)\n")

	if l := res.looked(); len(l) != 0 {
		t.Errorf("refused names were looked up: %v", l)
	}
	ev := pol.waitEvents(t, 3)
	for _, e := range ev {
		if e.Refused == "" || e.Verdict.Allow || e.Addr != "" {
			t.Errorf("event %+v", e)
		}
	}
	if ev[0].Refused != "not in the allow list" || ev[0].Verdict != denyVerdict {
		t.Errorf("event %+v", ev[0])
	}
}

// TestRebinding: a wildcard grant (not by name) never reaches a special
// address, whatever the name resolves to.
func TestRebinding(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("rebind.test", false).allow("mixed.test", false).allow("10.1.2.3", false)
	res := newFakeResolver().
		add("rebind.test", "127.0.0.1", "::1", "10.0.0.1").
		add("mixed.test", "127.0.0.1", "169.254.169.254", "8.8.8.8", "::ffff:127.0.0.1", "1.1.1.1")
	var mu sync.Mutex
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		if addr == hostPort("8.8.8.8", echo.Port) {
			var d net.Dialer
			return d.DialContext(ctx, network, echo.String())
		}
		return nil, errors.New("test dial refuses " + addr)
	}
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res, Dial: dial})

	for _, tc := range []struct{ target, body string }{
		{"rebind.test:80", "rein: connect rebind.test:80 refused: it resolves to 127.0.0.1, a loopback address, which only a grant naming the host exactly can reach\n"},
		{"10.1.2.3:22", "rein: connect 10.1.2.3:22 refused: it is 10.1.2.3, a private address, which only a grant naming the host exactly can reach\n"},
	} {
		resp, _ := connectRaw(t, tp.dial(t), tc.target, "")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || string(b) != tc.body || resp.Header.Get("X-Rein-Refused") != "address" {
			t.Errorf("%s: %s %q %v", tc.target, resp.Status, b, resp.Header)
		}
	}

	c := tp.dial(t)
	resp, br := connectRaw(t, c, hostPort("mixed.test", echo.Port), "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	c.Write([]byte("hi"))
	got := make([]byte, 2)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hi" {
		t.Fatalf("%q %v", got, err)
	}
	c.Close()
	ev := pol.waitEvents(t, 3)
	if e := ev[2]; e.Addr != hostPort("8.8.8.8", echo.Port) || e.Up != 2 || e.Down != 2 {
		t.Errorf("event %+v", e)
	}
	for _, e := range ev[:2] {
		if !strings.HasPrefix(e.Refused, "it ") || !e.Verdict.Allow {
			t.Errorf("event %+v", e)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{hostPort("8.8.8.8", echo.Port)}; !slices.Equal(dialed, want) {
		t.Errorf("dialed %v, want %v", dialed, want)
	}
}

// TestDialOrder: the permitted addresses are dialed in turn until one
// connects; a dial failure is a 502.
func TestDialOrder(t *testing.T) {
	echo := echoServer(t)
	pol := newFakePolicy().allow("multi.test", false).allow("none.test", false).allow("nx.test", false)
	res := newFakeResolver().add("multi.test", "127.0.0.1", "9.9.9.9", "8.8.8.8", "1.1.1.1").add("none.test", "9.9.9.9")
	var mu sync.Mutex
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		if addr == "8.8.8.8:7" {
			var d net.Dialer
			return d.DialContext(ctx, network, echo.String())
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("unreachable in the test")}
	}
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: res, Dial: dial})
	c := tp.dial(t)
	resp, _ := connectRaw(t, c, "multi.test:7", "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	c.Close()
	mu.Lock()
	if want := []string{"9.9.9.9:7", "8.8.8.8:7"}; !slices.Equal(dialed, want) {
		t.Errorf("dialed %v, want %v", dialed, want)
	}
	mu.Unlock()

	for _, target := range []string{"none.test:7", "nx.test:7"} {
		resp, _ = connectRaw(t, tp.dial(t), target, "")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 502 || !strings.HasPrefix(string(b), "rein: connect "+target+" failed: ") {
			t.Errorf("%s: %s %q", target, resp.Status, b)
		}
	}
	ev := pol.waitEvents(t, 3)
	for _, e := range ev {
		if e.Request.Host != "multi.test" && (e.Err == "" || e.Refused != "") {
			t.Errorf("event %+v", e)
		}
	}
}

// TestMetadata: a metadata address is reached only by a grant naming the
// address, with the client naming it too.
func TestMetadata(t *testing.T) {
	pol := newFakePolicy().allow("meta.test", true).allow("169.254.169.254", true).allow("nat64.test", true)
	res := newFakeResolver().add("meta.test", "169.254.169.254").add("nat64.test", "64:ff9b::a9fe:a9fe")
	var mu sync.Mutex
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return nil, errors.New("the test dials nothing")
	}
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: res, Dial: dial})

	for _, name := range []string{"meta.test", "nat64.test"} {
		resp, _ := connectRaw(t, tp.dial(t), name+":80", "")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(string(b), "a metadata address, which only a connection naming that address itself can reach") {
			t.Errorf("%s: %s %q", name, resp.Status, b)
		}
	}
	mu.Lock()
	if len(dialed) != 0 {
		t.Errorf("dialed %v", dialed)
	}
	mu.Unlock()

	resp, _ := connectRaw(t, tp.dial(t), "169.254.169.254:80", "")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 502 || !strings.Contains(string(b), "the test dials nothing") {
		t.Errorf("%s %q", resp.Status, b)
	}
	mu.Lock()
	if want := []string{"169.254.169.254:80"}; !slices.Equal(dialed, want) {
		t.Errorf("dialed %v", dialed)
	}
	mu.Unlock()

	// Not by name: refused even named as the address.
	pol.allow("169.254.169.254", false)
	resp, _ = connectRaw(t, tp.dial(t), "169.254.169.254:80", "")
	if resp.StatusCode != 403 {
		t.Errorf("wildcard grant to metadata: %s", resp.Status)
	}
}

// TestSelf: the proxy does not connect to its own listening address.
func TestSelf(t *testing.T) {
	pol := newFakePolicy().allow("127.0.0.1", true)
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: newFakeResolver()})
	resp, _ := connectRaw(t, tp.dial(t), tp.addr, "")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(string(b), "the proxy's own address") {
		t.Errorf("%s %q", resp.Status, b)
	}
}

// TestAmbiguousHosts: numeric forms, zones and malformed names are
// refused without asking the policy or the resolver.
func TestAmbiguousHosts(t *testing.T) {
	pol := newFakePolicy()
	res := newFakeResolver()
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: res})
	targets := []string{
		"2130706433:80", "0x7f.1:80", "127.1:80", "0177.0.0.1:80", "0x7f000001:80",
		"127.0.0.010:80", "[fe80::1%25eth0]:80", "ex$mple.com:80", "a..b:80",
	}
	for _, target := range targets {
		resp, _ := connectRaw(t, tp.dial(t), target, "")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.HasPrefix(string(b), "rein: connect ") || resp.Header.Get("X-Rein-Refused") != "host" {
			t.Errorf("%s: %s %q", target, resp.Status, b)
		}
	}
	for _, uri := range []string{"http://2130706433/", "http://0x7f.1:8080/", "http://[fe80::1%25eth0]/"} {
		c := tp.dial(t)
		c.SetDeadline(time.Now().Add(waitLimit))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", uri)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 400 {
			t.Errorf("%s: %s", uri, resp.Status)
		}
	}
	for _, name := range []string{"0x7f.1", "fe80::1%eth0", "", "a b", "[127.0.0.1]"} {
		c := tp.dial(t)
		reply := socksDial(t, c, socksAtypDomain, []byte(name), 80, nil)
		if reply[1] != repGeneralFailure {
			t.Errorf("SOCKS %q: reply %d", name, reply[1])
		}
		expectClosed(t, c)
	}
	if d := pol.decisions(); len(d) != 0 {
		t.Errorf("decided %+v", d)
	}
	if l := res.looked(); len(l) != 0 {
		t.Errorf("looked up %v", l)
	}
	n := len(targets) + 3 + 5
	ev := pol.waitEvents(t, n)
	if len(ev) != n {
		t.Errorf("%d events, want %d", len(ev), n)
	}
	for _, e := range ev {
		if e.Refused == "" || e.Verdict.Allow {
			t.Errorf("event %+v", e)
		}
	}
}

// TestDecideContext: Decide's context ends when the client hangs up.
func TestDecideContext(t *testing.T) {
	pol := newFakePolicy()
	pol.block["slow.test"] = true
	pol.calls = make(chan Request, 8)
	tp := startProxy(t, "unix", Options{Policy: pol, Resolver: newFakeResolver()})

	// HTTP CONNECT.
	c := tp.dial(t)
	fmt.Fprintf(c, "CONNECT slow.test:443 HTTP/1.1\r\nHost: slow.test:443\r\n\r\n")
	<-pol.calls
	c.Close()
	pol.waitEvents(t, 1)

	// SOCKS5.
	c = tp.dial(t)
	c.Write([]byte{5, 1, 0, 5, 1, 0, 3, 9, 's', 'l', 'o', 'w', '.', 't', 'e', 's', 't', 0, 80})
	<-pol.calls
	c.Close()
	pol.waitEvents(t, 2)

	// And the Proxy's Close ends a pending Decide.
	c = tp.dial(t)
	fmt.Fprintf(c, "GET http://slow.test/ HTTP/1.1\r\nHost: slow.test\r\n\r\n")
	<-pol.calls
	closed := make(chan struct{})
	go func() {
		tp.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(waitLimit):
		t.Fatal("Close did not return while a Decide was pending")
	}
	pol.waitEvents(t, 3)
}

// TestPlainHTTPAmbiguousPaths: a path a server could resolve to another
// than the one decided is refused before the policy is asked, and so is
// an upgrade, which would turn the request into a tunnel.
func TestPlainHTTPAmbiguousPaths(t *testing.T) {
	seen := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.RequestURI
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	pol := newFakePolicy().allow("127.0.0.1", true)
	tp := startProxy(t, "tcp", Options{Policy: pol, Resolver: newFakeResolver()})
	host := srv.Listener.Addr().String()
	get := func(path, extra string) (int, string) {
		t.Helper()
		c := tp.dial(t)
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitLimit))
		fmt.Fprintf(c, "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n%s\r\n", host, path, host, extra)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/v2/../admin", "/v2/%2e%2e/admin", "/v2/..%2fadmin", "/v2/%2E%2E%2Fadmin", "//admin", "/v2/./x",
		"/a%5cb", "/a\\b", "/v2/..", "/x%00", "/public/..;/admin", "/;/admin", "/v2/%252e%252e/admin"} {
		code, body := get(path, "")
		if code != http.StatusBadRequest || !strings.Contains(body, "refused") {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, body := get("/chat", "Connection: Upgrade\r\nUpgrade: websocket\r\n"); code != http.StatusBadRequest || !strings.Contains(body, "upgrade") {
		t.Errorf("an upgrade: %d %q", code, body)
	}
	pol.mu.Lock()
	asked := len(pol.decided)
	pol.mu.Unlock()
	if asked != 0 || len(seen) != 0 {
		t.Errorf("the policy was asked %d times and the upstream saw %d requests", asked, len(seen))
	}
	if code, body := get("/v2/a%20b/c.txt?x=1", ""); code != 200 || body != "ok" || <-seen != "/v2/a%20b/c.txt?x=1" {
		t.Errorf("an ordinary path: %d %q", code, body)
	}
}
