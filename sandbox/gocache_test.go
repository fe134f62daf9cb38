//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// goCacheClient speaks to serveGoCache over pipes, framing each request
// as the go command does (cmd/go/internal/cache/prog.go: the JSON object,
// an empty line, then the body as a base64 JSON string on its own line).
type goCacheClient struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func startGoCache(t *testing.T, seed, dir string) *goCacheClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &goCacheClient{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		err := serveGoCache(seedList(seed), dir, inR, outW)
		inR.CloseWithError(errors.New("the cache program has returned"))
		outW.Close()
		c.done <- err
	}()
	// Registered after the caller's t.TempDir, so run before its removal:
	// the program has written all it writes (its list of what was used)
	// by then.
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Error("the cache program did not end")
		}
	})
	return c
}

// send writes req, and body after it when there is one.
func (c *goCacheClient) send(req goCacheRequest, body []byte) {
	c.t.Helper()
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(req)
	b.WriteByte('\n')
	if len(body) > 0 {
		fmt.Fprintf(&b, "%q\n", base64.StdEncoding.EncodeToString(body))
	}
	c.write(b.String())
}

func (c *goCacheClient) write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		c.t.Fatalf("writing to the cache program: %v", err)
	}
}

// line reads one response line, without its newline.
func (c *goCacheClient) line() string {
	c.t.Helper()
	l, err := c.out.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a response: %v (read %q)", err, l)
	}
	return strings.TrimSuffix(l, "\n")
}

// expect reads a response line and checks it is want, byte for byte.
func (c *goCacheClient) expect(want string) {
	c.t.Helper()
	if got := c.line(); got != want {
		c.t.Fatalf("response\n got %s\nwant %s", got, want)
	}
}

// wait returns what serveGoCache returned.
func (c *goCacheClient) wait() error {
	c.t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		c.t.Fatal("serveGoCache has not returned")
		return nil
	}
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestGoCacheProtocol(t *testing.T) {
	dir := t.TempDir()
	c := startGoCache(t, "", dir)
	c.expect(`{"ID":0,"KnownCommands":["get","put","close"]}`)

	action := hashOf("action")
	c.send(goCacheRequest{ID: 1, Command: "get", ActionID: action}, nil)
	c.expect(`{"ID":1,"Miss":true}`)

	body := "compiled package"
	output := [32]byte(hashOf(body))
	data := filepath.Join(dir, fmt.Sprintf("%02x", output[0]), fmt.Sprintf("%x-d", output))
	before := time.Now()
	c.send(goCacheRequest{ID: 2, Command: "put", ActionID: action, OutputID: output[:], BodySize: int64(len(body))}, []byte(body))
	c.expect(`{"ID":2,"DiskPath":` + jsonOf(data) + `}`)
	after := time.Now()
	if got, err := os.ReadFile(data); err != nil || string(got) != body {
		t.Fatalf("the output file holds %q, %v; want %q", got, err, body)
	}
	index, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%02x", action[0]), fmt.Sprintf("%x-a", action)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("v1 %x %x %20d ", action, output, len(body))
	var nanos int64
	if !strings.HasPrefix(string(index), prefix) || len(index) != goCacheEntrySize {
		t.Fatalf("index entry %q does not start with %q or is not %d bytes", index, prefix, goCacheEntrySize)
	}
	if _, err := fmt.Sscanf(string(index[len(prefix):]), "%d\n", &nanos); err != nil || nanos < before.UnixNano() || nanos > after.UnixNano() {
		t.Fatalf("index entry %q: time %d (%v) is not that of the put", index, nanos, err)
	}
	stamp := time.Unix(0, nanos)

	c.send(goCacheRequest{ID: 3, Command: "get", ActionID: action}, nil)
	c.expect(fmt.Sprintf(`{"ID":3,"OutputID":%s,"Size":%d,"Time":%s,"DiskPath":%s}`, jsonOf(output[:]), len(body), jsonOf(stamp), jsonOf(data)))

	c.send(goCacheRequest{ID: 4, Command: "close"}, nil)
	c.expect(`{"ID":4}`)
	if err := c.wait(); err != nil {
		t.Fatalf("serveGoCache after close: %v", err)
	}
}

