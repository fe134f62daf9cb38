package sandbox

import (
	"os"
	"sync"
)

// commands are the hidden commands the init binary answers besides its
// own, each registered by the package that owns it (launch/relay's relay).
var commands sync.Map // flag → command

type command struct {
	args int
	main func(args []string) int
}

// RegisterCommand makes the init binary (rein's own, or rein-init, when
// the registering package is linked into it) answer flag followed by
// exactly args arguments by running main with them and exiting with its
// status. A package registers its commands in its init function.
func RegisterCommand(flag string, args int, main func(args []string) int) {
	commands.Store(flag, command{args: args, main: main})
}

// runCommand runs the registered command os.Args names, if one does, and
// exits.
func runCommand() {
	if len(os.Args) < 2 {
		return
	}
	v, ok := commands.Load(os.Args[1])
	if !ok {
		return
	}
	c := v.(command)
	if len(os.Args)-2 != c.args {
		return
	}
	os.Exit(c.main(os.Args[2:]))
}
