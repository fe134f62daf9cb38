//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/reinhq/rein/workspace"
)

// worktreeLinks are the files of a worktree's administrative directory
// that say where git finds the rest (commondir: the common directory,
// its config and hooks; gitdir: the worktree), what git obeys there
// (config.worktree), and whether it may be pruned (locked): kept and put
// back even in the directory of a worktree rein made.
var worktreeLinks = []string{"commondir", "gitdir", "config.worktree", "locked"}

// gitControl are the paths that redirect git to other config and hooks
// than the protected ones: a planted commondir or alternates, or a whole
// .git where there was none, would make the host's git run the command's
// code.
var gitControl = []string{".git", ".git/commondir", ".git/objects/info/alternates", ".git/config.worktree"}

// agentConfig are the agents', editors' and git hook managers' own
// configuration in the workspace (workspace.HostConfig, each with its
// reason): a command that writes one could switch a gate off, add a
// server or a hook, or have a task run when the folder opens or at the
// next commit, on the host. Every run on every rung keeps them as they
// were: what a command made there is removed, what it changed put back,
// and the run fails naming them.
var agentConfig = workspace.HostConfigNames()

// maxGuarded bounds what the guard copies of the protected set on the rungs
// that cannot bind it read-only.
const maxGuarded = 64 << 20

// entry is one guarded path as it was: absent, a directory, a regular
// file with its content and mode, a link with its target, or something
// else (a socket, a FIFO), which is only checked for presence.
type entry struct {
	Kind   string      `json:"kind"` // "", "dir", "file", "link", "other"
	Mode   fs.FileMode `json:"mode,omitempty"`
	Data   []byte      `json:"data,omitempty"`
	Target string      `json:"target,omitempty"`
	Inode  uint64      `json:"inode,omitempty"` // of a directory
}

// guard keeps the protected paths of a workspace as they were before a
// run, and puts them back after it. Every access goes through an os.Root
// of the workspace, so a link the command planted in their place is never
// followed out of it.
type guard struct {
	Workspace string           `json:"workspace"`
	Trees     []string         `json:"trees"` // guarded whole, with what is beneath
	Entries   map[string]entry `json:"entries"`
	// Admitted are the administrative directories of the worktrees rein
	// made (.git/worktrees/NAME), as the registry named them when the
	// guard was taken: of each, only the files that point git elsewhere
	// (worktreeLinks) are kept and put back; the rest (the index, HEAD,
	// the logs) is its worktree's to change.
	Admitted map[string]bool `json:"admitted,omitempty"`
}

// newGuard snapshots git's control paths and, when whole, the protected set
// too (.git/hooks, .git/config, .rein and submodules' hooks and config).
func newGuard(ws string, whole bool) (*guard, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, refuse(Unavailable, "opening the workspace: %v", err)
	}
	defer root.Close()
	g := &guard{Workspace: ws, Entries: map[string]entry{}, Admitted: admittedWorktrees(ws)}
	for _, rel := range gitControl {
		g.Entries[rel] = snap(root, rel)
	}
	if whole {
		g.Trees = protectedPaths(ws)
	}
	g.Trees = append(g.Trees, agentConfig...)
	total := 0
	for _, t := range g.Trees {
		if err := g.walk(root, t, &total); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *guard) walk(root *os.Root, rel string, total *int) error {
	if g.Admitted[rel] {
		g.Entries[rel] = snap(root, rel)
		for _, n := range worktreeLinks {
			g.Entries[filepath.Join(rel, n)] = snap(root, filepath.Join(rel, n))
		}
		return nil
	}
	e := snap(root, rel)
	g.Entries[rel] = e
	*total += len(e.Data)
	if *total > maxGuarded {
		return refuse(Denied, "the protected paths (.git/hooks, .git/config, .git/worktrees, .rein, the agents' configuration such as .claude and .vscode) hold more than %d MiB, more than rein keeps a copy of to put back: use the bwrap rung, a read-only workspace, or make them smaller", maxGuarded>>20)
	}
	if e.Kind != "dir" {
		return nil
	}
	d, err := root.Open(rel)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if err := g.walk(root, filepath.Join(rel, n), total); err != nil {
			return err
		}
	}
	return nil
}

func snap(root *os.Root, rel string) entry {
	fi, err := root.Lstat(rel)
	switch {
	case err != nil:
		return entry{}
	case fi.IsDir():
		e := entry{Kind: "dir", Mode: fi.Mode().Perm()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			e.Inode = st.Ino
		}
		return e
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := root.Readlink(rel)
		return entry{Kind: "link", Target: t}
	case fi.Mode().IsRegular():
		data, err := readNoFollow(root, rel)
		if err != nil {
			return entry{Kind: "other"}
		}
		return entry{Kind: "file", Mode: fi.Mode().Perm(), Data: data}
	}
	return entry{Kind: "other"}
}

func readNoFollow(root *os.Root, rel string) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

func (g *guard) save(path string) error {
	data, err := json.Marshal(g)
	if err == nil {
		err = os.WriteFile(path, data, 0o600)
	}
	return err
}