// TestGoCacheEmptyBody: an empty output has no body line, and is the
// empty file.
func TestGoCacheEmptyBody(t *testing.T) {
	dir := t.TempDir()
	c := startGoCache(t, "", dir)
	c.line()
	action, output := hashOf("action"), [32]byte(hashOf(""))
	data := filepath.Join(dir, fmt.Sprintf("%02x", output[0]), fmt.Sprintf("%x-d", output))
	c.send(goCacheRequest{ID: 1, Command: "put", ActionID: action, OutputID: output[:]}, nil)
	c.expect(`{"ID":1,"DiskPath":` + jsonOf(data) + `}`)
	c.send(goCacheRequest{ID: 2, Command: "get", ActionID: action}, nil)
	if l := c.line(); !strings.HasPrefix(l, `{"ID":2,"OutputID":`+jsonOf(output[:])+`,"Time":`) {
		t.Fatalf("get of an empty output: %s", l)
	}
	if fi, err := os.Stat(data); err != nil || fi.Size() != 0 {
		t.Fatalf("empty output file: %v %v", fi, err)
	}
}

// TestGoCacheRefused: a request the program cannot serve is answered
// with an error, nothing is written, and the stream goes on.
func TestGoCacheRefused(t *testing.T) {
	action := hashOf("action")
	for _, tc := range []struct {
		name string
		req  goCacheRequest
		body string
		err  string
	}{
		{"body not its output id", goCacheRequest{Command: "put", ActionID: action, OutputID: hashOf("something else"), BodySize: 4}, "evil",
			fmt.Sprintf(`put: body of action %x hashes to %x, not to its output id %x`, action, hashOf("evil"), hashOf("something else"))},
		{"empty body not its output id", goCacheRequest{Command: "put", ActionID: action, OutputID: hashOf("x")}, "",
			fmt.Sprintf(`put: body of action %x hashes to %x, not to its output id %x`, action, hashOf(""), hashOf("x"))},
		{"short output id", goCacheRequest{Command: "put", ActionID: action, OutputID: hashOf("evil")[:31], BodySize: 4}, "evil",
			"put: output id of 31 bytes, not 32"},
		{"no action id", goCacheRequest{Command: "put", OutputID: hashOf("evil"), BodySize: 4}, "evil",
			"put: action id of 0 bytes, not 32"},
		{"get of a short action id", goCacheRequest{Command: "get", ActionID: action[:8]}, "",
			"get: action id of 8 bytes, not 32"},
		{"unknown command", goCacheRequest{Command: "get2", ActionID: action}, "",
			`unknown command "get2": this cache program knows get, put, close`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := startGoCache(t, "", dir)
			c.line()
			tc.req.ID = 7
			c.send(tc.req, []byte(tc.body))
			c.expect(`{"ID":7,"Err":` + jsonOf(tc.err) + `}`)
			c.send(goCacheRequest{ID: 8, Command: "get", ActionID: action}, nil)
			c.expect(`{"ID":8,"Miss":true}`)
			c.send(goCacheRequest{ID: 9, Command: "close"}, nil)
			c.expect(`{"ID":9}`)
			if err := c.wait(); err != nil {
				t.Fatal(err)
			}
			if left := treeOf(t, dir); len(left) != 0 {
				t.Fatalf("a refused request left %v", slices.Sorted(maps.Keys(left)))
			}
		})
	}
}

// TestGoCacheStreamErrors: a stream that breaks the protocol, or asks
// for too much, ends the program with an error rather than a guess or
// its memory.
func TestGoCacheStreamErrors(t *testing.T) {
	put := func(size int64) string {
		return jsonOf(goCacheRequest{ID: 1, Command: "put", ActionID: hashOf("a"), OutputID: hashOf("hello"), BodySize: size}) + "\n\n"
	}
	for _, tc := range []struct {
		name, stream, err string
	}{
		{"request line too long", `{"ID":1,"Command":"get","X":"` + strings.Repeat("x", goCacheMaxLine) + "\"}\n", "request line longer than 65536 bytes"},
		{"not JSON", "{get}\n", "request \"{get}\\n\"…: invalid character 'g' looking for beginning of object key string"},
		{"cut in a request", `{"ID":1,"Comm`, `request "{\"ID\":1,\"Comm"…: unexpected EOF`},
		{"body over the limit", put(goCacheMaxBody + 1), "put 1: body of 1073741825 bytes: the limit is 1073741824"},
		{"negative body size", put(-1), "put 1: body of -1 bytes: the limit is 1073741824"},
		{"body shorter than said", put(6) + `"aGVsbG8="` + "\n", "put 1: body of 5 bytes where the request says 6"},
		{"body longer than said", put(4) + `"aGVsbG8="` + "\n", "put 1: body of 5 bytes where the request says 4"},
		{"body not closed", put(5) + `"aGVsbG8=` + "\n", "put 1: body: '\\n' where '\"' belongs"},
		{"body not base64", put(5) + `"aGV*bG8="` + "\n", "put 1: body: illegal base64 data at input byte 3"},
		{"body not quoted", put(5) + "aGVsbG8=\n", "put 1: body: 'a' where '\"' belongs"},
		{"body cut", put(5) + `"aGVs`, "put 1: body: unexpected EOF"},
		{"body missing", put(5), "put 1: body: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			err := serveGoCache(nil, dir, strings.NewReader(tc.stream), &out)
			if err == nil || err.Error() != tc.err {
				t.Fatalf("serveGoCache = %v; want %s", err, tc.err)
			}
			if want := `{"ID":0,"KnownCommands":["get","put","close"]}` + "\n"; out.String() != want {
				t.Fatalf("output %q; want only the first message", out.String())
			}
			if left := treeOf(t, dir); len(left) != 0 {
				t.Fatalf("a broken stream left %v", slices.Sorted(maps.Keys(left)))
			}
		})
	}
	// The end of the stream between requests is the end of the go
	// command: nothing is wrong with the cache.
	if err := serveGoCache(nil, t.TempDir(), strings.NewReader("\n\n"), io.Discard); err != nil {
		t.Fatalf("serveGoCache at the end of its stream = %v; want nil", err)
	}
}

