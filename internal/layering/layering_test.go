package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/reinhq/rein"

// allowed lists, for each rein package, the only rein packages it may
// depend on, directly or not. A package missing from this table fails the
// test, so a new package has to take its place in the layers.
var allowed = map[string][]string{
	"shell":                 {},
	"workspace":             {},
	"limits":                {},
	"policy":                {"shell", "workspace", "limits"},
	"files":                 {"workspace"},
	"sandbox/runplan":       {"shell"},
	"internal/bashstub":     {},
	"sandbox/bwrap":         {},
	"sandbox/confine":       {},
	"sandbox/cgroup":        {},
	"sandbox/netproxy":      {"internal/netname"},
	"web":                   {"sandbox/netproxy", "internal/netname"},
	"toolchain":             {},
	"sandbox":               {"limits", "shell", "workspace", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "internal/keyfile", "internal/netname"},
	"trace":                 {"internal/keyfile"},
	"trace/sqlstore":        {"trace", "internal/keyfile"},
	"trace/sqlite":          {"trace", "trace/sqlstore", "internal/keyfile"},
	"trace/postgres":        {"trace", "trace/sqlstore", "internal/keyfile"},
	"trace/tracetest":       {"trace", "trace/sqlstore", "internal/keyfile"},
	"trace/otlp":            {"trace", "internal/keyfile"},
	"hook":                  {"limits", "shell", "workspace", "policy", "trace", "internal/keyfile", "internal/netname"},
	"hook/claudecode":       {"hook", "limits", "shell", "workspace", "policy", "trace", "internal/keyfile", "internal/netname"},
	"hook/pi":               {"hook", "limits", "shell", "workspace", "policy", "trace", "internal/keyfile", "internal/netname"},
	"hook/hooktest":         {"hook", "limits", "shell", "workspace", "policy", "trace", "internal/keyfile", "internal/netname"},
	"launch/relay":          {"limits", "shell", "workspace", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "internal/keyfile", "internal/netname"},
	"launch/gateway":        {},
	"launch":                {"launch/relay", "launch/gateway", "hook", "mcpserver", "tool", "web", "files", "limits", "shell", "workspace", "policy", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "internal/boundary", "internal/keyfile", "internal/netname"},
	"launch/claudecode":     {"launch", "launch/relay", "launch/gateway", "hook", "hook/claudecode", "mcpserver", "tool", "web", "files", "limits", "shell", "workspace", "policy", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "internal/boundary", "internal/keyfile", "internal/netname"},
	"launch/pi":             {"launch", "launch/relay", "launch/gateway", "hook", "hook/pi", "mcpserver", "tool", "web", "files", "limits", "shell", "workspace", "policy", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "internal/boundary", "internal/keyfile", "internal/netname"},
	"launch/codex":          {"launch", "launch/relay", "launch/gateway", "hook", "mcpserver", "tool", "web", "files", "limits", "shell", "workspace", "policy", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "internal/boundary", "internal/keyfile", "internal/netname"},
	"internal/boundary":     {},
	"mcpserver":             {"limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "tool", "web", "internal/keyfile", "internal/netname"},
	"tool":                  {"web", "limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "internal/keyfile", "internal/netname"},
	"bench/cmd/gentree":     {},
	"bench/cmd/blobserver":  {},
	"bench/cmd/floor":       {},
	"bench/cmd/searchfiles": {"files", "workspace"},
	"agent/evidence":        {"shell"},
	"agent/loop":            {},
	"agent/agenttest":       {"agent", "agent/loop", "internal/boundary", "agent/evidence", "limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "trace/sqlstore", "trace/sqlite", "tool", "web", "internal/keyfile", "internal/netname", "internal/testenv"},
	"agent":                 {"agent/loop", "internal/boundary", "limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "tool", "web", "agent/evidence", "internal/keyfile", "internal/netname"},
	"agent/temporal":        {"agent", "agent/loop", "internal/boundary", "limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "tool", "web", "agent/evidence", "internal/keyfile", "internal/netname"},
	"traceview":             {"agent", "agent/loop", "internal/boundary", "limits", "shell", "workspace", "policy", "files", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "trace", "trace/sqlstore", "tool", "web", "agent/evidence", "internal/keyfile", "internal/netname"},
	"cmd/rein":              {"*"},
	"cmd/rein-init":         {"launch/relay", "limits", "shell", "workspace", "sandbox", "sandbox/bwrap", "sandbox/cgroup", "sandbox/confine", "sandbox/netproxy", "sandbox/runplan", "toolchain", "internal/keyfile", "internal/netname"},
	"internal/keyfile":      {},
	"internal/netname":      {},
	"internal/layering":     {},
	"internal/apicheck":     {},
	"internal/testenv":      {},
}

func TestImportLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the layering table: add it with the rein packages it may import", pkg)
			continue
		}
		seen++
		if len(ok) == 1 && ok[0] == "*" {
			continue
		}
		for _, dep := range fields[1:] {
			if !strings.HasPrefix(dep, module+"/") {
				continue
			}
			d := strings.TrimPrefix(dep, module+"/")
			if !contains(ok, d) {
				t.Errorf("%s depends on %s; the layers allow only %v", pkg, d, ok)
			}
		}
	}
	if seen < 4 {
		t.Fatalf("go list saw only %d rein packages; the test is not looking at the module", seen)
	}
}

// TestForbiddenNames pins the rules docs/architecture.md states in words, for packages
// that do not exist yet as much as for those that do.
func TestForbiddenNames(t *testing.T) {
	for _, forbidden := range []string{"sandbox", "sandbox/runplan", "toolchain", "tool", "trace", "cmd/rein"} {
		for _, pkg := range []string{"shell", "policy", "workspace", "files"} {
			if contains(allowed[pkg], forbidden) || (len(allowed[pkg]) == 1 && allowed[pkg][0] == "*") {
				t.Errorf("the layering table lets %s import %s", pkg, forbidden)
			}
		}
	}
}

// TestAgentDirect: the agent reaches the sandbox only through the router;
// it imports no sandbox package itself.
func TestAgentDirect(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"/agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == module+"/sandbox" || strings.HasPrefix(imp, module+"/sandbox/") || imp == module+"/files" || imp == module+"/workspace" {
			t.Errorf("agent imports %s; it reaches files, processes and hosts only through tool.Router", imp)
		}
	}
}

