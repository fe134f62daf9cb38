package sandbox

import "github.com/reinhq/rein/sandbox/bwrap"

// relayFlag starts the init binary (rein's own, or rein-init) as the relay
// of a launched session: the program inside the session that carries its
// agent's hook calls and MCP connection to rein on the host.
const relayFlag = "--rein-relay"

// RelaySocket is where a launched session's relay finds rein on the host:
// a socket bound into the session's private HOME.
const RelaySocket = bwrap.SandboxHome + "/.rein/socket/rein.sock"

// RelayCommand is the argv that runs the relay for service ("hook" or
// "mcp") inside a session, through the init binary mounted there.
func RelayCommand(service string) []string {
	return []string{bwrap.SandboxInit, relayFlag, service}
}