// TestGoCacheDirectories: the seed may be absent; the writable directory
// may not.
func TestGoCacheDirectories(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	testenv.Must(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name, seed, dir, err string
	}{
		{"no seed", "", root, ""},
		{"seed absent", filepath.Join(root, "absent"), root, ""},
		{"seed a file", file, root, "seed cache " + file + " is not a directory"},
		{"no dir", "", "", "no cache directory: name the writable directory the cache is kept in"},
		{"dir absent", "", filepath.Join(root, "absent"), "cache directory: stat " + filepath.Join(root, "absent") + ": no such file or directory"},
		{"dir a file", "", file, "cache directory " + file + " is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			in := jsonOf(goCacheRequest{ID: 1, Command: "get", ActionID: hashOf("a")}) + "\n"
			err := serveGoCache(seedList(tc.seed), tc.dir, strings.NewReader(in), &out)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("serveGoCache = %v; want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"ID":0,"KnownCommands":["get","put","close"]}` + "\n" + `{"ID":1,"Miss":true}` + "\n"; out.String() != want {
				t.Fatalf("output %q; want %q", out.String(), want)
			}
		})
	}
}

// TestGoCacheMainExit: started with the flag, the binary serves the
// cache, and says why on stderr, with status 1, when it cannot.
func TestGoCacheMainExit(t *testing.T) {
	exe, err := os.Executable()
	testenv.Must(t, err)
	absent := filepath.Join(t.TempDir(), "absent")
	cmd := exec.Command(exe, goCacheFlag, absent)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v; want status 1", err)
	}
	if want := "rein gocacheprog: cache directory: stat " + absent + ": no such file or directory\n"; stderr.String() != want || stdout.Len() != 0 {
		t.Fatalf("stderr %q, stdout %q; want stderr %q", stderr.String(), stdout.String(), want)
	}
}

// writeGoCacheEntry writes an index entry, as Go's disk cache writes it,
// and its output.
func writeGoCacheEntry(t *testing.T, root string, action []byte, body string) (index, data string) {
	t.Helper()
	output := [32]byte(hashOf(body))
	index = goCacheFile(root, [32]byte(action), "a")
	data = goCacheFile(root, output, "d")
	testenv.Must(t, os.MkdirAll(filepath.Dir(index), 0o755))
	testenv.Must(t, os.MkdirAll(filepath.Dir(data), 0o755))
	testenv.Must(t, os.WriteFile(index, fmt.Appendf(nil, "v1 %x %x %20d %20d\n", action, output, len(body), time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano()), 0o644))
	testenv.Must(t, os.WriteFile(data, []byte(body), 0o644))
	return index, data
}

