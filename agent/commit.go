package agent

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
)

// A run's commit (Contract.Commit) is made by rein, outside the sandbox,
// with git's plumbing alone: the objects are hashed as the files are
// (no filter runs), a temporary index is read from the start commit and
// given the changed paths as object ids, and the commit is written on a
// new branch. Nothing touches the working tree, the index, HEAD or the
// branch the workspace is on; git runs with every way to run a program
// forced off (tool.GitEnv).

// maxCommitFile bounds a file the commit holds; maxTreePaths the paths
// compared.
const (
	maxCommitFile = 100 << 20
	maxTreePaths  = 200_000
)

// hostGit runs git in ws with the forced-off environment, stdin given,
// and returns its stdout.
// gitDirsKey holds the directories host git is pinned to (GIT_DIR,
// GIT_COMMON_DIR, GIT_WORK_TREE) for a child's worktree: what the child
// could write there (its .git file, its administrative directory's
// commondir) cannot lead rein's git elsewhere.
type gitDirsKey struct{}

func hostGit(ctx context.Context, ws string, stdin []byte, extra []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = ws
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "LC_ALL=C"}, tool.GitEnv(ws)...), extra...)
	if pinned, ok := ctx.Value(gitDirsKey{}).([]string); ok {
		cmd.Env = append(cmd.Env, pinned...)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// gitStart reads the repository as a run begins: the commit HEAD names
// and what differs from it.
func gitStart(ctx context.Context, ws string) (*loop.GitStart, error) {
	head, err := hostGit(ctx, ws, nil, nil, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("agent: contract: a run that commits needs a git repository with a commit at the workspace (%v)", err)
	}
	format, err := hostGit(ctx, ws, nil, nil, "rev-parse", "--show-object-format")
	if err != nil {
		format = "sha1"
	}
	gs := &loop.GitStart{Commit: strings.TrimSpace(head), Format: strings.TrimSpace(format)}
	base, now, err := treeAndFiles(ctx, ws, gs)
	if err != nil {
		return nil, err
	}
	for p, e := range now {
		if base[p] != e {
			if gs.Dirty == nil {
				gs.Dirty = map[string]string{}
			}
			gs.Dirty[p] = e
		}
	}
	return gs, nil
}

// treeAndFiles are the start commit's entries (path to "MODE HASH") and
// the workspace's now, for every path the commit has or git would add
// (untracked and not ignored): "" for a path gone.
func treeAndFiles(ctx context.Context, ws string, gs *loop.GitStart) (base, now map[string]string, err error) {
	out, err := hostGit(ctx, ws, nil, nil, "ls-tree", "-r", "-z", "--full-tree", gs.Commit)
	if err != nil {
		return nil, nil, err
	}
	base = map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			// A submodule's commit is the submodule's own: left as it is.
			continue
		}
		base[path] = f[0] + " " + f[2]
	}
	others, err := hostGit(ctx, ws, nil, nil, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, nil, err
	}
	paths := make([]string, 0, len(base))
	for p := range base {
		paths = append(paths, p)
	}
	for _, p := range strings.Split(others, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) > maxTreePaths {
		return nil, nil, fmt.Errorf("the workspace has %d paths git tracks or would add, more than the %d a run's commit compares", len(paths), maxTreePaths)
	}
	now = map[string]string{}
	for _, p := range paths {
		e, err := entryOf(ws, p, gs.Format)
		if err != nil {
			return nil, nil, err
		}
		now[p] = e
	}
	return base, now, nil
}

