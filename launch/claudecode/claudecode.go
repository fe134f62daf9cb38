//go:build unix

// Package claudecode is rein launch's adapter for Claude Code (npm
// @anthropic-ai/claude-code, the claude CLI): the flags a session passes
// on and those it refuses, the model's variables and host, its files in
// the launch bundle (settings.json with rein's hook, mcp.json with rein
// mcp), and how it starts from them.
//
// claudecode imports launch, the hook's Claude Code adapter and the
// sandbox's names; it runs nothing.
package claudecode

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/hook"
	hookcc "github.com/reinhq/rein/hook/claudecode"
	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/policy"
)

// Agent is Claude Code.
type Agent struct{}

// Name is the agent on the command line.
func (Agent) Name() string { return "claude-code" }

// Title is the agent in messages.
func (Agent) Title() string { return "Claude Code" }

// Program is Claude Code's binary.
func (Agent) Program() string { return "claude" }

// Hook is Claude Code's hook adapter.
func (Agent) Hook() hook.Adapter { return hookcc.Adapter{} }

// KeyVars carry Claude Code's model credential.
func (Agent) KeyVars() []string { return []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} }

// ConfigVars are which model (where it is is the gateway's).
func (Agent) ConfigVars() []string {
	return []string{"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
		"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"}
}

// Reserved: the families that configure Claude Code or its model
// (CLAUDE_CODE_SIMPLE and CLAUDE_CODE_RESTRICTED skip hooks or the user
// settings, CLAUDE_CONFIG_DIR moves them; the ones rein passes it passes
// itself).
func (Agent) Reserved(name string) bool {
	up := strings.ToUpper(name)
	for _, prefix := range []string{"CLAUDE", "ANTHROPIC_", "DISABLE_"} {
		if strings.HasPrefix(up, prefix) {
			return true
		}
	}
	return false
}

// Env: the sandbox is one (Claude Code lets root bypass permissions only
// inside one); nothing it would fetch besides the model is reachable; the
// model is the session's gateway, with the placeholder key.
func (Agent) Env(m launch.Model, keyVar, key string) []string {
	return []string{"IS_SANDBOX=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "ANTHROPIC_BASE_URL=" + m.Local(), keyVar + "=" + key}
}

// Model is Claude Code's model API: ANTHROPIC_BASE_URL, else
// api.anthropic.com.
func (Agent) Model(getenv func(string) string) (launch.Model, error) {
	return launch.AnthropicModel(getenv)
}

// Files are settings.json, whose hook runs the bundle's hook.sh for every
// tool, and mcp.json, which starts rein mcp through the relay.
func (Agent) Files(at string, _ launch.Model) map[string][]byte {
	settings := map[string]any{
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
			"type": "command", "command": "/bin/sh " + at + "/hook.sh", "timeout": 30}}}}},
	}
	argv := relay.Command("mcp")
	mcpConfig := map[string]any{"mcpServers": map[string]any{"rein": map[string]any{
		"type": "stdio", "command": argv[0], "args": argv[1:]}}}
	return map[string][]byte{"settings.json": launch.JSON(settings), "mcp.json": launch.JSON(mcpConfig)}
}

// Start: the user's settings are the bundle's (which hold rein's hook),
// the MCP configuration the bundle's, and rein's prompt appended to
// Claude Code's own.
func (Agent) Start(at, bundle, prompt string) ([]string, map[string]string) {
	home := map[string]string{launch.BundleAt: bundle, ".claude/settings.json": filepath.Join(bundle, "settings.json")}
	return []string{"--setting-sources", "user", "--mcp-config", at + "/mcp.json", "--append-system-prompt", prompt}, home
}

// Guidance: Claude Code reads the workspace's CLAUDE.md and AGENTS.md
// itself.
func (Agent) Guidance() []string { return nil }

// ProgramDirs is the directory of Claude Code's program (its package
// bundles what it runs).
func (Agent) ProgramDirs(prog string) []string { return []string{filepath.Dir(prog)} }

// ToolName is Claude Code's name for an MCP tool of the server "rein".
func (Agent) ToolName(tool string) string { return "mcp__rein__" + tool }

// flags are the Claude Code flags a session passes on, each with whether
// it takes a value. Anything else is refused: a flag Claude Code adds
// next is refused until it is known not to skip rein's hook.
var flags = map[string]bool{
	"-p": false, "--print": false, "-c": false, "--continue": false, "-r": false, "--resume": false, "--fork-session": false,
	"--session-id": true, "-n": true, "--name": true, "--model": true, "--fallback-model": true, "--effort": true,
	"--permission-mode": true, "--permission-prompts": true, "--dangerously-skip-permissions": false,
	"--allow-dangerously-skip-permissions": false, "--allowedTools": true, "--allowed-tools": true,
	"--disallowedTools": true, "--disallowed-tools": true, "--tools": true, "--output-format": true, "--input-format": true,
	"--json-schema": true, "--max-budget-usd": true, "--include-partial-messages": false, "--include-hook-events": false,
	"--replay-user-messages": false, "--no-session-persistence": false, "--verbose": false, "--append-system-prompt": true,
	"--system-prompt": true, "--add-dir": true, "--agent": true, "--agents": true, "--autocompact": true,
	"--system-prompt-snapshot": true, "--disable-slash-commands": false, "--exclude-dynamic-system-prompt-sections": false,
	"--forward-subagent-text": false, "--brief": false, "--ax-screen-reader": false, "--betas": true, "--no-chrome": false,
	"-d": false, "--debug": false, "-h": false, "--help": false, "-v": false, "--version": false,
}

// refused says why the flags that would skip rein's hook, its settings
// or its sandbox are refused.
var refused = map[string]string{
	"--bare":              "skips hooks",
	"--safe-mode":         "skips hooks",
	"--restricted":        "ignores the user settings that hold rein's hook",
	"--settings":          "could turn hooks off (disableAllHooks)",
	"--setting-sources":   "could leave out the user settings that hold rein's hook (rein passes --setting-sources user)",
	"--mcp-config":        "the session's MCP server is the bundle's rein mcp",
	"--strict-mcp-config": "the session's MCP server is the bundle's rein mcp",
	"--plugin-dir":        "plugins are not part of the bundle",
	"--plugin-url":        "plugins are not part of the bundle",
	"--bg":                "a background session would outlive rein's sandbox",
	"--background":        "a background session would outlive rein's sandbox",
	"--cloud":             "runs the session elsewhere",
	"--teleport":          "runs the session elsewhere",
	"--remote-control":    "hands the session to another client",
	"--desktop":           "hands the session to another client",
	"--ide":               "connects to an IDE outside the sandbox",
	"--chrome":            "drives a browser outside the sandbox",
	"--debug-file":        "writes wherever it is told",
	"--worktree":          "makes a worktree outside the workspace",
	"-w":                  "makes a worktree outside the workspace",
	"--tmux":              "starts a terminal multiplexer outside the sandbox",
}

// CheckArgs says why one of Claude Code's arguments is refused, or "" when
// none is. An argument that starts with a dash must be a known flag (as
// --flag or --flag=value); values and the prompt pass as they are, but a
// refused flag is refused wherever it stands.
func (Agent) CheckArgs(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if why, ok := refused[name]; ok {
			return fmt.Sprintf("Claude Code's %s is refused: it %s", name, why)
		}
		if _, ok := flags[name]; !ok {
			return fmt.Sprintf("Claude Code's %s is not one rein launch passes on (it passes only flags known not to skip its hook; see docs/launch.md)", policy.Printable(name))
		}
	}
	return ""
}
