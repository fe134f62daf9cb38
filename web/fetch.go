// Package web owns rein's two web tools' work: fetching a URL from rein's
// own process under a decision of every hop's host (the caller's, made by
// the policy's net rules), with the address connected to checked as the
// egress proxy checks it, bounded in size and time; turning what came
// back into text a model reads (HTML's main content with its links as
// references, JSON and text as they are, a PDF in slices of pages); and
// searching through a SearxNG-compatible JSON API.
//
// web imports no rein package but sandbox/netproxy's address classes and
// internal/netname; the tool layer imports it and decides.
package web

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/reinhq/rein/internal/netname"
	"github.com/reinhq/rein/sandbox/netproxy"
)

// Defaults of a Fetcher's bounds.
const (
	DefaultMaxBytes  = 10 << 20
	DefaultTimeout   = 30 * time.Second
	DefaultRedirects = 5
)

// Decision is the caller's decision of one hop: whether it may be
// fetched, why, and whether an allow rule named its host exactly (which
// alone lets it reach a loopback, private, link-local or reserved
// address).
type Decision struct {
	Allow  bool
	ByName bool
	Reason string
}

// Decider decides a hop: target is host:port/path, as the policy's net
// rules read it.
type Decider func(ctx context.Context, target string) Decision

// Fetcher fetches URLs. Every hop (the URL, each redirect) is decided by
// Decide before anything is resolved; the address each connection goes
// to is checked when it is made (a name that resolves to a private
// address reaches it only when Decide said ByName; a metadata address
// only when the URL names that address itself), so DNS cannot switch it
// after the decision. No proxy is taken from the environment.
type Fetcher struct {
	Decide    Decider
	MaxBytes  int64         // of the body, decompressed; 0 is DefaultMaxBytes
	Timeout   time.Duration // of the whole fetch; 0 is DefaultTimeout
	Redirects int           // followed at most; 0 is DefaultRedirects
	// UserAgent is sent with each request; "" sends rein's.
	UserAgent string
}