// entryOf is a workspace path as a tree entry: "MODE HASH" for a regular
// file or a link, "" for a path that is gone, a directory now, or below a
// link (git sees the link, not what is through it).
func entryOf(ws, rel, format string) (string, error) {
	mode, data, err := readEntry(ws, rel)
	if err != nil || mode == "" {
		return "", err
	}
	var h hash.Hash = sha1.New()
	if format == "sha256" {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return mode + " " + hex.EncodeToString(h.Sum(nil)), nil
}

// readEntry reads a workspace path as git would hold it: its mode and
// its bytes (a link's target), or mode "" for none. Every directory above
// it must be a directory, not a link, and it is read through the
// workspace's root, so nothing outside the workspace is ever read.
func readEntry(ws, rel string) (string, []byte, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", nil, err
	}
	defer root.Close()
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		fi, err := root.Lstat(strings.Join(parts[:i], "/"))
		if err != nil || !fi.IsDir() {
			return "", nil, nil
		}
	}
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && fi.IsDir():
		return "", nil, nil
	case err != nil:
		return "", nil, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := root.Readlink(rel)
		if err != nil {
			return "", nil, err
		}
		return "120000", []byte(target), nil
	case fi.Mode().IsRegular():
		if fi.Size() > maxCommitFile {
			return "", nil, fmt.Errorf("%s is %d bytes, more than a run's commit holds", rel, fi.Size())
		}
		data, err := root.ReadFile(rel)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&0o111 != 0 {
			return "100755", data, nil
		}
		return "100644", data, nil
	}
	return "", nil, nil
}

