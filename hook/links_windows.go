package hook

import "io/fs"

// links is 1: a FileInfo from Lstat carries no link count on Windows, so a
// write through a hard link is not refused there.
func links(fs.FileInfo) uint64 { return 1 }
