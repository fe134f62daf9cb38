package files

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/reinhq/rein/workspace"
)

// SearchFilesArgs are search_files' arguments.
type SearchFilesArgs struct {
	// Pattern is a regular expression in RE2 syntax (Go's regexp), matched
	// against each line on its own: ^ and $ are the start and end of the
	// line and nothing matches across a line break. Prefix it with (?i) to
	// ignore case. Example: `func \w+Handler\(`.
	Pattern string `json:"pattern" jsonschema:"a regular expression in RE2 syntax matched against each line on its own (^ and $ are the line's start and end); prefix (?i) to ignore case"`
	// Path is the directory to search under, or a single file to search,
	// relative to the first workspace root or absolute inside a root; the
	// default is the first root.
	Path string `json:"path,omitempty" jsonschema:"the directory to search under, or one file to search, relative to the first workspace root or absolute inside a root; absent means the first root"`
	// Glob keeps only the files it matches: without a slash it is matched
	// against the file's name ("*.go"), with one against its path relative
	// to Path ("cmd/**/*_test.go"). It is not applied when Path is a file.
	Glob string `json:"glob,omitempty" jsonschema:"keep only the files it matches: without a slash against the file's name (*.go), with one against its path relative to path (cmd/**/*_test.go)"`
	// Context is how many lines before and after each matching line to
	// return with it, from 0 (the default) to 20.
	Context int `json:"context,omitempty" jsonschema:"how many lines before and after each match to return with it, from 0 (the default) to 20"`
}

// Match is one matching line.
type Match struct {
	// Path names the file, as find_files does.
	Path string `json:"path"`
	// Line is the line's number, from 1.
	Line int `json:"line"`
	// Text is the line without its line break. A line longer than 2048
	// bytes is cut to that around the match, with "…" where it was cut.
	Text string `json:"text"`
	// Before are the lines before it (up to Context of them), not
	// repeating lines already returned with the previous match.
	Before []string `json:"before,omitempty"`
	// After are the lines after it (up to Context of them), stopping
	// before the next matching line, which comes as a match of its own.
	After []string `json:"after,omitempty"`
}

// SkippedFiles counts, by reason, the files search_files did not search.
type SkippedFiles struct {
	// Binary files have a NUL byte in their first 8 KiB.
	Binary int `json:"binary,omitempty"`
	// TooLarge files are over Limits.MaxSearchFileBytes.
	TooLarge int `json:"too_large,omitempty"`
	// Protected files are ones the policy does not let the agent read.
	Protected int `json:"protected,omitempty"`
	// HardLink files have more than one name, and another of them may be
	// outside the workspace, so they are not read (as read_file refuses
	// them).
	HardLink int `json:"hard_link,omitempty"`
	// Unreadable are files and directories that could not be read, or
	// changed while they were opened.
	Unreadable int `json:"unreadable,omitempty"`
}

// SearchFilesResult is what search_files found.
type SearchFilesResult struct {
	// Matches are in walk order (as find_files lists paths), then by line.
	Matches []Match `json:"matches"`
	// FilesSearched is how many files were searched.
	FilesSearched int `json:"files_searched"`
	// FilesSkipped is how many files were looked at but not searched.
	FilesSkipped int `json:"files_skipped"`
	// Skipped says why they were skipped.
	Skipped SkippedFiles `json:"skipped"`
	// Truncated says the search stopped at a limit, with more matches
	// left: narrow the pattern, the path or the glob to see them.
	Truncated bool `json:"truncated"`
	// TruncatedBy names the limit: "matches" (Limits.MaxMatches) or
	// "bytes" (Limits.MaxOutputBytes of text and context).
	TruncatedBy string `json:"truncated_by,omitempty"`
}