// Hop is one request of a fetch: its URL, and the decision or the
// status it got.
type Hop struct {
	URL    string `json:"url"`
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Page is what a fetch got: the final URL, its status and content type,
// the body (at most MaxBytes of it, decompressed) and whether it was cut
// there, and the hops it took.
type Page struct {
	URL         string `json:"url"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"-"`
	Bytes       int64  `json:"bytes"`
	Truncated   bool   `json:"truncated,omitempty"`
	Hops        []Hop  `json:"hops,omitempty"`
}

// Refusal is a fetch refused: by the decision of a hop, or by the
// address it would connect to.
type Refusal struct {
	URL    string
	Reason string
}

func (r *Refusal) Error() string { return fmt.Sprintf("%q: %s", r.URL, r.Reason) }

// Target is the policy's net target of u: host:port/path, the port
// written always, the path decoded (the query left out); a path servers
// resolve each their own way (netproxy.AmbiguousPath) is refused.
func Target(u *url.URL) (string, error) {
	host, _, why := netname.Host(u.Hostname())
	if why != "" {
		return "", errors.New(why)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("port %q", port)
	}
	if why := netproxy.AmbiguousPath(u); why != "" {
		return "", errors.New(why)
	}
	if strings.ContainsFunc(u.Path, unicode.IsControl) {
		return "", errors.New("the path holds a control character once decoded")
	}
	hp := net.JoinHostPort(host, port)
	// The decoded path, as the proxy decides a plain request's: /%61dmin
	// is /admin to every server, and to the rules.
	path := u.Path
	if path == "" {
		path = "/"
	}
	return hp + path, nil
}

// Check parses raw as a URL a web tool takes: http or https, a host, no
// user or password in it.
func Check(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("the scheme %q: only http and https are fetched", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("the URL names no host")
	case u.User != nil:
		return nil, errors.New("a URL with a user or a password is not fetched (it would send them to the host)")
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

type decisionKey struct{}

// hopState is what the dialer of one hop needs: the decision, and the
// address the URL names, when it names one.
type hopState struct {
	byName bool
	lit    netip.Addr
}

// Fetch fetches raw, following redirects each decided in turn.
func (f *Fetcher) Fetch(ctx context.Context, raw string) (*Page, error) {
	u, err := Check(raw)
	if err != nil {
		return nil, &Refusal{URL: raw, Reason: err.Error()}
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	maxRedirects := f.Redirects
	if maxRedirects <= 0 {
		maxRedirects = DefaultRedirects
	}
	page := &Page{}
	client := &http.Client{Transport: f.transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for hop := 0; ; hop++ {
		state, err := f.decide(ctx, u)
		page.Hops = append(page.Hops, Hop{URL: u.String()})
		if err != nil {
			page.Hops[len(page.Hops)-1].Reason = err.Error()
			return page, err
		}
		req, err := http.NewRequestWithContext(context.WithValue(ctx, decisionKey{}, state), http.MethodGet, u.String(), nil)
		if err != nil {
			return page, &Refusal{URL: u.String(), Reason: err.Error()}
		}
		ua := f.UserAgent
		if ua == "" {
			ua = "rein-fetch/1 (+https://github.com/reinhq/rein)"
		}
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Accept", "text/html, application/xhtml+xml, application/json, text/plain, application/pdf;q=0.9, */*;q=0.5")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := client.Do(req)
		if err != nil {
			var r *Refusal
			if errors.As(err, &r) {
				return page, r
			}
			return page, fmt.Errorf("fetching %q: %w", u.Redacted(), err)
		}
		page.Hops[len(page.Hops)-1].Status = resp.StatusCode
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			if hop >= maxRedirects {
				return page, fmt.Errorf("more than %d redirects (the last to %q)", maxRedirects, resp.Header.Get("Location"))
			}
			next, err := u.Parse(resp.Header.Get("Location"))
			if err != nil {
				return page, fmt.Errorf("a redirect to %q: %v", resp.Header.Get("Location"), err)
			}
			if u, err = Check(next.String()); err != nil {
				return page, &Refusal{URL: next.String(), Reason: "a redirect to it: " + err.Error()}
			}
			continue
		}
		defer resp.Body.Close()
		page.URL, page.Status = u.String(), resp.StatusCode
		page.ContentType = resp.Header.Get("Content-Type")
		body := io.Reader(resp.Body)
		if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				return page, fmt.Errorf("the gzip body of %q: %v", u.Redacted(), err)
			}
			body = zr
		}
		max := f.MaxBytes
		if max <= 0 {
			max = DefaultMaxBytes
		}
		// At most max bytes, decompressed, are read: the rest is never
		// read (nor held), and the connection closed.
		data, err := io.ReadAll(io.LimitReader(body, max+1))
		if int64(len(data)) > max {
			data, page.Truncated = data[:max], true
		} else if err != nil {
			return page, fmt.Errorf("reading %q: %w", u.Redacted(), err)
		}
		page.Body, page.Bytes = data, int64(len(data))
		if page.ContentType == "" {
			page.ContentType = http.DetectContentType(data)
		}
		return page, nil
	}
}

// decide decides u's hop with Decide.
func (f *Fetcher) decide(ctx context.Context, u *url.URL) (hopState, error) {
	target, err := Target(u)
	if err != nil {
		return hopState{}, &Refusal{URL: u.String(), Reason: err.Error()}
	}
	if f.Decide == nil {
		return hopState{}, &Refusal{URL: u.String(), Reason: "nothing decides the web tools' hosts"}
	}
	d := f.Decide(ctx, target)
	if !d.Allow {
		return hopState{}, &Refusal{URL: u.String(), Reason: d.Reason}
	}
	_, lit, _ := netname.Host(u.Hostname())
	return hopState{byName: d.ByName, lit: lit}, nil
}

// transport is an HTTP transport with no proxy, whose dialer checks the
// address each connection goes to against the hop's decision.
func (f *Fetcher) transport() *http.Transport {
	return &http.Transport{
		Proxy:              nil,
		DisableCompression: true, // gzip is read here, bounded
		// Every hop dials anew: a connection kept from a hop decided by
		// name would carry the next, whose address is checked only when
		// it dials.
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  20 * time.Second,
		ForceAttemptHTTP2:      true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			state, _ := ctx.Value(decisionKey{}).(hopState)
			d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return &Refusal{URL: addr, Reason: "connecting to " + address + ": not an address"}
				}
				if why := AddrRefusal(ap.Addr(), state.byName, state.lit); why != "" {
					return &Refusal{URL: addr, Reason: fmt.Sprintf("%s connects to %s, %s", addr, ap.Addr(), why)}
				}
				return nil
			}}
			return d.DialContext(ctx, network, addr)
		},
	}
}

// AddrRefusal says why a hop decided with byName (and naming the address
// lit, when its URL names one) may not connect to a, or "": a loopback,
// private, link-local or reserved address only when an allow rule named
// the host exactly, a metadata address only when the URL names it.
func AddrRefusal(a netip.Addr, byName bool, lit netip.Addr) string {
	class := netproxy.Classify(a)
	switch {
	case class != "" && !byName:
		return "a " + class + " address, which only an allow rule naming the host exactly can reach"
	case class == "metadata" && (!lit.IsValid() || lit.WithZone("").Unmap() != a.WithZone("").Unmap()):
		return "a metadata address, which only a URL naming that address itself can reach"
	}
	return ""
}

// MediaType is the content type's media type, lower case ("" when it
// has none that parses).
func MediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}
