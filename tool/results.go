package tool

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// DefaultPreviewChars is how much of a result the model sees: the head and
// the tail, with the size of the middle stated.
const DefaultPreviewChars = 50_000

// MaxStoredBytes bounds one stored result; beyond it the store keeps the
// head and says so.
const MaxStoredBytes = 64 << 20

// Results keeps whole results, redacted, one file per result, readable by
// id and byte range.
type Results struct {
	Dir string
}

var resultID = regexp.MustCompile(`^r-[0-9a-f]{16}$`)

// Put stores text and returns its id.
func (s *Results) Put(text string) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("the result store: %w", err)
	}
	var b [8]byte
	rand.Read(b[:])
	id := "r-" + hex.EncodeToString(b[:])
	if len(text) > MaxStoredBytes {
		text = text[:MaxStoredBytes] + fmt.Sprintf("\n[rein: the result store keeps the first %d bytes of %d]\n", MaxStoredBytes, len(text))
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("the result store: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("the result store: %w", err)
	}
	return id, nil
}

// Read returns up to limit bytes of result id from offset, widened to
// whole UTF-8 characters, and the result's size.
func (s *Results) Read(id string, offset, limit int64) (string, int64, error) {
	if !resultID.MatchString(id) {
		return "", 0, fmt.Errorf("%q is not a result id", id)
	}
	f, err := os.Open(filepath.Join(s.Dir, id))
	if err != nil {
		return "", 0, fmt.Errorf("no result %s in this store", id)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	size := fi.Size()
	limit = min(max(limit, 0), size)
	if offset < 0 || offset > size {
		return "", size, fmt.Errorf("offset %d is outside the result's %d bytes", offset, size)
	}
	// Back to the start of the character offset falls in, and on to the
	// end of the one the limit falls in.
	start := max(offset-utf8.UTFMax, 0)
	buf := make([]byte, min(limit+2*utf8.UTFMax, size-start)+utf8.UTFMax)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return "", size, err
	}
	buf = buf[:n]
	lo := min(int(offset-start), len(buf))
	if lo == len(buf) {
		return "", size, nil
	}
	for lo > 0 && !utf8.RuneStart(buf[lo]) {
		lo--
	}
	hi := min(lo+int(limit), len(buf))
	for hi < len(buf) && !utf8.RuneStart(buf[hi]) {
		hi++
	}
	return string(buf[lo:hi]), size, nil
}

// preview is text bounded to chars characters: the head and the tail, and
// how many characters of the middle were left out.
func preview(text string, chars int) (string, int) {
	n := utf8.RuneCountInString(text)
	if n <= chars {
		return text, 0
	}
	head, tail := chars/2, chars-chars/2
	hi := 0
	for i := 0; i < head; i++ {
		_, w := utf8.DecodeRuneInString(text[hi:])
		hi += w
	}
	lo := len(text)
	for i := 0; i < tail; i++ {
		_, w := utf8.DecodeLastRuneInString(text[:lo])
		lo -= w
	}
	elided := n - head - tail
	var b strings.Builder
	b.WriteString(text[:hi])
	fmt.Fprintf(&b, "\n[... %d characters elided ...]\n", elided)
	b.WriteString(text[lo:])
	return b.String(), elided
}
