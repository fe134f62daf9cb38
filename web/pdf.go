package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// Bounds of reading a PDF.
const (
	// maxPDFStream bounds what one content stream (or a font's
	// character map) of a page may decompress to; a page with a larger
	// one is skipped, saying so.
	maxPDFStream = 8 << 20
	// maxPDFPages bounds the pages a document may say it has.
	maxPDFPages = 100_000
	// DefaultPDFChars is the text a slice holds at most, about.
	DefaultPDFChars = 40_000
)

// pdfTime bounds reading one slice of a document.
var pdfTime = 20 * time.Second

// maxPageTree bounds the depth of a document's page tree and the nodes
// walked: a tree that is deeper (or a cycle, which is endless) is
// refused before a page is looked up in it.
const (
	maxPageTreeDepth = 32
	maxPageTreeNodes = 2 * maxPDFPages
)

// PDFSlice is a slice of a PDF's pages as text: the pages it holds
// (First to Last, from 1), the document's page count, and the text with
// each page headed by its number.
type PDFSlice struct {
	First, Last, Pages int
	Text               string
	// Skipped are the pages of the slice whose text could not be read,
	// each with why.
	Skipped []string
}

// Next says how to read on, or "" at the end: the page range that
// continues the slice.
func (s *PDFSlice) Next() string {
	if s.Last >= s.Pages {
		return ""
	}
	return fmt.Sprintf("%d-%d", s.Last+1, s.Pages)
}

// ParsePages reads a page range "N" or "N-M" (M may be left out: to the
// end); "" is from the first page.
func ParsePages(r string) (first, last int, err error) {
	r = strings.TrimSpace(r)
	if r == "" {
		return 1, 0, nil
	}
	a, b, isRange := strings.Cut(r, "-")
	if first, err = strconv.Atoi(strings.TrimSpace(a)); err != nil || first < 1 {
		return 0, 0, fmt.Errorf("pages %q: say N or N-M, from 1", r)
	}
	if !isRange {
		return first, first, nil
	}
	if strings.TrimSpace(b) == "" {
		return first, 0, nil
	}
	if last, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || last < first {
		return 0, 0, fmt.Errorf("pages %q: say N or N-M, from 1", r)
	}
	return first, last, nil
}

// stopReaderAt fails every read once its context is done: what the PDF
// library is still doing when the slice's time is up stops at its next
// read, rather than running on in the background.
type stopReaderAt struct {
	r    io.ReaderAt
	stop atomic.Bool
}

var errStopped = errors.New("stopped: the time to read the PDF was up")

func (s *stopReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if s.stop.Load() {
		return 0, errStopped
	}
	return s.r.ReadAt(p, off)
}

// PDFText reads pages first to last (0: as many as fit in maxChars,
// about) of the PDF in data as text, within pdfTime. Every stream a page's
// text is read from (its content streams, its fonts' character maps) is
// first decompressed to at most maxPDFStream bytes, into nothing, and a
// page with a larger one is skipped, saying so: a compressed stream
// cannot make rein hold more than that.
func PDFText(ctx context.Context, data []byte, first, last, maxChars int) (*PDFSlice, error) {
	if maxChars <= 0 {
		maxChars = DefaultPDFChars
	}
	ctx, cancel := context.WithTimeout(ctx, pdfTime)
	defer cancel()
	ra := &stopReaderAt{r: bytes.NewReader(data)}
	type result struct {
		s   *PDFSlice
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if x := recover(); x != nil {
				res = result{nil, fmt.Errorf("the PDF could not be read: %v", x)}
			}
			done <- res
		}()
		res.s, res.err = readPDF(ra, int64(len(data)), first, last, maxChars)
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		ra.stop.Store(true)
		return nil, fmt.Errorf("the PDF could not be read within %s", pdfTime)
	}
}