// goCacheCorruptions are index entries and outputs Go's cache reads as
// misses, each made from a well-formed entry e of the output at data.
// Those marked built are also tried with the real go command (each costs
// a compile of fmt).
var goCacheCorruptions = []struct {
	name    string
	built   bool
	corrupt func(t *testing.T, e []byte, data string) []byte
}{
	{"truncated", true, func(t *testing.T, e []byte, _ string) []byte { return e[:len(e)-1] }},
	{"too long", false, func(t *testing.T, e []byte, _ string) []byte { return append(e, '\n') }},
	{"empty", false, func(t *testing.T, e []byte, _ string) []byte { return nil }},
	{"wrong version", true, func(t *testing.T, e []byte, _ string) []byte { return append([]byte("v2"), e[2:]...) }},
	{"no final newline", false, func(t *testing.T, e []byte, _ string) []byte { return append(e[:len(e)-1], ' ') }},
	{"bad hex in the action", false, func(t *testing.T, e []byte, _ string) []byte { return splice(e, 3, "g") }},
	{"bad hex in the output", true, func(t *testing.T, e []byte, _ string) []byte { return splice(e, 3+64+1, "g") }},
	{"another action", true, func(t *testing.T, e []byte, _ string) []byte {
		return splice(e, 3, fmt.Sprintf("%x", hashOf("another action")))
	}},
	{"size mismatch", true, func(t *testing.T, e []byte, _ string) []byte {
		var size int64
		if _, err := fmt.Sscanf(string(e[3+64+1+64+1:]), "%d", &size); err != nil {
			t.Fatalf("entry %q: %v", e, err)
		}
		return splice(e, 3+64+1+64+1, fmt.Sprintf("%20d", size+1))
	}},
	{"negative size", false, func(t *testing.T, e []byte, _ string) []byte {
		return splice(e, 3+64+1+64+1, fmt.Sprintf("%20d", -1))
	}},
	{"bad time", false, func(t *testing.T, e []byte, _ string) []byte {
		return splice(e, 3+64+1+64+1+20+1, fmt.Sprintf("%20s", "yesterday"))
	}},
	{"output missing", true, func(t *testing.T, e []byte, data string) []byte {
		testenv.Must(t, os.Remove(data))
		return e
	}},
	{"output a directory", false, func(t *testing.T, e []byte, data string) []byte {
		testenv.Must(t, os.Remove(data))
		testenv.Must(t, os.Mkdir(data, 0o755))
		return e
	}},
	{"output a symlink", false, func(t *testing.T, e []byte, data string) []byte {
		moved := data + ".moved"
		testenv.Must(t, os.Rename(data, moved))
		testenv.Must(t, os.Symlink(moved, data))
		return e
	}},
}

// splice is e with s written over it at i.
func splice(e []byte, i int, s string) []byte {
	e = slices.Clone(e)
	copy(e[i:], s)
	return e
}

// TestGoCacheRead: a get is a hit only for a well-formed entry of this
// action whose output is a regular file of the size it says, in the
// writable directory first, then in the seed.
func TestGoCacheRead(t *testing.T) {
	action := hashOf("action")
	get := func(t *testing.T, seed, dir string) string {
		var out bytes.Buffer
		in := jsonOf(goCacheRequest{ID: 1, Command: "get", ActionID: action}) + "\n"
		testenv.Must(t, serveGoCache(seedList(seed), dir, strings.NewReader(in), &out))
		_, res, _ := strings.Cut(strings.TrimSuffix(out.String(), "\n"), "\n")
		return res
	}
	hit := func(body, data string) string {
		return fmt.Sprintf(`{"ID":1,"OutputID":%s,"Size":%d,"Time":%s,"DiskPath":%s}`,
			jsonOf(hashOf(body)), len(body), jsonOf(time.Unix(0, time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano())), jsonOf(data))
	}
	const miss = `{"ID":1,"Miss":true}`

	t.Run("seed", func(t *testing.T) {
		seed := t.TempDir()
		_, data := writeGoCacheEntry(t, seed, action, "from the seed")
		if got, want := get(t, seed, t.TempDir()), hit("from the seed", data); got != want {
			t.Fatalf("get = %s; want %s", got, want)
		}
	})
	t.Run("dir over seed", func(t *testing.T) {
		seed, dir := t.TempDir(), t.TempDir()
		writeGoCacheEntry(t, seed, action, "from the seed")
		_, data := writeGoCacheEntry(t, dir, action, "from the dir")
		if got, want := get(t, seed, dir), hit("from the dir", data); got != want {
			t.Fatalf("get = %s; want %s", got, want)
		}
	})
	for _, c := range goCacheCorruptions {
		t.Run(c.name, func(t *testing.T) {
			seed, dir := t.TempDir(), t.TempDir()
			index, data := writeGoCacheEntry(t, seed, action, "from the seed")
			e, err := os.ReadFile(index)
			testenv.Must(t, err)
			testenv.Must(t, os.WriteFile(index, c.corrupt(t, e, data), 0o644))
			before := treeOf(t, seed)
			if got := get(t, seed, dir); got != miss {
				t.Fatalf("get of a seed entry %s = %s; want a miss", c.name, got)
			}
			if after := treeOf(t, seed); !maps.Equal(before, after) {
				t.Fatalf("the get changed the seed:\n%v\n%v", before, after)
			}
			// The same entry in the writable directory is passed over for
			// the seed's.
			good := t.TempDir()
			_, goodData := writeGoCacheEntry(t, good, action, "from the seed")
			index, data = writeGoCacheEntry(t, dir, action, "from the dir")
			e, err = os.ReadFile(index)
			testenv.Must(t, err)
			testenv.Must(t, os.WriteFile(index, c.corrupt(t, e, data), 0o644))
			if got, want := get(t, good, dir), hit("from the seed", goodData); got != want {
				t.Fatalf("get of a dir entry %s over a good seed = %s; want %s", c.name, got, want)
			}
		})
	}
}

