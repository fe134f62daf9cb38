package policy

import (
	"net/netip"
	"strings"
)

// netTarget is a net target taken apart: the host's name (an IPv6
// literal without brackets), "host:port" as written, and the path of a
// plain HTTP request ("" for a connection, which has none).
type netTarget struct {
	name, hostport, path string
}

func splitNetTarget(t string) netTarget {
	// A host compares without case; a path byte for byte (/pub and /PUB
	// are different paths on most servers).
	hostport, path, found := strings.Cut(t, "/")
	hostport = strings.ToLower(hostport)
	if found {
		path = "/" + path
	}
	name := hostport
	switch {
	case strings.HasPrefix(hostport, "["):
		if i := strings.IndexByte(hostport, ']'); i > 0 {
			name = hostport[1:i]
		}
	case strings.Count(hostport, ":") == 1:
		name, _, _ = strings.Cut(hostport, ":")
	}
	return netTarget{name: name, hostport: hostport, path: path}
}

// netPattern is a net rule's pattern taken apart the same way: a host
// part ("host", "host:port", "*.domain", "[v6]" or "[v6]:port") and, for
// a rule about plain HTTP, a path part.
type netPattern struct {
	host, path string
	hasPath    bool
}

func splitNetPattern(p string) netPattern {
	host, path, found := strings.Cut(p, "/")
	host = strings.ToLower(host)
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if found {
		path = "/" + path
	}
	return netPattern{host: canonicalHost(host), path: path, hasPath: found}
}

// canonicalHost writes a pattern's host part the way the egress proxy
// writes a target's: an IP literal in its canonical form (IPv6
// compressed, an IPv4-mapped address as IPv4), a name without its
// trailing dot, a port kept.
func canonicalHost(h string) string {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		if i := strings.Index(h, "]:"); i > 0 {
			name, port = h[1:i], h[i+2:]
			if a, err := netip.ParseAddr(name); err == nil {
				if a = a.Unmap(); a.Is4() {
					return a.String() + ":" + port
				}
				return "[" + a.String() + "]:" + port
			}
			return h
		}
		return h
	}
	if strings.Count(h, ":") == 1 {
		name, port, _ = strings.Cut(h, ":")
		port = ":" + port
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().String() + port
	}
	return strings.TrimSuffix(name, ".") + port
}

// matchHost reports whether the pattern's host part names the target's
// host: a pattern with a port ("host:port", "[v6]:port") the target's
// "host:port", one without (a name, "*.domain", an IPv6 literal) its name
// alone. Its wildcards match within that part only, never into a port
// or a path.
func (np netPattern) matchHost(t netTarget) bool {
	if strings.HasPrefix(np.host, "[") || strings.Count(np.host, ":") == 1 {
		return globMatch(np.host, t.hostport)
	}
	return globMatch(np.host, t.name)
}

// match reports whether the pattern decides the target: a pattern without
// a path by its host alone; one with a path only a plain HTTP request,
// by host and path separately. An allow's path matches byte for byte; a
// deny's or an ask's also matches the path in any case (fold), since
// some servers read paths without case: what a rule refuses is never
// reached by writing it in other letters.
func (np netPattern) match(t netTarget, fold bool) bool {
	if !np.matchHost(t) {
		return false
	}
	if !np.hasPath {
		return true
	}
	if fold {
		return t.path != "" && globMatch(strings.ToLower(np.path), strings.ToLower(t.path))
	}
	return t.path != "" && globMatch(np.path, t.path)
}

// matchNet returns the first rule of s (the strongest) that decides t.
func (s *ruleSet) matchNet(t netTarget) *Rule {
	for _, r := range s.rules {
		if splitNetPattern(r.Pattern).match(t, r.Effect != Allow) {
			return r
		}
	}
	return nil
}

// pathRuleFor returns the first rule of s with a path whose host part
// names t's host: a connection to that host (a tunnel, whose requests the
// proxy cannot see) would get around it.
func (s *ruleSet) pathRuleFor(t netTarget) *Rule {
	for _, r := range s.rules {
		if np := splitNetPattern(r.Pattern); np.hasPath && np.matchHost(t) {
			return r
		}
	}
	return nil
}

// netExample reports whether a rule's example target is decided by it, as
// matchNet would decide it (a deny's or an ask's path in any letters).
func netExample(pattern string, effect Decision, target string) bool {
	return splitNetPattern(pattern).match(splitNetTarget(target), effect != Allow)
}
