package sqlite

import (
	"io/fs"
	"os"
)

// fileOwner says one name and this user: a FileInfo from Stat carries
// neither the link count nor the owner on Windows, so the key's and the
// store's checks for other names and another owner are not made there.
func fileOwner(fs.FileInfo) (links uint64, uid int, ok bool) {
	return 1, os.Geteuid(), true
}

// processExists reports whether a process pid exists: Windows opens a
// handle to it, which fails for an ended one.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
