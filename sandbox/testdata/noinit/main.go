// Command noinit is a program that embeds rein's sandbox and forgets to
// call sandbox.Main: its runs must fail at once with sandbox.ErrNoInit,
// never start the program again as an init.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
)

func main() {
	flag.Parse() // a main that parses flags first, as most do
	ws, _ := os.Getwd()
	line, err := shell.Parser{}.Parse("true")
	if err != nil {
		panic(err)
	}
	_, err = sandbox.Run(context.Background(), line, sandbox.Profile{Workspace: ws}, nil, nil)
	pf := sandbox.Preflight(context.Background(), sandbox.RungBwrap, ws, false)
	fmt.Printf("is ErrNoInit: %v\nerror: %v\npreflight ok: %v (%s)\n", errors.Is(err, sandbox.ErrNoInit), err, pf.OK, pf.Problem)
	if err == nil {
		os.Exit(1)
	}
	os.Exit(3)
}
