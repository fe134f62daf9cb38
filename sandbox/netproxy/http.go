package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The X-Rein-Refused values of refusals that are not the policy's (a
// policy refusal carries its rule).
const (
	refusedRequest = "request" // not a request the proxy serves
	refusedHost    = "host"    // a host or port the proxy never connects to
	refusedAddress = "address" // the address check
	refusedPolicy  = "policy"  // a policy refusal without a rule
)

// serveHTTP serves one request of a sniffed HTTP connection.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		writeText(w, http.StatusServiceUnavailable, "", "rein: the egress proxy is closing\n")
		return
	}
	defer p.wg.Done()
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	p.serveForward(w, r)
}

// serveConnect serves an HTTP CONNECT request: it opens a tunnel.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ev := Event{Time: start, Request: Request{Proto: ProtoConnect}}
	hostport := r.URL.Host
	if hostport == "" {
		// "CONNECT /path": net/http accepts it, a proxy does not.
		ev.Target = truncate(r.RequestURI, maxShownHost)
		p.refuseHTTP(w, &ev, http.StatusBadRequest, refusedRequest, "a CONNECT request names host:port")
		return
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		host, portStr = hostport, ""
	}
	port, why := parsePort(portStr)
	req, lit, hwhy := newTarget(ProtoConnect, host, port, "")
	ev.Request = req
	if why != "" {
		ev.Target = truncate(strings.ToLower(hostport), maxShownHost)
	} else {
		why = hwhy
	}
	ctx := r.Context()
	addrs, ok := p.admitHTTP(ctx, w, &ev, req, lit, why)
	if !ok {
		return
	}
	upstream, addr, id, err := p.dialChecked(ctx, addrs, req.Port)
	if err != nil {
		p.failHTTP(w, &ev, err)
		return
	}
	ev.Addr = addr
	defer func() {
		ev.Duration = time.Since(start)
		p.policy.Record(ev)
	}()
	defer p.closeUpstream(upstream, id)

	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		ev.Err = err.Error()
		writeText(w, http.StatusInternalServerError, "", "rein: cannot open a tunnel on this connection\n")
		return
	}
	defer conn.Close()
	// What the client sent after the CONNECT headers is in the server's
	// buffer (at most its size); it goes up first.
	var pending []byte
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		pending = append([]byte(nil), b...)
	}
	// Copy between the bare connections, so that io.Copy can splice.
	client := conn
	if cc, ok := conn.(*clientConn); ok && len(cc.prefix) == 0 {
		client = cc.Conn
	}
	client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, connectEstablished); err != nil {
		ev.Err = err.Error()
		return
	}
	up, down, err := tunnel(client, pending, upstream)
	ev.Up, ev.Down = up, down
	if err != nil {
		ev.Err = err.Error()
	}
}

// forwardKey is the context key of a plain request's *forward.
type forwardKey struct{}

// forward is a plain HTTP request on its way: the addresses checked for
// it, and what became of it. The transport's goroutines touch it.
type forward struct {
	target   string
	addrs    []netip.Addr
	port     uint16
	up, down atomic.Int64

	mu   sync.Mutex
	addr string
	err  error
}

