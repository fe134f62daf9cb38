package workspace

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is a file's status change time: set by the kernel at every
// change of its content or metadata, and never to a time a process names
// (touch -d sets the modification time, and so the change time to now).
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
