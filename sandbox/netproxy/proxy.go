package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	defaultMaxConns    = 128
	dialTimeout        = 10 * time.Second
	handshakeTimeout   = 30 * time.Second // SOCKS5 handshake, and the first byte of any connection
	headerTimeout      = 30 * time.Second // an HTTP request's headers
	idleTimeout        = 2 * time.Minute  // an HTTP keep-alive connection between requests (not tunnels)
	maxHeaderBytes     = 64 << 10
	resolveTimeout     = 30 * time.Second
	maxResolved        = 32              // addresses of a name considered
	overLimitTimeout   = 5 * time.Second // to answer a connection beyond MaxConns
	maxOverLimit       = 64              // connections beyond MaxConns answered at once; more are just closed
	socksVersion       = 0x05
	connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"
)

// aLongTimeAgo is a deadline in the past, to interrupt a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

var discardLog = log.New(io.Discard, "", 0)

// errClosed is how a connection attempt fails once the Proxy is closed.
var errClosed = errors.New("netproxy: proxy closed")

// Proxy is an egress proxy serving HTTP CONNECT, absolute-URI HTTP and
// SOCKS5 CONNECT on the listeners given to Serve. It asks its Policy
// about every target before resolving or dialing anything, dials only
// addresses it checked, and records every connection, plain HTTP
// request and refusal with the Policy.
//
// A Proxy is safe for use by many goroutines; Serve may be called for
// several listeners at once.
type Proxy struct {
	policy   Policy
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns int64

	// ctx ends when the Proxy closes; every Decide, lookup and dial
	// runs under it.
	ctx    context.Context
	cancel context.CancelFunc

	active    atomic.Int64 // client connections counted against maxConns
	overLimit atomic.Int64 // connections beyond maxConns being answered

	mu        sync.Mutex
	closed    bool
	listeners map[uint64]listener
	conns     map[uint64]io.Closer // every open client and upstream connection
	nextID    uint64
	wg        sync.WaitGroup // every handler of the Proxy's

	httpOnce  sync.Once
	httpLn    *chanListener
	httpSrv   *http.Server
	forwarder *httputil.ReverseProxy
	transport *http.Transport
}

// New returns a Proxy configured by o; o.Policy is required.
func New(o Options) (*Proxy, error) {
	if o.Policy == nil {
		return nil, errors.New("netproxy: Options.Policy is nil")
	}
	p := &Proxy{
		policy:    o.Policy,
		resolver:  o.Resolver,
		dial:      o.Dial,
		maxConns:  int64(o.MaxConns),
		listeners: make(map[uint64]listener),
		conns:     make(map[uint64]io.Closer),
		httpLn:    newChanListener(),
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dial == nil {
		// A net.Dialer never goes through a proxy.
		d := &net.Dialer{Timeout: dialTimeout}
		p.dial = d.DialContext
	}
	if p.maxConns <= 0 {
		p.maxConns = defaultMaxConns
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		Proxy:       nil, // never an environment proxy
		DialContext: p.dialForward,
		// Every request is dialed to the addresses checked for it, so no
		// connection is kept for another request.
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
	}
	p.forwarder = &httputil.ReverseProxy{
		Rewrite: rewrite,
		// A response of unknown length (a stream) reaches the client at
		// every write, the ReverseProxy's own rule; one of known length
		// is flushed every 20 ms, so that a download goes in large
		// writes and a slow upstream's first bytes still arrive at once.
		FlushInterval: 20 * time.Millisecond,
		BufferPool:    bufferPool{},
		Transport:     p.transport,
		ErrorHandler:  p.forwardError,
		ErrorLog:      discardLog,
	}
	p.httpSrv = &http.Server{
		Handler:                      http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout:            headerTimeout,
		IdleTimeout:                  idleTimeout,
		MaxHeaderBytes:               maxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     discardLog,
		BaseContext:                  func(net.Listener) context.Context { return p.ctx },
	}
	return p, nil
}

// Serve accepts connections on l and serves them until the Proxy is
// closed, when it returns nil, or until l fails, when it returns the
// error. It closes l when it returns. It may be called for several
// listeners, at once or in turn; called after Close, it closes l and
// returns nil.
func (p *Proxy) Serve(l net.Listener) error {
	id, ok := p.addListener(l)
	if !ok {
		l.Close()
		return nil
	}
	defer func() {
		p.mu.Lock()
		delete(p.listeners, id)
		p.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if !retryableAccept(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return nil
			}
			continue
		}
		backoff = 0
		p.accept(c)
	}
}

