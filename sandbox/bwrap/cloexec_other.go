//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// closeOnExecFrom fails: bubblewrap runs only on Linux.
func closeOnExecFrom(int) error {
	return errors.New("bubblewrap needs Linux")
}

func dupFile(*os.File) (*os.File, error) { return nil, errors.New("bubblewrap needs Linux") }
