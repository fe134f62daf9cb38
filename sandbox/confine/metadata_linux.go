package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Landlock mediates opening, creating, removing, renaming and truncating,
// but not changing the metadata of a file that already exists: chmod,
// chown, utimes and the extended attributes reach every file the command
// owns, through a path or through a descriptor opened read-only (or with
// O_PATH, which Landlock never checks). With Spec.MetadataBeneathReadWrite,
// the calling thread's seccomp filter hands every such call to a
// supervisor thread of this process (SECCOMP_RET_USER_NOTIF). The
// supervisor resolves the call's path or descriptor to a descriptor of its
// own, checks that the file it names lies beneath a ReadWrite directory,
// and makes the change on that descriptor; it answers EPERM otherwise.
// The call is never let through to the kernel (a notification's CONTINUE
// would re-read the path from the command's memory after the check).
//
// The supervisor runs in the caller's process, on a thread outside the
// Landlock domain (Spec.LandlockThisThread), because it must read the
// command's memory through /proc/PID/mem, which the domain does not
// grant. It has the command's identity, no capabilities, and the same
// process-wide seccomp filters, so the change it makes is one the
// command's own call could have made without the check. Being outside
// the domain, it can follow another process's /proc/PID/fd links where
// the command cannot; what it reaches that way is held to the same check
// (see beneath).

// metaOp is what a supervised call changes.
type metaOp int

const (
	opMode metaOp = iota
	opOwner
	opTimes
	opSetXattr
	opRemoveXattr
)

// timesLayout is how a call passes its two times.
type timesLayout int

const (
	timesNone     timesLayout = iota
	timesTimespec             // struct timespec[2] (utimensat)
	timesTimeval              // struct timeval[2] (utimes, futimesat)
	timesUtimbuf              // struct utimbuf (utime)
)

// metaCall says where a supervised call keeps its arguments: the index
// of each in seccomp_data.args, or -1 when it has none.
type metaCall struct {
	op     metaOp
	dirfd  int  // the directory descriptor, or the descriptor of an fd form
	path   int  // the path; -1 for an fd form (fchmod, fsetxattr)
	flags  int  // the AT_ flags
	value  int  // the first argument after the file: mode, uid, times, name
	follow bool // whether a call without flags follows a final symlink
	// nullPathIsFD: a NULL path makes the call act on dirfd
	// (utimensat, futimesat), as futimens does.
	nullPathIsFD bool
	times        timesLayout
}

// metaCalls are the calls the supervisor performs, by name. Names this
// architecture lacks (chmod, utime on arm64) are left out.
var metaCalls = map[string]metaCall{
	"chmod":        {op: opMode, dirfd: -1, path: 0, flags: -1, value: 1, follow: true},
	"fchmod":       {op: opMode, dirfd: 0, path: -1, flags: -1, value: 1},
	"fchmodat":     {op: opMode, dirfd: 0, path: 1, flags: -1, value: 2, follow: true},
	"fchmodat2":    {op: opMode, dirfd: 0, path: 1, flags: 3, value: 2},
	"chown":        {op: opOwner, dirfd: -1, path: 0, flags: -1, value: 1, follow: true},
	"lchown":       {op: opOwner, dirfd: -1, path: 0, flags: -1, value: 1},
	"fchown":       {op: opOwner, dirfd: 0, path: -1, flags: -1, value: 1},
	"fchownat":     {op: opOwner, dirfd: 0, path: 1, flags: 4, value: 2},
	"utime":        {op: opTimes, dirfd: -1, path: 0, flags: -1, value: 1, follow: true, times: timesUtimbuf},
	"utimes":       {op: opTimes, dirfd: -1, path: 0, flags: -1, value: 1, follow: true, times: timesTimeval},
	"futimesat":    {op: opTimes, dirfd: 0, path: 1, flags: -1, value: 2, follow: true, nullPathIsFD: true, times: timesTimeval},
	"utimensat":    {op: opTimes, dirfd: 0, path: 1, flags: 3, value: 2, nullPathIsFD: true, times: timesTimespec},
	"setxattr":     {op: opSetXattr, dirfd: -1, path: 0, flags: -1, value: 1, follow: true},
	"lsetxattr":    {op: opSetXattr, dirfd: -1, path: 0, flags: -1, value: 1},
	"fsetxattr":    {op: opSetXattr, dirfd: 0, path: -1, flags: -1, value: 1},
	"removexattr":  {op: opRemoveXattr, dirfd: -1, path: 0, flags: -1, value: 1, follow: true},
	"lremovexattr": {op: opRemoveXattr, dirfd: -1, path: 0, flags: -1, value: 1},
	"fremovexattr": {op: opRemoveXattr, dirfd: 0, path: -1, flags: -1, value: 1},
}