func (f *forward) setErr(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// serveForward serves a plain HTTP request with an absolute URI.
func (p *Proxy) serveForward(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ev := Event{Time: start, Request: Request{Proto: ProtoHTTP}}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		ev.Target = truncate(r.RequestURI, maxShownHost)
		p.refuseHTTPText(w, &ev, http.StatusBadRequest, refusedRequest,
			"not a proxy request", "rein egress proxy: not a proxy request\n")
		return
	}
	if r.URL.Scheme != "http" {
		why := fmt.Sprintf("a plain request names the %s scheme, and only http is proxied", truncate(r.URL.Scheme, 16))
		if r.URL.Scheme == "https" {
			why = "a plain request names https, which goes through a CONNECT tunnel (use CONNECT host:443)"
		}
		ev.Target = truncate(r.URL.Host, maxShownHost)
		p.refuseHTTP(w, &ev, http.StatusBadRequest, refusedRequest, why)
		return
	}
	portStr := r.URL.Port()
	if portStr == "" {
		portStr = "80"
	}
	port, why := parsePort(portStr)
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	if why == "" {
		why = ambiguousPath(r.URL)
	}
	if why == "" && r.Header.Get("Upgrade") != "" {
		// An upgraded connection is a tunnel whose later requests the
		// proxy would not see.
		why = "a plain request asks to upgrade the connection, which would become a tunnel: use CONNECT"
	}
	req, lit, hwhy := newTarget(ProtoHTTP, r.URL.Hostname(), port, path)
	ev.Request = req
	if why != "" {
		ev.Target = truncate(strings.ToLower(r.URL.Host), maxShownHost) + path
	} else {
		why = hwhy
	}
	ctx := r.Context()
	addrs, ok := p.admitHTTP(ctx, w, &ev, req, lit, why)
	if !ok {
		return
	}

	f := &forward{target: req.Target, addrs: addrs, port: req.Port}
	completed := false
	defer func() {
		// Deferred so that it runs too when the ReverseProxy aborts the
		// response with http.ErrAbortHandler.
		f.mu.Lock()
		ev.Addr = f.addr
		if f.err != nil {
			ev.Err = f.err.Error()
		} else if !completed {
			ev.Err = "the response was cut short"
		}
		f.mu.Unlock()
		ev.Up, ev.Down = f.up.Load(), f.down.Load()
		ev.Duration = time.Since(start)
		p.policy.Record(ev)
	}()
	p.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(ctx, forwardKey{}, f)))
	completed = true
}

// rewrite makes a plain request's outbound copy the client's request as
// it was sent, less the hop-by-hop headers the ReverseProxy strips
// (Connection and what it names, Proxy-Connection, Proxy-Authorization,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade): it puts back the
// forwarding headers and the query the ReverseProxy cleans.
func rewrite(pr *httputil.ProxyRequest) {
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
}

// dialForward is the forwarding transport's dial: it connects only to
// the addresses checked for the request being forwarded.
func (p *Proxy) dialForward(ctx context.Context, network, _ string) (net.Conn, error) {
	f, ok := ctx.Value(forwardKey{}).(*forward)
	if !ok {
		return nil, fmt.Errorf("netproxy: a %s dial without checked addresses", network)
	}
	c, addr, id, err := p.dialChecked(ctx, f.addrs, f.port)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.addr = addr
	f.mu.Unlock()
	return &forwardConn{Conn: c, p: p, id: id, f: f}, nil
}

// forwardConn is an upstream connection of a plain request; it counts
// the bytes each way.
type forwardConn struct {
	net.Conn
	p    *Proxy
	id   uint64
	f    *forward
	once sync.Once
}

func (c *forwardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.f.down.Add(int64(n))
	return n, err
}

func (c *forwardConn) Write(b []byte) (int, error) {
	// Counted before it is sent, so that the count is in when the
	// response to it is: the transport writes in a goroutine of its own.
	c.f.up.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	c.f.up.Add(int64(n - len(b)))
	return n, err
}

func (c *forwardConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.p.untrackConn(c.id) })
	return err
}

// forwardError answers a plain request the transport could not complete.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	target := truncate(r.URL.Host, maxShownHost)
	if f, ok := r.Context().Value(forwardKey{}).(*forward); ok {
		f.setErr(err)
		target = f.target
	}
	writeText(w, http.StatusBadGateway, "", fmt.Sprintf("rein: %s %s failed: %v\n", ProtoHTTP, target, err))
}

// refusePolicy answers and records a policy refusal.
func (p *Proxy) refusePolicy(w http.ResponseWriter, ev *Event) {
	reason, body := policyRefusal(ev.Request, ev.Verdict)
	token := ev.Verdict.Rule
	if token == "" {
		token = refusedPolicy
	}
	p.refuseHTTPText(w, ev, http.StatusForbidden, token, reason, body)
}

// policyRefusal is the reason of a policy refusal, and the body of the
// answer that says it.
func policyRefusal(req Request, v Verdict) (reason, body string) {
	reason = v.Reason
	if reason == "" {
		reason = "not allowed"
	}
	var attr []string
	if v.Rule != "" {
		attr = append(attr, fmt.Sprintf("rule %q", v.Rule))
	}
	if v.Layer != "" {
		attr = append(attr, "layer "+v.Layer)
	}
	if v.File != "" {
		attr = append(attr, v.File)
	}
	body = fmt.Sprintf("rein: %s %s refused: %s", req.Proto, req.Target, reason)
	if len(attr) > 0 {
		body += " (" + strings.Join(attr, ", ") + ")"
	}
	return reason, body + "\n"
}

