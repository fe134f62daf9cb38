//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A gate's go command gets a build cache that holds nothing the code
// under test could have written: a fresh, empty writable directory, and
// under it a read-only seed, a build cache in Go's own on-disk layout
// written earlier by a trusted go command. The go command reaches both
// through a cache program (GOCACHEPROG, the protocol of
// cmd/go/internal/cacheprog) that rein's own binary (or its init) runs
// when started with goCacheFlag. The seed is trusted as the go command
// trusts its own cache: a well-formed index entry is believed. It is read
// in place and never written, not even its mtimes.

// goCacheFlag, as the first argument, followed by the writable directory
// and the seeds, makes Main serve the go command's cache on stdin and
// stdout instead of returning.
const goCacheFlag = "--rein-gocacheprog"

// Bounds of what the go command may send, so that a broken or hostile
// stream is an error rather than the program's memory: a request line is
// a small JSON object; a body (a compiled package, a test's output) is
// far below a gibibyte.
const (
	goCacheMaxLine = 64 << 10
	goCacheMaxBody = 1 << 30
)

// The layout of Go's disk cache (cmd/go/internal/cache/cache.go): an
// index entry "<dir>/<xx>/<action hex>-a" holds
// "v1 <action hex> <output hex> <size %20d> <unix nanos %20d>\n", and the
// output itself is "<dir>/<xx>/<output hex>-d", xx being the id's first
// byte in hex.
const (
	goCacheHashSize  = sha256.Size
	goCacheHexSize   = 2 * goCacheHashSize
	goCacheEntrySize = 2 + 1 + goCacheHexSize + 1 + goCacheHexSize + 1 + 20 + 1 + 20 + 1
)

// goCacheCommands are the commands the program tells the go command it
// knows, in its first message.
var goCacheCommands = []string{"get", "put", "close"}

// errGoCacheUnquotable is the refusal of a path GOCACHEPROG cannot carry.
var errGoCacheUnquotable = errors.New("GOCACHEPROG cannot carry this path")

// goCacheRequest is a request of the go command (cacheprog.Request, but
// the body, which follows on its own line).
type goCacheRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

// goCacheResponse is the program's answer (cacheprog.Response).
type goCacheResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// goCacheEntry is an index entry read back: the output an action made.
type goCacheEntry struct {
	output [goCacheHashSize]byte
	size   int64
	time   time.Time
}

// goCacheMain serves the go command's cache on stdin and stdout with
// seeds under dir, and returns the exit status: 1, having said why on
// stderr, when the stream or the directories fail it.
func goCacheMain(dir string, seeds []string) int {
	if err := serveGoCache(seeds, dir, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "rein gocacheprog: %v\n", err)
		return 1
	}
	return 0
}

// serveGoCache is a GOCACHEPROG cache program: it reads the go command's
// requests from in and writes its answers to out, flushing each, until
// a close request (or the end of in between requests), and then returns
// nil.
//
// A get looks in dir, then in each seed in order, each a cache in Go's
// disk layout; an
// index entry that is malformed, or whose output file is missing, not a
// regular file, or of another size than it says, is a miss, as it is to
// the go command. A hit names the output file where it is: the seed's is
// read by the go command in place, and never written. A put checks that
// its body is BodySize bytes hashing to its OutputID, and writes the
// output and then the index entry into dir, each through a temporary file
// renamed into place so that no reader sees part of one. A request that
// cannot be served (an unknown command, a body that does not hash to its
// OutputID, a write that fails) is answered with an error; a stream that
// breaks the protocol, or a body over a gibibyte, ends serveGoCache with
// an error.
//
// A seed may be empty, or name a directory that does not exist: it then
// holds nothing. dir must be an existing directory.
func serveGoCache(seeds []string, dir string, in io.Reader, out io.Writer) error {
	s, err := newGoCacheServer(seeds, dir, in, out)
	if err != nil {
		return err
	}
	if err := s.send(goCacheResponse{KnownCommands: goCacheCommands}); err != nil {
		return err
	}
	defer s.writeUsed()
	for {
		req, err := s.readRequest()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var res goCacheResponse
		switch req.Command {
		case "get":
			res = s.get(req)
		case "put":
			res, err = s.put(req)
			if err != nil {
				return err
			}
		case "close":
			// Before the answer: the go command may remove dir once it
			// has it.
			s.writeUsed()
		default:
			res.Err = fmt.Sprintf("unknown command %q: this cache program knows %s", req.Command, strings.Join(goCacheCommands, ", "))
		}
		res.ID = req.ID
		if err := s.send(res); err != nil {
			return err
		}
		if req.Command == "close" {
			return nil
		}
	}
}

