//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox"
)

// requireProgram fails where REIN_REQUIRE_SANDBOX=1 (CI installs it) and
// skips elsewhere when the sandbox cannot find a program a test drives.
func requireProgram(t *testing.T, name string) {
	t.Helper()
	ws, err := os.Getwd()
	if err == nil {
		_, err = sandbox.LookPath(sandbox.Profile{Workspace: ws, Env: []string{"PATH=" + os.Getenv("PATH")}}, name)
	}
	if err != nil {
		testenv.Missing(t, "this test needs %s: %v", name, err)
	}
}

// hostGoModCache is the host's module cache, read before a fixture moves
// HOME.
func hostGoModCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestToolchainGoOffline: in rein's own module (its go.mod and go.sum,
// and a package of the test's that parses a line with mvdan.cc/sh), go
// test runs in the sandbox with the network off, its modules served from
// the host's download cache read-only, and a second run is (cached).
func TestToolchainGoOffline(t *testing.T) {
	requireBwrap(t)
	modcache := hostGoModCache(t)
	module, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	_, ws := docFixture(t)
	t.Setenv("GOMODCACHE", modcache)
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(module, f))
		if err != nil {
			t.Fatal(err)
		}
		testenv.WriteFiles(t, ws, map[string]string{f: string(data)}, 0o644)
	}
	// A package of the module's own, the test's, needing one module of
	// the host's cache: what is measured is the toolchain's reach, not a
	// build of rein.
	testenv.WriteFiles(t, ws, map[string]string{"parse/parse_test.go": `package parse

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestParse(t *testing.T) {
	if _, err := syntax.NewParser().Parse(strings.NewReader("echo hi | wc -l"), ""); err != nil {
		t.Fatal(err)
	}
}
`}, 0o644)
	code, out, errOut := rein(t, "shell", "--approve", "all", "go test ./parse/")
	if code != 0 || !strings.Contains(out, "ok  \tgithub.com/reinhq/rein/parse") || strings.Contains(out, "(cached)") {
		t.Fatalf("first go test: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = rein(t, "shell", "--approve", "all", "go test ./parse/")
	if code != 0 || !strings.Contains(out, "ok  \tgithub.com/reinhq/rein/parse\t(cached)") {
		t.Fatalf("second go test: exit %d\n%s\n%s", code, out, errOut)
	}
	// On the landlock rung too: HOME and TMPDIR are the same paths from
	// run to run, which go test's cached results depend on.
	for i, want := range []string{"ok  \tgithub.com/reinhq/rein/parse\t", "ok  \tgithub.com/reinhq/rein/parse\t(cached)"} {
		code, out, errOut = rein(t, "shell", "--approve", "all", "--rung", "landlock", "go test ./parse/")
		if code != 0 || !strings.Contains(out, want) || (i == 0 && strings.Contains(out, "(cached)")) {
			t.Fatalf("landlock go test %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
	}
	// The modules came from the host's cache into the workspace's own.
	if m, _ := filepath.Glob(filepath.Join(sandbox.ToolchainCacheDir(ws), "go-mod", "mvdan.cc", "sh", "v3@*")); len(m) == 0 {
		t.Fatal("mvdan.cc/sh is not in the workspace's module cache")
	}
	// rein toolchain says so.
	code, out, _ = rein(t, "toolchain", "--json")
	var rep toolchainReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Ecosystems) != 1 || rep.Ecosystems[0].Name != "go" {
		t.Fatalf("rein toolchain: exit %d %v\n%s", code, err, out)
	}
	for _, n := range rep.Ecosystems[0].Needs {
		if (n.Kind == "program" || n.Kind == "host_cache") && !n.OK {
			t.Errorf("rein toolchain: %+v", n)
		}
	}
}

// TestToolchainGoOnline: with --network proxy and the go preset, a module
// the host has not cached downloads through the egress proxy into the
// workspace's module cache; the build then runs offline from it.
func TestToolchainGoOnline(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	// An empty host cache: everything must come through the proxy.
	empty := filepath.Join(filepath.Dir(ws), "emptymod")
	if err := os.MkdirAll(filepath.Join(empty, "cache", "download"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", empty)
	testenv.WriteFiles(t, ws, map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.22\n\nrequire github.com/pkg/errors v0.9.1\n",
		"go.sum":  "github.com/pkg/errors v0.9.1 h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=\ngithub.com/pkg/errors v0.9.1/go.mod h1:bwawxfHBFNV+L2hUp1rHADufV3IMtnDRdf1r5NINEl0=\n",
		"main.go": "package main\n\nimport \"github.com/pkg/errors\"\n\nfunc main() { println(errors.New(\"fetched\").Error()) }\n",
	}, 0o644)
	// The preset grants the Go proxy by name; where a registry resolves to
	// a reserved address (a mirror, as on some CI hosts), only a rule
	// naming the host exactly reaches it.
	testenv.WriteFiles(t, home, map[string]string{".config/rein/policy.toml": "[net]\npresets = [\"go\"]\nallow = [\"proxy.golang.org:443\"]\n"}, 0o644)
	// Offline first: the module is nowhere to be had.
	if code, _, errOut := rein(t, "shell", "--approve", "all", "go build ./..."); code == 0 || !strings.Contains(errOut, "github.com/pkg/errors") {
		t.Fatalf("offline build without the module: exit %d\n%s", code, errOut)
	}
	code, out, errOut := rein(t, "shell", "--approve", "all", "--network", "proxy", "go run .")
	if code != 0 || !strings.Contains(out+errOut, "fetched") {
		t.Fatalf("online: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(sandbox.ToolchainCacheDir(ws), "go-mod", "github.com", "pkg", "errors@v0.9.1", "errors.go")); err != nil {
		t.Fatalf("the module is not in the workspace's cache: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(empty, "cache", "download")); len(entries) != 0 {
		t.Fatalf("the host cache was written: %v", entries)
	}
	if code, _, errOut := rein(t, "shell", "--approve", "all", "go build -o /dev/null ."); code != 0 {
		t.Fatalf("offline build from the workspace's cache: exit %d\n%s", code, errOut)
	}
}

// TestToolchainNpm: an npm project with a local dependency installs and
// runs its tests in the sandbox, offline.
func TestToolchainNpm(t *testing.T) {
	requireBwrap(t)
	requireProgram(t, "npm")
	_, ws := docFixture(t)
	testenv.WriteFiles(t, ws, map[string]string{
		"package.json":       `{"name": "app", "version": "1.0.0", "private": true, "dependencies": {"adder": "file:adder"}, "scripts": {"test": "node test.js"}}`,
		"adder/package.json": `{"name": "adder", "version": "1.0.0", "main": "index.js"}`,
		"adder/index.js":     "module.exports = (a, b) => a + b;\n",
		"test.js":            "const add = require('adder');\nif (add(2, 3) !== 5) process.exit(1);\nconsole.log('adder adds: ' + add(2, 3));\n",
	}, 0o644)
	if code, out, errOut := rein(t, "shell", "--approve", "all", "npm install"); code != 0 {
		t.Fatalf("npm install: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := rein(t, "shell", "--approve", "all", "npm test")
	if code != 0 || !strings.Contains(out, "adder adds: 5") || strings.Contains(errOut, "Unknown env config") {
		t.Fatalf("npm test: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(sandbox.ToolchainCacheDir(ws), "npm")); err != nil {
		t.Fatal(err)
	}
}

// TestToolchainPythonVenv: a virtual environment made in the sandbox runs
// the project's unittest suite there, named by path.
func TestToolchainPythonVenv(t *testing.T) {
	requireBwrap(t)
	requireProgram(t, "python3")
	_, ws := docFixture(t)
	testenv.WriteFiles(t, ws, map[string]string{
		"requirements.txt": "",
		"test_venv.py": `import sys, unittest

class InVenv(unittest.TestCase):
    def test_prefix(self):
        self.assertNotEqual(sys.prefix, sys.base_prefix)
        self.assertTrue(sys.prefix.endswith("/.venv"), sys.prefix)
`,
	}, 0o644)
	if code, out, errOut := rein(t, "shell", "--approve", "all", "python3 -m venv --without-pip .venv"); code != 0 {
		t.Fatalf("venv: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ := rein(t, "toolchain", "--json")
	var rep toolchainReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Ecosystems) != 1 || rep.Ecosystems[0].Commands.Test != ".venv/bin/python -m unittest" {
		t.Fatalf("rein toolchain: exit %d %v\n%s", code, err, out)
	}
	code, out, errOut := rein(t, "shell", "--approve", "all", rep.Ecosystems[0].Commands.Test)
	if code != 0 || !strings.Contains(errOut, "Ran 1 test") || !strings.Contains(errOut, "OK") {
		t.Fatalf("unittest: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestToolchainCargoVendored: a cargo project builds and runs offline from
// its vendored crates, with Debian's cargo.
func TestToolchainCargoVendored(t *testing.T) {
	requireBwrap(t)
	requireProgram(t, "cargo")
	_, ws := docFixture(t)
	testenv.WriteFiles(t, ws, map[string]string{
		"Cargo.toml":                        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ngreet = \"0.1\"\n",
		"src/main.rs":                       "fn main() { println!(\"{}\", greet::hello()); }\n",
		".cargo/config.toml":                "[source.crates-io]\nreplace-with = \"vendored\"\n\n[source.vendored]\ndirectory = \"vendor\"\n",
		"vendor/greet/Cargo.toml":           "[package]\nname = \"greet\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"vendor/greet/src/lib.rs":           "pub fn hello() -> &'static str { \"hello from a vendored crate\" }\n",
		"vendor/greet/.cargo-checksum.json": `{"files":{},"package":"` + strings.Repeat("0", 64) + `"}`,
	}, 0o644)
	code, out, errOut := rein(t, "shell", "--approve", "all", "cargo run --offline -q")
	if code != 0 || out != "hello from a vendored crate\n" {
		t.Fatalf("cargo run: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestProgramOutsideView: a program only a directory outside the view has
// is reported with that directory and how to expose it; exposed, it runs.
func TestProgramOutsideView(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	// Outside /tmp: a read path never names a directory there, where any
	// program may keep a socket.
	tools := ""
	for _, base := range []string{"/srv", "/opt", "/var/lib"} {
		if d, err := os.MkdirTemp(base, "rein-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			tools = d
			break
		}
	}
	if tools == "" {
		testenv.Missing(t, "no directory outside /tmp could be made for a read path (/srv, /opt, /var/lib)")
	}
	testenv.WriteFiles(t, tools, map[string]string{"rein-fixture-tool": "#!/bin/sh\necho tool ran\n"}, 0o644)
	if err := os.Chmod(filepath.Join(tools, "rein-fixture-tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", tools+":"+os.Getenv("PATH"))
	code, _, errOut := rein(t, "shell", "--approve", "all", "rein-fixture-tool")
	if code != 127 || !strings.Contains(errOut, "the host has it at "+filepath.Join(tools, "rein-fixture-tool")) || !strings.Contains(errOut, `read_paths = ["`+tools+`"]`) {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if code, out, errOut := rein(t, "shell", "--approve", "all", "--read-path", tools, "rein-fixture-tool"); code != 0 || out != "tool ran\n" {
		t.Fatalf("exposed: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := rein(t, "sandbox", "--read-path", tools, "--", "rein-fixture-tool"); code != 0 || out != "tool ran\n" {
		t.Fatalf("rein sandbox: exit %d\n%s\n%s", code, out, errOut)
	}
	// A protected directory is never exposed, nor one where sockets live.
	if code, _, errOut := rein(t, "sandbox", "--read-path", "~/.ssh", "--", "true"); code != exitUsage || !strings.Contains(errOut, "protected") {
		t.Fatalf("~/.ssh: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := rein(t, "shell", "--read-path", "/var/tmp", "true"); code != exitUsage || !strings.Contains(errOut, "sockets") {
		t.Fatalf("/var/tmp: exit %d\n%s", code, errOut)
	}
}

// TestToolchainPrintable: a marker's file name reaches the terminal
// without the bytes that would move its cursor.
func TestToolchainPrintable(t *testing.T) {
	_, ws := docFixture(t)
	testenv.WriteFiles(t, ws, map[string]string{"\x1b[2K\r\x1b[1Aok everything fine\x1b[8m.csproj": ""}, 0o644)
	_, out, _ := rein(t, "toolchain")
	if strings.ContainsAny(out, "\x1b\r") || !strings.Contains(out, "dotnet (") {
		t.Fatalf("%q", out)
	}
}