// retryableAccept says whether an Accept error is a passing shortage
// (of descriptors, buffers) rather than the listener's end.
func retryableAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var t interface{ Timeout() bool }
	if errors.As(err, &t) && t.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// Close closes every listener and every open connection (tunnels in
// mid-transfer included), cancels the context of every pending Decide,
// lookup and dial, and waits for the handlers to return, so it must not
// be called from the Policy's methods. It may be called more than once;
// it returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	listeners := make([]net.Listener, 0, len(p.listeners))
	for _, l := range p.listeners {
		listeners = append(listeners, l.l)
	}
	conns := make([]io.Closer, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()

	p.cancel()
	for _, l := range listeners {
		l.Close()
	}
	p.httpLn.Close()
	p.httpSrv.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
	p.transport.CloseIdleConnections()
	return nil
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// listener is a listener Serve serves, with its TCP address if it has one.
type listener struct {
	l    net.Listener
	addr netip.AddrPort
}

func (p *Proxy) addListener(l net.Listener) (uint64, bool) {
	var ap netip.AddrPort
	if ta, ok := l.Addr().(*net.TCPAddr); ok {
		ap = ta.AddrPort()
		ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	p.nextID++
	p.listeners[p.nextID] = listener{l, ap}
	return p.nextID, true
}

// isSelf says whether a:port is (or, for a listener on an unspecified
// address, may be) one of the Proxy's own listening addresses.
func (p *Proxy) isSelf(a netip.Addr, port uint16) bool {
	a = a.Unmap().WithZone("")
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.listeners {
		ap := l.addr
		if !ap.IsValid() || ap.Port() != port {
			continue
		}
		if ap.Addr() == a || ap.Addr().IsUnspecified() && (a.IsLoopback() || a.IsUnspecified()) {
			return true
		}
	}
	return false
}

// enter counts a handler in p.wg, unless the Proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// trackConn registers c to be closed by Close, unless the Proxy is
// closed already.
func (p *Proxy) trackConn(c io.Closer) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	p.nextID++
	p.conns[p.nextID] = c
	return p.nextID, true
}

func (p *Proxy) untrackConn(id uint64) {
	p.mu.Lock()
	delete(p.conns, id)
	p.mu.Unlock()
}

// accept starts serving a connection Serve accepted.
func (p *Proxy) accept(raw net.Conn) {
	c := &clientConn{Conn: raw, p: p}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		raw.Close()
		return
	}
	p.nextID++
	c.id = p.nextID
	p.conns[c.id] = raw
	p.wg.Add(1)
	p.mu.Unlock()

	if p.active.Add(1) <= p.maxConns {
		c.counted = true
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
		return
	}
	p.active.Add(-1)
	go func() {
		defer p.wg.Done()
		p.refuseOverLimit(c)
	}()
}

// handle sniffs a client connection's first byte and serves it as
// SOCKS5 (0x05) or HTTP.
func (p *Proxy) handle(c *clientConn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	var b [1]byte
	if _, err := io.ReadFull(c.Conn, b[:]); err != nil {
		c.Close()
		return
	}
	c.prefix = b[:]
	if b[0] == socksVersion {
		p.serveSOCKS(c)
		return
	}
	c.SetDeadline(time.Time{})
	p.startHTTP()
	select {
	case p.httpLn.ch <- c:
	case <-p.ctx.Done():
		c.Close()
	}
}

