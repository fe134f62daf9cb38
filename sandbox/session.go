//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reinhq/rein/internal/keyfile"
)

// A workspace's session is shared by the runs of every rein process of
// the user in it: they run at once, whichever process started them. Its
// state lives on disk, in rein's state directory (where no run of any
// rung can read or write, and outside the landlock rung's HOME and TMPDIR
// slots), in the sessions directory:
//
//   - KEY.session.0 and .1: the runs in the session (each with its
//     owner's pid and start time), the protected paths its runs bind, the
//     rung kind, the changes found so far, and the digest of the
//     baseline; sealed with an HMAC under the user's trace key, which
//     every joiner checks before it trusts the baseline.
//   - KEY.baseline.0 and .1: the protected files as they were, which every
//     run's end puts back.
//
// The lock is held only to join, to leave, to begin or end the session
// and to put back what a run changed, never while a command runs: no run
// waits for another's command. A run whose process died is reaped by the
// next one to take the lock; the session ends with its last run.
type session struct {
	ws    string
	id    string // this run's, in the session's list of runs
	whole bool
	// protected are the protected paths this run binds: those of the
	// session that existed when it joined.
	protected []string
	// baseline is the protected files (and, for a run that may write,
	// the repository metadata below the workspace) as the session had
	// them when this run joined.
	baseline *baseline
	// mark is where this run starts in the session's list of changes.
	mark int
	// others says that other runs were in the session while this one was.
	others bool
	left   bool
	mu     sync.Mutex
}

// sessionState is the sealed part of a session's state.
type sessionState struct {
	Version int `json:"version"`
	// Seq counts the state's writes: the newer of the two slots wins.
	Seq        uint64    `json:"seq"`
	Workspace  string    `json:"workspace"`
	Whole      bool      `json:"whole"`
	Began      time.Time `json:"began"`
	BaselineAt time.Time `json:"baseline_at"`
	// Baseline is the sha256, in hex, of the baseline's bytes, in the
	// baseline's slot BaselineSlot.
	Baseline     string       `json:"baseline"`
	BaselineSlot int          `json:"baseline_slot"`
	Protected    []string     `json:"protected"`
	Runs         []sessionRun `json:"runs"`
	// Changed are the changes found in the session, the oldest dropped
	// past maxChanged; ChangedFrom is the index of the first kept.
	Changed     []string `json:"changed,omitempty"`
	ChangedFrom int      `json:"changed_from,omitempty"`
}

// sessionRun is one run in a session.
type sessionRun struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
	// Start is its process's start time, in clock ticks after boot: a
	// pid used again by another process is not taken for the run's.
	Start uint64 `json:"start"`
}

const (
	sessionVersion = 1
	// rebaselineEvery is how old a session's baseline may grow before a
	// run that joins takes it again: the host's own edits of the
	// protected files (a .vscode/settings.json, a .git/config) are then
	// not put back for as long as a background run keeps the session.
	rebaselineEvery = 10 * time.Minute
	// maxChanged bounds the changes a session keeps to report.
	maxChanged = 1024
	// sealLabel is the HMAC's purpose: a sum made for another is never
	// valid for a session.
	sealLabel = "rein sandbox session\x00"
)

// sessionBase is where the session files of workspace ws begin.
func sessionBase(ws string) (string, error) {
	dir, err := stateDir("sessions")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, workspaceKey(ws)), nil
}

var sessionKeys = struct {
	sync.Mutex
	path   string
	secret []byte
}{}

// sessionKey is the trace key's secret, read once per process (for the
// same path), refused where a command of ws could read it.
func sessionKey(ws string) ([]byte, error) {
	path, err := KeyPath()
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(real, filepath.Base(path))
	}
	if within(path, ws) {
		return nil, refuse(Denied, "the trace key %s is inside the workspace %s, where a command could read it and forge the session's state: set REIN_TRACE_KEY to a file outside", path, ws)
	}
	sessionKeys.Lock()
	defer sessionKeys.Unlock()
	if sessionKeys.path == path && sessionKeys.secret != nil {
		return sessionKeys.secret, nil
	}
	secret, err := keyfile.Load(path)
	if err != nil {
		return nil, refuse(Unavailable, "the trace key, which seals the workspace's session: %v", err)
	}
	sessionKeys.path, sessionKeys.secret = path, secret
	return secret, nil
}