const (
	// maxContext bounds the context lines asked for around a match.
	maxContext = 20
	// maxLineBytes bounds the text of one line in a result: a minified
	// file's single line must not eat the output budget.
	maxLineBytes = 2048
	// binaryProbe is how much of a file's start is looked at for a NUL.
	binaryProbe = 8 << 10
	// chunkBytes is the read buffer of one worker; it grows only to hold
	// a line longer than itself (with the context lines before it), which
	// the file size ceiling bounds.
	chunkBytes = 128 << 10
	// searchWindow bounds the batches in flight between the walk and the
	// merge, and so the results held while waiting for an earlier one and
	// the directories held open for them.
	searchWindow = 8
	// searchBatchFiles is how many files make a batch.
	searchBatchFiles = 32
	// minLiteral is the shortest inner literal worth a prefilter: a
	// shorter one is found on too many lines.
	minLiteral = 3
)

// SearchFiles searches the files under a.Path (or the one file a.Path) for
// lines matching the regular expression a.Pattern.
//
// The walk is find_files': what .gitignore files ignore and .git
// directories are skipped, hidden files are not, and symbolic links are
// neither followed nor searched, so nothing outside the tree can be
// reached through one. Each file is put to the Guard first: a protected
// file is skipped and counted, never read. So are a hard link (another of
// its names may be outside the workspace), a file over
// Limits.MaxSearchFileBytes and a binary file (a NUL byte in its first
// 8 KiB).
//
// The pattern is RE2, so matching takes time linear in the input whatever
// the pattern. The search stops at Limits.MaxMatches matching lines or
// Limits.MaxOutputBytes of returned text, saying which in TruncatedBy.
// Files are searched by a few workers, but results are merged in walk
// order, so a truncated result is the same on every run. Memory is bounded
// by the limits and the read buffers, not by the size of the tree.
func (t *Tools) SearchFiles(ctx context.Context, a SearchFilesArgs) (*SearchFilesResult, error) {
	lim := t.Limits.withDefaults()
	if a.Pattern == "" {
		return nil, &Error{Kind: BadArgument, Message: "the pattern is empty: give a regular expression, such as a word the lines must contain"}
	}
	if a.Context < 0 || a.Context > maxContext {
		return nil, &Error{Kind: BadArgument, Message: fmt.Sprintf("context is %d: give between 0 and %d lines", a.Context, maxContext)}
	}
	if a.Glob != "" && !doublestar.ValidatePattern(a.Glob) {
		return nil, &Error{Kind: BadArgument, Message: fmt.Sprintf("the glob %q is not valid: check its brackets and braces, and escape a literal *, ?, [ or { with a backslash", a.Glob)}
	}
	s, err := newSearcher(a.Pattern, a.Context)
	if err != nil {
		return nil, err
	}
	p := a.Path
	if p == "" {
		p = "."
	}
	tg, err := t.resolve(Read, p)
	if err != nil {
		return nil, err
	}
	if !tg.Exists() {
		return nil, notFound(p)
	}
	if !tg.Info.IsDir() && !tg.Info.Mode().IsRegular() {
		return nil, &Error{Kind: WrongType, Path: p, Message: "neither a directory nor a regular file: name a directory or a file to search"}
	}

	r := &searchRun{t: t, s: s, lim: lim, root: tg.Root, glob: a.Glob}
	r.remMatches.Store(int64(lim.MaxMatches))
	r.remBytes.Store(int64(lim.MaxOutputBytes))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The walk hands out batches of files; the merge takes them in the
	// order they were made (order), whichever worker finished them first.
	jobs := make(chan *searchBatch, searchWindow)
	order := make(chan *searchBatch, searchWindow)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			sc := &fileScan{s: s}
			for b := range jobs {
				b.res <- r.searchBatch(wctx, b, sc)
			}
		})
	}
	send := func(b *searchBatch) bool {
		select {
		case order <- b:
		case <-wctx.Done():
			b.release()
			return false
		}
		select {
		case jobs <- b:
			return true
		case <-wctx.Done():
			// The merge may already be waiting for it.
			b.release()
			b.res <- make([]fileOutcome, len(b.files))
			return false
		}
	}
	var walkErr error
	wg.Go(func() {
		defer close(order)
		defer close(jobs)
		walkErr = r.produce(wctx, tg, send)
	})

	res := r.merge(order)
	cancel()
	wg.Wait()
	if !res.Truncated {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if walkErr != nil && !errors.Is(walkErr, context.Canceled) {
			return nil, walkErr
		}
	}
	return res, nil
}

