//go:build unix

package sqlstore

import (
	"errors"
	"syscall"
)

// processExists reports whether a process pid exists (one of another user
// answers EPERM: it exists).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