// TestNoSQLite: the library's packages see the trace only as trace.Store,
// so that an embedder with a store of their own links no SQLite and no
// PostgreSQL driver; cmd/rein wires trace/sqlite and trace/postgres.
func TestNoSQLite(t *testing.T) {
	for _, pkg := range []string{"trace", "tool", "agent", "mcpserver", "hook"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "modernc.org/sqlite" || dep == module+"/trace/sqlite" || dep == "github.com/jackc/pgx/v5" || dep == module+"/trace/postgres" || dep == module+"/trace/sqlstore" {
				t.Errorf("%s depends on %s; it must reach the trace only through trace.Store", pkg, dep)
			}
		}
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestLoopReadsNothing: agent/loop is the step function every driver runs
// and every replay repeats, so it reads nothing of the world: its files
// import only the standard library, and of it nothing that reads the
// system, the network, randomness or the clock; the time package is used
// for its types and arithmetic only, never to read the time or wait.
func TestLoopReadsNothing(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"/agent/loop").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		t.Fatalf("go list found too few files of agent/loop: %q", out)
	}
	forbidden := []string{"os", "net", "syscall", "unsafe", "math/rand", "crypto/rand", "io/fs", "io/ioutil", "runtime", "plugin", "reflect"}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true}
	fset := token.NewFileSet()
	for _, name := range fields[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.Split(path, "/")[0], ".") {
				t.Errorf("agent/loop's %s imports %s: the loop imports the standard library only", name, path)
			}
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("agent/loop's %s imports %s, which reads the world", name, path)
				}
			}
			if path == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && clock[sel.Sel.Name] {
				t.Errorf("agent/loop's %s calls time.%s at %s: the loop is given the time, it never reads it", name, sel.Sel.Name, fset.Position(sel.Pos()))
			}
			return true
		})
	}
}

// TestNoTemporalServer: rein's module never depends on the Temporal
// server, which only the Temporal driver's suite (a module of its own)
// starts; and no package but the driver and the command links the
// Temporal SDK.
func TestNoTemporalServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, out)
	}
	for _, m := range strings.Fields(string(out)) {
		if m == "go.temporal.io/server" {
			t.Error("rein's module depends on go.temporal.io/server")
		}
	}
	for _, pkg := range []string{"trace", "tool", "agent", "mcpserver", "hook"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "go.temporal.io/") {
				t.Errorf("%s depends on %s; only agent/temporal and cmd/rein may", pkg, dep)
			}
		}
	}
}
