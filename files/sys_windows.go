package files

import "io/fs"

// noFollow is nothing on Windows, which has no O_NOFOLLOW: a final link
// inside the workspace is followed by the open (os.Root still refuses one
// leading out of it), and the caller then refuses the file because what it
// opened is not the file it resolved (os.SameFile) or not a regular file.
const noFollow = 0

// links is 1: a FileInfo from Stat carries no link count on Windows, so a
// hard link to a file outside the workspace is not detected there. Making
// one needs write access to both places, which the agent's commands get
// only through the sandbox, and the sandbox needs Linux.
func links(fs.FileInfo) uint64 { return 1 }

// owner is unknown on Windows: an overwritten file keeps the ACL of the
// new file instead of its old owner.
func owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
