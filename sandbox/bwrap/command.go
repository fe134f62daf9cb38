package bwrap

import (
	"fmt"
	"os"
	"os/exec"
)

// Command returns the command that runs argv in the view under the
// bubblewrap binary at bwrapPath. Its environment is exactly v.Env (never
// the caller's), its ExtraFiles carry the empty files Args's --ro-bind-data
// options read, and its standard streams are unset (the null device) for
// the caller to fill in.
//
// bubblewrap passes every descriptor it inherits to the command, and os/exec
// passes every descriptor of the caller that lacks close-on-exec, such as
// those rein itself inherited from its parent. Command therefore marks all
// of the caller's descriptors above 2 close-on-exec; descriptors meant for a
// child go through ExtraFiles, as os/exec requires anyway.
//
// The caller must close the returned cmd's ExtraFiles once it has started
// (or failed to start); CloseFiles does.
func Command(bwrapPath string, v View, argv []string) (*exec.Cmd, error) {
	args, files, err := build(v, argv)
	if err != nil {
		return nil, err
	}
	if err := closeOnExecFrom(3); err != nil {
		return nil, fmt.Errorf("bwrap: marking inherited descriptors close-on-exec: %w", err)
	}
	cmd := exec.Command(bwrapPath, args...)
	cmd.Env = append([]string{}, v.Env...)
	for i, f := range files {
		if f == nil {
			if f, err = os.Open(os.DevNull); err != nil {
				closeAll(files[i:])
				CloseFiles(cmd)
				return nil, fmt.Errorf("bwrap: opening an empty file for a masked path: %w", err)
			}
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	return cmd, nil
}

// CloseFiles closes the parent's copies of cmd's ExtraFiles.
func CloseFiles(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	cmd.ExtraFiles = nil
}

// CloseOnExecFrom marks every descriptor of the calling process from low up
// close-on-exec, so that a child started next inherits none of them but
// those given to it explicitly. The landlock rung's init is started this
// way too.
func CloseOnExecFrom(low int) error { return closeOnExecFrom(low) }
