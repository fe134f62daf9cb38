//go:build unix

package launch

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/reinhq/rein/sandbox/netproxy"
)

// Host is a host a session may reach: a name and a port.
type Host struct {
	Name string
	Port uint16
}

func (h Host) String() string {
	return net.JoinHostPort(h.Name, strconv.Itoa(int(h.Port)))
}

// Strings are the hosts as host:port.
func Strings(hosts []Host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.String()
	}
	return out
}

// URLHost is the host of a model API's base URL (what, names the
// variable it came from): its name, lower case and without a trailing
// dot, and its port (the scheme's when it names none).
func URLHost(what, base string) (Host, error) {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Host{}, fmt.Errorf("%s %q is not an http or https URL", what, base)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if u.Port() != "" {
		if port, err = strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
			return Host{}, fmt.Errorf("%s %q has a bad port", what, base)
		}
	}
	return Host{strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), uint16(port)}, nil
}

// AllowHost reads one --allow-host: a host, or host:port (443 when it
// names none); no wildcard, no path.
func AllowHost(a string) (Host, error) {
	h, p, err := net.SplitHostPort(a)
	port := 443
	if err != nil {
		h = a
	} else if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
		port = n
	} else {
		return Host{}, fmt.Errorf("--allow-host %q: a bad port", a)
	}
	if h == "" || strings.ContainsAny(h, "*/ ") {
		return Host{}, fmt.Errorf("--allow-host %q: name one host (no wildcard, no path)", a)
	}
	return Host{strings.ToLower(strings.TrimSuffix(h, ".")), uint16(port)}, nil
}

// Egress lets a session reach its hosts, each by name and port, and
// nothing else.
type Egress struct {
	Hosts []Host
	// OnEvent records each connection's event.
	OnEvent func(netproxy.Event)
}

// Decide allows a connection to one of the hosts, by name.
func (e *Egress) Decide(_ context.Context, r netproxy.Request) netproxy.Verdict {
	for _, h := range e.Hosts {
		if r.Host == h.Name && r.Port == h.Port {
			return netproxy.Verdict{Allow: true, ByName: true, Rule: h.String(), Layer: "launch", Reason: "the session's model API (or --allow-host)"}
		}
	}
	return netproxy.Verdict{Layer: "launch", Reason: fmt.Sprintf("a launched session reaches only %s", strings.Join(Strings(e.Hosts), ", "))}
}

// Record passes the event on.
func (e *Egress) Record(ev netproxy.Event) {
	if e.OnEvent != nil {
		e.OnEvent(ev)
	}
}
