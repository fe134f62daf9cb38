//go:build unix

// Package pi is rein launch's adapter for Pi (npm
// @mariozechner/pi-coding-agent, the pi CLI): the flags a session passes
// on and those it refuses, the model's variables and host, its files in
// the launch bundle (rein's extension, which asks rein through the relay
// on every tool call, and a models.json that points Pi's anthropic
// provider at the session's model gateway), and how it starts from them: with the
// bundle's extension and nothing else loaded (--no-extensions --no-skills
// --no-context-files --no-prompt-templates --no-themes), the workspace's
// AGENTS.md reaching the model only through rein's prompt.
//
// pi imports launch, the hook's Pi adapter and the relay's names; it
// runs nothing.
package pi

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/hook"
	hookpi "github.com/reinhq/rein/hook/pi"
	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/policy"
)

// Agent is Pi.
type Agent struct{}

// Name is the agent on the command line.
func (Agent) Name() string { return "pi" }

// Title is the agent in messages.
func (Agent) Title() string { return "Pi" }

// Program is Pi's binary.
func (Agent) Program() string { return "pi" }

// Hook is Pi's hook adapter.
func (Agent) Hook() hook.Adapter { return hookpi.Adapter{} }

// KeyVars carry the model's credential Pi reads from its environment
// (its anthropic provider's).
func (Agent) KeyVars() []string { return []string{"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"} }

// ConfigVars: Pi takes its endpoint from models.json, which rein writes.
func (Agent) ConfigVars() []string { return nil }

// Reserved: the variables that configure Pi (PI_*: its directories,
// offline mode, its package manager) and those of its provider.
func (Agent) Reserved(name string) bool {
	up := strings.ToUpper(name)
	return strings.HasPrefix(up, "PI_") || strings.HasPrefix(up, "ANTHROPIC_")
}

// Env: no version check, no startup network besides the model; the
// placeholder key where Pi reads its anthropic provider's.
func (Agent) Env(_ launch.Model, keyVar, key string) []string {
	return []string{"PI_SKIP_VERSION_CHECK=1", "PI_OFFLINE=1", keyVar + "=" + key}
}

// Model is Pi's anthropic provider: ANTHROPIC_BASE_URL (rein's
// convention; Pi itself ignores it), else Anthropic's API.
func (Agent) Model(getenv func(string) string) (launch.Model, error) {
	return launch.AnthropicModel(getenv)
}

// Files are rein's extension, which runs the relay's hook on every tool
// call, and models.json, which points the anthropic provider at the
// session's gateway.
func (a Agent) Files(at string, m launch.Model) map[string][]byte {
	models := map[string]any{"providers": map[string]any{"anthropic": map[string]any{"baseUrl": m.Local()}}}
	return map[string][]byte{"extension.js": []byte(hookpi.Extension(relay.Command("hook"))), "models.json": launch.JSON(models)}
}

// Guidance are the workspace's files rein's prompt carries: Pi starts
// with --no-context-files.
func (Agent) Guidance() []string { return []string{"AGENTS.md"} }

// Start: the bundle's extension and nothing else loaded, rein's prompt
// appended to Pi's own, models.json in Pi's agent directory.
func (Agent) Start(at, bundle, prompt string) ([]string, map[string]string) {
	home := map[string]string{launch.BundleAt: bundle, ".pi/agent/models.json": filepath.Join(bundle, "models.json")}
	return []string{"--no-extensions", "--no-skills", "--no-context-files", "--no-prompt-templates", "--no-themes",
		"-e", at + "/extension.js", "--append-system-prompt", prompt}, home
}

// ToolName is Pi's name for a tool: rein mcp is not Pi's (Pi speaks no
// MCP), so no name is rein's.
func (Agent) ToolName(tool string) string { return "" }

// ProgramDirs are the directories the session must read to run Pi: the
// node_modules its package was installed in (Pi imports its
// dependencies from there).
func (Agent) ProgramDirs(prog string) []string {
	for d := filepath.Dir(prog); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			return []string{d}
		}
	}
	return []string{filepath.Dir(prog)}
}

// flags are the Pi flags a session passes on, each with whether it takes a
// value. Anything else is refused: a flag Pi adds next is refused until it
// is known not to skip rein's gate.
var flags = map[string]bool{
	"--provider": true, "--model": true, "--system-prompt": true, "--append-system-prompt": true, "--mode": true,
	"--print": false, "-p": false, "--continue": false, "-c": false, "--resume": false, "-r": false,
	"--session": true, "--fork": true, "--session-dir": true, "--no-session": false, "--models": true,
	"--no-tools": false, "-nt": false, "--no-builtin-tools": false, "-nbt": false, "--tools": true, "-t": true,
	"--thinking": true, "--no-extensions": false, "-ne": false, "--no-skills": false, "-ns": false,
	"--no-prompt-templates": false, "-np": false, "--no-themes": false, "--no-context-files": false, "-nc": false,
	"--export": true, "--list-models": false, "--verbose": false, "--offline": false, "--help": false, "-h": false,
	"--version": false, "-v": false,
}

// refused says why the flags that would load what rein did not put in
// the bundle, or carry a key where the session shows it, are refused.
var refused = map[string]string{
	"--extension":       "loads an extension rein did not put in the bundle (rein's own is the only one)",
	"-e":                "loads an extension rein did not put in the bundle (rein's own is the only one)",
	"--skill":           "loads a skill rein did not put in the bundle",
	"--prompt-template": "loads a prompt template rein did not put in the bundle",
	"--theme":           "loads a theme rein did not put in the bundle",
	"--api-key":         "puts the key on the command line, where every process of the session reads it (pass it in its variable, --key-env)",
}

// commands are Pi's subcommands, which change its installed extensions.
var commands = map[string]bool{"install": true, "remove": true, "uninstall": true, "update": true, "list": true, "config": true}

// CheckArgs says why one of Pi's arguments is refused, or "".
func (Agent) CheckArgs(args []string) string {
	if len(args) > 0 && commands[args[0]] {
		return fmt.Sprintf("Pi's %s command is refused: it changes Pi's installed extensions, which a session does not load", args[0])
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if why, ok := refused[name]; ok {
			return fmt.Sprintf("Pi's %s is refused: it %s", name, why)
		}
		if _, ok := flags[name]; !ok {
			return fmt.Sprintf("Pi's %s is not one rein launch passes on (it passes only flags known not to skip its gate; see docs/pi.md)", policy.Printable(name))
		}
	}
	return ""
}
