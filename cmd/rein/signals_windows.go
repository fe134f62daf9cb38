package main

import (
	"os"
	"syscall"
)

// stopSignals are the signals that end a command of rein's: caught, so
// the command ends its runs before it exits.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
