// Command floor is the least any design of rein's CLI and in-sandbox init
// as Go programs can cost, for the start-up benchmark: with no arguments
// it exits at once (the cheapest Go init); with arguments it starts them
// as a command, waits, and exits with its status (the cheapest Go CLI).
// It imports nothing of rein.
package main

import (
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Exit(1)
	}
}
