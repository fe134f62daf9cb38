//go:build unix

package sqlite

import (
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
