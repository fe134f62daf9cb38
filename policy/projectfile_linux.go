package policy

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel beneath the directory root without following any
// symbolic link on the way (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
// and without blocking on a FIFO. The root itself is opened as named.
func openBeneath(root, rel string) (*os.File, error) {
	name := filepath.Join(root, rel)
	dir, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	fd, err := unix.Openat2(int(dir.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOSYS):
		return openBeneathWalk(root, rel)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return nil, linkError(name)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