// metaENOSYS are the newer calls that change the same metadata and that
// the supervisor does not perform: they fail with ENOSYS, so that libc and
// the tools fall back to the calls above.
var metaENOSYS = []uint32{unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTRAT, unix.SYS_FILE_SETATTR}

// Inode flag ioctls (chattr's), which need only ownership of the file,
// not a descriptor open for writing. They are refused everywhere: the
// supervisor does not perform them.
const (
	fsIocSetflags   = 0x40086602 // FS_IOC_SETFLAGS
	fsIoc32Setflags = 0x40046602 // FS_IOC32_SETFLAGS
	fsIocFssetxattr = 0x401c5820 // FS_IOC_FSSETXATTR
)

// atFDCWD is AT_FDCWD as a syscall argument.
var atFDCWD = uintptr(fdcwd)

var fdcwd = unix.AT_FDCWD

// Limits the kernel applies to the arguments, applied the same way.
const (
	pathMax      = unix.PathMax
	xattrNameMax = 255
	xattrSizeMax = 65536
)

// metadataFilter assembles the filter the calling thread gets: each call
// of calls is handed to the supervisor, metaENOSYS fail with ENOSYS and
// the inode flag ioctls with EPERM. Calls of another architecture are left
// to the argument filter, which refuses them.
func metadataFilter(info *arch.Info, calls map[uint32]metaCall) ([]unix.SockFilter, error) {
	ret := func(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }
	notify := ret(unix.SECCOMP_RET_USER_NOTIF)
	allow := ret(unix.SECCOMP_RET_ALLOW)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		allow,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	for _, nr := range slices.Sorted(maps.Keys(calls)) {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, notify)
	}
	for _, nr := range metaENOSYS {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	}
	lo := uint32(offArgs + 8*1)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		lo += 4 // big-endian: the low half of the argument comes second
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IOCTL, SkipTrue: 1},
		allow,
		bpf.LoadAbsolute{Off: lo, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: fsIocSetflags, SkipTrue: 3},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: fsIoc32Setflags, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: fsIocFssetxattr, SkipTrue: 1},
		allow,
		ret(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
	)
	return assemble(prog)
}

// metaCallsByNumber is metaCalls for this architecture.
func metaCallsByNumber(info *arch.Info) map[uint32]metaCall {
	out := make(map[uint32]metaCall, len(metaCalls))
	for name, c := range metaCalls {
		if nr, ok := info.SyscallNames[name]; ok {
			out[uint32(nr)] = c
		}
	}
	return out
}

// supervisor performs the supervised calls of one process's commands.
type supervisor struct {
	// roots are the ReadWrite directories and regular files, each as the
	// kernel names it (symlinks resolved), without a trailing slash but
	// for "/".
	roots []string
	// hidden are the protected paths left out of the ruleset (Spec.Hidden):
	// beneath a root, but not the command's to change.
	hidden []string
	calls  map[uint32]metaCall
	// selfMem reads this process's own memory: its /proc files belong to
	// root once it is not dumpable, so an ordinary user could not open
	// it then.
	selfMem int
}

