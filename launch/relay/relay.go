// Package relay is the program inside a launched session that carries its
// agent's hook calls and MCP connection to rein on the host: the session's
// init binary (rein's own, or the lean rein-init) answers Flag by
// connecting to Socket, naming the service, and copying its standard
// input there and the answer to its standard output. It registers that
// hidden command with the sandbox's init when it is linked in (rein's
// binary links it through launch; rein-init imports it for this alone).
//
// relay imports the sandbox's names and the standard library only: it is
// linked into rein-init, which stays small.
package relay

import (
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// Flag starts the init binary as the relay.
const Flag = "--rein-relay"

// Socket is where a launched session's relay finds rein on the host: a
// socket bound into the session's private HOME (SocketAt below it).
const (
	SocketAt   = ".rein/socket"
	SocketName = "rein.sock"
	Socket     = bwrap.SandboxHome + "/" + SocketAt + "/" + SocketName
)

// Command is the argv that runs the relay for service ("hook" or "mcp")
// inside a session, through the init binary mounted there.
func Command(service string) []string {
	return []string{bwrap.SandboxInit, Flag, service}
}

func init() { sandbox.RegisterCommand(Flag, 1, run) }
