//go:build unix

// Package codex is rein launch's adapter for the OpenAI Codex CLI (npm
// @openai/codex, the codex binary it ships): the flags a session passes
// on and those it refuses, the model's variables and base URL, and its
// config.toml in the launch bundle: its model provider the session's
// gateway (the Responses API, no WebSocket), its own sandbox off inside
// rein's, its own command tool and the tools that read files around rein
// turned off, and rein mcp, through the relay, its MCP server. Every
// command Codex's model runs is then a call of rein mcp's, decided by
// rein's policy one by one.
//
// codex imports launch, the gateway's names and the relay's; it runs
// nothing.
package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/gateway"
	"github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// Agent is Codex.
type Agent struct{}

// Name is the agent on the command line.
func (Agent) Name() string { return "codex" }

// Title is the agent in messages.
func (Agent) Title() string { return "Codex" }

// Program is Codex's binary.
func (Agent) Program() string { return "codex" }

// Hook: none. Codex's own command tool is off, and every command is
// rein mcp's, which decides each itself.
func (Agent) Hook() hook.Adapter { return nil }

// KeyVars carry Codex's model credential.
func (Agent) KeyVars() []string { return []string{"OPENAI_API_KEY"} }

// ConfigVars: Codex takes its model and provider from config.toml, which
// rein writes.
func (Agent) ConfigVars() []string { return nil }

// Reserved: the variables that configure Codex (CODEX_HOME moves its
// configuration) and its provider.
func (Agent) Reserved(name string) bool {
	up := strings.ToUpper(name)
	return strings.HasPrefix(up, "CODEX_") || strings.HasPrefix(up, "OPENAI_")
}

// systemConfig is the directory of Codex's system-wide configuration.
const systemConfig = "/etc/codex"

// home is Codex's directory in the session: its configuration (the
// bundle's) and its sessions and logs (the session's own).
const home = ".codex"

// Env: Codex's home in the private HOME, the placeholder key in the
// variable its provider reads.
func (Agent) Env(_ launch.Model, keyVar, key string) []string {
	return []string{"CODEX_HOME=" + bwrap.SandboxHome + "/" + home, keyVar + "=" + key}
}

// Model is Codex's model API: OPENAI_BASE_URL, else OpenAI's.
func (Agent) Model(getenv func(string) string) (launch.Model, error) {
	// Codex loads /etc/codex's configuration over the user's: there it
	// could turn its own command tool back on.
	if _, err := os.Stat(systemConfig); err == nil {
		return launch.Model{}, fmt.Errorf("%s holds configuration Codex loads over the one rein writes (it could turn Codex's own command tool back on): rein launch codex runs only where it does not exist", systemConfig)
	}
	base := getenv("OPENAI_BASE_URL")
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	u, err := launch.ModelURL("OPENAI_BASE_URL", base)
	return launch.Model{Provider: "openai", Family: gateway.Responses, Base: u}, err
}

// Config is the config.toml of a session whose model is reached at
// m.Local(): every setting rein relies on.
func Config(m launch.Model) map[string]any {
	argv := relay.Command("mcp")
	return map[string]any{
		"model_provider": "rein",
		// rein is the sandbox: Codex's own would need namespaces the
		// session does not give it.
		"sandbox_mode":                "danger-full-access",
		"approval_policy":             "never",
		"web_search":                  "disabled",
		"check_for_update_on_startup": false,
		"features": map[string]any{
			// Codex's own command tool: commands are rein mcp's shell.
			"shell_tool": false,
			// A local image read around rein's file tools.
			"view_image": false,
			"goals":      false,
			// What it fetches at start (plugins from GitHub) and the
			// login shell it snapshots.
			"plugins":        false,
			"shell_snapshot": false,
			// A refused connection ends the call rather than retrying
			// for ever.
			"unbounded_connection_retries": false,
		},
		"agents":    map[string]any{"enabled": false},
		"analytics": map[string]any{"enabled": false},
		"tools":     map[string]any{"experimental_request_user_input": map[string]any{"enabled": false}},
		"model_providers": map[string]any{"rein": map[string]any{
			"name": "rein", "base_url": m.Local(), "wire_api": "responses", "env_key": "OPENAI_API_KEY",
			"supports_websockets": false, "request_max_retries": 2, "stream_max_retries": 2,
		}},
		"mcp_servers": map[string]any{"rein": map[string]any{
			"command": argv[0], "args": argv[1:], "required": true, "startup_timeout_sec": 30, "tool_timeout_sec": 900,
		}},
	}
}

// Files are config.toml.
func (Agent) Files(_ string, m launch.Model) map[string][]byte {
	data, err := toml.Marshal(Config(m))
	if err != nil {
		panic(err)
	}
	return map[string][]byte{"config.toml": data}
}

// Guidance: Codex reads the workspace's AGENTS.md itself.
func (Agent) Guidance() []string { return nil }

