//go:build linux

package bwrap_test

import (
	"fmt"
	"log"
	"os"

	"github.com/reinhq/rein/sandbox/bwrap"
)

// A workspace run as rein starts it: git's hooks and config and rein's own
// directory read-only, .env hidden, no network, a built environment.
func ExampleCommand() {
	bwrapPath, err := bwrap.Find()
	if err != nil {
		log.Fatal(err) // says how to install bubblewrap
	}
	private, err := bwrap.PrivateFiles("/etc")
	if err != nil {
		log.Fatal(err)
	}
	home, err := os.MkdirTemp("", "home")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	v := bwrap.View{
		Workspace:    "/src/project",
		Protected:    []string{".git/hooks", ".git/config", ".rein"},
		Masked:       []string{".env"},
		Home:         home,
		SystemDirs:   bwrap.DefaultSystemDirs,
		SystemMasked: private,
		Network:      bwrap.NetworkOff,
		Env:          []string{"PATH=/usr/bin:/bin", "HOME=" + bwrap.SandboxHome, "TMPDIR=/tmp"},
	}
	cmd, err := bwrap.Command(bwrapPath, v, []string{"go", "test", "./..."})
	if err != nil {
		log.Fatal(err) // a *bwrap.ViewError naming the field
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Start()
	bwrap.CloseFiles(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	fmt.Println(err)
}