// goCacheServer is a cache program's state: the two caches, absolute, and
// the stream.
type goCacheServer struct {
	seeds []string
	dir   string
	// used are the actions answered with a hit or put, each once, in
	// order: the go commands' working set, appended to goCacheUsedFile
	// when the stream ends.
	used     [][goCacheHashSize]byte
	usedSeen map[[goCacheHashSize]byte]bool
	in       *bufio.Reader
	out      *bufio.Writer
}

func newGoCacheServer(seeds []string, dir string, in io.Reader, out io.Writer) (*goCacheServer, error) {
	if dir == "" {
		return nil, errors.New("no cache directory: name the writable directory the cache is kept in")
	}
	// The go command is told the paths of outputs, which it must find
	// from wherever it is: they are absolute.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("cache directory %s is not a directory", dir)
	}
	var roots []string
	for _, seed := range seeds {
		if seed == "" {
			continue
		}
		if seed, err = filepath.Abs(seed); err != nil {
			return nil, fmt.Errorf("seed cache: %w", err)
		}
		fi, err := os.Stat(seed)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("seed cache: %w", err)
		case !fi.IsDir():
			return nil, fmt.Errorf("seed cache %s is not a directory", seed)
		}
		roots = append(roots, seed)
	}
	return &goCacheServer{seeds: roots, dir: dir, in: bufio.NewReaderSize(in, goCacheMaxLine), out: bufio.NewWriter(out)}, nil
}

// send writes res and flushes it: the go command waits for each answer.
func (s *goCacheServer) send(res goCacheResponse) error {
	if err := json.NewEncoder(s.out).Encode(res); err != nil {
		return fmt.Errorf("writing response %d: %w", res.ID, err)
	}
	if err := s.out.Flush(); err != nil {
		return fmt.Errorf("writing response %d: %w", res.ID, err)
	}
	return nil
}

// skipSpace skips the blank between JSON values (the go command ends
// each request with an empty line), and returns io.EOF at the end of in.
func (s *goCacheServer) skipSpace() error {
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return s.in.UnreadByte()
		}
	}
}

// readRequest reads the next request line, or returns io.EOF at the end
// of in between requests.
func (s *goCacheServer) readRequest() (*goCacheRequest, error) {
	if err := s.skipSpace(); err != nil {
		return nil, err
	}
	line, err := s.in.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("request line longer than %d bytes", goCacheMaxLine)
	}
	if err == io.EOF {
		return nil, fmt.Errorf("request %.64q…: %w", line, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("reading request: %w", err)
	}
	req := new(goCacheRequest)
	if err := json.Unmarshal(line, req); err != nil {
		return nil, fmt.Errorf("request %.64q…: %w", line, err)
	}
	return req, nil
}

// get answers a get: from dir, else from the first seed that has it,
// else a miss.
func (s *goCacheServer) get(req *goCacheRequest) goCacheResponse {
	if len(req.ActionID) != goCacheHashSize {
		return goCacheResponse{Err: fmt.Sprintf("get: action id of %d bytes, not %d", len(req.ActionID), goCacheHashSize)}
	}
	action := [goCacheHashSize]byte(req.ActionID)
	for _, root := range append([]string{s.dir}, s.seeds...) {
		if e, ok := goCacheRead(root, action); ok {
			t := e.time
			s.use(action)
			return goCacheResponse{OutputID: e.output[:], Size: e.size, Time: &t, DiskPath: goCacheFile(root, e.output, "d")}
		}
	}
	return goCacheResponse{Miss: true}
}

// goCacheUsedFile is the file of the writable directory that lists, a
// hex action ID a line, the actions the cache program answered a hit for
// or was given: the go commands' working set, which a later run over the
// same seeds lays out beforehand (goPrefill) instead of asking for it.
const goCacheUsedFile = "rein-used"

// use notes action as used.
func (s *goCacheServer) use(action [goCacheHashSize]byte) {
	if s.usedSeen == nil {
		s.usedSeen = map[[goCacheHashSize]byte]bool{}
	}
	if !s.usedSeen[action] {
		s.usedSeen[action] = true
		s.used = append(s.used, action)
	}
}

// writeUsed appends the actions used to goCacheUsedFile. The list only
// saves work later: losing it loses nothing else.
func (s *goCacheServer) writeUsed() {
	if len(s.used) == 0 {
		return
	}
	defer func() { s.used = nil }()
	var b bytes.Buffer
	for _, a := range s.used {
		fmt.Fprintf(&b, "%x\n", a)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, goCacheUsedFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o666)
	if err != nil {
		return
	}
	f.Write(b.Bytes())
	f.Close()
}

