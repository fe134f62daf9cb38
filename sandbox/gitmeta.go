//go:build linux

package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxMetaFile bounds what is read of one file of repository metadata; a
// larger one cannot be judged inert and is put back when a run changed it.
const maxMetaFile = 1 << 20

// metaFile is one file of repository metadata as found: its content (a
// link's target), and the unit a run that made it would have made with it:
// the nested .git directory or file, the module's git directory under
// .git/modules, or the file itself.
type metaFile struct {
	Unit string      `json:"unit"`
	Data []byte      `json:"data,omitempty"`
	Mode fs.FileMode `json:"mode"`
	Link bool        `json:"link,omitempty"`
	Big  bool        `json:"big,omitempty"`
	// Stamp is the file's inode, size and change time: a file too large
	// to keep is compared by it.
	Stamp string `json:"stamp"`
	// Gitdir is the git directory the file belongs to, for the paths in
	// it (core.worktree, commondir).
	Gitdir string `json:"gitdir,omitempty"`
	// Outside is set for a .git file or link, or a commondir, naming a
	// git directory outside the workspace, which cannot be checked.
	Outside bool `json:"outside,omitempty"`
	// Agent marks a file of an agent's or editor's configuration below
	// the workspace's top (sub/.claude/settings.json): any change to it
	// is put back.
	Agent bool `json:"agent,omitempty"`
}

// repoMeta is what git would read and obey of the repositories below the
// workspace, as found at one moment: nested .git directories and files
// (and the git directories they name), .gitmodules files, the modules'
// git directories under .git/modules, and the gitlinks of the top-level
// index. The top-level repository's own config and hooks are the guard's.
type repoMeta struct {
	Workspace string `json:"workspace"`
	// Files are the files git reads of them: config, config.worktree,
	// commondir, hooks, .git files, .gitmodules.
	Files map[string]metaFile `json:"files"`
	// Units are the nested .git entries and module directories.
	Units map[string]bool `json:"units"`
	// Gitlinks are the paths the top-level index records as gitlinks.
	Gitlinks map[string]bool `json:"gitlinks"`
	// Index is the top-level index as it was, to put back; IndexMode its
	// mode; IndexKept whether it was read (it exists and is small
	// enough to keep).
	Index     []byte      `json:"index,omitempty"`
	IndexMode fs.FileMode `json:"index_mode,omitempty"`
	IndexKept bool        `json:"index_kept,omitempty"`
	// NoIndex is set when the top-level repository had no index, which
	// putting it back removes.
	NoIndex bool `json:"no_index,omitempty"`
	// Skip are the directories the listing did not enter (those hidden
	// from the command, which it could not change), skipped again after
	// the run.
	Skip map[string]bool `json:"skip,omitempty"`
	// listed is what the scan listed, for the scan after the run to
	// reuse where nothing changed.
	listed tree
}

