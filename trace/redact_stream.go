package trace

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"
)

// The bounds of what a RedactingWriter holds back.
const (
	// streamPending is how much of an unfinished line (or an unended
	// private key block) a RedactingWriter holds before it passes part of
	// it on.
	streamPending = 64 << 10
	// streamHeld is how much of a long line it keeps back when it does,
	// so that a declared value cut there is whole in what follows; at
	// least the longest declared value.
	streamHeld = 4 << 10
)

// RedactingWriter is Redact for a stream shown as it is produced (a
// command's output on a terminal): what is written to it goes on to the
// writer beneath redacted, a line at a time. Each line goes on as soon as
// its end (a newline or a carriage return) is written, so a secret
// written in pieces is redacted whole when it lies within a line, however
// the writes cut it. A private key block is held until its END line. A
// line longer than 64 KiB goes on in pieces, each cut with the last 4 KiB
// (or the longest declared value) held back and redacted again with what
// follows, so a declared value is never cut in two. Flush passes on what
// is held once the stream has ended; until then an unfinished line is not
// shown.
//
// It is safe for concurrent use. A write error of the writer beneath is
// returned by every later Write and by Flush.
type RedactingWriter struct {
	mu      sync.Mutex
	r       *Redactor
	w       io.Writer
	pending []byte
	err     error
}

// Writer returns a RedactingWriter passing on to w what r redacts.
func (r *Redactor) Writer(w io.Writer) *RedactingWriter {
	return &RedactingWriter{r: r, w: w}
}

// Write holds p until its lines are complete and passes them on redacted.
// It reports all of p written unless the writer beneath failed.
func (rw *RedactingWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return 0, rw.err
	}
	rw.pending = append(rw.pending, p...)
	if cut := rw.complete(); cut > 0 {
		rw.emit(rw.r.Redact(string(rw.pending[:cut])))
		rw.pending = append(rw.pending[:0], rw.pending[cut:]...)
	}
	if len(rw.pending) > streamPending {
		out := rw.r.Redact(string(rw.pending))
		keep := min(rw.held(), len(out))
		at := len(out) - keep
		for at > 0 && !utf8.RuneStart(out[at]) {
			at--
		}
		rw.emit(out[:at])
		rw.pending = append(rw.pending[:0], out[at:]...)
	}
	if rw.err != nil {
		return 0, rw.err
	}
	return len(p), nil
}

// Flush passes on, redacted, whatever is held: the stream's unfinished
// last line.
func (rw *RedactingWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err == nil && len(rw.pending) > 0 {
		rw.emit(rw.r.Redact(string(rw.pending)))
		rw.pending = rw.pending[:0]
	}
	return rw.err
}

func (rw *RedactingWriter) emit(s string) {
	if s == "" || rw.err != nil {
		return
	}
	_, rw.err = io.WriteString(rw.w, s)
}

var (
	keyBegin = []byte("-----BEGIN ")
	keyEnd   = []byte("-----END ")
	keyName  = []byte("PRIVATE KEY")
)

// complete is the length of the pending text's complete lines, short of
// a private key block begun and not yet ended.
func (rw *RedactingWriter) complete() int {
	p := rw.pending
	cut := bytes.LastIndexAny(p, "\n\r") + 1
	if cut == 0 {
		return 0
	}
	if i := bytes.LastIndex(p[:cut], keyBegin); i >= 0 {
		line := p[i:]
		if j := bytes.IndexAny(line, "\n\r"); j >= 0 {
			line = line[:j]
		}
		if bytes.Contains(line, keyName) && !bytes.Contains(p[i:cut], keyEnd) {
			// Held from the start of the BEGIN line until the END line
			// comes (or the bound is reached).
			cut = bytes.LastIndexAny(p[:i], "\n\r") + 1
		}
	}
	return cut
}

// held is how much of a long line is kept back: enough for the longest
// declared value.
func (rw *RedactingWriter) held() int {
	n := streamHeld
	if rw.r != nil && len(rw.r.values) > 0 && len(rw.r.values[0]) > n {
		n = len(rw.r.values[0])
	}
	return n
}
