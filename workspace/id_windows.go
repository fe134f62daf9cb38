package workspace

import "io/fs"

// idOf is the zero identity on Windows, where a FileInfo from Lstat carries
// no volume and file index: OpenParent then cannot tell a directory
// replaced by another one between Resolve and the open. It still opens
// each component through os.Root, which refuses links and reparse points
// that lead out of the root, so a swap can only point at another place
// inside the workspace, never outside it.
func idOf(fs.FileInfo) fileID { return fileID{} }
