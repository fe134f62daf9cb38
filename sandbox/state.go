//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/toolchain"
)

const noFollow = syscall.O_NOFOLLOW

// checkStateOutside refuses a workspace that holds rein's own state: the
// command could then forge what a later run trusts.
func checkStateOutside(ws string) error {
	if c := CacheDir(); within(c, ws) {
		return refuse(Denied, "rein's state directory %s is inside the workspace %s, where the command could forge it: set REIN_CACHE_DIR (in a program, sandbox.SetCacheDir) to a directory outside", c, ws)
	}
	return nil
}

// toolchainCaches makes the workspace's per-workspace toolchain caches
// (toolchain.WorkspaceCaches, one directory each under one base) and
// returns the base, so that builds stay fast across runs without sharing
// the user's own caches; "" when the base would lie inside the workspace.
func toolchainCaches(ws string) (string, error) {
	base := ToolchainCacheDir(ws)
	if within(base, ws) {
		// Inside the workspace the command could plant what the next run
		// trusts; a cache dir there is no cache of rein's.
		return "", nil
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", refuse(Unavailable, "making the toolchain caches %s: %v", base, err)
	}
	for _, c := range toolchain.WorkspaceCaches() {
		if err := cacheDir(filepath.Join(base, c.Name)); err != nil {
			return "", err
		}
	}
	return base, nil
}

// cacheDir makes p a directory of rein's: what a command left in its
// place (a link, dangling or not, a file, a FIFO) is removed, never
// followed, and the directory made again, so that no command can stop
// the workspace's later runs, or point rein's cache elsewhere.
func cacheDir(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		if err := os.Remove(p); err != nil {
			return refuse(Unavailable, "removing the %s left where the toolchain cache %s was: %v", fi.Mode().Type(), p, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return refuse(Unavailable, "the toolchain cache %s: %v", p, err)
	}
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return refuse(Unavailable, "making the toolchain cache %s: %v", p, err)
	}
	return nil
}

// goBuildCache is the name of Go's build cache among the toolchain
// caches (toolchain.WorkspaceCaches).
const goBuildCache = "go-build"

// ownCaches checks a run's own caches (CacheSet.Dir) and returns their
// base. Each cache's directory under it is made by its toolchain when it
// first writes there: a run's own caches are new for it, and most of
// them stay empty.
func ownCaches(base string) (string, error) {
	if fi, err := os.Lstat(base); err != nil || !fi.IsDir() {
		return "", refuse(NotFound, "the run's caches %s are not a directory", base)
	}
	return base, nil
}

// privateEtc is the cached list of what only root may read under /etc,
// with the directories it was read from and their modification times: a
// file added, removed or renamed changes its directory's time, and the
// list is read again. A chmod does not, so the list is also read again
// after privateTTL, unless this process's watch (etcWatch) saw nothing.
type privateEtc struct {
	Files []string          `json:"files"`
	Dirs  map[string]string `json:"dirs"`
	At    time.Time         `json:"at"`
}

const privateTTL = 10 * time.Minute

var privateMu sync.Mutex

// privateMemo is the last list this process made or read, with its
// stamps; privateMu guards it.
var privateMemo *privateEtc

func privateSystemFiles() ([]string, error) {
	privateMu.Lock()
	defer privateMu.Unlock()
	return privateSystemFilesLocked()
}

// privateSystemFilesLocked is privateSystemFiles with privateMu held.
func privateSystemFilesLocked() ([]string, error) {
	// A list read from the file may predate a chmod in place, which no
	// stamp shows: the watch keeps it only as long as its age allows.
	if privateMemo != nil && time.Since(privateMemo.At) < privateTTL && etcWatch.quiet() {
		return privateMemo.Files, nil
	}
	// Not vouched for by the watch: what was judged of the files (their
	// reach, systemMasks) is judged again.
	privateGen++
	files, err := privateSystemFilesStamped()
	if err == nil {
		// The watch is set on the directories the list was read from,
		// then their stamps are checked again: a change between the
		// reading and the watch shows in them, and leaves no watch.
		if watchEtc.Load() {
			etcWatch.watch(privateMemo.Dirs)
			for d, stamp := range privateMemo.Dirs {
				if dirStamp(d) != stamp {
					etcWatch.stop()
					break
				}
			}
		}
	}
	return files, err
}

// watchEtc says that this process runs sandboxes through a pool, and so
// will list /etc again: only then is the watch set. Its end costs the
// kernel a wait for the marks' release (10 to 20 ms here) when the
// descriptor closes, which a process that runs one sandbox and exits
// would pay for nothing.
var watchEtc atomic.Bool