// treeOf records every file and directory under root: mode, size, mtime
// and, for a file, its SHA-256.
func treeOf(t testing.TB, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		tree[strings.TrimPrefix(p, root)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// goCacheModule writes a tiny module that prints word in upper case.
func goCacheModule(t testing.TB, dir, word string) {
	t.Helper()
	testenv.WriteFiles(t, dir, map[string]string{
		"go.mod": "module example.com/tiny\n\ngo 1.26\n",
		"main.go": `package main

import (
	"fmt"
	"strings"
)

func main() { fmt.Println(strings.ToUpper("` + word + `")) }
`,
	}, 0o644)
}

// goCommand runs the go command in mod with GOCACHE at gocache and the
// cache program prog ("" for none), with nothing of this environment's
// Go settings that would change what is built, and returns its stderr.
func goCommand(t testing.TB, mod, gocache, prog string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the cache program is tested with the go command: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOCACHE="+gocache, "GOCACHEPROG="+prog, "GOENV=off", "GOFLAGS=", "GOTOOLCHAIN=local",
		"GOPROXY=off", "GO111MODULE=on", "GOWORK=off", "CGO_ENABLED=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String() + stderr.String()
}

// buildX is what go build -x says it did: the packages it compiled, and
// the output files it put in the cache.
func buildX(x string) (compiled, puts []string) {
	for l := range strings.Lines(x) {
		f := strings.Fields(l)
		if len(f) > 0 && filepath.Base(f[0]) == "compile" {
			if i := slices.Index(f, "-p"); i >= 0 && i+1 < len(f) {
				compiled = append(compiled, f[i+1])
			}
		}
		if len(f) == 5 && f[0] == "cp" && f[3] == "#" && f[4] == "internal" {
			puts = append(puts, f[2])
		}
	}
	slices.Sort(compiled)
	return compiled, puts
}

// runTiny runs the binary built and checks what it prints.
func runTiny(t *testing.T, bin, want string) {
	t.Helper()
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || string(out) != want+"\n" {
		t.Fatalf("%s printed %q, %v; want %q", bin, out, err, want+"\n")
	}
}

// TestGoCacheSeed builds through the cache program with the real go
// command: the test binary is the program (TestMain calls Main), started
// from a path with a blank, on a seed whose path has a blank and a quote,
// so that the go command's own reading of GOCACHEPROG is what carries
// them.
func TestGoCacheSeed(t *testing.T) {
	root := t.TempDir()
	mod := filepath.Join(root, "mod")
	goCacheModule(t, mod, "tiny")
	seed := filepath.Join(root, "seed dir's")
	t0 := time.Now()
	goCommand(t, mod, seed, "", "build", "-o", filepath.Join(root, "seed.bin"), ".")
	t.Logf("the seed's build, cold: %v", time.Since(t0))
	fmtExport := strings.TrimSpace(goCommand(t, mod, seed, "", "list", "-export", "-f", "{{.Export}}", "fmt"))
	seedTree := treeOf(t, seed)

	exe, err := os.Executable()
	testenv.Must(t, err)
	link := filepath.Join(root, "bin dir", "rein test")
	testenv.Must(t, os.MkdirAll(filepath.Dir(link), 0o755))
	testenv.Must(t, os.Symlink(exe, link))

	// build builds mod through the cache program on seed and a fresh
	// directory, and returns that directory, the binary, and what the go
	// command compiled and put.
	build := func(t *testing.T, seed string) (dir, bin string, compiled, puts []string) {
		t.Helper()
		dir = t.TempDir()
		prog, err := goCacheProg(link, dir, seedList(seed)...)
		testenv.Must(t, err)
		bin = filepath.Join(t.TempDir(), "tiny")
		gocache := t.TempDir()
		t0 := time.Now()
		x := goCommand(t, mod, gocache, prog, "build", "-x", "-o", bin, ".")
		t.Logf("the build through the cache program: %v", time.Since(t0))
		compiled, puts = buildX(x)
		// The go command's own cache is left empty: all went through the
		// program.
		for p := range treeOf(t, gocache) {
			if strings.HasSuffix(p, "-a") || strings.HasSuffix(p, "-d") {
				t.Errorf("the go command's own cache holds %s", p)
			}
		}
		for _, p := range puts {
			if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("a put landed at %s, not in the fresh directory %s", p, dir)
			}
		}
		return dir, bin, compiled, puts
	}
	checkSeed := func(t *testing.T) {
		t.Helper()
		if after := treeOf(t, seed); !maps.Equal(seedTree, after) {
			for p, d := range after {
				if seedTree[p] != d {
					t.Errorf("seed %s: %s, was %q", p, d, seedTree[p])
				}
			}
			for p := range seedTree {
				if _, ok := after[p]; !ok {
					t.Errorf("seed %s is gone", p)
				}
			}
		}
	}

	t.Run("hit", func(t *testing.T) {
		_, bin, compiled, _ := build(t, seed)
		if len(compiled) != 0 {
			t.Errorf("compiled %v, all of which the seed holds", compiled)
		}
		runTiny(t, bin, "TINY")
		checkSeed(t)
	})

	t.Run("changed source", func(t *testing.T) {
		goCacheModule(t, mod, "changed")
		t.Cleanup(func() { goCacheModule(t, mod, "tiny") })
		dir, bin, compiled, puts := build(t, seed)
		if !slices.Equal(compiled, []string{"main"}) {
			t.Errorf("compiled %v; want only main", compiled)
		}
		if len(puts) != 1 {
			t.Fatalf("put %v; want main's package", puts)
		}
		if _, err := os.Stat(puts[0]); err != nil {
			t.Errorf("main's package is not in the fresh directory: %v", err)
		}
		entries := 0
		for p := range treeOf(t, dir) {
			if strings.HasSuffix(p, "-a") {
				entries++
			}
		}
		if entries == 0 {
			t.Errorf("the fresh directory %s holds no index entry", dir)
		}
		runTiny(t, bin, "CHANGED")
		checkSeed(t)
	})

	// The list of what a build through the program used, laid out in a
	// new cache, serves the next build whole: the go command reads its
	// own cache, compiles nothing, and the seed is untouched.
	t.Run("prefill", func(t *testing.T) {
		dir, _, _, _ := build(t, seed)
		actions, err := readGoUsed(filepath.Join(dir, goCacheUsedFile))
		if err != nil || len(actions) < 10 {
			t.Fatalf("the list of actions used: %d, %v", len(actions), err)
		}
		laid := filepath.Join(t.TempDir(), "go-build")
		// An action no seed holds is left out; one listed twice once.
		more := append(slices.Clone(actions), [goCacheHashSize]byte{1}, actions[0])
		n, err := (&goPrefill{Dir: laid, Seeds: []string{t.TempDir(), seed}, Actions: more}).run()
		if err != nil || n != len(actions) {
			t.Fatalf("laid out %d of %d: %v", n, len(actions), err)
		}
		bin := filepath.Join(t.TempDir(), "tiny")
		x := goCommand(t, mod, laid, "", "build", "-x", "-o", bin, ".")
		if compiled, puts := buildX(x); len(compiled) != 0 || len(puts) != 0 {
			t.Errorf("compiled %v and put %v from a laid-out cache", compiled, puts)
		}
		runTiny(t, bin, "TINY")
		if _, err := os.Stat(filepath.Join(laid, "trim.txt")); err != nil {
			t.Errorf("no trim.txt: %v", err)
		}
		checkSeed(t)
		// A changed source builds into the laid-out cache, not the seed.
		goCacheModule(t, mod, "changed")
		t.Cleanup(func() { goCacheModule(t, mod, "tiny") })
		x = goCommand(t, mod, laid, "", "build", "-x", "-o", bin, ".")
		if compiled, _ := buildX(x); !slices.Equal(compiled, []string{"main"}) {
			t.Errorf("compiled %v; want only main", compiled)
		}
		runTiny(t, bin, "CHANGED")
		checkSeed(t)
	})

	// An entry Go's cache would read as a miss is one here: the package
	// is compiled again, and the build succeeds. Each is tried on fmt's
	// entries in a copy of the seed.
	fmtOutput := strings.TrimSuffix(filepath.Base(fmtExport), "-d")
	if !strings.HasPrefix(fmtExport, seed) || len(fmtOutput) != 64 {
		t.Fatalf("fmt's export data is at %s, not in the seed", fmtExport)
	}
	for _, c := range goCacheCorruptions {
		if !c.built {
			continue
		}
		t.Run("seed "+c.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "seed")
			indexes := copyGoCache(t, seed, bad, fmtOutput)
			if len(indexes) != 1 {
				t.Fatalf("index entries %v of the seed name fmt's output %s; want one, fmt's compile", indexes, fmtOutput)
			}
			e, err := os.ReadFile(indexes[0])
			testenv.Must(t, err)
			testenv.Must(t, os.WriteFile(indexes[0], c.corrupt(t, e, filepath.Join(bad, fmtOutput[:2], fmtOutput+"-d")), 0o644))
			dir, bin, compiled, _ := build(t, bad)
			if !slices.Equal(compiled, []string{"fmt"}) {
				t.Errorf("compiled %v; want fmt alone", compiled)
			}
			runTiny(t, bin, "TINY")
			checkSeed(t)
			// Nor is it laid out: the build compiles it again.
			actions, err := readGoUsed(filepath.Join(dir, goCacheUsedFile))
			testenv.Must(t, err)
			laid := filepath.Join(t.TempDir(), "go-build")
			if n, err := (&goPrefill{Dir: laid, Seeds: []string{bad}, Actions: actions}).run(); err != nil || n == 0 {
				t.Fatalf("laid out %d: %v", n, err)
			}
			x := goCommand(t, mod, laid, "", "build", "-x", "-o", bin, ".")
			if compiled, _ := buildX(x); !slices.Equal(compiled, []string{"fmt"}) {
				t.Errorf("from the laid-out cache, compiled %v; want fmt alone", compiled)
			}
		})
	}
}

