package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) constants.
const (
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksCmdConnect      = 0x01
	socksCmdBind         = 0x02
	socksCmdUDPAssociate = 0x03

	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04

	repSucceeded          = 0x00
	repGeneralFailure     = 0x01
	repNotAllowed         = 0x02
	repNetworkUnreachable = 0x03
	repHostUnreachable    = 0x04
	repConnectionRefused  = 0x05
	repCommandUnsupported = 0x07
	repAddressUnsupported = 0x08
)

// socksRequest is a SOCKS5 request as the client sent it.
type socksRequest struct {
	cmd  byte
	atyp byte
	host string // the domain name's bytes, or the address as text
	port uint16
}

// errSOCKSRefused is a handshake the proxy refused (no acceptable
// method, an unsupported command or address type).
var errSOCKSRefused = errors.New("socks5: refused")

// socksHandshake reads a SOCKS5 greeting from rw, answers it (method
// 0x00 if the client offers it, else 0xFF), and reads the request that
// follows. It reads at most 2+255 and 4+1+255+2 bytes, never more than
// the messages hold. On error, reply is the reply code the caller should
// send (0 when none should be: the greeting failed or was refused), and
// the request holds what was read of it.
func socksHandshake(rw io.ReadWriter) (req socksRequest, reply byte, err error) {
	var buf [2 + 255]byte
	if _, err := io.ReadFull(rw, buf[:2]); err != nil {
		return req, 0, err
	}
	if buf[0] != socksVersion {
		return req, 0, fmt.Errorf("socks5: greeting of version %d", buf[0])
	}
	methods := buf[2 : 2+int(buf[1])]
	if _, err := io.ReadFull(rw, methods); err != nil {
		return req, 0, err
	}
	acceptable := false
	for _, m := range methods {
		if m == socksNoAuth {
			acceptable = true
			break
		}
	}
	if !acceptable {
		rw.Write([]byte{socksVersion, socksNoAcceptable})
		return req, 0, fmt.Errorf("%w: no acceptable authentication method", errSOCKSRefused)
	}
	if _, err := rw.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return req, 0, err
	}

	hdr := buf[:4]
	if _, err := io.ReadFull(rw, hdr); err != nil {
		return req, 0, err
	}
	if hdr[0] != socksVersion {
		return req, repGeneralFailure, fmt.Errorf("socks5: request of version %d", hdr[0])
	}
	req.cmd, req.atyp = hdr[1], hdr[3]
	switch req.atyp {
	case socksAtypIPv4:
		a := buf[:4]
		if _, err := io.ReadFull(rw, a); err != nil {
			return req, 0, err
		}
		req.host = netip.AddrFrom4([4]byte(a)).String()
	case socksAtypIPv6:
		a := buf[:16]
		if _, err := io.ReadFull(rw, a); err != nil {
			return req, 0, err
		}
		req.host = netip.AddrFrom16([16]byte(a)).String()
	case socksAtypDomain:
		if _, err := io.ReadFull(rw, buf[:1]); err != nil {
			return req, 0, err
		}
		name := buf[1 : 1+int(buf[0])]
		if _, err := io.ReadFull(rw, name); err != nil {
			return req, 0, err
		}
		req.host = string(name)
	default:
		return req, repAddressUnsupported, fmt.Errorf("%w: address type %d", errSOCKSRefused, req.atyp)
	}
	if _, err := io.ReadFull(rw, buf[:2]); err != nil {
		return req, 0, err
	}
	req.port = uint16(buf[0])<<8 | uint16(buf[1])
	if req.cmd != socksCmdConnect {
		return req, repCommandUnsupported, fmt.Errorf("%w: %s", errSOCKSRefused, socksCommand(req.cmd))
	}
	return req, 0, nil
}

func socksCommand(cmd byte) string {
	switch cmd {
	case socksCmdConnect:
		return "CONNECT"
	case socksCmdBind:
		return "BIND, which the proxy does not support"
	case socksCmdUDPAssociate:
		return "UDP ASSOCIATE, which the proxy does not support"
	}
	return fmt.Sprintf("command %d, which the proxy does not support", cmd)
}

