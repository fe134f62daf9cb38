//go:build !linux

package workspace

import (
	"io/fs"
	"time"
)

// changeTime is the modification time where rein does not read the
// status change time: a command can set it back, so the report is a
// floor there.
func changeTime(fi fs.FileInfo) time.Time { return fi.ModTime() }
