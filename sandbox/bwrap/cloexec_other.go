//go:build !linux

package bwrap

import "errors"

// closeOnExecFrom fails: bubblewrap runs only on Linux.
func closeOnExecFrom(int) error {
	return errors.New("bubblewrap needs Linux")
}