// copyGoCache copies the cache src to dst, linking the outputs (which
// nothing writes) and copying the index entries, and returns the copied
// entries that name output.
func copyGoCache(t *testing.T, src, dst, output string) []string {
	t.Helper()
	var named []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dst, strings.TrimPrefix(p, src))
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case strings.HasSuffix(p, "-a"):
			e, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(e, []byte(" "+output+" ")) {
				named = append(named, to)
			}
			return os.WriteFile(to, e, 0o644)
		default:
			return os.Link(p, to)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return named
}

// splitQuoted is cmd/internal/quoted.Split (Go 1.26), which the go
// command reads GOCACHEPROG with; TestGoCacheSeed checks the real one.
func splitQuoted(s string) ([]string, error) {
	isSpaceByte := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	var f []string
	for len(s) > 0 {
		for len(s) > 0 && isSpaceByte(s[0]) {
			s = s[1:]
		}
		if len(s) == 0 {
			break
		}
		if s[0] == '"' || s[0] == '\'' {
			quote := s[0]
			s = s[1:]
			i := 0
			for i < len(s) && s[i] != quote {
				i++
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated %c string", quote)
			}
			f = append(f, s[:i])
			s = s[i+1:]
			continue
		}
		i := 0
		for i < len(s) && !isSpaceByte(s[i]) {
			i++
		}
		f = append(f, s[:i])
		s = s[i:]
	}
	return f, nil
}

