package bwrap

import (
	"io/fs"
	"path/filepath"
)

// PrivateFiles lists the entries under dir that a user other than their
// owner and group could not read: files without the other-read bit and
// directories without other-read or other-search, not descending into the
// latter. Passed as View.SystemMasked for /etc, it hides /etc/shadow, TLS
// private keys and the like from a command that runs as the host's root.
// Symbolic links are skipped: what they point to is listed on its own.
func PrivateFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			out = append(out, p)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == dir || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		if d.IsDir() {
			if perm&0o005 != 0o005 {
				out = append(out, p)
				return fs.SkipDir
			}
			return nil
		}
		if perm&0o004 == 0 {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
