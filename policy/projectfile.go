package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxPolicyFile bounds the bytes read from one policy file: a policy is a
// few kilobytes, and a file of gigabytes (or /dev/zero behind a name) must
// not stall every command.
const maxPolicyFile = 4 << 20

// readPolicyFile reads one scope's file. The project file in its default
// place is opened beneath the workspace root as the user named it with no
// symbolic link followed, so a link the agent made (.rein pointing at
// another project's trusted policy) or a repository committed is refused
// rather than read as this project's, and it must be a regular file: a
// FIFO is refused without waiting for a writer, a device or a directory
// without reading it. No file is opened so as to wait on a FIFO, and none
// is read past maxPolicyFile.
func readPolicyFile(sc Scope) ([]byte, error) {
	var f *os.File
	var err error
	if sc.Root != "" {
		rel, rerr := filepath.Rel(sc.Root, sc.Path)
		if rerr != nil {
			return nil, rerr
		}
		f, err = openBeneath(sc.Root, rel)
	} else {
		f, err = os.OpenFile(sc.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// The project file in the workspace must be a regular file. A file
	// the user named may be a device (/dev/null for none), read within
	// the bound; a directory is refused by the read.
	if sc.Root != "" && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", sc.Path, fileKind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPolicyFile {
		return nil, fmt.Errorf("%s holds more than %d MiB, more than a policy file can", sc.Path, maxPolicyFile>>20)
	}
	return data, nil
}

// errLinkInPath is returned for a project file reached through a link.
var errLinkInPath = errors.New("is or passes through a symbolic link, which rein does not follow to a project policy: replace the link with the file itself")

// linkError names the link found on the way to a project file.
func linkError(path string) error {
	return &fs.PathError{Op: "open", Path: path, Err: errLinkInPath}
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// projectKey is the name trust is recorded under: the absolute, cleaned
// path of the project file as the user named its workspace, links not
// resolved. A project reached through another name (a link to it) is
// another project until trusted under that name too.
func projectKey(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}
