//go:build unix

package codex

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/gateway"
)

// The flags that would undo rein's configuration, or that rein does not
// know, are refused; the ones a session needs pass.
func TestCheckArgs(t *testing.T) {
	for _, args := range [][]string{
		{"exec", "fix the bug"},
		{"exec", "--skip-git-repo-check", "-m", "gpt-5", "--json", "-o", "last.txt", "do it"},
		{"e", "--model=gpt-5", "do it"},
		{"exec", "resume", "--last"},
		{"fix the failing test"},
		{"--help"},
		{"exec", "--", "-c is part of the prompt"},
	} {
		if why := (Agent{}).CheckArgs(args); why != "" {
			t.Errorf("%q refused: %s", args, why)
		}
	}
	for _, args := range [][]string{
		{"-c", "features.shell_tool=true", "exec", "x"},
		{"exec", "--config=model_provider=\"openai\"", "x"},
		{"exec", "--enable", "shell_tool", "x"},
		{"exec", "--profile", "other", "x"},
		{"exec", "--trust", "x"},
		{"exec", "--dangerously-bypass-approvals-and-sandbox", "x"},
		{"exec", "-s", "workspace-write", "x"},
		{"exec", "--oss", "x"},
		{"exec", "--ignore-user-config", "x"},
		{"exec", "--brand-new-flag", "x"},
		{"login"},
		{"mcp", "add", "evil"},
		{"update"},
		{"sandbox", "linux", "sh"},
	} {
		if why := (Agent{}).CheckArgs(args); why == "" {
			t.Errorf("%q passed", args)
		}
	}
}

// config.toml points Codex at the gateway with the placeholder's
// variable, turns its own sandbox and command tool off, and names rein
// mcp through the relay as a server it waits for.
func TestConfig(t *testing.T) {
	m := launch.Model{Provider: "openai", Family: gateway.Responses, Base: "https://api.openai.com/v1"}
	data := (Agent{}).Files("/run/rein/home/.rein/launch", m)["config.toml"]
	var c struct {
		ModelProvider  string `toml:"model_provider"`
		SandboxMode    string `toml:"sandbox_mode"`
		ApprovalPolicy string `toml:"approval_policy"`
		WebSearch      string `toml:"web_search"`
		Features       map[string]bool
		Providers      map[string]map[string]any `toml:"model_providers"`
		MCP            map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	p := c.Providers["rein"]
	if c.ModelProvider != "rein" || c.SandboxMode != "danger-full-access" || c.ApprovalPolicy != "never" || c.WebSearch != "disabled" ||
		c.Features["shell_tool"] || c.Features["view_image"] || c.Features["plugins"] ||
		p["base_url"] != "http://127.0.0.1:3129/v1" || p["wire_api"] != "responses" || p["env_key"] != "OPENAI_API_KEY" || p["supports_websockets"] != false ||
		c.MCP["rein"]["command"] != "/run/rein/init" || c.MCP["rein"]["required"] != true {
		t.Errorf("config.toml:\n%s", data)
	}
	argv, home := (Agent{}).Start("/x", "/host/bundle", "the prompt's \"quotes\"\nand lines")
	if len(argv) != 2 || argv[0] != "-c" || !strings.HasPrefix(argv[1], "developer_instructions=") || home[".codex/config.toml"] != "/host/bundle/config.toml" {
		t.Errorf("start: %q %v", argv, home)
	}
	var v struct {
		V string `toml:"developer_instructions"`
	}
	if err := toml.Unmarshal([]byte(argv[1]), &v); err != nil || v.V != "the prompt's \"quotes\"\nand lines" {
		t.Errorf("the instructions as Codex parses -c: %q %v", v.V, err)
	}
}