func TestGoCacheProg(t *testing.T) {
	for _, tc := range []struct {
		exe, dir  string
		seeds     []string
		want, err string
	}{
		{"/usr/bin/rein", "/cache", []string{"/seed"}, "/usr/bin/rein --rein-gocacheprog /cache /seed", ""},
		{"/usr/bin/rein", "/cache", nil, "/usr/bin/rein --rein-gocacheprog /cache", ""},
		{"/usr/bin/rein", "/cache", []string{"/std", "/baseline"}, "/usr/bin/rein --rein-gocacheprog /cache /std /baseline", ""},
		{"/opt/my rein/rein", "/c\tache", []string{"/s e e d"}, "'/opt/my rein/rein' --rein-gocacheprog '/c\tache' '/s e e d'", ""},
		{"/usr/bin/rein", "/cache\n", []string{"/seed's"}, "/usr/bin/rein --rein-gocacheprog '/cache\n' \"/seed's\"", ""},
		{"/usr/bin/rein", "/it's \"x\"", []string{"/\"seed\""}, "", `GOCACHEPROG cannot carry this path: "/it's \"x\"" holds both kinds of quote; move it to a path without them`},
		{"/usr/bin/re\x00in", "/cache", []string{"/seed"}, "", `GOCACHEPROG cannot carry this path: "/usr/bin/re\x00in" holds a NUL`},
		{"rein", "/cache", []string{"/seed"}, "", `GOCACHEPROG: "rein" is not an absolute path`},
		{"/usr/bin/rein", "/cache", []string{"seed"}, "", `GOCACHEPROG: "seed" is not an absolute path`},
		{"/usr/bin/rein", "/cache", []string{""}, "", `GOCACHEPROG: "" is not an absolute path`},
		{"/usr/bin/rein", "", []string{"/seed"}, "", `GOCACHEPROG: "" is not an absolute path`},
	} {
		got, err := goCacheProg(tc.exe, tc.dir, tc.seeds...)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("goCacheProg(%q, %q, %q) = %q, %v; want error %s", tc.exe, tc.dir, tc.seeds, got, err, tc.err)
			}
			if strings.Contains(tc.err, "cannot carry") != errors.Is(err, errGoCacheUnquotable) {
				t.Errorf("goCacheProg(%q, %q, %q): %v is not errGoCacheUnquotable", tc.exe, tc.dir, tc.seeds, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("goCacheProg(%q, %q, %q) = %q, %v; want %q", tc.exe, tc.dir, tc.seeds, got, err, tc.want)
		}
		if words, err := splitQuoted(got); err != nil || !slices.Equal(words, append([]string{tc.exe, goCacheFlag, tc.dir}, tc.seeds...)) {
			t.Errorf("split %q = %q, %v", got, words, err)
		}
	}
}