// etcWatch is an inotify descriptor, in a process that wants one
// (watchEtc), on every directory of /etc the
// private list was read from: a file made, removed, renamed, or whose
// mode or owner changed (IN_ATTRIB reaches a directory's watch for its
// entries too) queues an event as the change is made, before the call
// making it returns. With no event queued, the list still holds, at the
// cost of one read; with one, or no watch (inotify refused), the stamps
// decide, as they did before.
var etcWatch inotifyWatch

type inotifyWatch struct {
	fd int // -1 or 0 when there is no watch
	on bool
}

// quiet reports whether the watch is in place and nothing changed since.
func (w *inotifyWatch) quiet() bool {
	if !w.on {
		return false
	}
	var buf [4096]byte
	n, err := unix.Read(w.fd, buf[:])
	if n <= 0 && errors.Is(err, unix.EAGAIN) {
		return true
	}
	// An event, an overflow or an error: the watch is spent.
	w.stop()
	return false
}

func (w *inotifyWatch) stop() {
	if w.on {
		unix.Close(w.fd)
		w.on = false
	}
}

func (w *inotifyWatch) watch(dirs map[string]string) {
	w.stop()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return
	}
	const mask = unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR
	for d := range dirs {
		if _, err := unix.InotifyAddWatch(fd, d, mask); err != nil {
			unix.Close(fd)
			return
		}
	}
	w.fd, w.on = fd, true
}

// privateSystemFilesStamped is the list as the stamps and the file
// cache have it; it holds privateMu and leaves privateMemo set.
func privateSystemFilesStamped() ([]string, error) {
	file := filepath.Join(CacheDir(), "etc-private.json")
	var c privateEtc
	if privateMemo != nil {
		// This process's last answer, checked against the same stamps as
		// the file's: the file is not read and decoded again each run.
		c = *privateMemo
	} else if data, err := os.ReadFile(file); err != nil || json.Unmarshal(data, &c) != nil {
		c = privateEtc{}
	}
	if time.Since(c.At) < privateTTL && c.At.Before(time.Now()) && len(c.Dirs) > 0 {
		fresh := true
		for d, stamp := range c.Dirs {
			if dirStamp(d) != stamp {
				fresh = false
				break
			}
		}
		if fresh {
			privateMemo = &c
			return c.Files, nil
		}
	}
	files, err := bwrap.PrivateFiles("/etc")
	if err != nil {
		return nil, err
	}
	c = privateEtc{Files: files, Dirs: map[string]string{}, At: time.Now()}
	defer func() { privateMemo = &c }()
	filepath.WalkDir("/etc", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			c.Dirs[p] = dirStamp(p)
		}
		return nil
	})
	if data, err := json.Marshal(c); err == nil {
		os.MkdirAll(filepath.Dir(file), 0o700)
		tmp := file + fmt.Sprintf(".%d", os.Getpid())
		if os.WriteFile(tmp, data, 0o600) == nil {
			os.Rename(tmp, file)
		}
	}
	return files, nil
}

func dirStamp(p string) string {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d:%d.%d:%o:%d", st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, st.Mode, st.Ino)
}

// systemMasks are the private system files rung's view must keep from
// the command. Landlock grants /etc around every one of them. The bwrap
// rung masks those the caller could reach itself: one it can neither
// read nor write (nor, a directory, enter) stays out of reach in the
// sandbox as well, whose uid is the caller's and whose capabilities are
// dropped, and needs no mount.
func systemMasks(rung Rung) ([]string, error) {
	privateMu.Lock()
	defer privateMu.Unlock()
	private, err := privateSystemFilesLocked()
	if err != nil || rung != RungBwrap {
		return private, err
	}
	// While the watch saw no change in /etc (a chmod, a chown, an ACL
	// set are changes it sees), the files' reach is what it was: this
	// process's credentials do not change.
	if masksMemo.gen == privateGen && masksMemo.gen != 0 {
		return masksMemo.out, nil
	}
	var out []string
	for _, f := range private {
		if reachable(f) {
			out = append(out, f)
		}
	}
	masksMemo.gen, masksMemo.out = privateGen, out
	return out, nil
}

// privateGen counts the listings of /etc's private files the watch did
// not vouch for, and masksMemo is systemMasks' answer for one of them;
// privateMu guards both.
var (
	privateGen uint64
	masksMemo  struct {
		gen uint64
		out []string
	}
)

// reachable reports whether this process could read, write or execute
// path (enter it, a directory), were nothing masked.
func reachable(path string) bool {
	for _, mode := range []uint32{unix.R_OK, unix.W_OK, unix.X_OK} {
		if unix.Faccessat(unix.AT_FDCWD, path, mode, 0) == nil {
			return true
		}
	}
	return false
}

// landlockSystemRead is what the landlock rung may read of the system: the
// system directories, /etc without what only root may read (Landlock can
// only grant, so /etc is granted entry by entry around those), /proc and
// the random devices.
func landlockSystemRead() ([]string, error) {
	private, err := privateSystemFiles()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range systemDirs() {
		if d == "/etc" {
			out = append(out, around("/etc", private)...)
			continue
		}
		out = append(out, d)
	}
	return append(out, "/proc", "/dev/urandom", "/dev/random"), nil
}

