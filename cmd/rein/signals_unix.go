//go:build unix

package main

import (
	"os"
	"syscall"
)

// stopSignals are the signals that end a command of rein's by default:
// each is caught, so the command ends its runs and puts back what they
// changed before it exits (a closed terminal's SIGHUP too). SIGKILL cannot
// be caught: the sandbox's guardian puts back what a run killed so left.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGALRM, syscall.SIGVTALRM, syscall.SIGXCPU, syscall.SIGXFSZ}
