//go:build linux

package agent

// A second attack pass on worktree children: the objects rein takes in
// (importObjects), the host git it runs for them, their budgets and the
// debris it cleans up. Each test asserts the safe behaviour, so a test
// that fails names a hole.

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/internal/testenv"
)

// atk2Repo is an empty repository with one commit; it returns its path.
func atk2Repo(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	testenv.Git(t, ws, "init", "-q", "-b", "main")
	testenv.Git(t, ws, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "start")
	return ws
}

// atk2Loose is the loose object of the blob content as git names it, its
// zlib stream followed by tail.
func atk2Loose(content, tail []byte) (string, []byte) {
	obj := append([]byte(fmt.Sprintf("blob %d\x00", len(content))), content...)
	sum := sha1.Sum(obj)
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	z.Write(obj)
	z.Close()
	return hex.EncodeToString(sum[:]), append(b.Bytes(), tail...)
}

// atk2Put writes raw as the object name under the objects directory dir.
func atk2Put(t *testing.T, dir, name string, raw []byte) string {
	t.Helper()
	p := filepath.Join(dir, name[:2], name[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o444); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSpawnAttack2ObjectTrailing: importObjects checks an object's zlib
// stream and its name, but not that the stream is all the file holds. git
// reads such an object, but git fsck finds it corrupt ("garbage at end of
// loose object"), and git never writes an object it has: a child plants
// the object of a content the parent will write (the fix it is expected
// to make), with bytes after its stream, and the repository holding the
// parent's commit fails git fsck for good. Safe: an object rein takes in
// is one git fsck passes.
func TestSpawnAttack2ObjectTrailing(t *testing.T) {
	for name, tail := range map[string][]byte{
		"garbage":       []byte("x"),
		"second stream": func() []byte { _, raw := atk2Loose([]byte("other\n"), nil); return raw }(),
	} {
		t.Run(name, func(t *testing.T) {
			ws := atk2Repo(t)
			from := filepath.Join(t.TempDir(), "objects")
			id, raw := atk2Loose([]byte("fixed\n"), tail)
			atk2Put(t, from, id, raw)
			err := importObjects(from, filepath.Join(ws, ".git", "objects"), "sha1")
			t.Logf("importObjects: %v", err)
			// The parent writes the fix itself: git finds the object there
			// and keeps the child's.
			cmd := exec.Command("git", "hash-object", "-w", "--stdin")
			cmd.Dir, cmd.Stdin = ws, strings.NewReader("fixed\n")
			if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != id {
				t.Fatalf("hash-object: %v %s", err, out)
			}
			if out, err := exec.Command("git", "-C", ws, "fsck", "--full", "--no-dangling").CombinedOutput(); err != nil || strings.Contains(string(out), id) {
				t.Errorf("rein took in an object git fsck finds corrupt, and the parent's own write of it is lost: %v: %s", err, out)
			}
		})
	}
}

// TestSpawnAttack2ObjectBomb: importObjects reads a whole object's
// content (up to 4 x 256 MiB) into memory before it reads the header that
// says its size. A child's object of a few KiB whose header says 16 bytes
// inflates to 64 MiB here (and to 1 GiB at the limit, per object, in
// rein's own process). Safe: rein inflates no more than the header says
// (and a few bytes) before it refuses.
func TestSpawnAttack2ObjectBomb(t *testing.T) {
	ws := atk2Repo(t)
	from := filepath.Join(t.TempDir(), "objects")
	obj := append([]byte("blob 16\x00"), make([]byte, 64<<20)...)
	var b bytes.Buffer
	z, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	z.Write(obj)
	z.Close()
	name := strings.Repeat("ab", 20)
	atk2Put(t, from, name, b.Bytes())
	t.Logf("the object is %d bytes on disk", b.Len())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := importObjects(from, filepath.Join(ws, ".git", "objects"), "sha1")
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("importObjects: %v; allocated %d MiB", err, alloc>>20)
	if err == nil {
		t.Fatal("a bomb was taken in")
	}
	if alloc > 16<<20 {
		t.Errorf("rein inflated %d MiB of an object whose header says 16 bytes (%d bytes on disk)", alloc>>20, b.Len())
	}
}

// TestSpawnAttack2ObjectEntries: what a child may leave in its objects
// directory besides loose objects: a link (to an object outside, to a
// FIFO), a directory that is a link, a FIFO, a tmp_obj_ link, a name of
// the wrong length, a second copy of an object the repository has. Safe:
// nothing is read through a link or blocks, no object rein did not check
// is taken in, an existing object is never replaced.
func TestSpawnAttack2ObjectEntries(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "objects")
	secret, raw := atk2Loose([]byte("top secret\n"), nil)
	atk2Put(t, outside, secret, raw)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(t *testing.T, from, to string){
		"link to an object": func(t *testing.T, from, _ string) {
			os.MkdirAll(filepath.Join(from, secret[:2]), 0o755)
			os.Symlink(filepath.Join(outside, secret[:2], secret[2:]), filepath.Join(from, secret[:2], secret[2:]))
		},
		"link to a fifo": func(t *testing.T, from, _ string) {
			os.MkdirAll(filepath.Join(from, "cd"), 0o755)
			os.Symlink(fifo, filepath.Join(from, "cd", strings.Repeat("e", 38)))
		},
		"fifo": func(t *testing.T, from, _ string) {
			os.MkdirAll(filepath.Join(from, "cd"), 0o755)
			syscall.Mkfifo(filepath.Join(from, "cd", strings.Repeat("e", 38)), 0o644)
		},
		"directory link": func(t *testing.T, from, _ string) {
			os.MkdirAll(from, 0o755)
			os.Symlink(filepath.Join(outside, secret[:2]), filepath.Join(from, secret[:2]))
		},
		"tmp_obj link": func(t *testing.T, from, _ string) {
			os.MkdirAll(filepath.Join(from, secret[:2]), 0o755)
			os.Symlink(filepath.Join(outside, secret[:2], secret[2:]), filepath.Join(from, secret[:2], "tmp_obj_"+secret[2:]))
		},
		"short name": func(t *testing.T, from, _ string) {
			atk2Put(t, from, secret[:39], raw)
		},
		"existing": func(t *testing.T, from, to string) {
			// The repository has it; the child's copy is another stream of
			// the same content.
			var b bytes.Buffer
			z, _ := zlib.NewWriterLevel(&b, zlib.NoCompression)
			z.Write([]byte("blob 11\x00top secret\n"))
			z.Close()
			atk2Put(t, to, secret, raw)
			atk2Put(t, from, secret, b.Bytes())
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			ws := atk2Repo(t)
			from, to := filepath.Join(t.TempDir(), "objects"), filepath.Join(ws, ".git", "objects")
			plant(t, from, to)
			done := make(chan error, 1)
			go func() { done <- importObjects(from, to, "sha1") }()
			var err error
			select {
			case err = <-done:
			case <-time.After(3 * time.Second):
				// Unblock the open of the FIFO.
				if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					f.Close()
				}
				t.Fatalf("importObjects blocked")
			}
			t.Logf("importObjects: %v", err)
			got, rerr := os.ReadFile(filepath.Join(to, secret[:2], secret[2:]))
			switch {
			case name == "existing":
				if !bytes.Equal(got, raw) {
					t.Errorf("an existing object was replaced")
				}
			case rerr == nil:
				t.Errorf("rein took in an object through %s", name)
			}
		})
	}
}