// searchRun is one call of search_files.
type searchRun struct {
	t    *Tools
	s    *searcher
	lim  Limits
	root *workspace.Root
	glob string
	// remMatches and remBytes are what the merge has left of the limits.
	// A batch collects no more than they allow (plus the one match that
	// shows the limit was reached), which bounds what waits in the window;
	// they only shrink, so what a batch collected is always enough for
	// the merge to decide as a sequential search would.
	remMatches atomic.Int64
	remBytes   atomic.Int64
}

// searchBatch is a run of files in walk order, searched by one worker:
// handing files over one by one would cost more in scheduling than in
// searching a small file.
type searchBatch struct {
	files []searchFile
	res   chan []fileOutcome
}

// searchFile is one file to search, or (dir nil) a walk event to count.
type searchFile struct {
	walkFile
	show  string // as results name it
	event skipKind
}

func newBatch() *searchBatch {
	return &searchBatch{files: make([]searchFile, 0, searchBatchFiles), res: make(chan []fileOutcome, 1)}
}

func (b *searchBatch) release() {
	for _, f := range b.files {
		if f.dir != nil {
			f.dir.release()
		}
	}
}

type skipKind int

const (
	skipCancelled skipKind = iota
	searched
	skipBinary
	skipTooLarge
	skipProtected
	skipHardLink
	skipUnreadable
)

type fileOutcome struct {
	hits []Match
	skip skipKind
}

// produce sends the files to search, in walk order.
func (r *searchRun) produce(ctx context.Context, tg *workspace.Target, send func(*searchBatch) bool) error {
	b := newBatch()
	if tg.Info.Mode().IsRegular() {
		dr, err := tg.OpenParent(false)
		if err != nil {
			b.files = append(b.files, searchFile{event: skipUnreadable})
		} else {
			d := &dirHandle{root: dr}
			d.refs.Store(1)
			f := walkFile{dir: d, name: path.Base(tg.Rel), rel: tg.Rel, info: tg.Info}
			b.files = append(b.files, searchFile{walkFile: f, show: r.t.display(tg.Root, tg.Rel)})
		}
		send(b)
		return nil
	}
	add := func(f searchFile) bool {
		b.files = append(b.files, f)
		if len(b.files) < searchBatchFiles {
			return true
		}
		ok := send(b)
		b = newBatch()
		return ok
	}
	baseGlob := !strings.Contains(r.glob, "/")
	err := r.t.walk(ctx, tg, walkVisitor{
		file: func(f walkFile) bool {
			if r.glob != "" {
				subject := f.sub
				if baseGlob {
					subject = f.name
				}
				if !doublestar.MatchUnvalidated(r.glob, subject) {
					return true
				}
			}
			f.dir.retain()
			return add(searchFile{walkFile: f, show: r.t.display(r.root, f.rel)})
		},
		unreadable: func(string) bool { return add(searchFile{event: skipUnreadable}) },
	})
	if len(b.files) > 0 && ctx.Err() == nil {
		send(b)
	} else {
		b.release()
	}
	return err
}

// merge takes the outcomes in walk order and applies the limits.
func (r *searchRun) merge(order <-chan *searchBatch) *SearchFilesResult {
	res := &SearchFilesResult{Matches: []Match{}}
	used := 0
	for b := range order {
		for _, out := range <-b.res {
			switch out.skip {
			case searched:
				res.FilesSearched++
			case skipBinary:
				res.Skipped.Binary++
			case skipTooLarge:
				res.Skipped.TooLarge++
			case skipProtected:
				res.Skipped.Protected++
			case skipHardLink:
				res.Skipped.HardLink++
			case skipUnreadable:
				res.Skipped.Unreadable++
			}
			if out.skip != searched && out.skip != skipCancelled {
				res.FilesSkipped++
			}
			for _, m := range out.hits {
				if len(res.Matches) == r.lim.MaxMatches {
					res.Truncated, res.TruncatedBy = true, "matches"
					return res
				}
				n := hitBytes(&m)
				if used+n > r.lim.MaxOutputBytes {
					res.Truncated, res.TruncatedBy = true, "bytes"
					return res
				}
				res.Matches = append(res.Matches, m)
				used += n
			}
		}
		r.remMatches.Store(int64(r.lim.MaxMatches - len(res.Matches)))
		r.remBytes.Store(int64(r.lim.MaxOutputBytes - used))
	}
	return res
}

