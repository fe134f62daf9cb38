//go:build !linux

package bwrap

import "os"

// closeOnExecFrom fails: bubblewrap runs only on Linux.
func closeOnExecFrom(int) error { return errNeedsLinux }

func dupFile(*os.File) (*os.File, error) { return nil, errNeedsLinux }
