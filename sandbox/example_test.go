//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
)

// A plan run confined: the workspace writable, HOME and /tmp private, no
// network, the whole tree ended at the timeout. A program that runs
// sandboxes calls sandbox.Main() first thing in its main function (this
// package's tests do, in TestMain).
func ExampleRun() {
	dir, err := os.MkdirTemp("", "rein-sandbox-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ws, _ := filepath.EvalSymlinks(dir)
	line, err := shell.Parser{}.Parse("echo hello > out.txt && cat out.txt")
	if err != nil {
		log.Fatal(err)
	}
	res, err := sandbox.Run(context.Background(), line, sandbox.Profile{Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"}}, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Status, " ", res.Stdout.Text)
	// Output: ok hello
}