// commitRun commits what the run changed since it began (the paths that
// differ from the start commit now and did not differ so when the run
// began, or differ otherwise now; never a path the policy keeps from
// reading, such as the empty files the sandbox masks secrets with) on the
// branch rein/<run id>, whose parent is the start commit.
func (d *driver) commitRun(ctx context.Context) *loop.Committed {
	gs, ws := d.state.GitStart, d.c.Workspace
	fail := func(format string, args ...any) *loop.Committed {
		return &loop.Committed{Error: fmt.Sprintf(format, args...)}
	}
	if gs == nil {
		return fail("the run kept no start commit")
	}
	if ch := d.c.Child; worktreeChild(d.c) {
		// git is run in the worktree on the host: its .git must still
		// lead where rein made it lead, not where a command of the run
		// pointed it.
		common := filepath.Join(ch.Repo, ".git")
		admin := filepath.Join(common, "worktrees", ch.Worktree)
		want := "gitdir: " + admin
		if link, err := os.ReadFile(filepath.Join(ws, ".git")); err != nil || strings.TrimRight(string(link), "\n") != want {
			return fail("the worktree's .git no longer leads to %s (%q): rein runs no git through it", want, link)
		}
		// Its administrative directory is the child's to write: what
		// leads out of it must be as git made it.
		if data, err := os.ReadFile(filepath.Join(admin, "commondir")); err != nil || string(data) != "../..\n" {
			return fail("the worktree's administrative directory %s was changed (its commondir holds %q): rein runs no git through it", admin, data)
		}
		if _, err := os.Lstat(filepath.Join(admin, "config.worktree")); err == nil {
			return fail("the worktree's administrative directory %s holds a config.worktree: rein runs no git through it", admin)
		}
		// git appends to a ref's log through whatever is at its path: what
		// the child could write holds no link, nothing but files and
		// directories.
		own := filepath.FromSlash(ch.Branch[:strings.LastIndexByte(ch.Branch, '/')])
		for _, dir := range []string{admin, filepath.Join(common, "refs", "heads", own), filepath.Join(common, "logs", "refs", "heads", own)} {
			if bad := notPlain(dir); bad != "" {
				return fail("%s, which the child could write, holds %s: rein runs no git through it", dir, bad)
			}
		}
		// The objects the child made, in its administrative directory,
		// are taken into the repository's, each checked against its name.
		if err := importObjects(filepath.Join(admin, "objects"), filepath.Join(common, "objects"), gs.Format); err != nil {
			return fail("taking in the objects the child made: %v", err)
		}
		ctx = context.WithValue(ctx, gitDirsKey{}, []string{"GIT_DIR=" + admin, "GIT_COMMON_DIR=" + common, "GIT_WORK_TREE=" + ws})
		// The child may have committed on its branch itself (git works in
		// its sandbox): what is left is committed on top, and the branch
		// as it is is the result.
		head, err := hostGit(ctx, ws, nil, nil, "rev-parse", "--verify", "-q", "refs/heads/"+ch.Branch+"^{commit}")
		if err != nil {
			return fail("the worktree's branch %s: %v", ch.Branch, err)
		}
		if head = strings.TrimSpace(head); head != gs.Commit {
			moved := *gs
			moved.Commit = head
			c := d.commitFrom(ctx, &moved)
			if c.Hash == "" && strings.Contains(c.Error, "changed nothing") {
				names, _ := hostGit(ctx, ws, nil, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-only", gs.Commit, head)
				var paths []string
				for _, p := range strings.Split(names, "\x00") {
					if p != "" {
						paths = append(paths, p)
					}
				}
				return &loop.Committed{Branch: ch.Branch, Hash: head, Paths: paths}
			}
			return c
		}
	}
	return d.commitFrom(ctx, gs)
}

// commitFrom commits what changed since gs on the run's branch.
func (d *driver) commitFrom(ctx context.Context, gs *loop.GitStart) *loop.Committed {
	ws := d.c.Workspace
	fail := func(format string, args ...any) *loop.Committed {
		return &loop.Committed{Error: fmt.Sprintf(format, args...)}
	}
	if c := d.madeCommit(ctx, gs); c != nil {
		// Made by this run before a kill: kept, never made twice.
		return c
	}
	base, now, err := treeAndFiles(ctx, ws, gs)
	if err != nil {
		return fail("reading the workspace: %v", err)
	}
	var changed []string
	for p, e := range now {
		before, dirty := gs.Dirty[p]
		if !dirty {
			before = base[p]
		}
		if e == before || e == base[p] && !dirty {
			continue
		}
		if v := d.o.Tool.Policy.CheckPath(policy.ActRead, filepath.Join(ws, filepath.FromSlash(p))); v.Decision == policy.Deny {
			continue
		}
		changed = append(changed, p)
	}
	if len(changed) == 0 {
		return fail("the run changed nothing git would commit")
	}
	slices.Sort(changed)
	zero := strings.Repeat("0", 40)
	if gs.Format == "sha256" {
		zero = strings.Repeat("0", 64)
	}
	if common := filepath.Join(ws, ".git"); worktreeChild(d.c) {
		if err := gitWrites(filepath.Join(d.c.Child.Repo, ".git"), d.runBranch()); err != nil {
			return fail("%v", err)
		}
	} else if fi, err := os.Lstat(common); err == nil && fi.IsDir() {
		if err := gitWrites(common, d.runBranch()); err != nil {
			return fail("%v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "rein-commit-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	var info bytes.Buffer
	for _, p := range changed {
		e := now[p]
		if e == "" {
			fmt.Fprintf(&info, "0 %s\t%s\x00", zero, p)
			continue
		}
		mode, id, _ := strings.Cut(e, " ")
		_, data, err := readEntry(ws, p)
		if err != nil {
			return fail("%v", err)
		}
		// The object as the file is (no filter): the id it was compared by.
		got, err := hostGit(ctx, ws, data, nil, "hash-object", "-w", "--no-filters", "--stdin")
		if err != nil {
			return fail("%v", err)
		}
		if strings.TrimSpace(got) != id {
			return fail("%s changed while it was committed", p)
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, id, p)
	}
	if _, err := hostGit(ctx, ws, nil, index, "read-tree", gs.Commit); err != nil {
		return fail("%v", err)
	}
	if _, err := hostGit(ctx, ws, info.Bytes(), index, "update-index", "-z", "--index-info"); err != nil {
		return fail("%v", err)
	}
	tree, err := hostGit(ctx, ws, nil, index, "write-tree")
	if err != nil {
		return fail("%v", err)
	}
	goal, _, _ := strings.Cut(strings.TrimSpace(d.c.Goal), "\n")
	if len(goal) > 200 {
		goal = goal[:200] + "..."
	}
	run := d.router.RunID()
	gate := "none"
	if d.c.Verify != nil {
		gate = d.c.Verify.Line
	}
	msg := fmt.Sprintf("rein: %s\n\nThe changes of rein run %s, whose gate %q passed.\n", goal, run, gate)
	old := zero
	if wt := worktreeChild(d.c); wt {
		// A child in a worktree of its own: its branch, made with the
		// worktree at the start commit, moves on to the commit.
		old = gs.Commit
		if d.c.Verify == nil {
			msg = fmt.Sprintf("rein: %s\n\nThe changes of rein run %s, a child run with no gate, which ended finished.\n", goal, run)
		}
	}
	commit, err := hostGit(ctx, ws, []byte(msg), d.identity(ctx), "commit-tree", strings.TrimSpace(tree), "-p", gs.Commit, "-F", "-")
	if err != nil {
		return fail("%v", err)
	}
	commit = strings.TrimSpace(commit)
	branch := d.runBranch()
	if _, err := hostGit(ctx, ws, nil, nil, "update-ref", "-m", "rein run "+run, "refs/heads/"+branch, commit, old); err != nil {
		return fail("%v", err)
	}
	if old != zero {
		// The worktree's index follows its branch: what it holds now is
		// what is committed.
		if _, err := hostGit(ctx, ws, nil, nil, "read-tree", commit); err != nil {
			return fail("%v", err)
		}
	}
	return &loop.Committed{Branch: branch, Hash: commit, Paths: changed}
}

// runBranch is the branch the run's commit is made on: rein/<run id>,
// or a worktree child's own.
func (d *driver) runBranch() string {
	if worktreeChild(d.c) {
		return d.c.Child.Branch
	}
	return "rein/" + d.router.RunID()
}

// worktreeChild says whether c is a child run's in a worktree of its own,
// whose changes are committed on the worktree's branch however it ends
// but cancelled or waiting (a gate, if it has one, passed).
func worktreeChild(c Contract) bool {
	return c.Child != nil && c.Child.Worktree != "" && c.Commit
}

// commits says whether a run that ended with kind commits its changes.
func commits(c Contract, kind Kind) bool {
	return c.Commit && (kind == Succeeded || kind == Finished && worktreeChild(c) && c.Verify == nil)
}

// madeCommit is the commit this run made already on its branch
// (rein/<run id>), when its driver was killed after making it and before
// keeping the outcome: a commit whose parent is the start commit and
// whose message names the run. nil when there is none; a branch of that
// name that is not such a commit is left to fail the update.
func (d *driver) madeCommit(ctx context.Context, gs *loop.GitStart) *loop.Committed {
	ws, run := d.c.Workspace, d.router.RunID()
	branch := d.runBranch()
	hash, err := hostGit(ctx, ws, nil, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return nil
	}
	hash = strings.TrimSpace(hash)
	info, err := hostGit(ctx, ws, nil, nil, "show", "-s", "--format=%P%n%B", hash)
	parents, msg, _ := strings.Cut(info, "\n")
	if err != nil || strings.TrimSpace(parents) != gs.Commit || !strings.Contains(msg, "The changes of rein run "+run+",") {
		return nil
	}
	names, err := hostGit(ctx, ws, nil, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-only", gs.Commit, hash)
	if err != nil {
		return nil
	}
	var paths []string
	for _, p := range strings.Split(names, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return &loop.Committed{Branch: branch, Hash: hash, Paths: paths}
}

// identity is the author and committer of a run's commit: the
// repository's user, as git's own configuration names it (read, never
// run), else rein.
func (d *driver) identity(ctx context.Context) []string {
	get := func(key string) string {
		cmd := exec.CommandContext(ctx, "git", "config", "--get", key)
		cmd.Dir = d.c.Workspace
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out))
	}
	name, email := get("user.name"), get("user.email")
	if name == "" {
		name = "rein"
	}
	if email == "" {
		email = "rein@localhost"
	}
	return []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email}
}

// notPlain names the first entry under dir that is neither a regular
// file nor a directory (a link, a FIFO, a device), or "".
func notPlain(dir string) string {
	bad := ""
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				bad = fmt.Sprintf("%s (%v)", p, err)
			}
			return filepath.SkipAll
		}
		if t := e.Type(); t != 0 && !e.IsDir() {
			bad = fmt.Sprintf("%s (%v)", p, t)
			return filepath.SkipAll
		}
		return nil
	})
	return bad
}