// maxPrefill bounds the actions a list names: far above a large module's
// working set.
const maxPrefill = 100_000

// readGoUsed reads a goCacheUsedFile: its well-formed lines, each once,
// at most maxPrefill.
func readGoUsed(path string) ([][goCacheHashSize]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPrefill*(goCacheHexSize+1)))
	if err != nil {
		return nil, err
	}
	var out [][goCacheHashSize]byte
	seen := map[[goCacheHashSize]byte]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		var a [goCacheHashSize]byte
		if len(line) != goCacheHexSize {
			continue
		}
		if _, err := hex.Decode(a[:], []byte(line)); err != nil || seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	return out, nil
}

// goPrefill is a Go build cache laid out by the init, inside the sandbox,
// before the command starts: the go command then reads it as its own
// GOCACHE, at native speed, with no program between.
type goPrefill struct {
	// Dir is the cache, made by the init (in the sandbox's /tmp on the
	// bwrap rung: a file system in memory, where files are made fast).
	Dir string
	// Seeds are the read-only caches the entries are found in, where the
	// command sees them.
	Seeds []string
	// Actions are the entries to lay out (readGoUsed).
	Actions [][goCacheHashSize]byte
}

// run lays out in Dir the entry of each action of Actions that the first
// of Seeds holding it well formed (goCacheRead) has: a copy of its index
// entry, and its output as a symbolic link to the seed's file. The seeds
// stay read-only to the command: it can change the links, which are its
// own, never what they lead to; the go command follows them to read, and
// its marking of times through them fails on the read-only seed and is
// ignored. An action left out, or that no seed holds, is a miss, built
// and kept in Dir. trim.txt is written so that the go command never walks
// Dir to trim it. It returns the entries laid out.
func (g *goPrefill) run() (int, error) {
	if err := os.MkdirAll(g.Dir, 0o777); err != nil {
		return 0, err
	}
	made := map[string]bool{}
	mkdir := func(p string) error {
		d := filepath.Dir(p)
		if made[d] {
			return nil
		}
		made[d] = true
		return os.MkdirAll(d, 0o777)
	}
	n := 0
	buf := make([]byte, goCacheEntrySize+1)
	seen := map[[goCacheHashSize]byte]bool{}
	for _, action := range g.Actions {
		if seen[action] {
			continue
		}
		seen[action] = true
		for _, root := range g.Seeds {
			// Only an entry whose output is there, of its size: the go
			// command never rebuilds, and so never writes through, a link
			// laid out here.
			entry, e, ok := goCacheReadEntry(root, action, buf)
			if !ok {
				continue
			}
			index, output := goCacheFile(g.Dir, action, "a"), goCacheFile(g.Dir, e.output, "d")
			if err := mkdir(index); err != nil {
				return n, err
			}
			if err := mkdir(output); err != nil {
				return n, err
			}
			if err := os.Symlink(goCacheFile(root, e.output, "d"), output); err != nil && !errors.Is(err, os.ErrExist) {
				return n, err
			}
			if err := os.WriteFile(index, entry, 0o666); err != nil {
				return n, err
			}
			n++
			break
		}
	}
	return n, os.WriteFile(filepath.Join(g.Dir, "trim.txt"), fmt.Appendf(nil, "%d", time.Now().Unix()), 0o666)
}

// goCacheFile is the path of the index entry ("a") or output ("d") of id
// in the cache at root.
func goCacheFile(root string, id [goCacheHashSize]byte, kind string) string {
	return filepath.Join(root, fmt.Sprintf("%02x", id[0]), fmt.Sprintf("%x-%s", id, kind))
}

// goCacheRead reads the index entry of action in the cache at root, as
// cmd/go/internal/cache's DiskCache.get and GetFile do, and reports
// whether it is a hit: well formed, for this action, and with an output
// file of the size it says. It opens nothing for writing.
func goCacheRead(root string, action [goCacheHashSize]byte) (goCacheEntry, bool) {
	_, e, ok := goCacheReadEntry(root, action, make([]byte, goCacheEntrySize+1))
	return e, ok
}

// goCacheReadEntry is goCacheRead with the entry's bytes, read into buf
// (goCacheEntrySize+1 bytes, to see one too long).
func goCacheReadEntry(root string, action [goCacheHashSize]byte, buf []byte) ([]byte, goCacheEntry, bool) {
	entry, e, ok := goCacheReadIndex(root, action, buf)
	if !ok {
		return nil, goCacheEntry{}, false
	}
	// A regular file, as the go command reads it; a directory is an
	// executable a go command kept for go run, which this protocol has
	// no way to name.
	fi, err := os.Lstat(goCacheFile(root, e.output, "d"))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.size {
		return nil, goCacheEntry{}, false
	}
	return entry, e, true
}