func seal(key []byte, ws string, data []byte) string {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, sealLabel)
	io.WriteString(m, ws+"\x00")
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// sessionFile is a session's files and its key. The state and the
// baseline each have two slots, written in place by turns: a rein killed
// while it writes one leaves the other whole, and the state read is the
// newest sealed one. Nothing is made, renamed or removed on the way (on
// ext4 each costs a wait on the journal), but the first time a workspace
// has a session.
type sessionFile struct {
	ws, base string
	key      []byte
	// slot is the state's slot last read or written, -1 for none.
	slot int
}

func openSessionFile(ws string) (*sessionFile, error) {
	base, err := sessionBase(ws)
	if err != nil {
		return nil, err
	}
	key, err := sessionKey(ws)
	if err != nil {
		return nil, err
	}
	return &sessionFile{ws: ws, base: base, key: key, slot: -1}, nil
}

func (f *sessionFile) statePath(slot int) string { return fmt.Sprintf("%s.session.%d", f.base, slot) }
func (f *sessionFile) baselinePath(slot int) string {
	return fmt.Sprintf("%s.baseline.%d", f.base, slot)
}

// read is the session's newest sealed state, or nil when there is none.
// A slot that does not carry the seal is passed over (a write that a
// kill cut short) while the other does; with no sealed slot, the state is
// refused: the baseline in it is not trusted, and nothing runs until the
// files are removed.
func (f *sessionFile) read() (*sessionState, error) {
	var (
		best     *sessionState
		unsealed []string
	)
	f.slot = -1
	for slot := range 2 {
		path := f.statePath(slot)
		data, err := readPrivate(path, 16<<20)
		if errors.Is(err, fs.ErrNotExist) || err == nil && len(data) == 0 {
			continue
		}
		if err != nil {
			return nil, refuse(Unavailable, "reading the workspace's session %s: %v", path, err)
		}
		st := f.unseal(data)
		if st == nil {
			unsealed = append(unsealed, path)
			continue
		}
		if best == nil || st.Seq > best.Seq {
			best, f.slot = st, slot
		}
	}
	if best == nil && len(unsealed) > 0 {
		return nil, refuse(Denied, "the workspace's session state (%s) does not carry the seal rein puts on it with your trace key: something other than rein wrote it, or the key changed. No run trusts its baseline; remove %s.* once no rein runs in %s", strings.Join(unsealed, ", "), f.base, f.ws)
	}
	return best, nil
}

// unseal is the state in data ("MAC LENGTH\n" and the JSON), or nil when
// it is not sealed for this workspace with the key.
func (f *sessionFile) unseal(data []byte) *sessionState {
	head, rest, ok := bytes.Cut(data, []byte("\n"))
	mac, length, ok2 := strings.Cut(string(head), " ")
	n, err := strconv.Atoi(length)
	if !ok || !ok2 || err != nil || n < 0 || n > len(rest) {
		return nil
	}
	body := rest[:n]
	var st sessionState
	if !hmac.Equal([]byte(mac), []byte(seal(f.key, f.ws, body))) || json.Unmarshal(body, &st) != nil || st.Version != sessionVersion || st.Workspace != f.ws {
		return nil
	}
	return &st
}

// write stores the state in the slot the newest one is not in.
func (f *sessionFile) write(st *sessionState) error {
	st.Seq++
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	slot := 0
	if f.slot == 0 {
		slot = 1
	}
	data := append([]byte(seal(f.key, f.ws, body)+" "+strconv.Itoa(len(body))+"\n"), body...)
	if err := writeInPlace(f.statePath(slot), data); err != nil {
		return err
	}
	f.slot = slot
	return nil
}

