//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// errNeedsLinux: bubblewrap and the mount namespace it builds exist only on
// Linux, so a view cannot be built elsewhere.
var errNeedsLinux = errors.New("bubblewrap needs Linux")

func openRoot(string) (*os.File, error) { return nil, errNeedsLinux }

func openBeneath(*os.File, string, string) (*os.File, error) { return nil, errNeedsLinux }