// goCacheReadIndex reads and parses the index entry of action at root
// into buf, without looking at its output.
func goCacheReadIndex(root string, action [goCacheHashSize]byte, buf []byte) ([]byte, goCacheEntry, bool) {
	f, err := os.Open(goCacheFile(root, action, "a"))
	if err != nil {
		return nil, goCacheEntry{}, false
	}
	n, err := io.ReadFull(f, buf)
	f.Close()
	if n != goCacheEntrySize || err != io.ErrUnexpectedEOF {
		return nil, goCacheEntry{}, false
	}
	entry := buf[:goCacheEntrySize]
	e, ok := goCacheParse(entry, action)
	if !ok {
		return nil, goCacheEntry{}, false
	}
	return entry, e, true
}

// goCacheParse parses an index entry of goCacheEntrySize bytes by the
// rules of DiskCache.get, and reports whether it is well formed and
// names action.
func goCacheParse(entry []byte, action [goCacheHashSize]byte) (goCacheEntry, bool) {
	const (
		idAt   = 3
		outAt  = idAt + goCacheHexSize + 1
		sizeAt = outAt + goCacheHexSize + 1
		timeAt = sizeAt + 20 + 1
	)
	if len(entry) != goCacheEntrySize || entry[0] != 'v' || entry[1] != '1' || entry[2] != ' ' ||
		entry[outAt-1] != ' ' || entry[sizeAt-1] != ' ' || entry[timeAt-1] != ' ' || entry[goCacheEntrySize-1] != '\n' {
		return goCacheEntry{}, false
	}
	var id, out [goCacheHashSize]byte
	if _, err := hex.Decode(id[:], entry[idAt:outAt-1]); err != nil || id != action {
		return goCacheEntry{}, false
	}
	if _, err := hex.Decode(out[:], entry[outAt:sizeAt-1]); err != nil {
		return goCacheEntry{}, false
	}
	size, err := strconv.ParseInt(string(bytes.TrimLeft(entry[sizeAt:timeAt-1], " ")), 10, 64)
	if err != nil || size < 0 {
		return goCacheEntry{}, false
	}
	nanos, err := strconv.ParseInt(string(bytes.TrimLeft(entry[timeAt:goCacheEntrySize-1], " ")), 10, 64)
	if err != nil || nanos < 0 {
		return goCacheEntry{}, false
	}
	return goCacheEntry{output: out, size: size, time: time.Unix(0, nanos)}, true
}

// put reads a put's body and stores it in dir. What the go command
// should hear is the response; the error is a stream that cannot go on.
func (s *goCacheServer) put(req *goCacheRequest) (goCacheResponse, error) {
	if req.BodySize < 0 || req.BodySize > goCacheMaxBody {
		return goCacheResponse{}, fmt.Errorf("put %d: body of %d bytes: the limit is %d", req.ID, req.BodySize, goCacheMaxBody)
	}
	// The body is read whatever else is wrong with the request, so that
	// the next request is where the stream is.
	tmp, sum, err := s.readBody(req)
	if err != nil {
		return goCacheResponse{}, err
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(tmp)
		}
	}()
	switch {
	case len(req.ActionID) != goCacheHashSize:
		return goCacheResponse{Err: fmt.Sprintf("put: action id of %d bytes, not %d", len(req.ActionID), goCacheHashSize)}, nil
	case len(req.OutputID) != goCacheHashSize:
		return goCacheResponse{Err: fmt.Sprintf("put: output id of %d bytes, not %d", len(req.OutputID), goCacheHashSize)}, nil
	case !bytes.Equal(sum[:], req.OutputID):
		return goCacheResponse{Err: fmt.Sprintf("put: body of action %x hashes to %x, not to its output id %x", req.ActionID, sum, req.OutputID)}, nil
	}
	action, output := [goCacheHashSize]byte(req.ActionID), [goCacheHashSize]byte(req.OutputID)
	data := goCacheFile(s.dir, output, "d")
	if err := os.MkdirAll(filepath.Dir(data), 0o777); err != nil {
		return goCacheResponse{Err: fmt.Sprintf("put: %v", err)}, nil
	}
	if err := os.Rename(tmp, data); err != nil {
		return goCacheResponse{Err: fmt.Sprintf("put: %v", err)}, nil
	}
	keep = true
	index := goCacheFile(s.dir, action, "a")
	if err := os.MkdirAll(filepath.Dir(index), 0o777); err != nil {
		return goCacheResponse{Err: fmt.Sprintf("put: %v", err)}, nil
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, output, req.BodySize, time.Now().UnixNano())
	if err := goCacheWriteFile(index, []byte(entry)); err != nil {
		return goCacheResponse{Err: fmt.Sprintf("put: %v", err)}, nil
	}
	s.use(action)
	return goCacheResponse{DiskPath: data}, nil
}