// scanRepos finds the repository metadata below ws, skipping the
// directories in skip, within scanWorkspace's bounds when bounded (after
// a run it is not: a command must not hide a repository behind a million
// files). visit, when not nil, is called for every entry as well, in the
// same listing, and the directories it does not descend into are added
// to skip.
func scanRepos(ws string, bounded bool, prev tree, skip map[string]bool, visit func(rel string, d dirent) bool) (*repoMeta, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, refuse(Unavailable, "opening the workspace: %v", err)
	}
	defer root.Close()
	if skip == nil {
		skip = map[string]bool{}
	}
	m := &repoMeta{Workspace: ws, Files: map[string]metaFile{}, Units: map[string]bool{}, Gitlinks: map[string]bool{}, Skip: skip}
	m.listed, err = scanWorkspace(ws, bounded, prev, func(rel string, d dirent) bool {
		if skip[rel] {
			return false
		}
		if d.Name() != ".git" && visit != nil && !visit(rel, d) {
			if d.IsDir() {
				skip[rel] = true
			}
			return false
		}
		switch d.Name() {
		case ".git":
			if rel == ".git" {
				if d.IsDir() {
					m.modules(root, ".git/modules")
					m.index(root)
					// Another worktree's config, which git run there reads.
					for _, w := range names(root, ".git/worktrees") {
						p := filepath.Join(".git", "worktrees", w, "config.worktree")
						m.file(root, p, p, filepath.Dir(p))
					}
				}
				return false
			}
			m.dotGit(root, rel, d.Type())
			return false
		case ".gitmodules":
			if !d.IsDir() {
				m.file(root, rel, rel, "")
			}
		}
		// An agent's or editor's configuration below the top (the guard
		// keeps the top's): a package of a monorepo opened as a project
		// reads its own.
		if strings.Contains(rel, "/") && slices.Contains(agentConfig, d.Name()) {
			m.agent(root, rel, rel, 0)
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// dotGit records the nested .git at rel, of the given type: a git
// directory, a link (which cannot be followed to check it), or a file
// naming a git directory, which is recorded as part of it.
func (m *repoMeta) dotGit(root *os.Root, rel string, mode fs.FileMode) {
	m.Units[rel] = true
	if mode.IsDir() {
		m.gitdir(root, rel, rel)
		return
	}
	m.file(root, rel, rel, "")
	f := m.Files[rel]
	dir, ok := gitdirOf(m.Workspace, rel, f.Data)
	if mode&fs.ModeSymlink != 0 || !ok {
		f.Outside = true
		m.Files[rel] = f
		return
	}
	if !m.Units[dir] {
		m.Units[dir] = true
		m.gitdir(root, dir, rel)
	}
}

// gitdirOf resolves the "gitdir: <path>" of the .git file at rel to a
// directory inside ws, or reports that it names none there.
func gitdirOf(ws, rel string, data []byte) (string, bool) {
	// Read as git's read_gitfile does, byte for byte: the file begins with
	// "gitdir: " exactly, and only the CRs and LFs at its end are cut, so
	// "gitdir: ../g " names "../g " (with its blank), as it does to git.
	p, ok := strings.CutPrefix(string(data), "gitdir: ")
	p = strings.TrimRight(p, "\r\n")
	if !ok || p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, filepath.Dir(rel), p)
	}
	p = filepath.Clean(p)
	if !within(p, ws) || p == ws {
		return "", false
	}
	r, _ := filepath.Rel(ws, p)
	return r, true
}

// maxAgentDepth bounds how deep an agent's configuration directory is
// recorded; what lies deeper counts as one unreadable file.
const maxAgentDepth = 8

// agent records the agent configuration at rel, of unit: a file, or a
// directory with everything beneath it.
func (m *repoMeta) agent(root *os.Root, rel, unit string, depth int) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return
	}
	if !fi.IsDir() || depth > maxAgentDepth {
		m.file(root, rel, unit, "")
		f := m.Files[rel]
		f.Agent = true
		m.Files[rel] = f
		return
	}
	m.Units[rel] = m.Units[rel] || rel == unit
	for _, n := range names(root, rel) {
		m.agent(root, filepath.Join(rel, n), unit, depth+1)
	}
}

// file records the file at rel, of unit and git directory gitdir.
func (m *repoMeta) file(root *os.Root, rel, unit, gitdir string) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return
	}
	f := metaFile{Unit: unit, Mode: fi.Mode(), Gitdir: gitdir}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Stamp = fmt.Sprintf("%d:%d:%d.%d", st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := root.Readlink(rel)
		f.Link, f.Data = true, []byte(t)
	case !fi.Mode().IsRegular():
		f.Big = true // a FIFO or a device: nothing git should read
	case fi.Size() > maxMetaFile:
		f.Big = true
	default:
		data, err := readNoFollow(root, rel)
		if err != nil || len(data) > maxMetaFile {
			f.Big = true
		}
		f.Data = data
	}
	m.Files[rel] = f
}