// searchBatch searches a batch's files in order. Each file may collect
// what the merge has left of the limits less what the batch's earlier
// files collected.
func (r *searchRun) searchBatch(ctx context.Context, b *searchBatch, sc *fileScan) []fileOutcome {
	outs := make([]fileOutcome, len(b.files))
	limMatches, limBytes := int(r.remMatches.Load()), int(r.remBytes.Load())
	for i, f := range b.files {
		if f.dir == nil {
			outs[i].skip = f.event
			continue
		}
		outs[i] = r.searchOne(ctx, &f, sc, max(limMatches, 0), max(limBytes, 0))
		f.dir.release()
		limMatches -= len(outs[i].hits)
		for k := range outs[i].hits {
			limBytes -= hitBytes(&outs[i].hits[k])
		}
	}
	return outs
}

// searchOne searches one file. The walk looked at it without following a
// link; the Guard is asked about it, and once it is open the file is
// checked to be the one the walk saw: a file swapped for a link since (to
// a protected file, say) is skipped, not read.
func (r *searchRun) searchOne(ctx context.Context, j *searchFile, sc *fileScan, limMatches, limBytes int) fileOutcome {
	if ctx.Err() != nil {
		return fileOutcome{skip: skipCancelled}
	}
	info := j.info
	if g := r.t.Guard; g != nil {
		tg := &workspace.Target{Root: r.root, Rel: j.rel, Path: r.root.Real + "/" + j.rel, Info: info}
		if g(Read, j.show, tg) != nil {
			return fileOutcome{skip: skipProtected}
		}
	}
	if info.Size() > r.lim.MaxSearchFileBytes {
		return fileOutcome{skip: skipTooLarge}
	}
	// O_NONBLOCK: should a FIFO be swapped in since the walk, the open
	// must not wait for a writer.
	f, err := j.dir.root.OpenFile(j.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fileOutcome{skip: skipUnreadable}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(info, fi) {
		return fileOutcome{skip: skipUnreadable}
	}
	if fi.Size() > r.lim.MaxSearchFileBytes {
		return fileOutcome{skip: skipTooLarge}
	}
	if links(fi) > 1 {
		return fileOutcome{skip: skipHardLink}
	}
	sc.reset(limMatches, limBytes)
	binary, err := sc.scan(f, fi.Size(), r.lim.MaxSearchFileBytes)
	switch {
	case err != nil:
		return fileOutcome{skip: skipUnreadable}
	case binary:
		return fileOutcome{skip: skipBinary}
	}
	hits := sc.hits
	sc.hits = nil
	for i := range hits {
		hits[i].Path = j.show
	}
	return fileOutcome{hits: hits, skip: searched}
}

// searcher is a compiled pattern.
type searcher struct {
	re *regexp.Regexp
	// lit, when set, is a literal every match contains: lines without it
	// are not given to the regexp at all, which is what makes a pattern
	// like `\w+Error` fast. foldLit, set instead when only a
	// case-insensitive literal is known (`(?i)timeout`), is in ASCII lower
	// case and looked for in an ASCII-lowered copy of the text.
	lit, foldLit []byte
	context      int
}

// newSearcher compiles pattern for matching line by line. A regexp over a
// whole buffer of lines is much faster than one call per line, so the
// pattern is rewritten to be unable to cross a line break: ^ and $ (and
// \A, \z) match at line boundaries, . and classes such as \s or [^a] never
// match a newline; a pattern that names a newline itself is refused, since
// it could only ever match across lines.
func newSearcher(pattern string, context int) (*searcher, error) {
	bad := func(why string) error {
		return &Error{Kind: BadArgument, Message: fmt.Sprintf("the pattern %q is not a valid regular expression: %s", pattern, why)}
	}
	tree, err := syntax.Parse(pattern, syntax.Perl&^(syntax.OneLine|syntax.ClassNL))
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, bad(fmt.Sprintf("%s in %q; the syntax is RE2's (Go's regexp), and a literal ( [ { * + ? . | ^ $ \\ is escaped with a backslash", se.Code, se.Expr))
		}
		return nil, bad(err.Error())
	}
	if err := toLineRegexp(tree); err != nil {
		return nil, &Error{Kind: BadArgument, Message: fmt.Sprintf("the pattern %q %s", pattern, err)}
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, bad(err.Error())
	}
	s := &searcher{re: re, context: context}
	// U+FFFD is what the regexp sees for an invalid byte, which the bytes
	// of the literal would not find.
	exact, folded := requiredLiterals(tree)
	switch {
	case len(exact) >= minLiteral && !strings.ContainsRune(exact, utf8.RuneError):
		s.lit = []byte(exact)
	case len(folded) >= minLiteral && !strings.ContainsRune(folded, utf8.RuneError):
		s.foldLit = []byte(folded)
	}
	return s, nil
}

