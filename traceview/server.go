// Package traceview owns rein trace serve: a local, read-only web view of
// a trace. It lists the runs (agent runs, launched and hook sessions, MCP
// sessions) and shows one run as a timeline of its model calls, tool
// calls with their verdicts and rules, diffs, gate attempts, requests and
// summaries, with its child runs and a chart of its tokens and cost, a
// page at a time so that a run of any length is never read whole.
//
// What it must hold to: it listens on loopback only; it answers only a
// request whose Host (and Origin, when sent) is its own address, so that
// no other site can reach it by rebinding a name; it answers only a
// browser that showed the token printed at its start, once, exchanged on
// that first visit for an HttpOnly, SameSite=Strict cookie whose path is
// the server's own random root (a browser sends a cookie of 127.0.0.1 to
// every port of it, but one of that path only to requests under it, which
// no other server is sent); it shows what the
// trace stores (redacted before it was written) and escapes every byte
// of it as text (html.go writes every value through one escape, and the SVG of numbers); every page is
// served under a Content-Security-Policy that runs no script but its own
// files (it has none) and loads nothing from elsewhere; and it never
// writes to the trace.
//
// traceview reads the trace through its SQL store and an agent run's
// state through the agent's own decoding (agent.StateHeader); it must not
// import the command line, and it runs nothing: no tool, no sandbox, no
// model, no write.
package traceview

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/trace/sqlstore"
)

//go:embed static
var assets embed.FS

// CSP is the Content-Security-Policy of every answer: the page's own
// style sheet, no script at all, nothing from any other origin, and no
// framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves one trace.
type Server struct {
	store *sqlstore.Store
	// token is shown in the URL printed at the start, once; cookie is what
	// the browser that showed it keeps.
	token, cookie string
	used          atomic.Bool
	// root is the path every page is under: a random one, the cookie's.
	root string
	// host is the address the browser names in Host: the listener's.
	host string
	ln   net.Listener
	srv  *http.Server
}

// ErrNotLoopback is the refusal of an address that is not the loopback
// interface's.
var ErrNotLoopback = errors.New("rein trace serve listens on the loopback interface only: give --addr as 127.0.0.1:PORT, [::1]:PORT or localhost:PORT")

// Listen opens the listener on addr, which must be a loopback address
// (127.0.0.0/8, ::1, or localhost, which is taken as 127.0.0.1), and
// makes the server's token. Port 0 takes a free port.
func Listen(store *sqlstore.Store, addr string) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || ip.Zone() != "" {
		return nil, fmt.Errorf("--addr %q: %w", addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return nil, err
	}
	s := &Server{store: store, ln: ln, token: random(), cookie: random(), root: "/" + random()[:32]}
	s.host = ln.Addr().String()
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	return s, nil
}

func random() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// URL is the address to open: it carries the token, which the first
// visit exchanges for a cookie.
func (s *Server) URL() string {
	return "http://" + s.host + s.root + "/?token=" + s.token
}

// cookieName is the session cookie's name.
const cookieName = "rein_trace"

// Serve answers until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.srv.Shutdown(shut)
	}()
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the server's answers, each behind the checks of the
// package comment.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.runsPage)
	mux.HandleFunc("GET /run/{run}", s.runPage)
	mux.HandleFunc("GET /run/{run}/step/{step}", s.stepPage)
	return s.guard(http.StripPrefix(s.root, mux))
}

// guard answers a request only from the browser the token was shown to,
// naming this server, and with the headers every answer carries.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !s.names(r.Host) {
			http.Error(w, "rein trace serve answers only requests for "+s.host+": this request names "+fmt.Sprintf("%q", r.Host), http.StatusMisdirectedRequest)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !(strings.HasPrefix(o, "http://") && s.names(strings.TrimPrefix(o, "http://"))) {
			http.Error(w, "rein trace serve answers only its own pages: the request came from "+fmt.Sprintf("%q", o), http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "rein trace serve is read-only", http.StatusMethodNotAllowed)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, s.root+"/")
		if !ok {
			http.Error(w, "not found: open the URL rein trace serve printed", http.StatusNotFound)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" {
			if subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) != 1 {
				http.Error(w, "the token is not this server's: open the URL rein trace serve printed", http.StatusUnauthorized)
				return
			}
			if !s.used.CompareAndSwap(false, true) {
				http.Error(w, "this URL's token was used already, by the browser it was first opened in: "+
					"to open the trace in another, stop rein trace serve and start it again for a new URL", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cookie, Path: s.root + "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			// The token leaves the address bar and the history, and the
			// browser stays under the root.
			q := r.URL.Query()
			q.Del("token")
			u := url.URL{Path: s.root + path.Clean("/"+strings.ReplaceAll(rest, "\\", "/")), RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(cookieName)
		if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.cookie)) != 1 {
			http.Error(w, "open the URL rein trace serve printed (it carries the token this page needs)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// names says whether host (a Host header, or an Origin's host) is this
// server's address: its own, or localhost with its port when it listens
// on 127.0.0.1. Any other name, a rebound one above all, is refused.
func (s *Server) names(host string) bool {
	if host == s.host {
		return true
	}
	port, ok := strings.CutPrefix(s.host, "127.0.0.1:")
	return ok && host == "localhost:"+port
}
