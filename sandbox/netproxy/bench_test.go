package netproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

// countingPolicy allows everything by name and only counts events, so
// that a benchmark does not grow a list.
type countingPolicy struct{ events atomic.Int64 }

func (*countingPolicy) Decide(context.Context, Request) Verdict {
	return Verdict{Allow: true, ByName: true}
}

func (c *countingPolicy) Record(Event) { c.events.Add(1) }

type noResolver struct{}

func (noResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, fmt.Errorf("benchmark resolves nothing (%s)", host)
}

// transferSize is what one iteration of BenchmarkThroughput downloads.
const transferSize = 64 << 20

// sizedServer sends transferSize bytes on every connection, then closes.
func sizedServer(b *testing.B) *net.TCPAddr {
	return serveTCP(b, func(c net.Conn) {
		buf := make([]byte, 1<<20)
		for sent := 0; sent < transferSize; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
}

// drain reads r to its end with a large buffer and checks the size.
func drain(b *testing.B, r io.Reader, buf []byte) {
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if n != transferSize {
		b.Fatalf("read %d bytes, want %d", n, transferSize)
	}
}

// connectTunnel dials the proxy and opens a tunnel to target, reading
// the 200 byte by byte so that nothing of the tunnel is buffered.
func connectTunnel(b *testing.B, tp *testProxy, target string) net.Conn {
	c, err := net.Dial(tp.network, tp.addr)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		b.Fatal(err)
	}
	want := connectEstablished
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		b.Fatalf("CONNECT answer %q, %v", got, err)
	}
	return c
}

// BenchmarkThroughput downloads 64 MiB from a loopback TCP server,
// directly and through a CONNECT tunnel of a proxy on a unix socket.
func BenchmarkThroughput(b *testing.B) {
	srv := sizedServer(b)
	buf := make([]byte, 256<<10)
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(transferSize)
		for b.Loop() {
			c, err := net.Dial("tcp", srv.String())
			if err != nil {
				b.Fatal(err)
			}
			drain(b, c, buf)
			c.Close()
		}
	})
	b.Run("proxy", func(b *testing.B) {
		tp := startProxy(b, "unix", Options{Policy: &countingPolicy{}, Resolver: noResolver{}})
		b.SetBytes(transferSize)
		for b.Loop() {
			c := connectTunnel(b, tp, srv.String())
			drain(b, c, buf)
			c.Close()
		}
	})
}

// BenchmarkConnectSetup measures setting up a connection to a loopback
// TCP server: a bare dial, and a CONNECT through a proxy on a unix
// socket up to its 200.
func BenchmarkConnectSetup(b *testing.B) {
	srv := serveTCP(b, func(c net.Conn) { io.Copy(io.Discard, c) })
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", srv.String())
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("proxy", func(b *testing.B) {
		tp := startProxy(b, "unix", Options{Policy: &countingPolicy{}, Resolver: noResolver{}})
		for b.Loop() {
			connectTunnel(b, tp, srv.String()).Close()
		}
	})
}
