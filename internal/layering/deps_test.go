package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// Third-party modules, by import path prefix.
const (
	sqlite    = "modernc.org/sqlite"
	anthropic = "github.com/anthropics/anthropic-sdk-go"
	openai    = "github.com/openai/openai-go"
	mcpSDK    = "github.com/modelcontextprotocol/go-sdk"
	cobra     = "github.com/spf13/cobra"
)

// decision are the packages a library user links to check a command or a
// path and touch files: they stay small and free of the front ends'
// dependencies.
var decision = []string{"shell", "policy", "workspace", "files"}

// forbiddenDeps lists, as tailscale's deptest does, the third-party
// modules a rein package must not depend on, directly or not, and why.
var forbiddenDeps = []struct {
	pkgs []string
	dep  string
	why  string
}{
	{decision, sqlite, "the trace store is the only user of SQLite (several MB of transpiled C); checking a command must not link it"},
	{decision, anthropic, "the model vendors' SDKs are the agent's; deciding about a command never talks to a model"},
	{decision, openai, "the model vendors' SDKs are the agent's; deciding about a command never talks to a model"},
	{decision, mcpSDK, "MCP is one front end (mcpserver); the decision layer serves every front end alike"},
	{decision, cobra, "the command line is cmd/rein's; a library package never parses flags"},
	{[]string{"sandbox"}, sqlite, "the sandbox runs plans and never learns how they are recorded: the trace is its caller's"},
	{[]string{"sandbox"}, anthropic, "the sandbox runs what it is handed and never talks to a model"},
	{[]string{"sandbox"}, openai, "the sandbox runs what it is handed and never talks to a model"},
	{[]string{"sandbox"}, mcpSDK, "the sandbox serves every front end alike; MCP is mcpserver's"},
	{nonCLI(), cobra, "the command line is cmd/rein's; a library package never parses flags"},
	{[]string{"cmd/rein"}, "html/template", "a template's methods called by name make the linker keep every exported method in rein's binary (74 MB became 128 MB, and each start slower): traceview writes its pages itself"},
	{[]string{"trace/otlp"}, "google.golang.org/grpc", "runs are exported over OTLP/HTTP; gRPC (through the collector's generated package) is megabytes rein links for nothing else"},
	{append([]string{"trace", "tool", "agent", "mcpserver", "hook"}, decision...), "go.opentelemetry.io/otel/sdk", "a run is exported after the fact, from the trace, by trace/otlp; the library records to its store and never talks to a collector"},
}

// nonCLI is every package of the layering table but cmd/rein.
func nonCLI() []string {
	var out []string
	for pkg := range allowed {
		if pkg != "cmd/rein" {
			out = append(out, pkg)
		}
	}
	return out
}

func TestForbiddenDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		deps[strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")] = fields[1:]
	}
	for _, rule := range forbiddenDeps {
		for _, pkg := range rule.pkgs {
			d, ok := deps[pkg]
			if !ok {
				t.Errorf("package %s of the dependency rules is not in the module: update the rules", pkg)
				continue
			}
			for _, dep := range d {
				if dep == rule.dep || strings.HasPrefix(dep, rule.dep+"/") {
					t.Errorf("%s depends on %s: %s", pkg, dep, rule.why)
					break
				}
			}
		}
	}
	// The rules must bite: cmd/rein does depend on each module named.
	for _, m := range []string{sqlite, anthropic, openai, mcpSDK, cobra} {
		found := false
		for _, dep := range deps["cmd/rein"] {
			found = found || dep == m || strings.HasPrefix(dep, m+"/")
		}
		if !found {
			t.Errorf("cmd/rein does not depend on %s: the rule names a module the module does not use", m)
		}
	}
}