// newSupervisor prepares a supervisor for s, before anything irreversible:
// the roots are resolved while the caller can still see them, and the
// kernel is checked for the calls the supervisor makes.
func newSupervisor(s Spec, info *arch.Info) (*supervisor, error) {
	sv := &supervisor{calls: metaCallsByNumber(info), selfMem: -1}
	// The init is not dumpable (so no command reads its memory), which
	// makes its /proc files root's: open its own memory now, dumpable for
	// the moment it takes. No command runs yet.
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil {
		if d == 0 {
			unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
		sv.selfMem, err = unix.Open("/proc/self/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if d == 0 {
			if perr := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); perr != nil {
				return nil, &Error{Mechanism: MechanismSupervisor, Err: fmt.Errorf("making the init not dumpable again: %w", perr)}
			}
		}
		if err != nil {
			sv.selfMem = -1
		}
	}
	for _, h := range s.Hidden {
		sv.hidden = append(sv.hidden, filepath.Clean(h))
	}
	for _, p := range s.ReadWrite {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &Error{Mechanism: MechanismSpec, Err: fmt.Errorf("cannot grant %s: %w", p, err)}
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		name, lerr := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		unix.Close(fd)
		if err != nil || lerr != nil {
			return nil, &Error{Mechanism: MechanismSupervisor, Err: fmt.Errorf("resolving %s: %w", p, errors.Join(err, lerr))}
		}
		// A device granted read-write (/dev/null) is written, never
		// re-moded: its metadata is the host's.
		if t := st.Mode & unix.S_IFMT; t == unix.S_IFDIR || t == unix.S_IFREG {
			sv.roots = append(sv.roots, name)
		}
	}
	// fchmodat2 (Linux 6.6) is how the supervisor changes a mode through
	// its own descriptor; EBADF says the kernel knows the call.
	empty := [1]byte{}
	if _, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, ^uintptr(0), uintptr(unsafe.Pointer(&empty[0])), 0, unix.AT_EMPTY_PATH, 0, 0); e != unix.EBADF {
		return nil, &Error{Mechanism: MechanismSupervisor, Err: fmt.Errorf("fchmodat2 is not available (%v)", e)}
	}
	return sv, nil
}

// start installs the filter on the calling thread and serves its
// notifications from a thread of their own, which exists before the
// filter does and so never carries it. It returns once a call made
// through the filter has been answered by the supervisor.
func (sv *supervisor) start(filter []unix.SockFilter) error {
	listener := make(chan int)
	ready := make(chan struct{})
	go func() {
		// For good: a goroutine that unlocked could move to a thread
		// that carries the filter, and deadlock on its own calls.
		runtime.LockOSThread()
		close(ready)
		fd, ok := <-listener
		if ok {
			sv.serve(fd)
		}
	}()
	<-ready
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// WAIT_KILLABLE_RECV: once the supervisor has the call, a signal
	// other than SIGKILL does not interrupt it (Go programs are sent
	// SIGURG all the time), so no change is made twice.
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		close(listener)
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER|WAIT_KILLABLE_RECV): %w", e)
	}
	listener <- int(fd)
	// An empty path without AT_EMPTY_PATH is ENOENT: the supervisor read
	// this thread's memory and answered.
	empty := [1]byte{}
	if _, _, e := unix.Syscall(unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(&empty[0])), 0); e != unix.ENOENT {
		return fmt.Errorf("the supervisor's answer to a probe was %v, not ENOENT", e)
	}
	return nil
}

// seccompNotif is the kernel's struct seccomp_notif, its seccomp_data
// inline.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// seccompNotifResp is the kernel's struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// serve answers notifications until the listener fails; it then closes
// it, and every supervised call fails with ENOSYS from then on.
func (sv *supervisor) serve(listener int) {
	defer unix.Close(listener)
	for {
		var req seccompNotif
		if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
			if err == unix.EINTR || err == unix.ENOENT {
				continue // a signal, or a caller gone before it was received
			}
			return
		}
		resp := seccompNotifResp{ID: req.ID}
		if errno := sv.handle(listener, &req); errno != 0 {
			resp.Error = -int32(errno)
		}
		// ENOENT: the caller died meanwhile.
		ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// handle performs one call and returns its errno.
func (sv *supervisor) handle(listener int, req *seccompNotif) unix.Errno {
	c, ok := sv.calls[uint32(req.Nr)]
	if !ok {
		return unix.ENOSYS
	}
	proc := "/proc/" + strconv.FormatUint(uint64(req.Pid), 10)
	var mem int
	if _, err := os.Lstat("/proc/self/task/" + strconv.FormatUint(uint64(req.Pid), 10)); err == nil && sv.selfMem >= 0 {
		// A thread of this process (the probe): read through the
		// descriptor opened while it was dumpable.
		mem = sv.selfMem
	} else {
		var err error
		if mem, err = unix.Open(proc+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			// A caller that made itself non-dumpable cannot be read.
			return unix.EPERM
		}
		defer unix.Close(mem)
	}
	a := req.Args
	f, direct, errno := sv.resolve(mem, proc, c, a)
	if errno != 0 {
		return errno
	}
	defer unix.Close(f)
	// The descriptors above are the caller's only if it is still waiting
	// for this answer: a pid reused meanwhile is another process.
	if ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return unix.ENOENT
	}
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return errnoOf(err)
	}
	if !sv.beneath(f, &st, direct) {
		return unix.EPERM
	}
	return sv.perform(mem, f, &st, c, a)
}