// atk2Victim is a file outside every workspace, and its content.
func atk2Victim(t *testing.T) (string, string) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return victim, "precious\n"
}

// TestSpawnAttack2ObjectsDirLink: commitRun finds a link in the child's
// administrative directory and refuses to commit, but removeWorktree then
// takes in the objects under <admin>/objects with no such check, and
// importObjects reads that directory through a link. A child points it at
// another repository's objects on the host (one its sandbox cannot
// read): rein copies them into the workspace's repository, where the
// next run reads them. Safe: nothing of the other repository is in the
// workspace's.
func TestSpawnAttack2ObjectsDirLink(t *testing.T) {
	k := newTreeKit(t)
	secretRepo := atk2Repo(t)
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir, cmd.Stdin = secretRepo, strings.NewReader("the other project's secret\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(out))
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"steal": {calls(spawnCall("g1", SpawnArgs{Goal: "link objects", Worktree: true}))},
		"link objects": {func(Request) *Response {
			script := fmt.Sprintf(`admin=$(cd "$(git rev-parse --git-dir)" && pwd)
rm -rf "$admin/objects"
ln -s %s "$admin/objects"`, filepath.Join(secretRepo, ".git", "objects"))
			return &Response{Text: "linking", ToolCalls: append(atkScript(script),
				call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`))}
		}, reply("done")},
	}}
	out2 := atkTree(t, k, m, Contract{Goal: "steal", Budget: Budget{Steps: 20}}, &root, nil)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, loop.ChildID(out2.Run, 1, 0)))
	t.Logf("the root's observations: %q", atkToolTexts(t, k, out2.Run))
	if err := exec.Command("git", "-C", k.ws, "cat-file", "-e", secret).Run(); err == nil {
		got, _ := exec.Command("git", "-C", k.ws, "cat-file", "-p", secret).Output()
		t.Errorf("rein copied another repository's object into the workspace's through a link the child planted: %s holds %q", secret, got)
	}
}

// TestSpawnAttack2BackgroundRace: a child with no gate ends finished and
// rein commits its changes (commitRun) before it closes the child's
// router, which is what kills its background lines. A line the child left
// running waits until rein has taken in its objects (so notPlain has
// looked), then links its branch's reflog to a file outside: rein's
// update-ref appends to it. Safe: the file outside is unchanged.
func TestSpawnAttack2BackgroundRace(t *testing.T) {
	k := newTreeKit(t)
	victim, was := atk2Victim(t)
	bg := fmt.Sprintf(`common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
admin=$(cd "$(git rev-parse --git-dir)" && pwd)
ref=$(git symbolic-ref HEAD)
o=$(echo "marker $$ $(date +%%s%%N)" | git hash-object -w --stdin)
f=$common/objects/$(echo $o | cut -c1-2)/$(echo $o | cut -c3-)
i=0
while [ ! -e "$f" ]; do i=$((i+1)); [ $i -gt 4000 ] && exit 0; sleep 0.005; done
rm -f "$common/logs/$ref"; ln -s %[1]s "$common/logs/$ref"
rm -f "$admin/logs/HEAD"; ln -s %[1]s "$admin/logs/HEAD"
echo planted`, victim)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"race": {calls(spawnCall("g1", SpawnArgs{Goal: "linger", Worktree: true}))},
		"linger": {calls(call("w", "write_file", fmt.Sprintf(`{"path":"bg.sh","content":%q}`, bg)),
			atkShell("b", "sh bg.sh &"), atkShell("s", "sleep 1"),
			call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`)), reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "race", Budget: Budget{Steps: 20}}, &root, nil)
	t.Logf("the child's observations: %q", atkToolTexts(t, k, loop.ChildID(out.Run, 1, 0)))
	if cs, err := LoadState(context.Background(), k.store, loop.ChildID(out.Run, 1, 0)); err == nil && cs.Done != nil {
		t.Logf("the child: %s %s, commit %+v", cs.Done.Kind, cs.Done.Reason, cs.Done.Commit)
	}
	if data, _ := os.ReadFile(victim); string(data) != was {
		t.Errorf("rein's host-side git wrote a file outside the repository through a link a child's background line planted after rein looked:\n%s", data)
	}
}

// atk2Tokens is treeModel with usage counted as a tokenizer would: a
// token for each character that is not ASCII, four ASCII characters a
// token (the system block, the tools and the messages).
type atk2Tokens struct{ *treeModel }

func atk2Count(s string) int64 {
	ascii, other := 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return int64(ascii/4 + other)
}

func (m atk2Tokens) Stream(ctx context.Context, req Request) (*Response, error) {
	r, err := m.treeModel.Stream(ctx, req)
	if r == nil {
		return r, err
	}
	in := atk2Count(req.System + req.SystemTail)
	for _, d := range req.Tools {
		in += atk2Count(d.Name + d.Description + string(d.Schema))
	}
	for _, msg := range req.Messages {
		in += atk2Count(msg.Text)
		for _, c := range msg.ToolCalls {
			in += atk2Count(c.Name + c.Args)
		}
	}
	out := atk2Count(r.Text)
	for _, c := range r.ToolCalls {
		out += atk2Count(c.Name + c.Args)
	}
	r.Usage = Usage{Input: in, Output: out + 5}
	return r, err
}

// TestSpawnAttack2MultibyteBudget: a child's next call is checked against
// its budget by rein's estimate, four characters a token. Text that is
// not ASCII (CJK, emoji) is about a token a character: a child that reads
// a file of it passes its carved tokens two-fold in one call, and the
// tree its root's budget. Safe: the child spends at most its share, the
// tree at most the root's budget.
func TestSpawnAttack2MultibyteBudget(t *testing.T) {
	k := newTreeKit(t)
	var notes strings.Builder
	for range 400 {
		notes.WriteString(strings.Repeat("漢", 100) + "\n")
	}
	if err := os.WriteFile(filepath.Join(k.ws, "notes.txt"), []byte(notes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const rootBudget, childBudget = 30000, 20000
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"budget":     {calls(spawnCall("a", SpawnArgs{Goal: "read notes", ReadOnly: true, Tokens: childBudget}))},
		"read notes": {calls(call("r", "read_file", `{"path":"notes.txt"}`)), reply("read them"), reply("read them again")},
	}}
	var root atomic.Value
	out := atkTree(t, k, m, Contract{Goal: "budget", Budget: Budget{Steps: 20, Tokens: rootBudget}}, &root, func(o *Options) {
		o.Provider = atk2Tokens{m}
	})
	id := loop.ChildID(out.Run, 1, 0)
	cs, err := LoadState(context.Background(), k.store, id)
	if err != nil || cs.Done == nil {
		t.Fatalf("the child: %v", err)
	}
	child := loop.Sat(cs.Done.Tokens.Input, cs.Done.Tokens.Output)
	tree := loop.Sat(out.Tokens.Input, out.Tokens.Output)
	if out.Children != nil {
		tree += loop.Sat(out.Children.Tokens.Input, out.Children.Tokens.Output)
	}
	t.Logf("the child (budget %d, overhead %d chars): %s %s; spent %d; the root: %s %s; the tree spent %d of %d",
		cs.Contract.Budget.Tokens, cs.Overhead, cs.Done.Kind, cs.Done.Reason, child, out.Kind, out.Reason, tree, rootBudget)
	if child > cs.Contract.Budget.Tokens {
		t.Errorf("the child spent %d tokens of the %d carved for it", child, cs.Contract.Budget.Tokens)
	}
	if tree > rootBudget {
		t.Errorf("the tree spent %d tokens of a root budget of %d (%s)", tree, rootBudget, out.Kind)
	}
}

// TestSpawnAttack2BranchLink: before it makes a new child's worktree,
// rein deletes a branch rein/<id>/work it finds (an add killed midway
// made it), and git worktree add then writes that branch, both by host
// git in the parent's workspace. The parent's sandbox may write .git/refs:
// it links refs/heads/rein/<the next child's id> to a directory outside
// (another repository's refs/heads, whose branch "work" rein then deletes;
// an empty directory, where git writes a ref). Safe: nothing outside the
// repository is deleted or written.
func TestSpawnAttack2BranchLink(t *testing.T) {
	k := newTreeKit(t)
	// Another repository's branch "work": a commit this one lacks.
	theirs := "1234567890abcdef1234567890abcdef12345678\n"
	other := filepath.Join(t.TempDir(), "other-heads")
	empty := filepath.Join(t.TempDir(), "empty")
	os.MkdirAll(other, 0o755)
	os.MkdirAll(empty, 0o755)
	if err := os.WriteFile(filepath.Join(other, "work"), []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"links": {func(Request) *Response {
			r := root.Load().(string)
			// The ids of the next step's children are the root's, the step
			// and the index: the model learns its id from any child's
			// branch, or its handles.
			script := fmt.Sprintf(`mkdir -p .git/refs/heads/rein
ln -s %s .git/refs/heads/rein/%s
ln -s %s .git/refs/heads/rein/%s`, other, loop.ChildID(r, 2, 0), empty, loop.ChildID(r, 2, 1))
			return &Response{Text: "linking", ToolCalls: atkScript(script)}
		},
			calls(spawnCall("a", SpawnArgs{Goal: "child a", Worktree: true}), spawnCall("b", SpawnArgs{Goal: "child b", Worktree: true})),
			reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "links", Budget: Budget{Steps: 20}}, &root, nil)
	t.Logf("the root's observations: %q", atkToolTexts(t, k, out.Run))
	if got, err := os.ReadFile(filepath.Join(other, "work")); err != nil || string(got) != theirs {
		t.Errorf("rein deleted (and git worktree add wrote again) a file outside the repository, another repository's branch, through a link in refs/heads/rein: %v %q", err, got)
	}
	if ents, _ := os.ReadDir(empty); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("rein's host git wrote outside the repository through a link in refs/heads/rein: %v", names)
	}
}