// startHTTP starts the HTTP server the sniffed HTTP connections are
// handed to, once.
func (p *Proxy) startHTTP() {
	p.httpOnce.Do(func() {
		if !p.enter() {
			return
		}
		go func() {
			defer p.wg.Done()
			p.httpSrv.Serve(p.httpLn)
		}()
	})
}

// refuseOverLimit answers a connection beyond MaxConns with 503 (HTTP)
// or reply 0x01 (SOCKS5), records the refusal and closes it.
func (p *Proxy) refuseOverLimit(c *clientConn) {
	defer c.Close()
	defer p.overLimit.Add(-1)
	start := time.Now()
	ev := Event{Time: start, Refused: fmt.Sprintf("too many connections (at most %d at once)", p.maxConns)}
	record := func(proto string) {
		ev.Proto = proto
		ev.Duration = time.Since(start)
		p.policy.Record(ev)
	}
	if p.overLimit.Add(1) > maxOverLimit {
		record("")
		return
	}
	c.SetDeadline(time.Now().Add(overLimitTimeout))
	var b [1]byte
	if _, err := io.ReadFull(c.Conn, b[:]); err != nil {
		record("")
		return
	}
	c.prefix = b[:]
	if b[0] == socksVersion {
		record(ProtoSOCKS5)
		if _, rep, err := socksHandshake(c); err == nil || rep != 0 {
			writeSOCKSReply(c, repGeneralFailure, nil)
		}
		return
	}
	record(ProtoHTTP)
	readRequestHead(c)
	body := "rein: too many connections through the egress proxy\n"
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nX-Rein-Refused: limit\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	lingerClose(c.Conn)
}

// lingerClose half-closes c and reads what the client still sends, for
// a moment and a bounded amount, so that closing it does not reset the
// connection before the client has read the answer.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		io.Copy(io.Discard, io.LimitReader(c, maxHeaderBytes))
	}
}

// dialChecked dials addrs (checked addresses) at port in turn until one
// connects. The connection is registered to be closed by Close; the
// caller closes it with closeUpstream.
func (p *Proxy) dialChecked(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, string, uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	var last error
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			if p.ctx.Err() != nil {
				err = errClosed
			}
			return nil, "", 0, err
		}
		addr := netip.AddrPortFrom(a, port).String()
		c, err := p.dial(ctx, "tcp", addr)
		if err == nil && c == nil {
			err = errors.New("dial " + addr + ": no connection")
		}
		if err != nil {
			last = err
			continue
		}
		id, ok := p.trackConn(c)
		if !ok {
			c.Close()
			return nil, "", 0, errClosed
		}
		return c, addr, id, nil
	}
	if last == nil {
		last = errors.New("no address to dial")
	}
	return nil, "", 0, last
}

func (p *Proxy) closeUpstream(c net.Conn, id uint64) {
	c.Close()
	p.untrackConn(id)
}

// checkedAddrs resolves host (an allowed one) unless it is the IP
// literal lit, and returns the addresses a connection permitted by v may
// reach, in order. why is the refusal when there are none; err is how
// the resolution failed.
func (p *Proxy) checkedAddrs(ctx context.Context, host string, lit netip.Addr, port uint16, v Verdict) (addrs []netip.Addr, why string, err error) {
	var resolved []netip.Addr
	if lit.IsValid() {
		resolved = []netip.Addr{lit}
	} else {
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		resolved, err = p.resolver.LookupNetIP(ctx, "ip", host)
		cancel()
		if err != nil {
			return nil, "", err
		}
		if len(resolved) == 0 {
			return nil, "", fmt.Errorf("lookup %s: no addresses", host)
		}
		if len(resolved) > maxResolved {
			resolved = resolved[:maxResolved]
		}
	}
	var first netip.Addr
	for _, a := range resolved {
		a = a.Unmap()
		r := p.addrRefusal(a, port, lit, v)
		if r == "" {
			addrs = append(addrs, a)
		} else if why == "" {
			first, why = a, r
		}
	}
	if len(addrs) > 0 {
		return addrs, "", nil
	}
	verb := "resolves to"
	if lit.IsValid() {
		verb = "is"
	}
	return nil, fmt.Sprintf("it %s %s, %s", verb, first, why), nil
}

