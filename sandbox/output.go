//go:build linux

package sandbox

import (
	"os"
	"sync"
	"syscall"
)

// headTail keeps the first and last half of a limit of bytes written to
// it, and counts what fell in between: bounded memory whatever the size.
// The tail is a ring, so a long stream costs one copy per byte.
type headTail struct {
	mu     sync.Mutex
	half   int
	head   []byte
	ring   []byte // the tail, len == half once allocated
	pos    int    // next write position in ring
	filled int    // bytes of ring in use
	total  int64  // bytes that went past the head
	all    int64  // every byte written
}

func newHeadTail(limit int) *headTail { return &headTail{half: max(limit/2, 1)} }

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.all += int64(n)
	if room := h.half - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if h.ring == nil {
		h.ring = make([]byte, h.half)
	}
	h.total += int64(len(p))
	if len(p) > h.half {
		p = p[len(p)-h.half:]
	}
	for len(p) > 0 {
		c := copy(h.ring[h.pos:], p)
		p = p[c:]
		h.pos = (h.pos + c) % h.half
		h.filled = min(h.filled+c, h.half)
	}
	return n, nil
}

func (h *headTail) output() Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail := make([]byte, 0, h.filled)
	if h.filled == h.half {
		tail = append(append(tail, h.ring[h.pos:]...), h.ring[:h.pos]...)
	} else {
		tail = append(tail, h.ring[:h.filled]...)
	}
	return Output{Text: string(h.head) + string(tail), Elided: h.total - int64(h.filled), Bytes: h.all}
}

// whole reports whether n more bytes would still be kept whole.
func (h *headTail) whole(n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.all+int64(n) <= int64(2*h.half)
}

// spool writes a stream to its file up to a bound and counts what it
// drops past it, or after a failed write: a command printing without end
// fills no disk. A spool with a path and no file yet (Profile's
// SpoolOverflow) makes its file when the stream outgrows its head and
// tail.
type spool struct {
	f       *os.File
	path    string
	left    int64
	dropped int64
	spilled bool // the file is made (or could not be), or was from the start
}

func newSpool(path string, left int64, overflow bool) (*spool, error) {
	sp := &spool{path: path, left: left}
	if overflow {
		return sp, nil
	}
	sp.spilled = true
	return sp, sp.open()
}

func (s *spool) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	s.f = f
	return nil
}

// take writes p, first making the file of an overflow spool once h
// would no longer keep the stream whole, with what h holds so far.
func (s *spool) take(h *headTail, p []byte) {
	if !s.spilled {
		if s.f == nil && h.whole(len(p)) {
			return
		}
		s.spilled = true
		if s.f == nil {
			prefix := []byte(h.output().Text)
			if s.left <= 0 || s.open() != nil {
				s.left = 0
			}
			s.write(prefix)
		}
	}
	s.write(p)
}

// close ends the file and says it in o.
func (s *spool) close(o *Output) {
	o.Dropped = s.dropped
	if s.f != nil {
		s.f.Close()
		o.File = s.f.Name()
	}
}

// write is called by the stream's one reader only.
func (s *spool) write(p []byte) {
	n := min(int64(len(p)), max(s.left, 0))
	if n > 0 {
		if _, err := s.f.Write(p[:n]); err != nil {
			s.left, n = 0, 0
		}
		s.left -= n
	}
	s.dropped += int64(len(p)) - n
}
