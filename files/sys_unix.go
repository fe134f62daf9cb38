//go:build unix

package files

import (
	"io/fs"
	"syscall"
)

// noFollow makes an open refuse a final symbolic link.
const noFollow = syscall.O_NOFOLLOW

// links is how many names the file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// owner is the file's user and group.
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}
