package netproxy

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"

	"github.com/reinhq/rein/internal/netname"
)

// The classes classify returns.
const (
	classLoopback  = "loopback"
	classPrivate   = "private"
	classLinkLocal = "link-local"
	classMetadata  = "metadata"
	classReserved  = "reserved"
)

// metadataAddrs are the cloud instance-metadata endpoints. They take
// precedence over the link-local and private ranges they sit in.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata and credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS pod identity agent
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (a public address, but the host's)
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS pod identity agent over IPv6
}

type prefixClass struct {
	prefix netip.Prefix
	class  string
}

// prefixClasses is searched in order; the first prefix containing the
// address gives its class.
var prefixClasses = func() []prefixClass {
	var t []prefixClass
	add := func(class string, prefixes ...string) {
		for _, p := range prefixes {
			t = append(t, prefixClass{netip.MustParsePrefix(p), class})
		}
	}
	// IPv4.
	add(classReserved, "0.0.0.0/8") // "this network", 0.0.0.0 included
	add(classLoopback, "127.0.0.0/8")
	add(classPrivate, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
	add(classLinkLocal, "169.254.0.0/16")
	add(classReserved,
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, 255.255.255.255 included
	)
	// IPv6 (IPv4-mapped addresses are unmapped before this is searched).
	add(classLoopback, "::1/128")
	add(classReserved,
		"::/128",         // unspecified
		"::/96",          // IPv4-compatible (deprecated)
		"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
		"100::/64",       // discard-only
		"2001:2::/48",    // benchmarking
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
	)
	add(classPrivate, "fc00::/7")
	add(classLinkLocal, "fe80::/10")
	add(classReserved,
		"fec0::/10", // site-local (deprecated)
		"ff00::/8",  // multicast
	)
	return t
}()

var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	teredoPrefix = netip.MustParsePrefix("2001::/32")
)

// classify says whether a is a special address and which kind:
// "loopback", "private", "link-local", "metadata", "reserved", or "" for
// an ordinary public address.
//
// An IPv4-mapped IPv6 address is classified as its IPv4 address, and an
// address that embeds an IPv4 address a translator or relay would reach
// (NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) as the embedded
// address when that is special. The unspecified addresses, multicast,
// documentation, benchmarking and other non-public ranges are
// "reserved"; the carrier-grade NAT range 100.64.0.0/10 is "private". The
// zero Addr is "reserved". A zone is ignored.
func classify(a netip.Addr) string {
	if !a.IsValid() {
		return classReserved
	}
	a = a.WithZone("").Unmap()
	if slices.Contains(metadataAddrs, a) {
		return classMetadata
	}
	if a.Is6() {
		for _, e := range embeddedIPv4(a) {
			if c := classify(e); c != "" {
				return c
			}
		}
	}
	for _, pc := range prefixClasses {
		if pc.prefix.Contains(a) {
			return pc.class
		}
	}
	return ""
}

// embeddedIPv4 returns the IPv4 addresses a embeds, if it is a NAT64,
// 6to4 or Teredo address.
func embeddedIPv4(a netip.Addr) []netip.Addr {
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		return []netip.Addr{netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})}
	case sixToFour.Contains(a):
		return []netip.Addr{netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}
	case teredoPrefix.Contains(a):
		server := netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{client, server}
	}
	return nil
}

// article puts "a" before a class name (all of them begin with a
// consonant sound).
func article(class string) string { return "a " + class }

// maxShownHost bounds how much of a refused host is repeated in events
// and answers.
const maxShownHost = netname.MaxShown

// normHost is the one rule of a host's normal form and of the hosts
// refused before resolving (netname.Host).
func normHost(raw string) (host string, lit netip.Addr, why string) {
	return netname.Host(raw)
}

// parsePort reads a port as a client wrote it; why says why it is refused.
func parsePort(s string) (uint16, string) {
	if s == "" {
		return 0, "the target has no port"
	}
	if len(s) > 5 {
		return 0, fmt.Sprintf("%q is not a port", truncate(s, 16))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Sprintf("%q is not a port", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Sprintf("%q is not a port", s)
	}
	if n == 0 {
		return 0, "port 0 cannot be connected to"
	}
	return uint16(n), ""
}

// newTarget builds the Request for a host and port a client named, and
// checks them: why is non-empty when they are refused (the Request then
// holds the host as shown in the refusal).
func newTarget(proto, rawHost string, port uint16, path string) (req Request, lit netip.Addr, why string) {
	host, lit, why := normHost(rawHost)
	req = Request{Proto: proto, Host: host, Port: port, Path: path}
	req.Target = net.JoinHostPort(host, strconv.Itoa(int(port))) + path
	if why == "" && port == 0 {
		why = "port 0 cannot be connected to"
	}
	return req, lit, why
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Classify says whether a is a special address and which kind (see
// classify): what the web tools check the address they connect to by,
// as the proxy does.
func Classify(a netip.Addr) string { return classify(a) }