// around lists the entries that cover dir except the excluded paths:
// entries holding none whole, the others opened up in turn. Symbolic links
// are left out: what they point to is readable only where it is granted.
func around(dir string, excluded []string) []string {
	if !slices.ContainsFunc(excluded, func(x string) bool { return within(x, dir) }) {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case slices.Contains(excluded, p), e.Type()&fs.ModeSymlink != 0:
		case e.IsDir():
			out = append(out, around(p, excluded)...)
		case e.Type().IsRegular():
			out = append(out, p)
		}
	}
	return out
}

// slotTable is the HOME and TMPDIR slots of one workspace's runs in this
// process, on the rungs without a mount namespace: each process has its
// own, and the lock on a slot's directory keeps the runs of another
// process out of it.
type slotTable struct {
	ws string
	mu sync.Mutex
	// slots are the HOME and TMPDIR directories of the runs on the rungs
	// without a mount namespace, by index: true while a run holds one (or
	// forever, once a run lost track of a process).
	slots []bool
	// slotLocks hold, for each slot a run holds, the lock on its
	// directory that keeps other processes' runs out of it.
	slotLocks map[int]*os.File
}

// takeSlot gives a run on the landlock or none rung a HOME and a TMPDIR of
// its own, emptied, at paths that stay the same from one run to the next
// (slot 0 for a run alone): a toolchain that keys its caches on them (go
// test's results depend on HOME and TMPDIR) then finds them again.
func (s *slotTable) takeSlot() (n int, home, tmp string, err error) {
	slots, err := stateDir("slots")
	if err != nil {
		return 0, "", "", err
	}
	s.mu.Lock()
	// Slots another process's run holds, skipped this time only.
	var busy []int
	for {
		n = slices.Index(s.slots, false)
		if n < 0 {
			n = len(s.slots)
			s.slots = append(s.slots, false)
		}
		s.slots[n] = true
		// A slot whose run lost track of a process, in this process or
		// an earlier one, is never used again: the process may still
		// write there.
		if _, err := os.Lstat(s.slotDir(slots, n) + ".poisoned"); err == nil {
			continue
		}
		// Each process has its own slot table; the lock on the slot's
		// directory keeps out the runs of another process on the same
		// workspace. Their runs hold the workspace's lock, but a warm
		// sandbox takes its slot without it, while another's run is in
		// the slot of the same number.
		f, err := lockSlot(s.slotDir(slots, n))
		if err == nil {
			if s.slotLocks == nil {
				s.slotLocks = map[int]*os.File{}
			}
			s.slotLocks[n] = f
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			s.slots[n] = false
			for _, b := range busy {
				s.slots[b] = false
			}
			s.mu.Unlock()
			return 0, "", "", refuse(Unavailable, "locking the run's HOME and TMPDIR: %v", err)
		}
		busy = append(busy, n)
	}
	for _, b := range busy {
		s.slots[b] = false
	}
	s.mu.Unlock()
	dir := s.slotDir(slots, n)
	err = removeTree(dir)
	home, tmp = filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{dir, home, tmp} {
		if err == nil {
			err = os.Mkdir(d, 0o700)
		}
	}
	if err != nil {
		s.releaseSlot(n, true)
		return 0, "", "", refuse(Unavailable, "making the run's HOME and TMPDIR: %v", err)
	}
	return n, home, tmp, nil
}

// removeTree removes what a finished run left in dir, whatever it did to
// the modes of its directories: those the command made unreadable or
// unwritable (chmod 000) are opened up first. The run's processes are all
// dead, so nothing swaps an entry between the look and the chmod, and
// only real directories (never a link) are chmodded. If dir still cannot
// go, it is moved aside so that its path is free for the next run.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	// Each directory is opened up when the walk reaches it, before the
	// walk reads it.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsDir() {
			chmodDir(p)
		}
		return nil
	})
	if err = os.RemoveAll(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	aside := fmt.Sprintf("%s.old-%d", dir, time.Now().UnixNano())
	if rerr := os.Rename(dir, aside); rerr != nil {
		return err
	}
	os.RemoveAll(aside)
	return nil
}

// chmodDir gives the directory at p (never what a link there leads to)
// mode 0700: through a descriptor opened without following a link, and
// the descriptor's own entry in /proc, since chmod has no flag for that.
func chmodDir(p string) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	os.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), 0o700)
}

func (s *slotTable) slotDir(slots string, n int) string {
	return filepath.Join(slots, fmt.Sprintf("%s-%d", workspaceKey(s.ws), n))
}