// readBody reads a put's body (none when BodySize is 0; else a line
// holding it as a base64 JSON string) into a temporary file in dir, and
// returns the file and the body's SHA-256. The body must be exactly
// BodySize bytes.
func (s *goCacheServer) readBody(req *goCacheRequest) (tmp string, sum [sha256.Size]byte, err error) {
	f, err := os.CreateTemp(s.dir, ".rein-put-*")
	if err != nil {
		// Without a file to write to, the stream cannot be followed.
		return "", sum, fmt.Errorf("put %d: %w", req.ID, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("put %d: %w", req.ID, cerr)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	if req.BodySize > 0 {
		if err := s.skipSpace(); err != nil {
			return "", sum, fmt.Errorf("put %d: body: %w", req.ID, noEOF(err))
		}
		if err := s.expect('"'); err != nil {
			return "", sum, fmt.Errorf("put %d: body: %w", req.ID, err)
		}
		encoded := &io.LimitedReader{R: s.in, N: int64(base64.StdEncoding.EncodedLen(int(req.BodySize)))}
		n, err := io.Copy(io.MultiWriter(f, h), base64.NewDecoder(base64.StdEncoding, encoded))
		if err == nil && encoded.N > 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return "", sum, fmt.Errorf("put %d: body: %w", req.ID, noEOF(err))
		}
		if n != req.BodySize {
			return "", sum, fmt.Errorf("put %d: body of %d bytes where the request says %d", req.ID, n, req.BodySize)
		}
		if err := s.expect('"'); err != nil {
			return "", sum, fmt.Errorf("put %d: body: %w", req.ID, err)
		}
	}
	if err := f.Chmod(0o644); err != nil {
		return "", sum, fmt.Errorf("put %d: %w", req.ID, err)
	}
	h.Sum(sum[:0])
	return f.Name(), sum, nil
}

// expect reads the byte c.
func (s *goCacheServer) expect(c byte) error {
	got, err := s.in.ReadByte()
	if err != nil {
		return noEOF(err)
	}
	if got != c {
		return fmt.Errorf("%q where %q belongs", got, c)
	}
	return nil
}

// noEOF makes the end of the stream inside a request the error it is.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// goCacheWriteFile writes data to name through a temporary file beside it, so
// that a reader sees the whole file or none.
func goCacheWriteFile(name string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(name), ".rein-put-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// goCacheProg is the GOCACHEPROG value that starts exe as the cache
// program of seeds under dir: the words (and goCacheFlag) as the go
// command's quoted.Split reads them back, each quoted when it holds a
// blank or a quote. The paths must be absolute (the go command starts the
// program in whatever directory it runs in, and looks a bare name up in
// PATH); a path holding both kinds of quote, or a NUL, cannot be carried
// and is refused with errGoCacheUnquotable.
func goCacheProg(exe, dir string, seeds ...string) (string, error) {
	words := append([]string{exe, goCacheFlag, dir}, seeds...)
	for i, w := range words {
		if i != 1 && !filepath.IsAbs(w) {
			return "", fmt.Errorf("GOCACHEPROG: %q is not an absolute path", w)
		}
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := goCacheQuote(w)
		if err != nil {
			return "", err
		}
		b.WriteString(q)
	}
	return b.String(), nil
}

// goCacheQuote quotes w for quoted.Split, which splits at ASCII blanks
// and takes a word that starts with a quote up to the next such quote,
// with no escapes.
func goCacheQuote(w string) (string, error) {
	switch {
	case strings.IndexByte(w, 0) >= 0:
		return "", fmt.Errorf("%w: %q holds a NUL", errGoCacheUnquotable, w)
	case w != "" && !strings.ContainsAny(w, " \t\r\n'\""):
		return w, nil
	case !strings.Contains(w, "'"):
		return "'" + w + "'", nil
	case !strings.Contains(w, `"`):
		return `"` + w + `"`, nil
	}
	return "", fmt.Errorf("%w: %q holds both kinds of quote; move it to a path without them", errGoCacheUnquotable, w)
}