// gitdir records what git reads of the git directory dir, a part of unit:
// its config files, commondir, hooks, worktrees and modules.
func (m *repoMeta) gitdir(root *os.Root, dir, unit string) {
	if _, err := root.Lstat(filepath.Join(dir, "config")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// A git directory rein cannot look into (made unsearchable) is
		// one it cannot judge inert.
		m.Files[filepath.Join(dir, "config")] = metaFile{Unit: unit, Gitdir: dir, Big: true, Stamp: err.Error()}
		return
	}
	for _, name := range []string{"config", "config.worktree", "commondir"} {
		m.file(root, filepath.Join(dir, name), unit, dir)
	}
	if f, ok := m.Files[filepath.Join(dir, "commondir")]; ok {
		// The common directory's config and hooks are read as well.
		common := strings.TrimSpace(string(f.Data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(m.Workspace, dir, common)
		}
		common = filepath.Clean(common)
		if r, err := filepath.Rel(m.Workspace, common); err == nil && within(common, m.Workspace) && common != m.Workspace && !f.Link && !f.Big {
			if r != ".git" && !m.Units[r] && !strings.HasPrefix(r, dir+"/") {
				m.Units[r] = true
				m.gitdir(root, r, unit)
			}
		} else {
			f.Outside = true
			m.Files[filepath.Join(dir, "commondir")] = f
		}
	}
	hooks := filepath.Join(dir, "hooks")
	if fi, err := root.Lstat(hooks); err == nil && !fi.IsDir() {
		m.file(root, hooks, unit, dir)
	} else {
		for _, n := range names(root, hooks) {
			m.file(root, filepath.Join(hooks, n), unit, dir)
		}
	}
	for _, w := range names(root, filepath.Join(dir, "worktrees")) {
		for _, name := range []string{"config.worktree", "commondir"} {
			m.file(root, filepath.Join(dir, "worktrees", w, name), unit, filepath.Join(dir, "worktrees", w))
		}
	}
	m.modules(root, filepath.Join(dir, "modules"))
}

// modules records the git directories of submodules under dir (each one
// holding a config or a HEAD, at any depth, since a module's name may
// have slashes), each its own unit.
func (m *repoMeta) modules(root *os.Root, dir string) {
	for _, n := range names(root, dir) {
		p := filepath.Join(dir, n)
		fi, err := root.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		_, errC := root.Lstat(filepath.Join(p, "config"))
		_, errH := root.Lstat(filepath.Join(p, "HEAD"))
		if errC == nil || errH == nil {
			m.Units[p] = true
			m.gitdir(root, p, p)
			continue
		}
		m.modules(root, p)
	}
}

// names lists the directory at rel (never through a link), sorted.
func names(root *os.Root, rel string) []string {
	if fi, err := root.Lstat(rel); err != nil || !fi.IsDir() {
		return nil
	}
	d, err := root.Open(rel)
	if err != nil {
		return nil
	}
	defer d.Close()
	n, _ := d.Readdirnames(-1)
	slices.Sort(n)
	return n
}

// index records the gitlinks of the top-level index, and keeps the index
// to put back.
func (m *repoMeta) index(root *os.Root) {
	fi, err := root.Lstat(".git/index")
	if errors.Is(err, fs.ErrNotExist) {
		m.NoIndex = true
		return
	}
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	m.IndexMode = fi.Mode().Perm()
	if fi.Size() > maxGuarded {
		return
	}
	data, err := readNoFollow(root, ".git/index")
	if err != nil {
		return
	}
	m.Index, m.IndexKept = data, true
	links, err := gitlinks(data)
	if err != nil {
		// An index git cannot read either records nothing git follows.
		return
	}
	for _, l := range links {
		m.Gitlinks[l] = true
		// Git enters a gitlink by its path, through directories rein's
		// listing may not read (searchable, not readable): its
		// repository is looked up by name too.
		dot := filepath.Join(l, ".git")
		if m.Units[dot] || !filepath.IsLocal(l) {
			continue
		}
		if fi, err := root.Lstat(dot); err == nil {
			m.dotGit(root, dot, fi.Mode().Type())
		}
	}
}

var errIndex = errors.New("not a git index")

// gitlinks lists the paths a git index (versions 2 to 4, SHA-1 or SHA-256
// names) records with mode 160000: submodules, whose repositories git
// enters.
func gitlinks(data []byte) ([]string, error) {
	for _, hashLen := range []int{20, 32} {
		if out, err := indexGitlinks(data, hashLen); err == nil {
			return out, nil
		}
	}
	return nil, errIndex
}

func indexGitlinks(data []byte, hashLen int) ([]string, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := binary.BigEndian.Uint32(data[8:12])
	if version < 2 || version > 4 {
		return nil, errIndex
	}
	var out []string
	prev := ""
	off := 12
	for range count {
		start := off
		fixed := 40 + hashLen + 2
		if off+fixed > len(data) {
			return nil, errIndex
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, errIndex
			}
			off += 2
		}
		var name string
		if version == 4 {
			strip, n := binary.Uvarint(data[min(off, len(data)):])
			if n <= 0 || int(strip) > len(prev) {
				return nil, errIndex
			}
			off += n
			end := bytes.IndexByte(data[min(off, len(data)):], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = prev[:len(prev)-int(strip)] + string(data[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(data[min(off, len(data)):], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = string(data[off : off+end])
			// Padded with 1 to 8 NULs to a multiple of 8 bytes.
			off = start + ((off+end-start)/8+1)*8
			if off > len(data) {
				return nil, errIndex
			}
		}
		prev = name
		if mode>>12 == 0o16 {
			out = append(out, name)
		}
	}
	return out, nil
}

// executes says why the metadata file rel would have git run something
// or obey something outside the workspace that it would not as was (nil
// when the file is new), or "" when it would not: a config file's
// executing variables that were there already, as they were, are the
// user's own.
func (m *repoMeta) executes(rel string, was *metaFile) string {
	f := m.Files[rel]
	base := filepath.Base(rel)
	switch {
	case f.Agent:
		return rel + " is an agent's or editor's configuration"
	case f.Outside:
		return rel + " names a git directory outside the workspace"
	case base == ".git":
		return "" // the git directory it names is judged on its own
	case f.Link:
		return rel + " is a link"
	case f.Big:
		return rel + " is too large or not a regular file"
	case filepath.Base(filepath.Dir(rel)) == "hooks" || base == "hooks":
		if strings.HasSuffix(base, ".sample") && base != "hooks" {
			return ""
		}
		return rel + " is a hook"
	case base == "commondir":
		return "" // the common directory is judged on its own
	}
	var before []configEntry
	if was != nil && !was.Link && !was.Big {
		before = executingEntries(was.Data, was.Gitdir, m.Workspace)
	}
	for _, e := range executingEntries(f.Data, f.Gitdir, m.Workspace) {
		switch {
		case slices.Contains(before, e):
		case e == unreadableConfig:
			return rel + " cannot be read as git config"
		default:
			return rel + " sets " + e.Key()
		}
	}
	return ""
}

// putBack compares the metadata now with m, as it was before a run (nil
// when the run listed none), and puts back what the run made or changed
// that executes: a new nested repository or module directory is removed,
// a changed file restored, the index put back when it gained a gitlink to
// such a repository. It names each, with why.
func (m *repoMeta) putBack() []string {
	if m == nil {
		return nil
	}
	now, err := scanRepos(m.Workspace, false, m.listed, m.Skip, nil)
	if err != nil {
		return []string{"repository metadata below the workspace (it could not be listed after the run: " + err.Error() + ")"}
	}
	root, err := os.OpenRoot(m.Workspace)
	if err != nil {
		return []string{"repository metadata below the workspace (the workspace could not be opened after the run)"}
	}
	defer root.Close()
	var fixed []string
	bad := map[string]string{} // unit -> why, of the units a changed file of which executes
	var files []string
	for rel := range now.Files {
		files = append(files, rel)
	}
	slices.Sort(files)
	for _, rel := range files {
		f := now.Files[rel]
		was, existed := m.Files[rel]
		if existed && sameMeta(was, f) {
			continue
		}
		var before *metaFile
		if existed {
			before = &was
		}
		why := now.executes(rel, before)
		if why == "" {
			continue
		}
		if _, ok := bad[f.Unit]; !ok {
			bad[f.Unit] = why
		}
		if m.existed(f.Unit) {
			// Of something that was there: the file is put back (or
			// removed, when too large to have been kept).
			if existed && !was.Big {
				if putBack(root, rel, metaEntry(was)) {
					fixed = append(fixed, why+": put back")
				} else {
					fixed = append(fixed, why+": could not be put back")
				}
			} else if root.RemoveAll(rel) == nil {
				fixed = append(fixed, why+": removed")
			} else {
				fixed = append(fixed, why+": could not be removed")
			}
		}
	}
	// An agent's configuration file the run removed is put back too: a
	// file of settings the user relies on (a hook, a deny rule) is part
	// of what keeps the next session in check.
	for _, rel := range slices.Sorted(maps.Keys(m.Files)) {
		was := m.Files[rel]
		if _, ok := now.Files[rel]; ok || !was.Agent || was.Big {
			continue
		}
		if root.MkdirAll(filepath.Dir(rel), 0o755) == nil && putBack(root, rel, metaEntry(was)) {
			fixed = append(fixed, rel+" is an agent's or editor's configuration, removed by the command: put back")
		} else {
			fixed = append(fixed, rel+" is an agent's or editor's configuration, removed by the command: could not be put back")
		}
	}
	var units []string
	for u := range bad {
		if !m.existed(u) {
			units = append(units, u)
		}
	}
	slices.Sort(units)
	for _, u := range units {
		// Moved out of the workspace rather than deleted where it can be:
		// while runs side by side share a session, it may be the user's
		// own (a repository made on the host, with commits of its own).
		if aside, err := quarantine(root, m.Workspace, u); err == nil {
			fixed = append(fixed, u+" (made by the command; "+bad[u]+"): removed, kept in "+aside)
		} else if root.RemoveAll(u) == nil {
			fixed = append(fixed, u+" (made by the command; "+bad[u]+"): removed")
		} else {
			fixed = append(fixed, u+" (made by the command; "+bad[u]+"): could not be removed")
		}
	}
	// A gitlink the run added to the index is put back with the index
	// when the repository git would enter there executes something; it
	// was removed above, and a later one at the same path would be
	// entered just the same.
	var links []string
	for l := range now.Gitlinks {
		if !m.Gitlinks[l] {
			links = append(links, l)
		}
	}
	slices.Sort(links)
	for _, l := range links {
		why := now.repoExecutes(l)
		if why == "" {
			continue
		}
		want := entry{Kind: "file", Mode: m.IndexMode, Data: m.Index}
		switch {
		case m.NoIndex:
			want = entry{}
		case !m.IndexKept:
			fixed = append(fixed, fmt.Sprintf("%s (a gitlink the command added to .git/index, into a repository where %s): the index could not be put back", l, why))
			continue
		}
		if putBack(root, ".git/index", want) {
			fixed = append(fixed, fmt.Sprintf("%s (a gitlink the command added to .git/index, into a repository where %s): .git/index put back", l, why))
		} else {
			fixed = append(fixed, fmt.Sprintf("%s (a gitlink the command added to .git/index): .git/index could not be put back", l))
		}
		break
	}
	return fixed
}

// quarantine moves the workspace's entry rel (never what a link there
// leads to) into rein's state directory, out of every sandbox's and git's
// reach, and says where: renamed from its parent, opened beneath the
// workspace, so that nothing is copied and nothing is lost. It fails
// across filesystems.
func quarantine(root *os.Root, ws, rel string) (string, error) {
	dir, err := stateDir("quarantine")
	if err != nil {
		return "", err
	}
	parent, err := root.Open(filepath.Dir(rel))
	if err != nil {
		return "", err
	}
	defer parent.Close()
	to, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	defer to.Close()
	name := fmt.Sprintf("%s-%d-%s", workspaceKey(ws), time.Now().UnixNano(), strings.ReplaceAll(rel, "/", "_"))
	if err := unix.Renameat(int(parent.Fd()), filepath.Base(rel), int(to.Fd()), name); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// existed reports whether the unit u was there.
func (m *repoMeta) existed(u string) bool {
	_, ok := m.Files[u]
	return m.Units[u] || ok
}

// repoExecutes says why the repository git enters at the gitlink path l
// (l/.git, the git directory a .git file there names, or the module
// directory of that name) would run something, or "".
func (m *repoMeta) repoExecutes(l string) string {
	dot := filepath.Join(l, ".git")
	dirs := []string{dot, filepath.Join(".git", "modules", l)}
	if f, ok := m.Files[dot]; ok && !f.Link {
		if d, ok := gitdirOf(m.Workspace, dot, f.Data); ok {
			dirs = append(dirs, d)
		}
	}
	var files []string
	for rel, f := range m.Files {
		if rel == dot || f.Unit == dot || slices.ContainsFunc(dirs, func(d string) bool { return within(rel, d) }) {
			files = append(files, rel)
		}
	}
	slices.Sort(files)
	for _, rel := range files {
		if why := m.executes(rel, nil); why != "" {
			return why
		}
	}
	return ""
}

func sameMeta(a, b metaFile) bool {
	return a.Link == b.Link && a.Big == b.Big && a.Outside == b.Outside && a.Mode == b.Mode && bytes.Equal(a.Data, b.Data) &&
		(!a.Big || a.Stamp == b.Stamp)
}

// metaEntry is the guard's entry for a file as recorded.
func metaEntry(f metaFile) entry {
	switch {
	case f.Link:
		return entry{Kind: "link", Target: string(f.Data)}
	case f.Big && !f.Mode.IsRegular():
		return entry{Kind: "other"}
	}
	return entry{Kind: "file", Mode: f.Mode.Perm(), Data: f.Data}
}

func (m *repoMeta) save(path string) error {
	if m == nil {
		return nil
	}
	data, err := json.Marshal(m)
	if err == nil {
		err = os.WriteFile(path, data, 0o600)
	}
	return err
}

// repoMetaSaved puts back the repository metadata of a run whose rein
// died, from what it saved when it began.
func repoMetaSaved(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var m repoMeta
	if json.Unmarshal(data, &m) != nil || m.Workspace == "" || m.Files == nil {
		return
	}
	m.putBack()
}