// releaseSlot empties slot n and frees it, unless a process of its run may
// still be alive (keep), when it is marked on disk and never used again.
func (s *slotTable) releaseSlot(n int, keep bool) {
	if slots, err := stateDir("slots"); err == nil {
		if keep {
			os.WriteFile(s.slotDir(slots, n)+".poisoned", nil, 0o600)
		} else {
			removeTree(s.slotDir(slots, n))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.slotLocks[n]; f != nil {
		// Emptied or marked: another process may have it, or skip it.
		f.Close()
		delete(s.slotLocks, n)
	}
	if n < len(s.slots) && !keep {
		s.slots[n] = false
	}
}

// lockSlot takes the lock of the slot whose directory is dir, without
// waiting: syscall.EWOULDBLOCK when another process's run holds it.
func lockSlot(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

var slotTables = struct {
	sync.Mutex
	m map[string]*slotTable
}{m: map[string]*slotTable{}}

// slotsOf is the workspace's slot table in this process.
func slotsOf(ws string) *slotTable {
	slotTables.Lock()
	defer slotTables.Unlock()
	s := slotTables.m[ws]
	if s == nil {
		s = &slotTable{ws: ws}
		slotTables.m[ws] = s
	}
	return s
}

// lockWorkspace takes the workspace's session lock, a file outside the
// workspace (where the command cannot remove it), waiting until it is
// free or ctx ends. It guards the session's state on disk and is held
// only while a run joins or leaves the session, a session begins or ends,
// or what a run changed is put back: never while a command runs.
func lockWorkspace(ctx context.Context, ws string) (func(), error) {
	dir, err := stateDir("locks")
	if err != nil {
		return nil, err
	}
	return lockWorkspaceIn(ctx, dir, ws, os.O_CREATE)
}

// lockWorkspaceIn is lockWorkspace with the locks' directory named; with
// create 0, a lock that is not there is not made (the guardian's: a
// workspace whose lock is gone has no session left to guard).
func lockWorkspaceIn(ctx context.Context, dir, ws string, create int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, workspaceKey(ws)+".lock"), os.O_RDWR|create|noFollow, 0o600)
	if err != nil {
		return nil, refuse(Unavailable, "opening the workspace lock: %v", err)
	}
	// Held for milliseconds: it is asked for again soon, then less often.
	wait := 500 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, refuse(Unavailable, "locking the workspace: %v", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, refuse(Cancelled, "another rein held the workspace's session lock (joining or leaving its session, or putting back what a run changed) until the call was cancelled")
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// sweep removes what runs whose rein died (killed by SIGKILL, say) left
// behind: their cgroups, with anything still in them, and their scratch
// directories, after putting back the protected files they guarded. Their
// names carry the pid of the rein that made them.
//
// The scratch directories are looked at every time (a glob); the cgroup
// hierarchies, whose listing costs a quarter of a millisecond each, when a
// dead rein's scratch directory is found, and otherwise at most once every
// sweepEvery: a rein that died leaves its scratch directory behind, since
// only its teardown removes it.
//
// The runs of workspace ws (whose lock the caller holds) are put back to
// b, its session's baseline, when there is one: it may be newer than the
// one they saved when they joined.
func sweep(ws string, b *baseline) {
	runs, err := stateDir("runs")
	if err != nil {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "rein-run-*"))
	var dead []string
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(d), "rein-run-"), "%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		// A zombie is dead too, as the session's reaping takes it.
		if !alive(pid) {
			dead = append(dead, d)
		}
	}
	now := time.Now().UnixNano()
	if last := lastCgroupSweep.Load(); len(dead) > 0 || now-last > int64(sweepEvery) {
		lastCgroupSweep.Store(now)
		killRunCgroups()
	}
	// After the cgroups: what was still running there cannot plant again.
	for _, d := range dead {
		if b != nil && savedWorkspace(d) == ws {
			b.restore()
		} else {
			restoreSaved(filepath.Join(d, "guard.json"))
			repoMetaSaved(filepath.Join(d, "repos.json"))
		}
		// The cgroups' processes are dead: directories the command made
		// unreadable in its HOME or /tmp are opened up.
		removeTree(d)
	}
}

// killRunCgroups ends what still runs in the run cgroups of dead reins.
func killRunCgroups() {
	if h, err := findCgroup(); err == nil {
		h.Sweep("rein-run")
	}
	for _, c := range []string{"memory", "pids"} {
		if v, err := findCgroupV1(c); err == nil {
			v.Sweep("rein-run")
		}
	}
}

// sweepEvery bounds how long a dead rein's cgroups can outlive it when it
// left no scratch directory (it died between the two).
const sweepEvery = 5 * time.Second

// lastCgroupSweep is when the cgroup hierarchies were last swept, in Unix
// nanoseconds.
var lastCgroupSweep atomic.Int64
