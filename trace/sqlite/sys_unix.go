//go:build unix

package sqlite

import (
	"errors"
	"io/fs"
	"syscall"
)

// fileOwner is the file's number of names and its owner.
func fileOwner(fi fs.FileInfo) (links uint64, uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Nlink), int(st.Uid), true
}

// processExists reports whether a process pid exists (one of another user
// answers EPERM: it exists).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