// maxObjectBytes bounds an object rein takes in from a child.
const maxObjectBytes = 256 << 20

// importObjects takes the loose objects under from into the object
// directory to: each is read whole, its content hashed as git names it
// (format: sha1 or sha256) and compared with its name, and written where
// to has none of that name; a pack (git gc in the child) is refused, as
// is anything else.
func importObjects(from, to, format string) error {
	if fi, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", from, err)
	}
	if bad := notPlain(from); bad != "" {
		return fmt.Errorf("%s holds %s", from, bad)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	hexLen := 40
	if format == "sha256" {
		hexLen = 64
	}
	for _, d := range entries {
		if d.Name() == "info" && d.IsDir() {
			if inner, _ := os.ReadDir(filepath.Join(from, "info")); len(inner) == 0 {
				continue
			}
		}
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			return fmt.Errorf("%s is not a directory of loose objects (a pack or another file: rein takes loose objects only)", filepath.Join(from, d.Name()))
		}
		objs, err := os.ReadDir(filepath.Join(from, d.Name()))
		if err != nil {
			return err
		}
		for _, o := range objs {
			name := d.Name() + o.Name()
			src := filepath.Join(from, d.Name(), o.Name())
			if strings.HasPrefix(o.Name(), "tmp_obj_") {
				continue
			}
			if !o.Type().IsRegular() || len(name) != hexLen || !isHex(o.Name()) {
				return fmt.Errorf("%s is not a loose object", src)
			}
			dst := filepath.Join(to, d.Name(), o.Name())
			if _, err := os.Lstat(dst); err == nil {
				continue
			}
			if err := importObject(src, dst, name, format); err != nil {
				return err
			}
		}
	}
	return nil
}