// resolve opens, with O_PATH, the file the call names, as the kernel
// would resolve it for the caller. direct says that the file is the one
// of a descriptor of the caller's, not found by a path.
func (sv *supervisor) resolve(mem int, proc string, c metaCall, a [6]uint64) (fd int, direct bool, errno unix.Errno) {
	var flags uint32
	follow := c.follow
	if c.flags >= 0 {
		flags = uint32(a[c.flags])
		if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return -1, false, unix.EINVAL
		}
		follow = flags&unix.AT_SYMLINK_NOFOLLOW == 0
	}
	dirfd := int32(unix.AT_FDCWD)
	if c.dirfd >= 0 {
		dirfd = int32(a[c.dirfd])
	}
	// The caller's descriptor, or its working directory.
	base := func() (int, unix.Errno) {
		name := proc + "/cwd"
		if dirfd != unix.AT_FDCWD {
			if dirfd < 0 {
				return -1, unix.EBADF
			}
			name = proc + "/fd/" + strconv.Itoa(int(dirfd))
		}
		fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT {
			return -1, unix.EBADF
		}
		if err != nil {
			return -1, unix.EPERM
		}
		return fd, 0
	}
	// The descriptor of an fd form, which must not be an O_PATH one
	// (the kernel answers EBADF; the supervisor's own descriptor would
	// not).
	fdForm := func() (int, unix.Errno) {
		if dirfd < 0 {
			return -1, unix.EBADF
		}
		info, err := os.ReadFile(proc + "/fdinfo/" + strconv.Itoa(int(dirfd)))
		if err != nil {
			return -1, unix.EBADF
		}
		_, rest, _ := strings.Cut(string(info), "flags:\t")
		rest, _, _ = strings.Cut(rest, "\n")
		if fl, err := strconv.ParseUint(rest, 8, 32); err != nil || fl&unix.O_PATH != 0 {
			return -1, unix.EBADF
		}
		return base()
	}
	if c.path < 0 {
		fd, errno := fdForm()
		return fd, true, errno
	}
	ptr := a[c.path]
	if ptr == 0 {
		if c.nullPathIsFD && dirfd != unix.AT_FDCWD {
			if flags != 0 {
				return -1, false, unix.EINVAL
			}
			fd, errno := fdForm()
			return fd, true, errno
		}
		return -1, false, unix.EFAULT
	}
	path, errno := readString(mem, ptr, pathMax)
	if errno == unix.ERANGE {
		errno = unix.ENAMETOOLONG
	}
	if errno != 0 {
		return -1, false, errno
	}
	if path == "" {
		if flags&unix.AT_EMPTY_PATH == 0 {
			return -1, false, unix.ENOENT
		}
		fd, errno := base()
		return fd, true, errno
	}
	// The caller's /proc/self is not the supervisor's: a path through it
	// (chmod /proc/self/fd/3) names the caller's descriptor. One that
	// reaches /proc/self another way (from a working directory of /proc)
	// names the supervisor's: its working directory or a descriptor of
	// /proc or seccomp's, which the check below refuses or, for the
	// working directory, allows only beneath a ReadWrite directory.
	for _, self := range []string{"/proc/self", "/proc/thread-self"} {
		if rest, ok := strings.CutPrefix(path, self); ok && (rest == "" || rest[0] == '/') {
			path = proc + rest
			break
		}
	}
	at := unix.AT_FDCWD
	if path[0] != '/' {
		fd, errno := base()
		if errno != 0 {
			return -1, false, errno
		}
		defer unix.Close(fd)
		at = fd
	}
	oflags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		oflags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(at, path, oflags, 0)
	if err != nil {
		return -1, false, errnoOf(err)
	}
	return fd, false, 0
}

// beneath reports whether the file f may have its metadata changed: it
// is or lies beneath a ReadWrite directory or regular file, or it has no
// name at all (a file unlinked, or made with O_TMPFILE or memfd_create),
// so that no path outside leads to it, and it is the caller's own
// (direct): a path through another process's /proc/PID/fd, which the
// supervisor, outside the Landlock domain, could follow where the caller
// cannot, must not reach that process's unnamed files.
//
// The kernel's own name for f (its /proc/self/fd link) is the check: it
// is where f is in the mount tree now, and the command cannot move a file
// across the edge of its ReadWrite directories (Landlock refuses the
// rename at either end). The change is then made on f itself, never on a
// path resolved again.
func (sv *supervisor) beneath(f int, st *unix.Stat_t, direct bool) bool {
	if st.Nlink == 0 {
		return direct
	}
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(f))
	if err != nil || !strings.HasPrefix(name, "/") {
		return false // a pipe, a socket, a name too long to check
	}
	for _, h := range sv.hidden {
		if name == h || strings.HasPrefix(name, h+"/") {
			return false // a protected file: hidden, and kept as it is
		}
	}
	for _, r := range sv.roots {
		if r == "/" || name == r || strings.HasPrefix(name, r+"/") {
			return true
		}
	}
	return false
}