// Start: config.toml in Codex's home, rein's prompt as its developer
// instructions.
func (Agent) Start(_, bundle, prompt string) ([]string, map[string]string) {
	files := map[string]string{launch.BundleAt: bundle, home + "/config.toml": filepath.Join(bundle, "config.toml")}
	instr, _ := toml.Marshal(map[string]string{"v": prompt})
	_, value, _ := strings.Cut(strings.TrimSpace(string(instr)), "=")
	return []string{"-c", "developer_instructions=" + strings.TrimSpace(value)}, files
}

// ToolName is Codex's name for an MCP tool of the server "rein".
func (Agent) ToolName(tool string) string { return "mcp__rein__" + tool }

// ProgramDirs are the directories the session must read to run Codex:
// the native binary's package directory (its helpers beside it), or,
// for the npm launcher (bin/codex.js), the node_modules it was installed
// in.
func (Agent) ProgramDirs(prog string) []string {
	if strings.HasSuffix(prog, ".js") {
		for d := filepath.Dir(prog); d != "/" && d != "."; d = filepath.Dir(d) {
			if filepath.Base(d) == "node_modules" {
				return []string{d}
			}
		}
	}
	if filepath.Base(filepath.Dir(prog)) == "bin" {
		return []string{filepath.Dir(filepath.Dir(prog))}
	}
	return []string{filepath.Dir(prog)}
}

// commands are the subcommands a session runs; anything else (login,
// mcp, plugin, update, sandbox, cloud, app-server, ...) is refused.
var commands = map[string]bool{"exec": true, "e": true, "resume": true, "fork": true, "review": true, "help": true}

// flags are the Codex flags a session passes on, each with whether it
// takes a value. Anything else is refused: a flag Codex adds next is
// refused until it is known not to change what rein set.
var flags = map[string]bool{
	"-m": true, "--model": true, "-i": true, "--image": true, "--json": false, "-o": true, "--output-last-message": true,
	"--output-schema": true, "--color": true, "--skip-git-repo-check": false, "--ephemeral": false, "-C": true, "--cd": true,
	"--last": false, "--all": false, "--no-alt-screen": false, "-h": false, "--help": false, "-V": false, "--version": false,
	"--strict-config": false, "--uncommitted": false, "--base": true, "--commit": true, "--title": true,
}

// refused says why the flags that would undo rein's configuration are
// refused.
var refused = map[string]string{
	"-c":                      "overrides config.toml, which rein wrote (its provider, its sandbox, its tools)",
	"--config":                "overrides config.toml, which rein wrote (its provider, its sandbox, its tools)",
	"--enable":                "turns on a feature rein turned off (Codex's own command tool)",
	"--disable":               "changes the features rein set",
	"-p":                      "layers another configuration over rein's",
	"--profile":               "layers another configuration over rein's",
	"--ignore-user-config":    "skips config.toml, which rein wrote",
	"--ignore-rules":          "skips Codex's rules",
	"-s":                      "rein is the session's sandbox; Codex's own is off",
	"--sandbox":               "rein is the session's sandbox; Codex's own is off",
	"-a":                      "rein sets the approval policy",
	"--ask-for-approval":      "rein sets the approval policy",
	"--full-auto":             "rein sets the sandbox and the approval policy",
	"--approve-for-me":        "rein sets the approval policy",
	"--oss":                   "the session's model is the gateway's",
	"--local-provider":        "the session's model is the gateway's",
	"--search":                "web search runs at the provider, which rein does not decide",
	"--add-dir":               "the session's workspace is rein's",
	"--worktree":              "the session's workspace is rein's",
	"--remote":                "hands the session to another server",
	"--remote-auth-token-env": "hands the session to another server",
	"--trust":                 "rein decides what the session trusts",
	"--cyber-access-program":  "not part of a rein session",
	"--thread-source":         "not part of a rein session",
	"--no-daemon":             "not part of a rein session",
	"--dangerously-bypass-approvals-and-sandbox": "rein sets the sandbox and the approval policy",
	"--dangerously-bypass-hook-trust":            "rein decides what the session trusts",
}

// CheckArgs refuses the subcommands and flags that would undo rein's
// configuration or leave the session, and any not known not to.
func (Agent) CheckArgs(args []string) string {
	sub := true // a subcommand may come first (after the flags)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub && !commands[a] && looksLikeCommand(a) {
				return fmt.Sprintf("codex %s is refused: a session runs exec, resume, fork, review or a prompt", a)
			}
			sub = false
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		if why, ok := refused[name]; ok {
			return fmt.Sprintf("%s is refused: it %s", name, why)
		}
		takes, ok := flags[name]
		if !ok {
			return fmt.Sprintf("%s is refused: rein does not know it not to undo what it set for Codex", name)
		}
		if takes && !hasValue {
			i++
		}
	}
	return ""
}

// looksLikeCommand says whether a first word is a subcommand rather than
// a prompt: one lower-case word.
func looksLikeCommand(a string) bool {
	for _, r := range a {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return a != ""
}
