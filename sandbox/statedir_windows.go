package sandbox

import "os"

// privateDir refuses d unless it is a real directory, not a link. Weaker
// than on Unix: Windows keeps who may write a directory in its ACL, which
// this does not read; the directory lies under the user's own profile
// (os.UserCacheDir), which other users cannot write by default.
func privateDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return refuse(Unavailable, "rein's state directory: %v", err)
	}
	if !fi.IsDir() {
		return refuse(Denied, "rein's state directory %s is not a directory", d)
	}
	return nil
}
