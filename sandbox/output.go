package sandbox

import (
	"os"
	"sync"
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

// spool writes a stream to its file up to a bound and counts what it
// drops past it, or after a failed write: a command printing without end
// fills no disk.
type spool struct {
	f       *os.File
	left    int64
	dropped int64
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