// toLineRegexp rewrites a parsed pattern in place so that no match can
// include a newline (see newSearcher).
func toLineRegexp(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	case syntax.OpCharClass:
		re.Rune = withoutNewline(re.Rune)
		if len(re.Rune) == 0 {
			re.Op, re.Rune = syntax.OpNoMatch, nil
		}
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, '\n') {
			return errors.New("matches a line break, but lines are searched one at a time: search for the text on one side of it")
		}
	}
	for _, sub := range re.Sub {
		if err := toLineRegexp(sub); err != nil {
			return err
		}
	}
	return nil
}

// withoutNewline removes '\n' from a class's ranges (pairs lo, hi).
func withoutNewline(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// requiredLiterals returns two literals every match of re contains, the
// longest it can see cheaply: exact, as bytes, and folded, in ASCII lower
// case, to be found in the text once it is lowered the same way. A
// case-insensitive literal folds that way only when it is ASCII without k
// or s, whose case-insensitive matches include the Kelvin sign and the
// long s.
func requiredLiterals(re *syntax.Regexp) (exact, folded string) {
	switch re.Op {
	case syntax.OpLiteral:
		return literalForms(re)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		// Adjacent literals join into longer runs.
		var exactRun, foldRun string
		for _, sub := range re.Sub {
			var e, f string
			if sub.Op == syntax.OpLiteral {
				e, f = literalForms(sub)
				exactRun, foldRun = joinRun(exactRun, e), joinRun(foldRun, f)
				e, f = exactRun, foldRun
			} else {
				exactRun, foldRun = "", ""
				e, f = requiredLiterals(sub)
			}
			if len(e) > len(exact) {
				exact = e
			}
			if len(f) > len(folded) {
				folded = f
			}
		}
	}
	return exact, folded
}

// literalForms is a literal node's exact and folded forms ("" for none).
func literalForms(re *syntax.Regexp) (exact, folded string) {
	s := string(re.Rune)
	if re.Flags&syntax.FoldCase == 0 {
		exact = s
	} else if strings.ContainsAny(s, "kKsS") {
		return "", ""
	}
	for _, r := range re.Rune {
		if r >= utf8.RuneSelf && re.Flags&syntax.FoldCase != 0 {
			return exact, ""
		}
	}
	return exact, strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// joinRun extends a run of adjacent literals, or breaks it ("" when next
// has no form).
func joinRun(run, next string) string {
	if next == "" {
		return ""
	}
	return run + next
}

// lowerASCII writes src to dst (at least as long) with the ASCII capital
// letters in lower case, eight bytes at a time: it runs over every byte
// searched for a case-insensitive literal.
func lowerASCII(dst, src []byte) {
	const (
		low7 = 0x7f7f7f7f7f7f7f7f
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		l := w & low7
		// The high bit of each byte of atLeastA says it is >= 'A', of
		// pastZ that it is > 'Z'; bytes >= 0x80 are left alone.
		atLeastA := l + 0x3f3f3f3f3f3f3f3f
		pastZ := l + 0x2525252525252525
		upper := atLeastA &^ pastZ &^ w & high
		binary.LittleEndian.PutUint64(dst[i:], w|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// fileScan is a worker's state for one file; its buffer is reused from
// file to file.
type fileScan struct {
	s   *searcher
	buf []byte
	// lower is the lowered copy of a region, for a folded literal.
	lower []byte
	end   int // data is buf[:end]
	// lineOff starts line lineNo: line numbers are counted lazily, up to
	// a match or up to what a refill drops.
	lineOff, lineNo int
	// lastShown is the last line returned (as a match or context), so
	// that context is not repeated; pendingAfter is how many lines after
	// the last match are still wanted, starting at afterOff.
	lastShown, pendingAfter, afterOff int
	hits                              []Match
	// used is the text size of the hits but the last (whose context may
	// still grow); limMatches and limBytes are the budget of this file.
	used, limMatches, limBytes int
	stop                       bool
}

func (f *fileScan) reset(limMatches, limBytes int) {
	if len(f.buf) != chunkBytes {
		f.buf = make([]byte, chunkBytes)
	}
	if len(f.lower) > chunkBytes {
		f.lower = nil
	}
	f.end, f.lineOff, f.lineNo = 0, 0, 1
	f.lastShown, f.pendingAfter, f.afterOff = 0, 0, 0
	f.hits, f.used, f.stop = nil, 0, false
	f.limMatches, f.limBytes = limMatches, limBytes
}

// scan searches what r holds: size bytes by the file's Stat (0 if it did
// not know), never more than ceiling. It reads chunkBytes at a time and
// searches each chunk up to its last line break, keeping the context lines
// before the rest for the next round. It reports whether the file is
// binary, in which case nothing was searched.
func (f *fileScan) scan(r io.Reader, size, ceiling int64) (binary bool, err error) {
	limit := ceiling
	if size > 0 {
		limit = min(size, ceiling)
	}
	var read int64
	eof, first, from, idle := false, true, 0, 0
	for {
		for f.end < len(f.buf) && !eof {
			n, err := r.Read(f.buf[f.end:])
			f.end += n
			read += int64(n)
			switch {
			case errors.Is(err, io.EOF), read >= limit:
				// A file that grows while it is read is searched as it
				// was when it was opened.
				eof = true
			case err != nil:
				return false, err
			case n == 0:
				if idle++; idle > 100 {
					return false, io.ErrNoProgress
				}
			}
		}
		if first {
			first = false
			if bytes.IndexByte(f.buf[:min(f.end, binaryProbe)], 0) >= 0 {
				return true, nil
			}
		}
		lim := f.end
		if !eof {
			i := bytes.LastIndexByte(f.buf[from:f.end], '\n')
			if i < 0 {
				f.grow()
				continue
			}
			lim = from + i + 1
		}
		f.region(from, lim)
		if f.stop {
			return false, nil
		}
		f.fillAfter(lim)
		if eof {
			return false, nil
		}
		// Keep the context lines before lim for the matches of the next
		// round, and drop the rest.
		keep := lim
		for k := 0; k < f.s.context && keep > 0; k++ {
			keep = bytes.LastIndexByte(f.buf[:keep-1], '\n') + 1
		}
		if f.lineOff < keep {
			f.lineAt(keep)
		}
		copy(f.buf, f.buf[keep:f.end])
		f.end -= keep
		f.lineOff -= keep
		f.afterOff = max(f.afterOff-keep, 0)
		from = lim - keep
		if f.end > len(f.buf)/2 {
			f.grow()
		}
	}
}

func (f *fileScan) grow() {
	b := make([]byte, 2*len(f.buf))
	copy(b, f.buf[:f.end])
	f.buf = b
}

// region searches buf[from:lim], whole lines, for matching lines.
func (f *fileScan) region(from, lim int) {
	buf, re := f.buf, f.s.re
	// With a literal, text is what it is looked for in: buf itself, or
	// its lowered copy (offsets shifted by from).
	text, lit, shift := buf, f.s.lit, 0
	if f.s.foldLit != nil {
		if len(f.lower) < lim-from {
			f.lower = make([]byte, len(buf))
		}
		lowerASCII(f.lower, buf[from:lim])
		text, lit, shift = f.lower, f.s.foldLit, from
	}
	for pos := from; pos < lim; {
		var ls, le int
		if lit != nil {
			i := bytes.Index(text[pos-shift:lim-shift], lit)
			if i < 0 {
				return
			}
			ls, le = lineStart(buf, pos, pos+i), lineEnd(buf, pos+i, lim)
			if !re.Match(buf[ls:le]) {
				pos = le + 1
				continue
			}
		} else {
			loc := re.FindIndex(buf[pos:lim])
			if loc == nil {
				return
			}
			at := pos + loc[0]
			if at == lim && buf[lim-1] == '\n' {
				// An empty match after the last line break: there is no
				// line there.
				return
			}
			ls, le = lineStart(buf, pos, at), lineEnd(buf, at, lim)
		}
		f.hit(ls, le)
		if f.stop {
			return
		}
		pos = le + 1
	}
}

// lineStart is the start of the line holding at, no earlier than from
// (itself a line start).
func lineStart(buf []byte, from, at int) int {
	return from + bytes.LastIndexByte(buf[from:at], '\n') + 1
}

// lineEnd is the end (the line break's offset) of the line holding at, or
// lim.
func lineEnd(buf []byte, at, lim int) int {
	if i := bytes.IndexByte(buf[at:lim], '\n'); i >= 0 {
		return at + i
	}
	return lim
}

// lineAt returns the number of the line starting at off (off >= lineOff).
func (f *fileScan) lineAt(off int) int {
	f.lineNo += bytes.Count(f.buf[f.lineOff:off], []byte{'\n'})
	f.lineOff = off
	return f.lineNo
}

// hit records the matching line buf[ls:le], unless the file's budget is
// spent, in which case it stops the scan.
func (f *fileScan) hit(ls, le int) {
	f.fillAfter(ls)
	if n := len(f.hits); n > 0 {
		f.used += hitBytes(&f.hits[n-1])
		if f.used > f.limBytes {
			f.stop = true
			return
		}
	}
	if len(f.hits) > f.limMatches {
		f.stop = true
		return
	}
	ln := f.lineAt(ls)
	var before []string
	if n := min(f.s.context, ln-1-f.lastShown); n > 0 {
		before = make([]string, 0, n)
		for p := ls; len(before) < n && p > 0; {
			start := bytes.LastIndexByte(f.buf[:p-1], '\n') + 1
			before = append(before, showLine(f.buf[start:p-1], 0))
			p = start
		}
		slices.Reverse(before)
	}
	f.hits = append(f.hits, Match{Line: ln, Text: f.s.showMatch(f.buf[ls:le]), Before: before})
	f.lastShown, f.pendingAfter, f.afterOff = ln, f.s.context, le+1
}

// fillAfter adds to the last match the context lines after it that lie
// before upto.
func (f *fileScan) fillAfter(upto int) {
	for f.pendingAfter > 0 && f.afterOff < upto {
		e := lineEnd(f.buf, f.afterOff, upto)
		h := &f.hits[len(f.hits)-1]
		h.After = append(h.After, showLine(f.buf[f.afterOff:e], 0))
		f.lastShown++
		f.pendingAfter--
		f.afterOff = e + 1
	}
}

// hitBytes is what a match costs of Limits.MaxOutputBytes.
func hitBytes(m *Match) int {
	n := len(m.Text)
	for _, s := range m.Before {
		n += len(s)
	}
	for _, s := range m.After {
		n += len(s)
	}
	return n
}

// showMatch is the text shown for a matching line: a long line is cut
// around the match.
func (s *searcher) showMatch(line []byte) string {
	if len(line) <= maxLineBytes {
		return showLine(line, 0)
	}
	at := 0
	if loc := s.re.FindIndex(line); loc != nil {
		at = max(loc[0]-maxLineBytes/4, 0)
	}
	return showLine(line, at)
}

// showLine is the text shown for a line: without a carriage return ending
// it, and cut to maxLineBytes from about start (at rune boundaries), with
// "…" where it was cut.
func showLine(line []byte, start int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= maxLineBytes {
		return string(line)
	}
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+maxLineBytes)
	for end < len(line) && end > start && !utf8.RuneStart(line[end]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.Write(line[start:end])
	if end < len(line) {
		b.WriteString("…")
	}
	return b.String()
}
