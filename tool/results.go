package tool

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultPreviewChars is how much of a result the model sees: the head and
// the tail, with the size of the middle stated.
const DefaultPreviewChars = 50_000

// MaxStoredBytes bounds one stored result; beyond it the store keeps the
// head and says so.
const MaxStoredBytes = 64 << 20

// DefaultResultsPerRun bounds what one run's result store keeps on the
// host ([limits] results_per_run).
const DefaultResultsPerRun = 512 << 20

// Results keeps whole results, redacted, one file per result, readable by
// id and byte range. What it keeps is bounded by Limit: past it the
// oldest results are evicted (their ids then answer "evicted"), and a put
// never fails for want of room.
type Results struct {
	Dir string
	// Limit bounds the bytes the store keeps; 0 is DefaultResultsPerRun.
	Limit int64

	mu      sync.Mutex
	scanned bool
	kept    []keptResult // oldest first
	used    int64
	// last is the newest result's time: each result's is set after it,
	// so that the order is the files' times even where the clock's
	// granularity would give two the same (a store opened again orders
	// by them).
	last time.Time
}

type keptResult struct {
	id   string
	size int64
}

// evictedSuffix marks an evicted result: an empty file beside where it
// was, so a resumed run's store still answers for it.
const evictedSuffix = ".evicted"

var resultID = regexp.MustCompile(`^r-[0-9a-f]{16}$`)

func (s *Results) limit() int64 {
	if s.Limit > 0 {
		return s.Limit
	}
	return DefaultResultsPerRun
}

// scan learns what a store made by an earlier process (a resumed run's)
// keeps, oldest first.
func (s *Results) scan() {
	if s.scanned {
		return
	}
	s.scanned = true
	ents, _ := os.ReadDir(s.Dir)
	type aged struct {
		keptResult
		mod int64
	}
	var all []aged
	for _, e := range ents {
		if !resultID.MatchString(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			all = append(all, aged{keptResult{e.Name(), fi.Size()}, fi.ModTime().UnixNano()})
			if fi.ModTime().After(s.last) {
				s.last = fi.ModTime()
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod < all[j].mod })
	for _, a := range all {
		s.kept = append(s.kept, a.keptResult)
		s.used += a.size
	}
}

// Put stores text and returns its id, evicting the oldest results to keep
// the store within its limit.
func (s *Results) Put(text string) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("the result store: %w", err)
	}
	var b [8]byte
	rand.Read(b[:])
	id := "r-" + hex.EncodeToString(b[:])
	keep := min(int64(MaxStoredBytes), s.limit())
	if int64(len(text)) > keep {
		note := fmt.Sprintf("\n[rein: the result store keeps the first %d bytes of %d]\n", keep, len(text))
		cut := max(keep-int64(len(note)), 0)
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + note
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scan()
	for len(s.kept) > 0 && s.used+int64(len(text)) > s.limit() {
		old := s.kept[0]
		s.kept = s.kept[1:]
		s.used -= old.size
		os.Remove(filepath.Join(s.Dir, old.id))
		if f, err := os.OpenFile(filepath.Join(s.Dir, old.id+evictedSuffix), os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
			f.Close()
		}
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("the result store: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		mod := time.Now()
		if !mod.After(s.last) {
			mod = s.last.Add(time.Microsecond)
		}
		s.last = mod
		err = os.Chtimes(filepath.Join(s.Dir, id), mod, mod)
	}
	if err != nil {
		os.Remove(filepath.Join(s.Dir, id))
		return "", fmt.Errorf("the result store: %w", err)
	}
	s.kept = append(s.kept, keptResult{id, int64(len(text))})
	s.used += int64(len(text))
	return id, nil
}

// Used is what the store keeps, in bytes.
func (s *Results) Used() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scan()
	return s.used
}

// Read returns up to limit bytes of result id from offset, widened to
// whole UTF-8 characters, and the result's size.
func (s *Results) Read(id string, offset, limit int64) (string, int64, error) {
	if !resultID.MatchString(id) {
		return "", 0, fmt.Errorf("%q is not a result id", id)
	}
	f, err := os.Open(filepath.Join(s.Dir, id))
	if err != nil {
		if _, eerr := os.Lstat(filepath.Join(s.Dir, id+evictedSuffix)); eerr == nil {
			return "", 0, &EvictedError{ID: id, Limit: s.limit()}
		}
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

// EvictedError is a read of a result the store evicted to keep within
// its limit.
type EvictedError struct {
	ID    string
	Limit int64
}

func (e *EvictedError) Error() string {
	return fmt.Sprintf("result %s was evicted: the run's results passed the %d MiB the store keeps ([limits] results_per_run), and the oldest go first; run the call again, with its output narrowed", e.ID, e.Limit>>20)
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
