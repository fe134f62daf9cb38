package evidence

import "strings"

// printer rebuilds, from a `go test -json` stream, what plain `go test`
// with package arguments prints. With -json every test binary runs
// verbose (-test.v=test2json): it frames each test (=== RUN, --- PASS),
// prints each log line as it is written, and the go command passes on
// the whole output of every package. Plain go test prints a failed test's
// log lines under its --- FAIL line, nested subtests indented under their
// parent, nothing of the tests that passed or were skipped, and only the
// ok line of a package that passed; it prints the packages in order, and
// a last FAIL when any failed.
type printer struct {
	out    strings.Builder
	pkgs   []*pkgPrint // in the order the stream first names them
	byPath map[string]*pkgPrint
	next   int // pkgs[:next] are printed
	failed bool
}

// pkgPrint is one package's output as plain go test prints it.
type pkgPrint struct {
	result string // "" while the package runs
	body   strings.Builder
	// logs holds the log lines of each test that runs, to print under
	// its --- FAIL line: plain go test shows them only then.
	logs map[string]*strings.Builder
	// midLine says a line was written in part; restTo is where the rest
	// goes (nil: it is dropped).
	midLine bool
	restTo  *strings.Builder
	// line is the package's output line being written; last, the last
	// one whole: the go command's ok line once the package passed.
	line strings.Builder
	last string
}

func newPrinter() *printer {
	return &printer{byPath: map[string]*pkgPrint{}}
}

// raw prints what is not a package's test output (a build error, a line
// of the go command's) as it comes, as the go command does on stderr.
func (p *printer) raw(s string) { p.out.WriteString(s) }

// event takes one test event.
func (p *printer) event(e event) {
	pk := p.byPath[e.Package]
	if pk == nil {
		pk = &pkgPrint{logs: map[string]*strings.Builder{}}
		p.byPath[e.Package] = pk
		p.pkgs = append(p.pkgs, pk)
	}
	switch e.Action {
	case "run":
		if e.Test != "" {
			pk.logs[e.Test] = new(strings.Builder)
		}
	case "output":
		if e.Output != nil {
			pk.output(e.Test, *e.Output)
		}
	case "pass", "fail", "skip":
		if e.Test != "" {
			delete(pk.logs, e.Test)
			break
		}
		pk.result = e.Action
		p.flush()
	}
}

// flush prints the packages that finished, in order.
func (p *printer) flush() {
	for p.next < len(p.pkgs) && p.pkgs[p.next].result != "" {
		p.print(p.pkgs[p.next])
		p.next++
	}
}

// print prints one package: its ok (or no test files) line if it passed,
// else its output.
func (p *printer) print(pk *pkgPrint) {
	switch pk.result {
	case "pass", "skip":
		p.out.WriteString(pk.last)
	default:
		p.failed = true
		p.out.WriteString(pk.body.String())
	}
}

// text returns what was printed, with the packages the stream left
// unfinished printed as failed, and the go command's closing FAIL.
func (p *printer) text() string {
	for _, pk := range p.pkgs[p.next:] {
		p.print(pk)
	}
	p.next = len(p.pkgs)
	if p.failed {
		p.out.WriteString("FAIL\n")
	}
	return p.out.String()
}

// framing are the lines a verbose test binary adds for test2json, which
// plain go test does not print (cmd/internal/test2json's updates).
var framing = []string{
	"=== RUN   ", "=== PAUSE ", "=== CONT  ", "=== NAME  ", "=== PASS  ",
	"=== FAIL  ", "=== SKIP  ", "=== ATTR  ", "=== ARTIFACTS ",
}

// output takes one output event of test (empty for the package's own).
func (pk *pkgPrint) output(test, s string) {
	pk.line.WriteString(s)
	if strings.HasSuffix(s, "\n") {
		pk.last = pk.line.String()
		pk.line.Reset()
	}
	dest := &pk.body
	switch name, result, ok := reportLine(s); {
	case pk.midLine:
		dest = pk.restTo
	case isFraming(s):
		dest = nil
	case ok && pk.logs[name] != nil:
		// The test ends: plain go test prints a failure with its logs,
		// under its parent if it has one, and nothing of a pass or skip.
		logs := pk.logs[name]
		delete(pk.logs, name)
		dest = nil
		if result != "FAIL" {
			break
		}
		block := strings.TrimLeft(s, " ") + logs.String()
		if parent := pk.parentLogs(name); parent != nil {
			parent.WriteString(indent(block))
		} else {
			pk.body.WriteString(block)
		}
	case test != "" && pk.logs[test] != nil && strings.HasPrefix(s, "    "):
		// A log line (t.Log, t.Error) of a running test; anything else a
		// test prints (fmt.Println, a panic) goes out as it comes.
		dest = pk.logs[test]
	}
	if dest != nil {
		dest.WriteString(s)
	}
	pk.midLine, pk.restTo = !strings.HasSuffix(s, "\n"), dest
}

// parentLogs returns the log buffer of the nearest running test that
// name is a subtest of, or nil.
func (pk *pkgPrint) parentLogs(name string) *strings.Builder {
	for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if b := pk.logs[name[:i]]; b != nil {
			return b
		}
	}
	return nil
}

func isFraming(s string) bool {
	if strings.TrimRight(s, " \r\n") == "=== NAME" {
		return true
	}
	for _, f := range framing {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

// reportLine parses "--- FAIL: TestX/sub (0.00s)", indented or not, into
// the test's name and its result.
func reportLine(s string) (name, result string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimLeft(s, " "), "--- ")
	if !found {
		return "", "", false
	}
	result, rest, found = strings.Cut(rest, ": ")
	if !found || (result != "PASS" && result != "FAIL" && result != "SKIP") {
		return "", "", false
	}
	name = strings.TrimSpace(rest)
	if i := strings.Index(name, " ("); i >= 0 {
		name = name[:i]
	}
	return name, result, true
}

// indent indents every line of block by four spaces, as the testing
// package nests a subtest's report in its parent's.
func indent(block string) string {
	var sb strings.Builder
	for line := range strings.Lines(block) {
		sb.WriteString("    " + line)
	}
	return sb.String()
}