// refuseHTTP answers and records a refusal of the proxy's own.
func (p *Proxy) refuseHTTP(w http.ResponseWriter, ev *Event, status int, token, why string) {
	body := fmt.Sprintf("rein: %s %s refused: %s\n", ev.Proto, ev.Target, why)
	p.refuseHTTPText(w, ev, status, token, why, body)
}

func (p *Proxy) refuseHTTPText(w http.ResponseWriter, ev *Event, status int, token, why, body string) {
	ev.Refused = why
	ev.Duration = time.Since(ev.Time)
	p.policy.Record(*ev)
	writeText(w, status, token, body)
}

// failHTTP answers and records a permitted connection that could not be
// made (resolution or dial).
func (p *Proxy) failHTTP(w http.ResponseWriter, ev *Event, err error) {
	ev.Err = err.Error()
	ev.Duration = time.Since(ev.Time)
	p.policy.Record(*ev)
	writeText(w, http.StatusBadGateway, "", fmt.Sprintf("rein: %s %s failed: %v\n", ev.Proto, ev.Target, err))
}

func writeText(w http.ResponseWriter, status int, token, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("X-Content-Type-Options", "nosniff")
	if token != "" {
		h.Set("X-Rein-Refused", token)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// readRequestHead reads (and drops) a request's head from c, at most
// maxHeaderBytes of it.
func readRequestHead(c io.Reader) {
	br := bufio.NewReaderSize(io.LimitReader(c, maxHeaderBytes), 4096)
	http.ReadRequest(br)
}

// ambiguousPath says why a request's path could mean another path to the
// server than to the policy: dot segments, empty segments, an encoded
// slash, backslash or dot, which servers resolve each their own way. Such
// a request is refused rather than decided.
func ambiguousPath(u *url.URL) string {
	escaped := strings.ToLower(u.EscapedPath())
	for _, enc := range []string{"%2f", "%5c", "%2e", "%00"} {
		if strings.Contains(escaped, enc) {
			return fmt.Sprintf("the path holds %s (an encoded %s), which servers decode each their own way", enc, map[string]string{"%2f": "slash", "%5c": "backslash", "%2e": "dot", "%00": "NUL"}[enc])
		}
	}
	if strings.Contains(u.Path, ";") {
		// "/public/..;/admin" is "/admin" to Tomcat, Jetty and Spring.
		return "the path holds a ; (path parameters), which some servers strip before they resolve the path"
	}
	if strings.Contains(u.Path, "%") {
		return "the path still holds a % once decoded (encoded twice), which some servers decode again"
	}
	if strings.Contains(u.Path, "\\") {
		return "the path holds a backslash, which some servers take for a slash"
	}
	if strings.Contains(u.Path, "//") {
		return "the path holds an empty segment (//), which servers resolve each their own way"
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "the path holds a dot segment (" + seg + "), which would make another path of it than the one decided"
		}
	}
	return ""
}

// admitHTTP answers a request whose host is malformed (why), that the
// policy refuses, or whose addresses may not be reached, and records it;
// otherwise it returns the checked addresses to dial.
func (p *Proxy) admitHTTP(ctx context.Context, w http.ResponseWriter, ev *Event, req Request, lit netip.Addr, why string) ([]netip.Addr, bool) {
	if why != "" {
		p.refuseHTTP(w, ev, http.StatusBadRequest, refusedHost, why)
		return nil, false
	}
	v := p.policy.Decide(ctx, req)
	ev.Verdict = v
	if !v.Allow {
		p.refusePolicy(w, ev)
		return nil, false
	}
	addrs, why, err := p.checkedAddrs(ctx, req.Host, lit, req.Port, v)
	if err != nil {
		p.failHTTP(w, ev, err)
		return nil, false
	}
	if why != "" {
		p.refuseHTTP(w, ev, http.StatusForbidden, refusedAddress, why)
		return nil, false
	}
	return addrs, true
}

// AmbiguousPath says why u's path is one servers resolve each their own
// way (an encoded slash, backslash, dot or NUL, a dot segment, an empty
// segment, path parameters, a double encoding), or "": the web tools
// refuse such a URL as the proxy refuses such a request, and decide the
// decoded path.
func AmbiguousPath(u *url.URL) string { return ambiguousPath(u) }
