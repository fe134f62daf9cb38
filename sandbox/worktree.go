//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The git worktrees rein makes for a workspace live in a directory of
// their own (WorktreeDir), outside the workspace and apart from rein's
// session state, and are listed in a registry beside it that no command
// can reach. The workspace's .git/worktrees is protected like its hooks
// (bound read-only, or kept and put back): a command can neither make,
// change nor prune a worktree's administrative directory, and the
// put-back admits exactly the ones the registry names, those rein made,
// including one rein made while another run's command was going on.

// checkWorktreeName checks a name rein gives a worktree's directory.
func checkWorktreeName(name string) error {
	if name == "" || len(name) > 64 || name == "." || name == ".." || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") ||
		strings.IndexFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		}) >= 0 {
		return refuse(InvalidPath, "%q is not a worktree name rein takes (letters, digits, . _ -, at most 64, not starting with . or -)", name)
	}
	return nil
}

// WorktreeDir is the directory the worktrees rein makes for ws live in,
// made if missing: under rein's state, never inside ws (nor ws inside
// it), and not the directory of rein's sessions.
func WorktreeDir(ws string) (string, error) {
	base, err := stateDir("worktrees")
	if err != nil {
		return "", err
	}
	d := filepath.Join(base, workspaceKey(ws))
	if within(d, ws) || within(ws, d) {
		return "", refuse(InvalidPath, "rein's worktree directory %s and the workspace %s lie one inside the other: set REIN_CACHE_DIR outside the workspace", d, ws)
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", refuse(Unavailable, "making rein's worktree directory: %v", err)
	}
	if err := privateDir(d); err != nil {
		return "", err
	}
	return d, nil
}

// WorktreePath is where the worktree name of ws is checked out.
func WorktreePath(ws, name string) (string, error) {
	if err := checkWorktreeName(name); err != nil {
		return "", err
	}
	d, err := WorktreeDir(ws)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// registryPath is the registry of ws's worktrees: beside their
// directory, not in it, so that a sandbox whose workspace is one of them
// cannot reach it.
func registryPath(ws string) (string, error) {
	base, err := stateDir("worktrees")
	if err != nil {
		return "", err
	}
	return filepath.Join(base, workspaceKey(ws)+".json"), nil
}

// Worktrees lists the worktrees rein made for ws that it has not removed.
func Worktrees(ws string) ([]Worktree, error) {
	p, err := registryPath(ws)
	if err != nil {
		return nil, err
	}
	return readRegistry(p)
}

func readRegistry(p string) ([]Worktree, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refuse(Unavailable, "reading rein's worktree registry: %v", err)
	}
	var out []Worktree
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, refuse(Unavailable, "rein's worktree registry %s is not what rein wrote: %v", p, err)
	}
	return out, nil
}

// WithWorktrees runs change on the registry of ws under the workspace's
// session lock, which every put-back holds too: a worktree rein makes or
// removes is in the registry before any put-back can see it. change gets
// the list and returns the new one; an error leaves the registry as it
// was. The lock is held while change runs (git making or removing the
// worktree): keep it short.
func WithWorktrees(ctx context.Context, ws string, change func([]Worktree) ([]Worktree, error)) error {
	p, err := registryPath(ws)
	if err != nil {
		return err
	}
	unlock, err := lockWorkspace(ctx, ws)
	if err != nil {
		return err
	}
	defer unlock()
	was, err := readRegistry(p)
	if err != nil {
		return err
	}
	now, err := change(slices.Clone(was))
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(now, "", "  ")
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return refuse(Unavailable, "writing rein's worktree registry: %v", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return refuse(Unavailable, "writing rein's worktree registry: %v", err)
	}
	return nil
}

// admittedWorktrees are the administrative directories under ws's
// .git/worktrees (workspace-relative) of the worktrees rein made, as the
// registry says now, each only while its link back (gitdir) names the
// worktree rein made: what a put-back leaves alone.
func admittedWorktrees(ws string) map[string]bool {
	list, err := Worktrees(ws)
	if err != nil || len(list) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, w := range list {
		if w.Admin == "" || checkWorktreeName(w.Admin) != nil {
			continue
		}
		rel := filepath.Join(".git", "worktrees", w.Admin)
		data, err := os.ReadFile(filepath.Join(ws, rel, "gitdir"))
		if err == nil && strings.TrimRight(string(data), "\n") == filepath.Join(w.Path, ".git") {
			out[rel] = true
		}
	}
	return out
}
