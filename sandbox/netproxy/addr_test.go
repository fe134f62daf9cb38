package netproxy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr, class string
	}{
		// loopback
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"2002:7f00:1::", "loopback"},
		{"64:ff9b::7f00:1", "loopback"},
		// unspecified and "this network"
		{"0.0.0.0", "reserved"},
		{"0.1.2.3", "reserved"},
		{"::", "reserved"},
		// private
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "private"},
		{"100.127.255.255", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"::ffff:10.1.2.3", "private"},
		{"2002:c0a8:101::1", "private"},
		// link-local
		{"169.254.0.1", "link-local"},
		{"169.254.169.253", "link-local"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		// metadata
		{"169.254.169.254", "metadata"},
		{"169.254.170.2", "metadata"},
		{"169.254.170.23", "metadata"},
		{"100.100.100.200", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"fd00:ec2::23", "metadata"},
		{"192.0.0.192", "metadata"},
		{"168.63.129.16", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::a9fe:a9fe", "metadata"},
		{"2002:a9fe:a9fe::", "metadata"},
		// reserved
		{"192.0.0.1", "reserved"},
		{"192.0.2.1", "reserved"},
		{"198.18.0.1", "reserved"},
		{"198.19.255.255", "reserved"},
		{"198.51.100.7", "reserved"},
		{"203.0.113.9", "reserved"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"224.0.0.1", "reserved"},
		{"239.255.255.250", "reserved"},
		{"ff02::1", "reserved"},
		{"ff05::2", "reserved"},
		{"fec0::1", "reserved"},
		{"2001:db8::1", "reserved"},
		{"100::1", "reserved"},
		{"::127.0.0.1", "reserved"},
		{"64:ff9b:1::1", "reserved"},
		// public
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"169.253.255.255", ""},
		{"192.0.1.1", ""},
		{"198.17.255.255", ""},
		{"223.255.255.255", ""},
		{"2606:4700::1", ""},
		{"2a00:1450:4001::200e", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::", ""},
		{"fe80::1%eth0", "link-local"},
		// Teredo: the client's address is stored inverted.
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", ""},
		{"2001:0:a9fe:a9fe:8000:63bf:f7f7:f7f7", "metadata"},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := classify(a); got != tc.class {
			t.Errorf("classify(%s) = %q, want %q", tc.addr, got, tc.class)
		}
	}
	if got := classify(netip.Addr{}); got != "reserved" {
		t.Errorf("classify(zero) = %q", got)
	}
}

func TestNormHost(t *testing.T) {
	for _, tc := range []struct {
		raw, host string
		literal   bool
		refused   string // a fragment of the refusal; "" when the host is fine
	}{
		{"Example.COM", "example.com", false, ""},
		{"example.com.", "example.com", false, ""},
		{"_srv.a-b.example", "_srv.a-b.example", false, ""},
		{"bad.cafe", "bad.cafe", false, ""},
		{"1e100.net", "1e100.net", false, ""},
		{"0x7f.example", "0x7f.example", false, ""},
		{"127.0.0.1", "127.0.0.1", true, ""},
		{"127.0.0.1.", "127.0.0.1", true, ""},
		{"[::1]", "::1", true, ""},
		{"::1", "::1", true, ""},
		{"0:0:0:0:0:0:0:1", "::1", true, ""},
		{"::FFFF:127.0.0.1", "127.0.0.1", true, ""},
		{"FE80::1", "fe80::1", true, ""},
		{"", "", false, "empty"},
		{".", "", false, "empty"},
		{"[]", "", false, ""},
		{"a..b", "", false, "empty label"},
		{".a", "", false, "empty label"},
		{"a.b..", "", false, "empty label"},
		{"exa mple.com", "", false, "characters"},
		{"ex$mple.com", "", false, "characters"},
		{"bücher.de", "", false, "characters"},
		{"a\x00.example", "", false, "characters"},
		{"a:b", "", false, "characters"},
		{"fe80::1%eth0", "", false, "zone"},
		{"[fe80::1%eth0]", "", false, "zone"},
		{"[127.0.0.1]", "", false, "brackets"},
		{"[example.com]", "", false, "brackets"},
		{"2130706433", "", false, "ambiguous numeric"},
		{"0x7f.1", "", false, "ambiguous numeric"},
		{"0x7F000001", "", false, "ambiguous numeric"},
		{"127.1", "", false, "ambiguous numeric"},
		{"0177.0.0.1", "", false, "ambiguous numeric"},
		{"127.000.000.001", "", false, "ambiguous numeric"},
		{"1.2.3.4.5", "", false, "ambiguous numeric"},
		{"example.0x", "", false, "ambiguous numeric"},
		{"example.123", "", false, "ambiguous numeric"},
		{strings.Repeat("a", 64) + ".com", "", false, "63"},
		{strings.Repeat("a.", 127) + "com", "", false, "longer"},
	} {
		host, lit, why := normHost(tc.raw)
		if tc.refused != "" || tc.raw == "[]" {
			if why == "" || !strings.Contains(why, tc.refused) {
				t.Errorf("normHost(%q) refusal %q, want one saying %q", tc.raw, why, tc.refused)
			}
			if lit.IsValid() {
				t.Errorf("normHost(%q) refused yet gave an address", tc.raw)
			}
			continue
		}
		if why != "" {
			t.Errorf("normHost(%q) refused: %s", tc.raw, why)
			continue
		}
		if host != tc.host || lit.IsValid() != tc.literal {
			t.Errorf("normHost(%q) = %q, literal %v; want %q, %v", tc.raw, host, lit.IsValid(), tc.host, tc.literal)
		}
	}
}

func TestParsePort(t *testing.T) {
	for _, tc := range []struct {
		s    string
		port uint16
		ok   bool
	}{
		{"80", 80, true},
		{"65535", 65535, true},
		{"0443", 443, true},
		{"0", 0, false},
		{"", 0, false},
		{"65536", 0, false},
		{"-1", 0, false},
		{"+80", 0, false},
		{"8o", 0, false},
		{"123456789012345678901234567890", 0, false},
	} {
		port, why := parsePort(tc.s)
		if (why == "") != tc.ok || port != tc.port {
			t.Errorf("parsePort(%q) = %d, %q", tc.s, port, why)
		}
	}
}