// writeSOCKSReply sends a SOCKS5 reply; bound is the address to report
// for a success (0.0.0.0:0 when it is not a TCP address).
func writeSOCKSReply(w io.Writer, rep byte, bound net.Addr) error {
	b := make([]byte, 0, 22)
	b = append(b, socksVersion, rep, 0)
	var ap netip.AddrPort
	if ta, ok := bound.(*net.TCPAddr); ok && rep == repSucceeded {
		ap = ta.AddrPort()
	}
	a := ap.Addr().Unmap()
	switch {
	case a.Is4():
		b = append(b, socksAtypIPv4)
		b = append(b, a.AsSlice()...)
	case a.Is6():
		b = append(b, socksAtypIPv6)
		b = append(b, a.AsSlice()...)
	default:
		b = append(b, socksAtypIPv4, 0, 0, 0, 0)
	}
	b = append(b, byte(ap.Port()>>8), byte(ap.Port()))
	_, err := w.Write(b)
	return err
}

// dialReply is the SOCKS5 reply for a failed dial.
func dialReply(err error) byte {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return repConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return repNetworkUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.As(err, &ne) && ne.Timeout():
		return repHostUnreachable
	}
	return repGeneralFailure
}

// serveSOCKS serves a SOCKS5 connection whose first byte was sniffed
// (c gives it back) and whose handshake deadline is set.
func (p *Proxy) serveSOCKS(c *clientConn) {
	defer c.Close()
	start := time.Now()
	sr, rep, err := socksHandshake(c)
	if err != nil {
		if rep != 0 {
			writeSOCKSReply(c, rep, nil)
		}
		if errors.Is(err, errSOCKSRefused) {
			ev := Event{Time: start, Request: Request{Proto: ProtoSOCKS5}, Refused: err.Error()}
			if sr.host != "" || sr.port != 0 {
				ev.Request, _, _ = newTarget(ProtoSOCKS5, sr.host, sr.port, "")
			}
			ev.Duration = time.Since(start)
			p.policy.Record(ev)
		}
		return
	}
	c.SetDeadline(time.Time{})

	req, lit, why := newTarget(ProtoSOCKS5, sr.host, sr.port, "")
	ev := Event{Time: start, Request: req}
	record := func() {
		ev.Duration = time.Since(start)
		p.policy.Record(ev)
	}
	if why != "" {
		ev.Refused = why
		record()
		writeSOCKSReply(c, repGeneralFailure, nil)
		return
	}

	// Decide, resolve and dial under a context that ends when the client
	// hangs up or the Proxy closes.
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	stop := watchClose(c.Conn, cancel)
	defer stop()

	v := p.policy.Decide(ctx, req)
	ev.Verdict = v
	if !v.Allow {
		ev.Refused, _ = policyRefusal(req, v)
		record()
		stop()
		writeSOCKSReply(c, repNotAllowed, nil)
		return
	}
	addrs, why, err := p.checkedAddrs(ctx, req.Host, lit, req.Port, v)
	if err != nil {
		ev.Err = err.Error()
		record()
		stop()
		writeSOCKSReply(c, repHostUnreachable, nil)
		return
	}
	if why != "" {
		ev.Refused = why
		record()
		stop()
		writeSOCKSReply(c, repNotAllowed, nil)
		return
	}
	upstream, addr, id, err := p.dialChecked(ctx, addrs, req.Port)
	pending := stop()
	if err != nil {
		ev.Err = err.Error()
		record()
		writeSOCKSReply(c, dialReply(err), nil)
		return
	}
	ev.Addr = addr
	defer record()
	defer p.closeUpstream(upstream, id)
	if ctx.Err() != nil {
		ev.Err = "the client hung up before the connection was made"
		if p.ctx.Err() != nil {
			ev.Err = errClosed.Error()
		}
		return
	}
	// The bound address is not told: it is the host's own address.
	if err := writeSOCKSReply(c, repSucceeded, nil); err != nil {
		ev.Err = err.Error()
		return
	}
	up, down, err := tunnel(c.Conn, pending, upstream)
	ev.Up, ev.Down = up, down
	if err != nil {
		ev.Err = err.Error()
	}
}