// addrRefusal says why a connection permitted by v may not reach a:port,
// or "" if it may.
func (p *Proxy) addrRefusal(a netip.Addr, port uint16, lit netip.Addr, v Verdict) string {
	if !a.IsValid() {
		return "not an address"
	}
	class := classify(a)
	if class != "" && !v.ByName {
		return article(class) + " address, which only a grant naming the host exactly can reach"
	}
	if class == classMetadata && (!lit.IsValid() || lit.WithZone("") != a.WithZone("")) {
		return "a metadata address, which only a connection naming that address itself can reach"
	}
	if p.isSelf(a, port) {
		return "the proxy's own address, which it does not connect to through itself"
	}
	return ""
}

// tunnel copies between client and upstream both ways until both
// directions end, half-closing each side as its input ends. pending is
// what the client sent before the tunnel opened. It returns the bytes
// sent up and down, and the first error that was not a close.
func tunnel(client net.Conn, pending []byte, upstream net.Conn) (up, down int64, err error) {
	var upErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if len(pending) > 0 {
			n, err := upstream.Write(pending)
			up += int64(n)
			if err != nil {
				upErr = err
				client.Close()
				upstream.Close()
				return
			}
		}
		n, err := io.Copy(upstream, client)
		up += n
		if err != nil {
			upErr = err
			client.Close()
			upstream.Close()
			return
		}
		closeWrite(upstream)
	}()
	down, downErr := io.Copy(client, upstream)
	if downErr != nil {
		client.Close()
		upstream.Close()
	} else {
		closeWrite(client)
	}
	<-done
	for _, e := range []error{upErr, downErr} {
		// A side that hung up, even abruptly (EPIPE, ECONNRESET: a
		// client closing with the server's last words unread), or that
		// the other side's error closed, ends the tunnel; it is no
		// failure of it.
		if e != nil && !errors.Is(e, net.ErrClosed) && !errors.Is(e, syscall.EPIPE) && !errors.Is(e, syscall.ECONNRESET) {
			return up, down, e
		}
	}
	return up, down, nil
}

// closeWrite signals the end of input to c's peer, closing c altogether
// if it cannot be half-closed.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// watchClose cancels cancel when the client closes c (or its connection
// fails) while the proxy is not reading from it. stop ends the watch and
// returns any byte the client sent meanwhile, to be forwarded.
func watchClose(c net.Conn, cancel context.CancelFunc) (stop func() []byte) {
	var (
		b       [1]byte
		n       int
		stopped atomic.Bool
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		var err error
		n, err = c.Read(b[:])
		if n == 0 && err != nil && !stopped.Load() {
			cancel()
		}
	}()
	var once sync.Once
	return func() []byte {
		once.Do(func() {
			stopped.Store(true)
			c.SetReadDeadline(aLongTimeAgo)
			<-done
			c.SetReadDeadline(time.Time{})
		})
		if n == 1 {
			return b[:1]
		}
		return nil
	}
}

// clientConn is a client's connection: it gives back the sniffed byte
// first, and releases the connection's place under MaxConns when closed.
type clientConn struct {
	net.Conn
	p       *Proxy
	id      uint64
	counted bool
	prefix  []byte // read before Conn; only one reader at a time
	once    sync.Once
}

func (c *clientConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.p.untrackConn(c.id)
		if c.counted {
			c.p.active.Add(-1)
		}
	})
	return err
}

// chanListener is the net.Listener the HTTP server accepts the sniffed
// HTTP connections from.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return chanAddr{} }

type chanAddr struct{}

func (chanAddr) Network() string { return "netproxy" }
func (chanAddr) String() string  { return "netproxy" }

// copyBuffer is the size of the buffers a plain HTTP response is copied
// through, lent only while a body is copied: a connection at rest holds
// none.
const copyBuffer = 256 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }}

// bufferPool lends the ReverseProxy its copy buffers.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
