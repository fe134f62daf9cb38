// Package netproxy is rein's egress proxy: the one way out of a sandbox
// whose network mode is proxy. It serves HTTP CONNECT, absolute-URI HTTP
// and SOCKS5 (CONNECT) on any listener it is given (a unix socket bound
// into the sandbox, or a loopback TCP port on the rungs without a network
// namespace), asks its Policy about every connection's target before it
// resolves or dials anything, refuses loopback, private, link-local,
// reserved and metadata addresses unless the grant named the host exactly,
// dials only the addresses it checked (so a name cannot be rebound between
// the check and the connection), and records every connection.
//
// Every CONNECT tunnel and SOCKS5 connection is recorded once, when it
// ends; every plain HTTP request once, when it is answered; a refusal
// (by the policy, by the address check, of a malformed or ambiguous
// host, or beyond Options.MaxConns) at once. A refusal answers 403 (400
// for a malformed host, 503 beyond the limit) with a text/plain body
// saying why and an X-Rein-Refused header naming the rule (or "address",
// "host", "request", "limit"), or SOCKS5 reply 0x02 (0x01).
//
// The package owns the mechanism only: it never learns why a host was
// allowed. It must not import rein's policy, tool or trace packages, and
// imports nothing of rein at all.
package netproxy

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// The protocols a client may speak to the proxy.
const (
	ProtoConnect = "connect" // HTTP CONNECT host:port, then a tunnel
	ProtoHTTP    = "http"    // a plain HTTP request with an absolute URI
	ProtoSOCKS5  = "socks5"  // SOCKS5 CONNECT
)

// Request is one connection (or, for plain HTTP, one request) a client
// asked for, as the policy is asked about it.
type Request struct {
	Proto string `json:"proto"`
	// Host is the host as the client named it: lower case, without a
	// trailing dot, an IP literal without brackets.
	Host string `json:"host"`
	Port uint16 `json:"port"`
	// Path is the request's path, for plain HTTP only.
	Path string `json:"path,omitempty"`
	// Target is what the policy decides: "host:port", or for plain HTTP
	// "host:port/path" (IPv6 literals in brackets).
	Target string `json:"target"`
}

// Verdict is the policy's answer about a Request.
type Verdict struct {
	Allow bool `json:"allow"`
	// ByName says that the grant names this host exactly (no wildcard,
	// no preset): only such a grant lets a connection reach a loopback,
	// private, link-local or reserved address, and a metadata address
	// only when the client named that address itself.
	ByName bool `json:"by_name,omitempty"`
	// Rule, Layer and File attribute the decision; Reason says it in
	// words. A refusal's body carries them.
	Rule   string `json:"rule,omitempty"`
	Layer  string `json:"layer,omitempty"`
	File   string `json:"file,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Event is one connection as it ended, recorded once.
type Event struct {
	Time time.Time `json:"time"`
	Request
	Verdict Verdict `json:"verdict"`
	// Addr is the address connected to ("ip:port"); empty when none was.
	Addr string `json:"addr,omitempty"`
	// Refused says why the proxy refused the connection (the policy's
	// reason, or the address check's); empty when it was made.
	Refused string `json:"refused,omitempty"`
	// Err is how a permitted connection failed (resolution, dial, I/O).
	Err string `json:"error,omitempty"`
	// Up and Down are the bytes sent to and received from the upstream.
	Up       int64         `json:"up"`
	Down     int64         `json:"down"`
	Duration time.Duration `json:"duration_ns"`
}

// Policy decides and records connections. Decide may block (a human
// approving); it must return when ctx ends. Both may be called from many
// goroutines at once.
type Policy interface {
	Decide(ctx context.Context, r Request) Verdict
	Record(e Event)
}

// Resolver resolves the names the policy allowed; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Proxy.
type Options struct {
	// Policy is required.
	Policy Policy
	// Resolver resolves allowed names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address ("ip:port"); nil is a
	// net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxConns bounds the connections open at once; zero is 128. A
	// plain HTTP response is copied through a 256 KiB buffer, lent only
	// while its body is copied, so a proxy holds at most MaxConns of them.
	MaxConns int
}