// restore puts every guarded path back as it was and names what it put
// back. Paths beneath a guarded tree that did not exist are removed.
func (g *guard) restore() []string {
	root, err := os.OpenRoot(g.Workspace)
	if err != nil {
		return nil
	}
	defer root.Close()
	var fixed []string
	// A .git directory swapped for another one, a file or a link would
	// point the host's git at the command's config and hooks: the
	// replacement is moved aside, so the host's git finds no repository
	// rather than the command's.
	if want := g.Entries[".git"]; want.Kind == "dir" {
		if now := snap(root, ".git"); now.Kind != "dir" || now.Inode != want.Inode {
			aside := fmt.Sprintf(".git.rein-replaced-%d", time.Now().UnixNano())
			if root.Rename(".git", aside) == nil {
				fixed = append(fixed, ".git (replaced by the command; its replacement is now "+aside+")")
			} else {
				fixed = append(fixed, ".git (replaced by the command, and could not be moved aside)")
			}
			return fixed
		}
	}
	// Removals of what appeared beneath a guarded tree, deepest first;
	// a worktree rein made meanwhile (under the same lock as this) is
	// rein's own.
	skip := maps.Clone(g.Admitted)
	if skip == nil {
		skip = map[string]bool{}
	}
	maps.Copy(skip, admittedWorktrees(g.Workspace))
	for _, t := range g.Trees {
		var extra []string
		collect(root, t, g.Entries, skip, &extra)
		sort.Sort(sort.Reverse(sort.StringSlice(extra)))
		for _, x := range extra {
			if root.RemoveAll(x) == nil {
				fixed = append(fixed, x)
			}
		}
	}
	rels := make([]string, 0, len(g.Entries))
	for rel := range g.Entries {
		rels = append(rels, rel)
	}
	// Parents before children.
	sort.Strings(rels)
	for _, rel := range rels {
		want := g.Entries[rel]
		if rel == ".git" && want.Kind == "dir" {
			// A .git directory is guarded through what lies in it; a .git
			// that appeared is removed, a .git file put back.
			continue
		}
		if same(snap(root, rel), want) {
			continue
		}
		if want.Kind == "" && slices.ContainsFunc(slices.Collect(maps.Keys(skip)), func(a string) bool { return within(a, rel) }) {
			// .git/worktrees made for a worktree rein made meanwhile.
			continue
		}
		if putBack(root, rel, want) {
			fixed = append(fixed, rel)
		} else {
			fixed = append(fixed, rel+" (could not be put back)")
		}
	}
	return dedupe(fixed)
}

// collect lists the paths beneath rel that the snapshot does not have.
func collect(root *os.Root, rel string, have map[string]entry, skip map[string]bool, out *[]string) {
	fi, err := root.Lstat(rel)
	if err != nil || !fi.IsDir() {
		return
	}
	d, err := root.Open(rel)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		p := filepath.Join(rel, n)
		if skip[p] {
			continue
		}
		if _, ok := have[p]; !ok {
			*out = append(*out, p)
			continue
		}
		collect(root, p, have, skip, out)
	}
}

func same(a, b entry) bool {
	return a.Kind == b.Kind && a.Mode == b.Mode && a.Target == b.Target && bytes.Equal(a.Data, b.Data) && a.Inode == b.Inode
}

// putBack makes rel what want says, replacing whatever is there.
func putBack(root *os.Root, rel string, want entry) bool {
	cur := snap(root, rel)
	if cur.Kind != "" && (cur.Kind != want.Kind || want.Kind == "link" || want.Kind == "") {
		if root.RemoveAll(rel) != nil {
			return false
		}
		cur = entry{}
	}
	switch want.Kind {
	case "":
		return true
	case "dir":
		if cur.Kind == "" {
			if err := root.Mkdir(rel, want.Mode); err != nil {
				return false
			}
		}
		return root.Chmod(rel, want.Mode) == nil
	case "link":
		return root.Symlink(want.Target, rel) == nil
	case "file":
		// A new file in place of whatever is there: a hard link the
		// command made to the original is not written through.
		tmp := rel + ".rein-restore"
		root.Remove(tmp)
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, want.Mode)
		if err != nil {
			return false
		}
		_, err = f.Write(want.Data)
		f.Close()
		if err == nil {
			err = root.Chmod(tmp, want.Mode)
		}
		if err == nil {
			err = root.Rename(tmp, rel)
		}
		if err != nil {
			root.Remove(tmp)
			return false
		}
		return true
	}
	return false
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// protectedPaths are the workspace paths bound read-only (or guarded):
// git's hooks and config, its worktrees' administrative directories
// (which a command could otherwise make, point elsewhere or prune), those
// of its submodules, and rein's own directory.
func protectedPaths(ws string) []string {
	out := []string{".git/hooks", ".git/config", ".git/worktrees", ".rein"}
	mods, _ := filepath.Glob(filepath.Join(ws, ".git", "modules", "*"))
	for _, m := range mods {
		rel, err := filepath.Rel(ws, m)
		if err == nil && !strings.HasPrefix(rel, "..") {
			out = append(out, filepath.Join(rel, "hooks"), filepath.Join(rel, "config"))
		}
	}
	return out
}

// restoreSaved puts back the protected files of a run whose rein died.
func restoreSaved(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var g guard
	if err := json.Unmarshal(data, &g); err != nil {
		return err
	}
	if g.Workspace == "" {
		return errors.New("no workspace")
	}
	if g.Entries == nil {
		return fmt.Errorf("%s holds no snapshot", path)
	}
	g.restore()
	return nil
}
