package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Bounds of the listing of the workspace a run makes at its start to find
// the files it hides. Past either, the run is refused rather than started
// with a protected file left readable.
const (
	// maxScanEntries bounds the entries listed, directories included.
	maxScanEntries = 500_000
	// maxScanTime bounds the time the listing takes.
	maxScanTime = 5 * time.Second
	// maxHidden bounds the paths hidden: each is a mount on the bwrap
	// rung, and the directories holding them are granted entry by entry
	// on the landlock rung.
	maxHidden = 4096
)

// hider collects, relative to the workspace, the entries Profile.Hidden
// hides, as a listing visits them: each run lists the workspace afresh, so
// a protected file that appeared since (made by an earlier run, say) is
// hidden too. A hidden directory is hidden whole and not listed further;
// symbolic links are neither hidden nor followed, since what they lead to
// is hidden, or not, on its own account (and outside the workspace is not
// in the view at all).
type hider struct {
	ws     string
	hidden func(string) bool
	paths  []string
}

func (h *hider) visit(rel string, d fs.DirEntry) bool {
	if h.hidden == nil || d.Type()&fs.ModeSymlink != 0 || !h.hidden(filepath.Join(h.ws, rel)) {
		return true
	}
	h.paths = append(h.paths, rel)
	return false
}

// check refuses more hidden paths than a run can hide.
func (h *hider) check() error {
	if len(h.paths) > maxHidden {
		return refuse(Denied, "the workspace holds %d files the protected set hides from commands, more than the %d a run can hide: move them into fewer directories (a hidden directory counts once), or out of the workspace", len(h.paths), maxHidden)
	}
	return nil
}

// scanStart lists the workspace once as a run starts: the paths it hides
// and, when the command may write, the repository metadata to compare
// with after the run.
func (r *run) scanStart() error {
	h := &hider{ws: r.p.Workspace, hidden: r.p.Hidden}
	var err error
	switch {
	case !r.p.ReadOnly:
		r.repos, err = scanRepos(r.p.Workspace, nil, h.visit)
	case h.hidden != nil:
		err = scanWorkspace(r.p.Workspace, h.visit)
	}
	if err == nil {
		err = h.check()
	}
	r.hidden = h.paths
	return err
}

// scanWorkspace calls visit with every entry beneath ws (its path relative
// to ws), parents before children, descending into the directories for
// which visit returns true. Links are not followed. It is bounded by
// maxScanEntries and maxScanTime, past which it refuses.
func scanWorkspace(ws string, visit func(rel string, d fs.DirEntry) bool) error {
	deadline := time.Now().Add(maxScanTime)
	n := 0
	var walk func(rel string) error
	walk = func(rel string) error {
		f, err := os.OpenFile(filepath.Join(ws, rel), os.O_RDONLY|syscall.O_DIRECTORY|noFollow, 0)
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			// Rein runs as the command's user: what it cannot list, the
			// command cannot list either; and what is gone holds nothing.
			return nil
		}
		var entries []fs.DirEntry
		if err == nil {
			entries, err = f.ReadDir(-1)
			f.Close()
		}
		if err != nil {
			return refuse(Unavailable, "listing %s to hide the protected files in it: %v", filepath.Join(ws, rel), err)
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			if n++; n > maxScanEntries {
				return refuse(Denied, "the workspace holds more than %d entries, more than a run lists to hide the protected files in it: use a smaller directory as the workspace", maxScanEntries)
			}
			if n%1024 == 0 && time.Now().After(deadline) {
				return refuse(Denied, "listing the workspace to hide the protected files in it took longer than %s: use a smaller directory as the workspace", maxScanTime)
			}
			p := filepath.Join(rel, e.Name())
			if visit(p, e) && e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("")
}
