package keyfile

import (
	"io/fs"
	"os"
)

// noFollow is nothing on Windows, which has no O_NOFOLLOW.
const noFollow = 0

// othersMode is nothing on Windows: its permission bits say only whether a
// file is read-only, and who may read it is in its ACL, which is not read
// here. The key lies in the user's own profile directory, private by
// default.
const othersMode fs.FileMode = 0

// fileOwner says one name and this user: a FileInfo from Stat carries
// neither the link count nor the owner on Windows, so the key's and the
// store's checks for other names and another owner are not made there.
func fileOwner(fs.FileInfo) (links uint64, uid int, ok bool) {
	return 1, os.Geteuid(), true
}
