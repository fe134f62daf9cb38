package bwrap

import (
	"os"

	"golang.org/x/sys/unix"
)

// openRoot opens the workspace as a path-only descriptor, refusing a link.
func openRoot(ws string) (*os.File, error) {
	return os.OpenFile(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openBeneath opens rel beneath root without following any link, so that
// the descriptor bound is the file that was checked.
func openBeneath(root *os.File, rel, name string) (*os.File, error) {
	fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
