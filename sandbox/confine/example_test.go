//go:build linux

package confine_test

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/reinhq/rein/sandbox/confine"
)

// An init confines itself and then becomes the command, so the command
// starts inside the confinement and cannot leave it.
func ExampleApply() {
	runtime.LockOSThread()
	err := confine.Apply(confine.Spec{
		ReadOnly:          []string{"/usr", "/bin", "/lib", "/etc"},
		ReadWrite:         []string{"/src/project", "/dev/null"},
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
		Rlimits:           confine.Rlimits{CPUSeconds: 600, FileSize: 1 << 30},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	err = syscall.Exec("/usr/bin/make", []string{"make", "test"}, []string{"PATH=/usr/bin:/bin"})
	fmt.Fprintln(os.Stderr, err)
	os.Exit(127)
}

// Probe tells what this host can enforce before anything is applied.
func ExampleProbe() {
	s := confine.Probe()
	need := confine.Spec{ScopeSignals: true}.RequiredABI()
	if s.LandlockABI < need || !s.Seccomp {
		fmt.Println("the landlock rung is not available here")
	}
}