// baseline is what a session keeps of the workspace to put back after
// every run: the protected files (the guard), and the repository
// metadata and agents' configuration below the top (taken when the first
// run that may write joins), one for all the session's runs, so that no
// run takes another's plant for the original.
type baseline struct {
	Guard *guard    `json:"guard"`
	Repos *repoMeta `json:"repos,omitempty"`
}

// restore puts both back and names what it put back.
func (b *baseline) restore() []string {
	return append(b.Guard.restore(), b.Repos.putBack()...)
}

// baselines is this process's memo of the baselines it read or took, by
// digest: a baseline is read from disk only when another process took it.
var baselines = struct {
	sync.Mutex
	m map[string]*baseline
}{m: map[string]*baseline{}}

// writeBaseline stores g as the session's baseline in the slot st does
// not name, and names it in st (which the caller writes next: until then,
// st's old baseline is whole).
func (f *sessionFile) writeBaseline(st *sessionState, g *baseline) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	slot := 1 - st.BaselineSlot
	if st.Baseline == "" {
		slot = 0
	}
	if err := writeInPlace(f.baselinePath(slot), data); err != nil {
		return err
	}
	st.Baseline, st.BaselineSlot, st.BaselineAt = digest, slot, time.Now()
	baselines.Lock()
	clear(baselines.m)
	baselines.m[digest] = g
	baselines.Unlock()
	return nil
}

// readBaseline is the baseline the sealed state names, checked against
// its digest.
func (f *sessionFile) readBaseline(st *sessionState) (*baseline, error) {
	baselines.Lock()
	g := baselines.m[st.Baseline]
	baselines.Unlock()
	if g != nil {
		return g, nil
	}
	path := f.baselinePath(st.BaselineSlot)
	data, err := readPrivate(path, 2*maxGuarded+(16<<20))
	if err != nil {
		return nil, refuse(Unavailable, "reading the session's baseline %s: %v", path, err)
	}
	sum := sha256.Sum256(data)
	g = &baseline{}
	if hex.EncodeToString(sum[:]) != st.Baseline || json.Unmarshal(data, g) != nil || g.Guard == nil || g.Guard.Workspace != f.ws || g.Repos != nil && g.Repos.Workspace != f.ws {
		return nil, refuse(Denied, "the session's baseline %s is not the one its sealed state names: something other than rein changed it. Remove %s.* once no rein runs in %s", path, f.base, f.ws)
	}
	baselines.Lock()
	clear(baselines.m)
	baselines.m[st.Baseline] = g
	baselines.Unlock()
	return g, nil
}

// readPrivate reads a file of rein's state directory without following a
// link, bounded.
func readPrivate(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// writeInPlace makes the file at path (a plain file of rein's, made the
// first time) hold data.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(data)))
}

// selfStart is this process's start time (procStart).
var selfStart = sync.OnceValue(func() uint64 {
	s, _ := procStart(os.Getpid())
	return s
})

// procStart is process pid's start time in clock ticks after boot (the
// 22nd field of /proc/PID/stat), and whether it is alive: neither gone
// nor a zombie.
func procStart(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ...: comm may hold anything, the fields follow
	// its last parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	// state is field 3, starttime field 22: indices 0 and 19 here.
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return start, true
}

// live reports whether the run's process is the one that joined, alive.
func (r sessionRun) live() bool {
	start, ok := procStart(r.PID)
	return ok && start == r.Start
}

// reap drops the runs whose process died (what they left is put back by
// their guardian, or by the sweep of the next session to begin), and
// those of this process that are no longer in it: a state read from the
// older slot, after a write a kill cut short, may still list them.
func (st *sessionState) reap() {
	self := os.Getpid()
	ours.Lock()
	defer ours.Unlock()
	st.Runs = slices.DeleteFunc(st.Runs, func(r sessionRun) bool {
		if r.PID == self && r.Start == selfStart() {
			return !ours.m[r.ID]
		}
		return !r.live()
	})
}