// perform makes the change on f, with the caller's arguments read from
// its memory.
func (sv *supervisor) perform(mem, f int, st *unix.Stat_t, c metaCall, a [6]uint64) unix.Errno {
	v := a[c.value:]
	empty := [1]byte{}
	switch c.op {
	case opMode:
		_, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(f), uintptr(unsafe.Pointer(&empty[0])), uintptr(uint16(v[0])), unix.AT_EMPTY_PATH, 0, 0)
		return e
	case opOwner:
		return errnoOf(unix.Fchownat(f, "", int(int32(v[0])), int(int32(v[1])), unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))
	case opTimes:
		ts, errno := readTimes(mem, v[0], c.times)
		if errno != 0 {
			return errno
		}
		var p unsafe.Pointer
		if ts != nil {
			p = unsafe.Pointer(&ts[0])
		}
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(f), uintptr(unsafe.Pointer(&empty[0])), uintptr(p), unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		return e
	}
	name, errno := readString(mem, v[0], xattrNameMax+1)
	if errno != 0 {
		return errno
	}
	if name == "" {
		return unix.ERANGE
	}
	// Extended attributes are set through the descriptor's /proc link,
	// which leads to f itself. Symlinks carry none a process without
	// capabilities may set (user.* is refused on them).
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EPERM
	}
	link := "/proc/self/fd/" + strconv.Itoa(f)
	if c.op == opRemoveXattr {
		return errnoOf(unix.Removexattr(link, name))
	}
	size := v[2]
	if size > xattrSizeMax {
		return unix.E2BIG
	}
	value := make([]byte, size)
	if size > 0 {
		if n, err := unix.Pread(mem, value, int64(v[1])); err != nil || uint64(n) != size {
			return unix.EFAULT
		}
	}
	return errnoOf(unix.Setxattr(link, name, value, int(int32(v[3]))))
}

// readTimes reads the caller's two times as timespecs; nil means now.
func readTimes(mem int, ptr uint64, layout timesLayout) (*[2]unix.Timespec, unix.Errno) {
	if ptr == 0 {
		return nil, 0
	}
	var raw [4]int64
	n := 32
	if layout == timesUtimbuf {
		n = 16
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&raw[0])), n)
	if got, err := unix.Pread(mem, buf, int64(ptr)); err != nil || got != n {
		return nil, unix.EFAULT
	}
	var ts [2]unix.Timespec
	switch layout {
	case timesTimespec:
		ts = [2]unix.Timespec{{Sec: raw[0], Nsec: raw[1]}, {Sec: raw[2], Nsec: raw[3]}}
	case timesTimeval:
		for i := range 2 {
			usec := raw[2*i+1]
			if usec < 0 || usec >= 1e6 {
				return nil, unix.EINVAL
			}
			ts[i] = unix.Timespec{Sec: raw[2*i], Nsec: usec * 1000}
		}
	case timesUtimbuf:
		ts = [2]unix.Timespec{{Sec: raw[0]}, {Sec: raw[1]}}
	}
	return &ts, 0
}

// readString reads a NUL-terminated string of fewer than max bytes from
// the caller's memory, a page at most at a time so that a string ending
// before an unmapped page is read whole. ERANGE means it is longer.
func readString(mem int, ptr uint64, max int) (string, unix.Errno) {
	const page = 4096
	var out []byte
	for len(out) < max {
		chunk := page - int(ptr%page)
		buf := make([]byte, chunk)
		n, err := unix.Pread(mem, buf, int64(ptr))
		if err != nil || n <= 0 {
			return "", unix.EFAULT
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			out = append(out, buf[:i]...)
			if len(out) >= max {
				return "", unix.ERANGE
			}
			return string(out), 0
		}
		out = append(out, buf[:n]...)
		ptr += uint64(n)
	}
	return "", unix.ERANGE
}

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}
