//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// privateDir refuses d unless it is a real directory of this user's that
// nobody else may write.
func privateDir(d string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(d, &st); err != nil {
		return refuse(Unavailable, "rein's state directory: %v", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return refuse(Denied, "rein's state directory %s is not a directory of this user's that only it may write", d)
	}
	return nil
}
