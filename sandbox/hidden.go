//go:build linux

package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/confine"
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
// in the view at all). Nothing in a .git directory is hidden: git names
// its files (a ref is named for its branch), and hiding one would break
// the repository, not keep a secret.
type hider struct {
	ws     string
	hidden func(string) bool
	paths  []string
}

func (h *hider) visit(rel string, d dirent) bool {
	if d.Name() == ".git" && d.IsDir() {
		return false
	}
	if h.hidden == nil || d.Type()&fs.ModeSymlink != 0 || !h.hidden(filepath.Join(h.ws, rel)) {
		return true
	}
	h.paths = append(h.paths, rel)
	return false
}

// check refuses more hidden paths than a run can hide and, for the
// landlock rung, directories holding them with more entries than it
// grants one by one (confine.MaxAround).
func (h *hider) check(rung Rung, listed tree) error {
	if len(h.paths) > maxHidden {
		return refuse(Denied, "the workspace holds %d files the protected set hides from commands, more than the %d a run can hide: move them into fewer directories (a hidden directory counts once), or out of the workspace", len(h.paths), maxHidden)
	}
	if rung != RungLandlock {
		return nil
	}
	holders := map[string]bool{}
	n := 0
	for _, p := range h.paths {
		for d := filepath.Dir(p); !holders[d]; d = filepath.Dir(d) {
			holders[d] = true
			if d == "." {
				n += len(listed[""].entries)
				break
			}
			n += len(listed[d].entries)
		}
	}
	if n > confine.MaxAround {
		return refuse(Denied, "the directories holding the workspace's protected files have %d entries, more than the %d the landlock rung grants one by one to keep those files out of reach: move the protected files into a directory of their own, or use the bwrap rung", n, confine.MaxAround)
	}
	return nil
}

// scanStart lists the workspace once as a run starts: the paths it hides
// and, when the command may write, the repository metadata to compare
// with after the run. A preflight lists nothing: its command is rein's
// own.
func (r *run) scanStart() error {
	h := &hider{ws: r.p.Workspace, hidden: r.p.Hidden}
	var err error
	var listed tree
	switch {
	case r.preflight:
	case !r.p.ReadOnly:
		// The listing the session's baseline was taken from (in this
		// process) is reused where a directory has not changed since.
		var prev tree
		if r.session != nil && r.session.baseline != nil && r.session.baseline.Repos != nil {
			prev = r.session.baseline.Repos.listed
		}
		if r.repos, err = scanRepos(r.p.Workspace, true, prev, nil, h.visit); err == nil {
			listed = r.repos.listed
		}
	case h.hidden != nil:
		listed, err = scanWorkspace(r.p.Workspace, true, nil, h.visit)
	}
	if err == nil {
		err = h.check(r.rung, listed)
	}
	r.hidden = h.paths
	return err
}

// listing is a directory's entries as read, with the inode and change
// time it had then.
type listing struct {
	ino     uint64
	ctime   unix.Timespec
	entries []dirent
}

// dirent is a directory entry: its name and type (fs.ModeDir,
// fs.ModeSymlink, 0 for a regular file, ...).
type dirent struct {
	name string
	mode fs.FileMode
}

func (d dirent) Name() string      { return d.name }
func (d dirent) IsDir() bool       { return d.mode.IsDir() }
func (d dirent) Type() fs.FileMode { return d.mode }

// tree is the listings of a scan, by directory relative to the workspace
// ("" for the workspace itself).
type tree map[string]listing

// trustAfter is how old a directory's change time must be for a later scan
// to reuse its listing: inode times come from a coarse clock, so a change
// made within a tick of the last one could leave the time as it was.
const trustAfter = time.Second