// ours are the ids of this process's runs in a session.
var ours = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// addChanges records changes found in the session.
func (st *sessionState) addChanges(changes []string) {
	st.Changed = append(st.Changed, changes...)
	if over := len(st.Changed) - maxChanged; over > 0 {
		st.Changed = slices.Delete(st.Changed, 0, over)
		st.ChangedFrom += over
	}
}

// since are the changes recorded from mark on.
func (st *sessionState) since(mark int) []string {
	i := mark - st.ChangedFrom
	if i < 0 {
		return append([]string{fmt.Sprintf("(%d earlier changes, no longer listed)", -i)}, st.Changed...)
	}
	if i > len(st.Changed) {
		return nil
	}
	return slices.Clone(st.Changed[i:])
}

// joinSession joins the workspace's session, beginning one when no run
// of any process is in it: the lock is held for that only. whole is
// whether the run's rung guards the whole protected set (it cannot bind
// it read-only); runs that do and runs that do not never share a session.
//
// A run that may write needs the repository metadata in the baseline: the
// first such run to join takes it, when the session's runs so far could
// not write.
func joinSession(ctx context.Context, ws string, whole, writes bool) (*session, error) {
	f, err := openSessionFile(ws)
	if err != nil {
		return nil, err
	}
	unlock, err := lockWorkspace(ctx, ws)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := f.read()
	if err != nil {
		return nil, err
	}
	var g *baseline
	if st != nil {
		st.reap()
	}
	if st == nil || len(st.Runs) == 0 {
		if st, g, err = beginSession(f, st, whole, writes); err != nil {
			return nil, err
		}
	} else {
		// A landlock run can change the protected files while it runs
		// (they are put back after), so a bwrap run beside it could not
		// trust the paths it binds; and a landlock run needs a baseline of
		// the whole set, which a bwrap session does not take.
		if whole != st.Whole {
			return nil, refuse(Unavailable, "runs on the %s rung hold the workspace's session, and runs on the bwrap and the landlock rungs never share one (a landlock command can change the protected files, which a bwrap run binds): run this one when they have ended", map[bool]string{true: "landlock or none", false: "bwrap"}[st.Whole])
		}
		if g, err = f.readBaseline(st); err != nil {
			return nil, err
		}
		if time.Since(st.BaselineAt) >= rebaselineEvery || st.BaselineAt.After(time.Now()) {
			if g, err = rebaseline(f, st, g); err != nil {
				return nil, err
			}
		}
		if writes && g.Repos == nil {
			// The session's runs so far could not write: the workspace is
			// as it was when the session began.
			repos, err := scanRepos(ws, true, nil, nil, nil)
			if err != nil {
				return nil, err
			}
			g = &baseline{Guard: g.Guard, Repos: repos}
			at := st.BaselineAt // the guard is not taken again
			if err := f.writeBaseline(st, g); err != nil {
				return nil, refuse(Unavailable, "writing the session's baseline %s: %v", f.base, err)
			}
			st.BaselineAt = at
		}
		// A protected path that appeared in the session is bound from now
		// on, by descriptor and without following a link: a link planted
		// there refuses the run rather than being followed.
		for _, rel := range existing(ws, protectedPaths(ws)) {
			if !slices.Contains(st.Protected, rel) {
				st.Protected = append(st.Protected, rel)
			}
		}
	}
	s := &session{ws: ws, id: newRunID(), whole: whole, baseline: g, protected: existing(ws, st.Protected), mark: st.ChangedFrom + len(st.Changed), others: len(st.Runs) > 0}
	st.Runs = append(st.Runs, sessionRun{ID: s.id, PID: os.Getpid(), Start: selfStart()})
	ours.Lock()
	ours.m[s.id] = true
	ours.Unlock()
	if err := f.write(st); err != nil {
		ours.Lock()
		delete(ours.m, s.id)
		ours.Unlock()
		return nil, refuse(Unavailable, "writing the workspace's session %s: %v", f.base, err)
	}
	return s, nil
}

