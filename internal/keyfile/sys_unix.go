//go:build unix

package keyfile

import (
	"io/fs"
	"syscall"
)

// noFollow makes an open refuse a final symbolic link.
const noFollow = syscall.O_NOFOLLOW

// othersMode are the permission bits that let others read or write a file.
const othersMode fs.FileMode = 0o077

// fileOwner is the file's number of names and its owner.
func fileOwner(fi fs.FileInfo) (links uint64, uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Nlink), int(st.Uid), true
}