// scanWorkspace calls visit with every entry beneath ws (its path relative
// to ws), parents before children, descending into the directories for
// which visit returns true, and returns what it listed. Every directory is
// opened beneath its parent's descriptor without following a link, so a
// directory swapped for a link is never listed through it. A directory of
// prev whose inode and change time are as they were, and were already a
// second old when prev listed it, has the entries it had (an entry made,
// removed or renamed in a directory changes its change time, which no
// command can set back): it is not read again. When bounded, the scan
// refuses past maxScanEntries and maxScanTime.
func scanWorkspace(ws string, bounded bool, prev tree, visit func(rel string, d dirent) bool) (tree, error) {
	start := time.Now()
	deadline := start.Add(maxScanTime)
	trusted := unix.NsecToTimespec(start.Add(-trustAfter).UnixNano())
	out := tree{}
	n := 0
	buf := make([]byte, 64<<10)
	var walk func(fd int, rel string) error
	walk = func(fd int, rel string) error {
		defer unix.Close(fd)
		failed := func(err error) error {
			return refuse(Unavailable, "listing %s to hide the protected files in it: %v", filepath.Join(ws, rel), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return failed(err)
		}
		l, ok := prev[rel]
		if !ok || l.ino != st.Ino || l.ctime != st.Ctim || !timespecBefore(l.ctime, trusted) {
			l = listing{ino: st.Ino, ctime: st.Ctim}
			var err error
			if l.entries, err = readDirents(fd, buf); err != nil {
				return failed(err)
			}
			slices.SortFunc(l.entries, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
		}
		out[rel] = l
		for _, e := range l.entries {
			n++
			switch {
			case !bounded:
			case n > maxScanEntries:
				return refuse(Denied, "the workspace holds more than %d entries, more than a run lists to hide the protected files in it: use a smaller directory as the workspace", maxScanEntries)
			case n%1024 == 0 && time.Now().After(deadline):
				return refuse(Denied, "listing the workspace to hide the protected files in it took longer than %s: use a smaller directory as the workspace", maxScanTime)
			}
			p := e.name
			if rel != "" {
				p = rel + "/" + e.name
			}
			if !visit(p, e) || !e.IsDir() {
				continue
			}
			sub, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			switch {
			case errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
				// Rein runs as the command's user: what it cannot list,
				// the command cannot list either; and what is gone, or
				// now a link or a file, holds nothing to list.
				continue
			case err != nil:
				return refuse(Unavailable, "listing %s to hide the protected files in it: %v", filepath.Join(ws, p), err)
			}
			if err := walk(sub, p); err != nil {
				return err
			}
		}
		return nil
	}
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return out, refuse(Unavailable, "opening the workspace to list it: %v", err)
	}
	return out, walk(fd, "")
}

// direntTypes are the file types of getdents' d_type.
var direntTypes = map[uint8]fs.FileMode{
	unix.DT_REG: 0, unix.DT_DIR: fs.ModeDir, unix.DT_LNK: fs.ModeSymlink, unix.DT_FIFO: fs.ModeNamedPipe,
	unix.DT_SOCK: fs.ModeSocket, unix.DT_CHR: fs.ModeDevice | fs.ModeCharDevice, unix.DT_BLK: fs.ModeDevice,
}

// readDirents reads the entries of the directory open at fd (from its
// current offset) with getdents64, whose records give each entry's type
// without a stat of its own (a file system that gives none is asked with
// one that follows no link).
func readDirents(fd int, buf []byte) ([]dirent, error) {
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, errors.New("a malformed getdents record")
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := buf[off+18]
			off += reclen
			if string(name) == "." || string(name) == ".." {
				continue
			}
			d := dirent{name: string(name)}
			mode, ok := direntTypes[typ]
			if !ok {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, d.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // gone since
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					mode = fs.ModeDir
				case unix.S_IFLNK:
					mode = fs.ModeSymlink
				case unix.S_IFREG:
				default:
					mode = fs.ModeIrregular
				}
			}
			d.mode = mode
			out = append(out, d)
		}
	}
}

func timespecBefore(a, b unix.Timespec) bool {
	return a.Sec < b.Sec || a.Sec == b.Sec && a.Nsec < b.Nsec
}