// beginSession puts back what runs of a rein that died left behind, makes
// .git/hooks and .git/worktrees where a repository has none and .rein where the workspace
// has none, and takes the baseline and the protected paths of a new
// session after prev (nil for none). The caller holds the lock.
func beginSession(f *sessionFile, prev *sessionState, whole, writes bool) (*sessionState, *baseline, error) {
	ws := f.ws
	// Before the baseline is taken, or the baseline would hold their
	// plants; to the last session's baseline, where there is one.
	var last *baseline
	if prev != nil {
		last, _ = f.readBaseline(prev)
	}
	sweep(ws, last)
	if fi, err := os.Lstat(filepath.Join(ws, ".git")); err == nil && fi.IsDir() {
		for _, d := range []string{"hooks", "worktrees"} {
			if err := os.Mkdir(filepath.Join(ws, ".git", d), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, nil, refuse(Unavailable, "creating .git/%s to protect it: %v", d, err)
			}
		}
	}
	// rein's own directory is made where the workspace has none, so that
	// it is bound read-only like the rest: a command cannot create a
	// policy, or a link to another project's, for the next rein to read.
	// A workspace rein cannot write is one its commands cannot either.
	if err := os.Mkdir(filepath.Join(ws, ".rein"), 0o755); err != nil && !errors.Is(err, os.ErrExist) && !errors.Is(err, os.ErrPermission) && !errors.Is(err, syscall.EROFS) {
		return nil, nil, refuse(Unavailable, "creating .rein to protect it: %v", err)
	}
	// On the bwrap rung the protected paths are bind mounts and only git's
	// redirections and the agents' configuration need guarding; on the
	// others the whole protected set is kept and put back.
	guard, err := newGuard(ws, whole)
	if err != nil {
		return nil, nil, err
	}
	g := &baseline{Guard: guard}
	if writes {
		if g.Repos, err = scanRepos(ws, true, nil, nil, nil); err != nil {
			return nil, nil, err
		}
	}
	st := &sessionState{Version: sessionVersion, Workspace: ws, Whole: whole, Began: time.Now(), Protected: existing(ws, protectedPaths(ws))}
	if prev != nil {
		// The new baseline goes to the slot the old state does not name,
		// and the new state after the old one.
		st.Seq, st.Baseline, st.BaselineSlot = prev.Seq, prev.Baseline, prev.BaselineSlot
	}
	if err := f.writeBaseline(st, g); err != nil {
		return nil, nil, refuse(Unavailable, "writing the session's baseline %s: %v", f.base, err)
	}
	return st, g, nil
}

// rebaseline takes the session's guard again: what differs from the old
// one was changed while the session's runs went on, by one of them or on
// the host. It is not put back (the host's own edits stay) but recorded,
// so that every run that was going on reports it. The repository metadata
// below the top is kept as it was.
func rebaseline(f *sessionFile, st *sessionState, old *baseline) (*baseline, error) {
	guard, err := newGuard(f.ws, st.Whole)
	if err != nil {
		return nil, err
	}
	g := &baseline{Guard: guard}
	var changed []string
	for rel, e := range guard.Entries {
		if was, ok := old.Guard.Entries[rel]; !ok || !same(was, e) {
			changed = append(changed, rel)
		}
	}
	for rel := range old.Guard.Entries {
		if _, ok := guard.Entries[rel]; !ok {
			changed = append(changed, rel)
		}
	}
	// The repository metadata below the top is not taken again: what a
	// command still running planted there (a nested repository's hook,
	// an fsmonitor) would be kept, and it executes. It stays the
	// session's first, and every run's end puts it back.
	g.Repos = old.Repos
	slices.Sort(changed)
	var pids []string
	for _, r := range st.Runs {
		if p := strconv.Itoa(r.PID); !slices.Contains(pids, p) {
			pids = append(pids, p)
		}
	}
	for i, rel := range changed {
		changed[i] = fmt.Sprintf("%s (changed while the session's runs went on, by one of them (rein pid %s) or on the host; %s)", rel, strings.Join(pids, ", "), keptNote)
	}
	st.addChanges(changed)
	if err := f.writeBaseline(st, g); err != nil {
		return nil, refuse(Unavailable, "writing the session's baseline %s: %v", f.base, err)
	}
	return g, nil
}

