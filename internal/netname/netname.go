// Package netname owns the one rule of what a network host a client
// names is: its normal form (lower case, one trailing dot dropped, an IP
// literal canonical and unmapped, brackets only around IPv6) and the
// hosts refused before anything resolves them (zones, bad characters and
// labels, numeric forms that resolvers read as addresses). The egress
// proxy and the Claude Code hook's fetch target both use it.
//
// netname is a leaf: it imports no rein package.
package netname

import (
	"fmt"
	"net/netip"
	"strings"
)

// MaxShown bounds how much of a refused host is repeated in events
// and answers.
const MaxShown = 255

// Host checks and normalises a host as a client named it: lower
// case, one trailing dot stripped, an IPv6 literal without brackets (an
// IP literal in its canonical form, an IPv4-mapped one unmapped). It
// returns the host, the address if the host is an IP literal, and, when
// the host is refused, why (with the host as shown in the refusal). A
// refused host is never resolved nor put to the policy.
func Host(raw string) (host string, lit netip.Addr, why string) {
	h := raw
	bracketed := false
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h, bracketed = h[1:len(h)-1], true
	}
	h = strings.ToLower(h)
	shown := h
	if len(shown) > MaxShown {
		shown = shown[:MaxShown]
	}
	if strings.Contains(h, "%") {
		return shown, netip.Addr{}, fmt.Sprintf("%q names an address with a zone, which is never connected to", shown)
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return shown, netip.Addr{}, "the host is empty"
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if bracketed && !a.Is6() {
			return shown, netip.Addr{}, fmt.Sprintf("%q is not an IPv6 address, yet it is in brackets", shown)
		}
		a = a.Unmap()
		return a.String(), a, ""
	}
	if bracketed {
		return shown, netip.Addr{}, fmt.Sprintf("%q is not an IPv6 address, yet it is in brackets", shown)
	}
	if len(h) > 253 {
		return shown, netip.Addr{}, "the host is longer than a name can be"
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return shown, netip.Addr{}, fmt.Sprintf("%q has characters a host name cannot have", shown)
		}
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return shown, netip.Addr{}, fmt.Sprintf("%q has an empty label", shown)
		}
		if len(l) > 63 {
			return shown, netip.Addr{}, fmt.Sprintf("%q has a label longer than 63 bytes", shown)
		}
	}
	// A name ending in a number is an IPv4 address to the URL standard
	// and, in the forms inet_aton accepts (2130706433, 0x7f.1, 127.1,
	// 0177.0.0.1), to resolvers: such a host would carry an address past
	// a check of names. No top-level domain is numeric.
	if numericLabel(labels[len(labels)-1]) {
		return shown, netip.Addr{}, fmt.Sprintf("%q is an ambiguous numeric host, which is never resolved", shown)
	}
	return h, netip.Addr{}, ""
}

// numericLabel says whether s is a number as inet_aton and the URL
// standard read an IPv4 part: decimal, octal (leading 0) or hex (0x).
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if len(s) >= 2 && s[0] == '0' && s[1] == 'x' {
		for i := 2; i < len(s); i++ {
			c := s[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