// seedList is seed as a list of seeds: none when it is empty.
func seedList(seed string) []string {
	if seed == "" {
		return nil
	}
	return []string{seed}
}

// FuzzGoCacheProg: whatever goCacheProg returns, the go command splits
// back into the words it was given; it refuses only what it must. The
// seeds are in testdata/fuzz/FuzzGoCacheProg.
func FuzzGoCacheProg(f *testing.F) {
	f.Fuzz(func(t *testing.T, exe, dir, seed string) {
		got, err := goCacheProg(exe, dir, seed)
		uncarried := false
		for _, w := range []string{exe, dir, seed} {
			uncarried = uncarried || strings.ContainsRune(w, 0) || strings.Contains(w, "'") && strings.Contains(w, `"`) || !filepath.IsAbs(w)
		}
		if err != nil {
			if !uncarried {
				t.Fatalf("goCacheProg(%q, %q, %q) refused: %v", exe, dir, seed, err)
			}
			return
		}
		if uncarried {
			t.Fatalf("goCacheProg(%q, %q, %q) = %q; want a refusal", exe, dir, seed, got)
		}
		if words, err := splitQuoted(got); err != nil || !slices.Equal(words, []string{exe, goCacheFlag, dir, seed}) {
			t.Fatalf("goCacheProg(%q, %q, %q) = %q, which splits into %q, %v", exe, dir, seed, got, words, err)
		}
	})
}

// BenchmarkGoCacheSeedBuild times go build of a tiny module through the
// cache program on a seed holding all of it, interleaved with the bare
// mechanism: the go command on that cache as its own GOCACHE (a copy).
func BenchmarkGoCacheSeedBuild(b *testing.B) {
	root := b.TempDir()
	mod, seed, bare := filepath.Join(root, "mod"), filepath.Join(root, "seed"), filepath.Join(root, "bare")
	goCacheModule(b, mod, "tiny")
	goCommand(b, mod, seed, "", "build", "-o", filepath.Join(root, "seed.bin"), ".")
	goCommand(b, mod, bare, "", "build", "-o", filepath.Join(root, "seed.bin"), ".")
	exe, err := os.Executable()
	testenv.Must(b, err)
	var prog, plain []time.Duration
	for b.Loop() {
		dir := b.TempDir()
		p, err := goCacheProg(exe, dir, seed)
		testenv.Must(b, err)
		t0 := time.Now()
		goCommand(b, mod, b.TempDir(), p, "build", "-o", filepath.Join(dir, "tiny"), ".")
		prog = append(prog, time.Since(t0))
		// A binary of its own: one up to date at the target is not linked
		// again.
		t0 = time.Now()
		goCommand(b, mod, bare, "", "build", "-o", filepath.Join(dir, "tiny.bare"), ".")
		plain = append(plain, time.Since(t0))
	}
	b.ReportMetric(testenv.MedianMS(prog), "prog-ms")
	b.ReportMetric(testenv.MedianMS(plain), "bare-ms")
	b.ReportMetric(testenv.MedianMS(prog)/testenv.MedianMS(plain), "ratio")
}