// keptNote ends the report of a change the session took as its new
// baseline rather than put back.
const keptNote = "kept as the new baseline"

func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// restore puts the protected files back to the session's baseline and
// names what was found changed since the run joined: by this run's end or
// another's, in this process or another, since runs side by side cannot
// tell whose it was.
func (s *session) restore() []string {
	f, err := openSessionFile(s.ws)
	var unlock func()
	if err == nil {
		unlock, err = lockWorkspace(context.Background(), s.ws)
	}
	if err != nil {
		// Without the session's state, the baseline this run joined with.
		return dedupe(s.baseline.restore())
	}
	// Under the lock: two runs' ends never put back at once.
	defer unlock()
	st, err := f.read()
	g := s.baseline
	if err == nil && st != nil {
		if b, err := f.readBaseline(st); err == nil {
			g = b
		}
	}
	fixed := g.restore()
	if err != nil || st == nil {
		return dedupe(fixed)
	}
	runs := len(st.Runs)
	st.reap()
	st.addChanges(fixed)
	s.mu.Lock()
	s.others = s.others || slices.ContainsFunc(st.Runs, func(r sessionRun) bool { return r.ID != s.id })
	s.mu.Unlock()
	if len(fixed) > 0 || len(st.Runs) != runs {
		f.write(st)
	}
	return dedupe(st.since(s.mark))
}

// shared reports whether other runs were in the session while this one was.
func (s *session) shared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.others
}

// leave ends the run's part in the session, once; the last run out ends
// the session.
func (s *session) leave() {
	s.mu.Lock()
	if s.left {
		s.mu.Unlock()
		return
	}
	s.left = true
	s.mu.Unlock()
	defer func() {
		ours.Lock()
		delete(ours.m, s.id)
		ours.Unlock()
	}()
	f, err := openSessionFile(s.ws)
	if err != nil {
		return
	}
	unlock, err := lockWorkspace(context.Background(), s.ws)
	if err != nil {
		return
	}
	defer unlock()
	st, err := f.read()
	if err != nil || st == nil {
		return
	}
	st.Runs = slices.DeleteFunc(st.Runs, func(r sessionRun) bool { return r.ID == s.id })
	st.reap()
	// The last run out ends the session: its state stays, with no run,
	// for the next to begin after.
	f.write(st)
}

// putBackForDead puts the protected files and the repository metadata of
// workspace ws back to its session's baseline after a run whose rein
// died, and records what it put back, for the session's runs that were
// going on to report: the guardian's put-back, with the lock held. False
// when there is no session state or baseline to do it from.
func putBackForDead(ws string) bool {
	// Nothing is made here: a workspace with no session state has nothing
	// newer than what the run saved.
	base := filepath.Join(CacheDir(), "sessions", workspaceKey(ws))
	if !fileExistsAt(base+".session.0") && !fileExistsAt(base+".session.1") {
		return false
	}
	key := os.Getenv("REIN_TRACE_KEY")
	if key == "" {
		key = filepath.Join(CacheDir(), "keys", "trace.key")
	}
	if !fileExistsAt(key) {
		return false
	}
	f, err := openSessionFile(ws)
	if err != nil {
		return false
	}
	st, err := f.read()
	if err != nil || st == nil {
		return false
	}
	b, err := f.readBaseline(st)
	if err != nil {
		return false
	}
	fixed := b.restore()
	st.reap()
	if len(fixed) > 0 {
		st.addChanges(fixed)
		f.write(st)
	}
	return true
}

func fileExistsAt(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// sessionRuns is the number of live runs in the workspace's session, for
// tests and reports.
func sessionRuns(ws string) int {
	f, err := openSessionFile(ws)
	if err != nil {
		return 0
	}
	st, err := f.read()
	if err != nil || st == nil {
		return 0
	}
	st.reap()
	return len(st.Runs)
}