func readPDF(ra io.ReaderAt, size int64, first, last, maxChars int) (*PDFSlice, error) {
	r, err := pdf.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("not a PDF rein can read: %v", err)
	}
	nodes := 0
	if err := checkPageTree(r.Trailer().Key("Root").Key("Pages"), 0, &nodes); err != nil {
		return nil, err
	}
	n := r.NumPage()
	if n <= 0 || n > maxPDFPages {
		return nil, fmt.Errorf("the PDF says it has %d pages", n)
	}
	if first > n {
		return nil, fmt.Errorf("the PDF has %d pages; page %d is not one", n, first)
	}
	s := &PDFSlice{First: first, Pages: n}
	end := n
	if last > 0 {
		end = min(last, n)
	}
	var b strings.Builder
	// A range asked for is read as far as it fits in four slices' text:
	// the rest is named as what continues it, like a slice's.
	limit := 4 * maxChars
	for i := first; i <= end; i++ {
		text, why := pageText(r.Page(i))
		if why != "" {
			s.Skipped = append(s.Skipped, fmt.Sprintf("page %d: %s", i, why))
		}
		if i > first && (last == 0 && b.Len()+len(text) > maxChars || b.Len()+len(text) > limit) {
			break
		}
		text = strings.TrimSpace(text)
		if len(text) > limit {
			// One page alone larger than a slice may be: cut, saying so.
			cut := limit
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + fmt.Sprintf("\n[rein: page %d's text was cut at %d characters]", i, cut)
		}
		fmt.Fprintf(&b, "--- page %d of %d ---\n%s\n", i, n, text)
		s.Last = i
		if last == 0 && b.Len() >= maxChars || b.Len() >= limit {
			break
		}
	}
	s.Text = b.String()
	return s, nil
}

// pageText is one page's text, or why it could not be read.
func pageText(p pdf.Page) (text, why string) {
	defer func() {
		if x := recover(); x != nil {
			text, why = "", fmt.Sprint(x)
		}
	}()
	if p.V.IsNull() {
		return "", "no such page"
	}
	// Every stream the text is read from, decompressed first into
	// nothing, bounded.
	streams := []pdf.Value{}
	c := p.V.Key("Contents")
	if c.Kind() == pdf.Array {
		for i := 0; i < c.Len(); i++ {
			streams = append(streams, c.Index(i))
		}
	} else {
		streams = append(streams, c)
	}
	for _, name := range p.Fonts() {
		if tu := p.Font(name).V.Key("ToUnicode"); tu.Kind() == pdf.Stream {
			streams = append(streams, tu)
		}
	}
	for _, v := range streams {
		if v.Kind() != pdf.Stream {
			continue
		}
		rc := v.Reader()
		n, err := io.CopyN(io.Discard, rc, maxPDFStream+1)
		rc.Close()
		if n > maxPDFStream {
			return "", fmt.Sprintf("a stream decompresses to more than %d MiB", maxPDFStream>>20)
		}
		if err != nil && err != io.EOF {
			return "", "a stream could not be read: " + err.Error()
		}
	}
	t, err := p.GetPlainText(nil)
	if err != nil {
		return "", err.Error()
	}
	return t, ""
}

// checkPageTree walks the page tree under v, refusing one deeper than
// maxPageTreeDepth or of more than maxPageTreeNodes nodes.
func checkPageTree(v pdf.Value, depth int, nodes *int) error {
	if depth > maxPageTreeDepth {
		return fmt.Errorf("the PDF's page tree is deeper than %d levels (it may loop)", maxPageTreeDepth)
	}
	if *nodes++; *nodes > maxPageTreeNodes {
		return fmt.Errorf("the PDF's page tree has more than %d nodes", maxPageTreeNodes)
	}
	if v.Key("Type").Name() != "Pages" {
		return nil
	}
	kids := v.Key("Kids")
	for i := 0; i < kids.Len(); i++ {
		if err := checkPageTree(kids.Index(i), depth+1, nodes); err != nil {
			return err
		}
	}
	return nil
}
