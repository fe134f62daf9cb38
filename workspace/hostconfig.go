package workspace

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A HostName is one name in the workspace that a program on the host
// reads as configuration: an agent, an editor or a git hook manager that
// runs commands, starts servers or switches a gate off because of what
// the file says. Reason says what it would run.
type HostName struct {
	Name   string
	Reason string
}

// HostConfig is the reviewed table of those names, at any depth of the
// workspace (a package opened as a project of its own reads its own).
// Commands and file tools may not write them (the policy's protected set),
// and what a command writes there anyway is put back (the sandbox's
// guard). A table will always miss the next tool: ChangedConfig is the net
// under it.
var HostConfig = []HostName{
	{".claude", "Claude Code's settings: hooks it runs, permissions, MCP servers"},
	{".mcp.json", "MCP servers a client starts on opening the project"},
	{".codex", "Codex's configuration: its sandbox mode, MCP servers"},
	{".cursor", "Cursor's rules and MCP servers"},
	{".gemini", "Gemini CLI's settings: tools, MCP servers"},
	{".windsurf", "Windsurf's rules and workflows"},
	{".continue", "Continue's configuration: models, MCP servers"},
	{".aider.conf.yml", "aider's configuration: the lint and test commands it runs"},
	{".vscode", "VS Code's tasks (run when the folder opens) and settings (auto-approval)"},
	{".idea", "JetBrains run configurations and startup tasks"},
	{".zed", "Zed's settings and tasks"},
	{".roo", "Roo Code's rules and MCP servers"},
	{".kiro", "Kiro's hooks and steering"},
	{".amazonq", "Amazon Q's rules and MCP servers"},
	{".kilocode", "Kilo Code's rules, workflows and MCP servers"},
	{".cline", "Cline's configuration"},
	{".clinerules", "Cline's rules and workflows"},
	{".clineignore", "what Cline may read"},
	{".junie", "Junie's guidelines and its allowed commands"},
	{"opencode.json", "opencode's configuration: commands, MCP servers, permissions"},
	{".opencode", "opencode's agents, commands and plugins"},
	{"crush.json", "Crush's configuration: language servers and MCP servers it starts"},
	{".crush.json", "Crush's configuration: language servers and MCP servers it starts"},
	{".devcontainer", "dev container definition: initializeCommand runs on the host"},
	{".devcontainer.json", "dev container definition: initializeCommand runs on the host"},
	{".husky", "husky's git hooks, run by the host's next git commit"},
	{".pre-commit-config.yaml", "pre-commit's hooks, run by the host's next git commit"},
	{".qwen", "Qwen Code's settings: MCP servers, tools"},
	{"opencode.jsonc", "opencode's configuration: commands, MCP servers, permissions"},
	{"mise.toml", "mise's tasks and hooks, run on entering the directory once it is trusted (by path, not content)"},
	{".mise.toml", "mise's tasks and hooks, run on entering the directory once it is trusted (by path, not content)"},
	{"mise.local.toml", "mise's local tasks and hooks"},
	{".mise.local.toml", "mise's local tasks and hooks"},
	{"devbox.json", "devbox's init_hook, run by devbox shell"},
}

func init() {
	// lefthook reads any of these, plain or dotted, local or not: each
	// holds git hooks the host's next git commit runs.
	for _, base := range []string{"lefthook", "lefthook-local"} {
		for _, ext := range []string{"yml", "yaml", "toml", "json", "jsonc"} {
			for _, dot := range []string{"", "."} {
				HostConfig = append(HostConfig, HostName{dot + base + "." + ext, "lefthook's git hooks, run by the host's next git commit"})
			}
		}
	}
}

// HostConfigNames are HostConfig's names.
func HostConfigNames() []string {
	out := make([]string, len(HostConfig))
	for i, h := range HostConfig {
		out[i] = h.Name
	}
	return out
}

// CacheNames are directories that tools fill with what they build or
// download, not configuration a program reads to decide what to run:
// ChangedConfig does not look inside them. A directory whose content a
// tool executes (.yarn/releases, .terraform/providers, .bundle's config)
// is not one.
var CacheNames = []HostName{
	{".git", "git's own files: protected and put back on their own"},
	{"node_modules", "npm's installed packages"},
	{".venv", "a Python virtual environment"},
	{".cache", "tools' caches"},
	{".pytest_cache", "pytest's cache"},
	{".mypy_cache", "mypy's cache"},
	{".ruff_cache", "ruff's cache"},
	{".hypothesis", "Hypothesis's example database"},
	{".tox", "tox's environments"},
	{".nox", "nox's environments"},
	{".ipynb_checkpoints", "Jupyter's checkpoints"},
	{".next", "Next.js's build output"},
	{".nuxt", "Nuxt's build output"},
	{".svelte-kit", "SvelteKit's build output"},
	{".turbo", "Turborepo's cache"},
	{".parcel-cache", "Parcel's cache"},
	{".angular", "Angular's build cache"},
	{".gradle", "Gradle's caches"},
	{".dart_tool", "Dart's build output"},
	{".nyc_output", "nyc's coverage data"},
}

// ConfigReport is what ChangedConfig found: how many files and links were
// made or changed, and the first MaxConfigShown of them by path.
type ConfigReport struct {
	Count int      `json:"count"`
	Paths []string `json:"paths"`
	// Truncated says the workspace had more entries than the walk looks
	// at: Count is a floor.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxConfigShown is how many paths a ConfigReport names.
const MaxConfigShown = 20

// clockSlack is how far a change time may lag the wall clock: the
// kernel's coarse clock ticks at most every 10 ms.
const clockSlack = 20 * time.Millisecond

// maxConfigWalk bounds the entries ChangedConfig looks at.
const maxConfigWalk = 500_000

// ChangedConfig lists every file and link of the workspace made or changed
// since the time given (its status change time, which no command can set
// back), whose name starts with "." or that lies in a directory whose name
// does, or whose name HostConfig has: configuration a tool on the host
// may read. The caches CacheNames has are not looked into. Paths are
// relative to ws, with slashes.
func ChangedConfig(ws string, since time.Time) ConfigReport {
	var r ConfigReport
	// The kernel stamps change times from a clock that may lag the one
	// since was read from by a tick.
	since = since.Add(-clockSlack)
	walked := 0
	caches := make(map[string]bool, len(CacheNames))
	for _, c := range CacheNames {
		caches[c.Name] = true
	}
	hosts := HostConfigNames()
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if p == ws {
			return nil
		}
		if err != nil {
			// A directory that cannot be listed (a command's chmod 311)
			// hides what is in it from the walk, not from a tool that
			// opens a path inside: it is named itself.
			if d != nil && d.IsDir() {
				if fi, ierr := d.Info(); ierr == nil && !changeTime(fi).Before(since) {
					if rel, rerr := filepath.Rel(ws, p); rerr == nil {
						r.Count++
						r.Paths = append(r.Paths, filepath.ToSlash(rel)+"/ (rein could not look inside)")
					}
				}
			}
			return nil
		}
		if walked++; walked > maxConfigWalk {
			r.Truncated = true
			return filepath.SkipAll
		}
		if d.IsDir() {
			if caches[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !dotted(rel) && !slices.Contains(hosts, d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || changeTime(fi).Before(since) {
			return nil
		}
		r.Count++
		r.Paths = append(r.Paths, rel)
		return nil
	})
	slices.Sort(r.Paths)
	if len(r.Paths) > MaxConfigShown {
		r.Paths = r.Paths[:MaxConfigShown]
	}
	return r
}

// dotted reports whether a component of rel starts with ".".
func dotted(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}
