//go:build unix

// Package launch runs another agent's CLI whole inside rein's sandbox, as
// a managed session (Session): what every launched agent shares (the
// launch bundle rein writes and verifies, the prompt section that tells
// the model its boundary, the hosts the session may reach and the egress
// that holds it to them, the credentials it must not carry in, the checks
// on the program's directory, the server on the host that answers the
// session's hook and rein mcp through the relay (launch/relay), the
// session's run in the trace) and the Agent interface by which each agent
// says what is its own (its flags, its model's variables and host, its
// files in the bundle, its hook, how its tools are named). Each agent is a
// package of its own (launch/claudecode) registered with the command line
// by one entry; the command line keeps the flags.
//
// launch imports the hook, the tool layer and rein mcp's server (which it
// serves to the session), the sandbox and the trace; it never imports
// agent or the command line.
package launch

import (
	"github.com/reinhq/rein/hook"
)

// Agent is one agent CLI rein launches.
type Agent interface {
	// Name is the agent on the command line (claude-code); Title in
	// messages (Claude Code); Program its binary's name on PATH.
	Name() string
	Title() string
	Program() string
	// Hook is the adapter that decides the agent's tool calls.
	Hook() hook.Adapter
	// KeyVars are the variables that carry its model credential, the one
	// credential a session is given; ConfigVars those of its own
	// configuration the session passes on (where the model is, which).
	KeyVars() []string
	ConfigVars() []string
	// Reserved says whether a variable configures the agent so that
	// --env may not pass it (it could make the agent skip rein's hook or
	// its settings).
	Reserved(name string) bool
	// Env are the settings the session sets for the agent: m's gateway
	// (m.Local()) and the placeholder key in keyVar, one of KeyVars (the
	// real key never enters the session).
	Env(m Model, keyVar, key string) []string
	// CheckArgs says why one of the agent's arguments is refused, or "":
	// a flag that would skip rein's hook, its settings or its sandbox,
	// or one not known not to.
	CheckArgs(args []string) string
	// Model is where the agent's model is, as getenv configures it: rein
	// forwards the session's model calls there, through the gateway.
	Model(getenv func(string) string) (Model, error)
	// Files are the agent's own files of the bundle (besides rein's
	// prompt.md, policy.json and hook.sh), for a bundle at at inside the
	// session whose model is m (reached at m.Local()); their names do not
	// depend on either.
	Files(at string, m Model) map[string][]byte
	// Guidance are the workspace's files (AGENTS.md) rein's prompt
	// carries, for an agent started without reading them itself.
	Guidance() []string
	// ProgramDirs are the directories of the host the session must read
	// to run the program prog (its directory, or the package tree it
	// imports from), each vetted as VetProgramDir does.
	ProgramDirs(prog string) []string
	// Start is the argv the agent starts with, before the user's
	// arguments, and the files of the session's private HOME (a path
	// below it, to a file or directory on the host), for the bundle
	// bundle on the host, at at inside the session, and its prompt.
	Start(at, bundle, prompt string) (argv []string, home map[string]string)
	// ToolName is the agent's name for one of rein mcp's tools, or ""
	// when the agent speaks no MCP (then the session serves none).
	ToolName(tool string) string
}
