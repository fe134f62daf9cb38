package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// openBeneathWalk opens rel beneath root component by component, refusing
// any component that is a link: the portable form of openBeneath, for
// kernels without openat2. The file opened is checked to be the one
// looked at, so a swap between the look and the open is refused too.
func openBeneathWalk(root, rel string) (*os.File, error) {
	p := root
	var fi fs.FileInfo
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		if part == ".." {
			return nil, &fs.PathError{Op: "open", Path: filepath.Join(root, rel), Err: fs.ErrInvalid}
		}
		p = filepath.Join(p, part)
		var err error
		if fi, err = os.Lstat(p); err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, linkError(p)
		}
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		f.Close()
		return nil, linkError(p)
	}
	return f, nil
}