// importObject checks that the loose object src is the object name (its
// header read first and its size bounded, its content hashed as git names
// it) and writes it to dst, compressed by rein: what the file held beyond
// the object (bytes after its stream) is not copied.
func importObject(src, dst, name, format string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxObjectBytes {
		return fmt.Errorf("%s is not a loose object (a link, or more than %d bytes)", src, maxObjectBytes)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	z, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("object %s: %v", name, err)
	}
	br := bufio.NewReader(z)
	head, err := br.ReadString(0)
	if err != nil || len(head) > 32 {
		return fmt.Errorf("object %s has no header git would read", name)
	}
	kind, size, ok := strings.Cut(strings.TrimSuffix(head, "\x00"), " ")
	n, err := strconv.ParseInt(size, 10, 64)
	if !ok || err != nil || n < 0 || n > maxObjectBytes || strconv.FormatInt(n, 10) != size || !slices.Contains([]string{"blob", "tree", "commit", "tag"}, kind) {
		return fmt.Errorf("object %s has no header git would read, or is more than %d bytes", name, maxObjectBytes)
	}
	body, err := io.ReadAll(io.LimitReader(br, n+1))
	if err != nil || int64(len(body)) != n {
		return fmt.Errorf("object %s does not hold the %d bytes its header says (%v)", name, n, err)
	}
	var h hash.Hash = sha1.New()
	if format == "sha256" {
		h = sha256.New()
	}
	h.Write([]byte(head))
	h.Write(body)
	if got := hex.EncodeToString(h.Sum(nil)); got != name {
		return fmt.Errorf("the object named %s holds %s", name, got)
	}
	var packed bytes.Buffer
	zw := zlib.NewWriter(&packed)
	zw.Write([]byte(head))
	zw.Write(body)
	zw.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "tmp_obj_rein_")
	if err != nil {
		return err
	}
	_, err = tmp.Write(packed.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// linkFree refuses a symbolic link among the components of rel under
// dir, down to the first that does not exist: git on the host writes
// through whatever is at a ref's path, its log's, an object's directory.
func linkFree(dir string, rels ...string) error {
	for _, rel := range rels {
		p := dir
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			p = filepath.Join(p, part)
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("%s is a symbolic link: rein runs no git through it", p)
			}
		}
	}
	return nil
}

// gitWrites refuses a link where rein's host git writes for branch in
// the repository whose common directory is common: the branch's ref and
// log, and the object directories.
func gitWrites(common, branch string) error {
	rels := []string{"refs/heads/" + branch, "logs/refs/heads/" + branch, "objects/info"}
	entries, err := os.ReadDir(filepath.Join(common, "objects"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		rels = append(rels, "objects/"+e.Name())
	}
	return linkFree(common, rels...)
}