// TestSpawnAttack2RootReflogLink: notPlain guards the directories a
// worktree child writes, but the root's sandbox writes its workspace's
// .git/logs too, and the root's own commit (update-ref of rein/<root>)
// appends to the branch's reflog through whatever is at its path. Safe:
// a file outside the repository is never written.
func TestSpawnAttack2RootReflogLink(t *testing.T) {
	k := newTreeKit(t)
	victim, was := atk2Victim(t)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"plant": {func(Request) *Response {
			script := fmt.Sprintf(`mkdir -p .git/logs/refs/heads/rein
ln -s %s .git/logs/refs/heads/rein/%s`, victim, root.Load().(string))
			return &Response{Text: "planting", ToolCalls: append(atkScript(script),
				call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`))}
		}, reply("done")},
	}}
	out := atkTree(t, k, m, Contract{Goal: "plant", Commit: true, Verify: &Gate{Line: "grep -q fixed bug.txt", ExpectExit: 0}, Budget: Budget{Steps: 10}}, &root, nil)
	t.Logf("the root: %s %s, commit %+v", out.Kind, out.Reason, out.Commit)
	if data, _ := os.ReadFile(victim); string(data) != was {
		t.Errorf("rein's host-side git (the root's commit) wrote a file outside the repository through a link in .git/logs:\n%s", data)
	}
}

// TestSpawnAttack2AttributesFIFO: every host git rein runs for a worktree
// child's commit (hostGit) first builds tool.GitEnv of the worktree,
// which walks it for attribute files and opens each nested
// .git/info/attributes with os.Open: no check that it is a regular file,
// no link refused. A child leaves a FIFO there: rein's commit of it
// blocks for ever, and its parent and the whole tree with it. Safe: the
// tree ends.
func TestSpawnAttack2AttributesFIFO(t *testing.T) {
	k := newTreeKit(t)
	var root atomic.Value
	m := &treeModel{scripts: map[string][]func(Request) *Response{
		"fifo": {calls(spawnCall("g1", SpawnArgs{Goal: "plant fifo", Worktree: true}))},
		"plant fifo": {calls(append(atkScript(`mkdir -p sub/.git/info && mkfifo sub/.git/info/attributes`),
			call("e", "edit_file", `{"path":"bug.txt","old":"broken","new":"fixed"}`))...), reply("done")},
	}}
	done := make(chan Outcome, 1)
	go func() { done <- atkTree(t, k, m, Contract{Goal: "fifo", Budget: Budget{Steps: 10}}, &root, nil) }()
	select {
	case out := <-done:
		t.Logf("the root: %s %s", out.Kind, out.Reason)
		return
	case <-time.After(5 * time.Second):
	}
	// Unblock rein: open every FIFO under rein's worktrees for writing,
	// again at each open (each host git call opens it anew).
	var fifos []string
	unblock := func() {
		filepath.Walk(os.Getenv("REIN_CACHE_DIR"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
				if !slices.Contains(fifos, p) {
					fifos = append(fifos, p)
				}
				if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			return nil
		})
	}
	unblock()
	t.Errorf("the tree was still running 5 s after the child planted a FIFO as sub/.git/info/attributes in its worktree (rein blocked opening %v)", fifos)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
			unblock()
		}
	}
	t.Fatal("the tree did not end with the FIFO opened")
}
