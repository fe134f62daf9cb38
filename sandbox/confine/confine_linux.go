package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

func probe() Support {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 0 {
		abi = 0
	}
	return Support{LandlockABI: abi, Seccomp: seccomp.Supported()}
}

func apply(s Spec) error {
	sup := probe()
	if need := s.RequiredABI(); sup.LandlockABI < need {
		return &Error{Mechanism: MechanismLandlock, Err: &ABIError{Required: need, Found: sup.LandlockABI}}
	}
	if !sup.Seccomp {
		return &Error{Mechanism: MechanismSeccomp, Err: ErrSeccompUnavailable}
	}
	// Everything that can fail for a reason other than the kernel refusing
	// is prepared before the first irreversible step.
	cfg := landlockConfig(s, sup.LandlockABI)
	rules, err := landlockRules(s, cfg)
	if err != nil {
		return err
	}
	filters, err := seccompFilters(s)
	if err != nil {
		return &Error{Mechanism: MechanismSeccomp, Err: err}
	}
	var sv *supervisor
	var metaFilter []unix.SockFilter
	if s.MetadataBeneathReadWrite {
		info, err := arch.GetInfo("")
		if err != nil {
			return &Error{Mechanism: MechanismSeccomp, Err: err}
		}
		if sv, err = newSupervisor(s, info); err != nil {
			return err
		}
		if metaFilter, err = metadataFilter(info, sv.calls); err != nil {
			return &Error{Mechanism: MechanismSeccomp, Err: err}
		}
		// The filter is this thread's alone: the command must be
		// started from it.
		runtime.LockOSThread()
	}

	// no_new_privs on this thread, which Landlock and seccomp need of
	// their caller; the seccomp filter's TSYNC gives it to every other
	// thread (checked below), without a round of signals to each. The
	// filter goes on before the Landlock domain, whose setup it allows.
	// Had from the exec (bubblewrap sets it for its command), it is every
	// thread's: each was cloned from one that had it, and nothing in this
	// process sets it on one thread before here.
	inherited, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &Error{Mechanism: MechanismNoNewPrivs, Err: fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)}
	}
	if err := dropCapabilities(); err != nil {
		return &Error{Mechanism: MechanismCapabilities, Err: err}
	}
	if err := setRlimits(s.Rlimits); err != nil {
		return &Error{Mechanism: MechanismRlimit, Err: err}
	}
	for _, f := range filters {
		if err := loadFilter(f); err != nil {
			return &Error{Mechanism: MechanismSeccomp, Err: err}
		}
	}
	// Checked before Landlock, which leaves /proc/self/task unreadable.
	if inherited != 1 {
		if err := everyThreadNoNewPrivs(); err != nil {
			return &Error{Mechanism: MechanismNoNewPrivs, Err: err}
		}
	}
	if s.LandlockThisThread {
		fd, flags, err := cfg.NewRulesetFD(rules...)
		if err != nil {
			return &Error{Mechanism: MechanismLandlock, Err: err}
		}
		err = ll.LandlockRestrictSelf(fd, flags)
		unix.Close(fd)
		if err != nil {
			return &Error{Mechanism: MechanismLandlock, Err: fmt.Errorf("landlock_restrict_self: %w", err)}
		}
	} else if err := cfg.Restrict(rules...); err != nil {
		return &Error{Mechanism: MechanismLandlock, Err: err}
	}
	// Last, and on this thread only: a filter loaded after it with TSYNC
	// would find the threads' filters diverged.
	if sv != nil {
		if err := sv.start(metaFilter); err != nil {
			return &Error{Mechanism: MechanismSupervisor, Err: err}
		}
	}
	return nil
}

// everyThreadNoNewPrivs checks that every thread of the process has
// no_new_privs, as seccomp's TSYNC sets it.
func everyThreadNoNewPrivs() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // a thread that exited
			}
			return err
		}
		if !strings.Contains(string(data), "\nNoNewPrivs:\t1\n") {
			return fmt.Errorf("thread %s lacks no_new_privs after the seccomp filter's synchronisation", t.Name())
		}
	}
	return nil
}

// allThreadsPrctl runs prctl on every thread: the capability sets are
// per thread, and a thread left out could exec with them intact.
func allThreadsPrctl(option, arg2, arg3 uintptr) error {
	if _, _, e := psx.Syscall6(unix.SYS_PRCTL, option, arg2, arg3, 0, 0, 0); e != 0 {
		return fmt.Errorf("prctl(%d, %d): %w", option, arg2, e)
	}
	return nil
}

// dropCapabilities empties the ambient, bounding, inheritable, permitted and
// effective sets. A root init would otherwise hand the command every
// capability; Landlock and seccomp bound root too, but CAP_NET_ADMIN,
// CAP_SYS_TIME or CAP_MKNOD reach the host in ways neither sees. With
// no_new_privs set and the bounding set empty, no exec can regain them.
func dropCapabilities() error {
	if data, err := os.ReadFile("/proc/thread-self/status"); err == nil && noCapabilities(string(data)) {
		// Nothing to drop (bubblewrap's --cap-drop ALL under no_new_privs
		// leaves every set empty): a thread can only lose capabilities
		// without an exec, so every thread made since this one's exec has
		// none either, and the broadcast to them all is skipped.
		return nil
	}
	err := allThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0)
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	// Dropping from the bounding set needs CAP_SETPCAP; without it the
	// empty permitted set and no_new_privs already keep execve from
	// granting anything.
	//
	// The bounding set matters only at execve, and it is dropped on the
	// calling thread, the one that executes the command: on the other
	// threads, which never exec, no_new_privs and the empty permitted set
	// already make it moot, and a broadcast per capability would cost a
	// stop of every thread forty times over.
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := uintptr(0); c < 64; c++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past CAP_LAST_CAP
			}
			if err != nil {
				return err
			}
		}
	}
	data = [2]unix.CapUserData{}
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

// noCapabilities reports whether a /proc status text shows every
// capability set empty: inheritable, permitted, effective, bounding and
// ambient, each present and zero.
func noCapabilities(status string) bool {
	seen := 0
	for _, line := range strings.Split(status, "\n") {
		name, value, ok := strings.Cut(line, ":\t")
		switch name {
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			if !ok || strings.Trim(value, "0") != "" || value == "" {
				return false
			}
			seen++
		}
	}
	return seen == 5
}

func setRlimits(r Rlimits) error {
	limits := []struct {
		resource int
		value    uint64
		set      bool
	}{
		{unix.RLIMIT_CORE, 0, true},
		{unix.RLIMIT_CPU, r.CPUSeconds, r.CPUSeconds != 0},
		{unix.RLIMIT_NOFILE, r.OpenFiles, r.OpenFiles != 0},
		{unix.RLIMIT_FSIZE, r.FileSize, r.FileSize != 0},
	}
	for _, l := range limits {
		if !l.set {
			continue
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(l.resource, &cur); err != nil {
			return fmt.Errorf("getrlimit(%d): %w", l.resource, err)
		}
		v := min(l.value, cur.Max)
		hard := v
		if l.resource == unix.RLIMIT_CPU && v < cur.Max {
			hard = v + 1
		}
		// syscall.Setrlimit rather than unix.Setrlimit: for RLIMIT_NOFILE
		// it also stops os/exec from restoring the soft limit the Go
		// runtime found at startup in the command.
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: v, Max: hard}); err != nil {
			return fmt.Errorf("setrlimit(%d, %d): %w", l.resource, v, err)
		}
	}
	return nil
}

// landlockPresets holds go-landlock's full configuration per ABI version,
// index 0 for ABI 1.
var landlockPresets = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// landlockConfig handles every filesystem right the kernel knows, so that
// a right newer than the Spec's required ABI (device ioctls at 5, pathname
// unix sockets at 9) is denied rather than left open; TCP connect and bind;
// and the scopes s asks for. UDP is never handled: see Spec.NetworkTCP.
func landlockConfig(s Spec, abi int) landlock.Config {
	preset := landlockPresets[min(abi, len(landlockPresets))-1]
	var scoped landlock.ScopedSet
	if s.ScopeSignals {
		scoped |= ll.ScopeSignal
	}
	if s.ScopeAbstractUnix {
		scoped |= ll.ScopeAbstractUnixSocket
	}
	cfg := landlock.Config{
		HandledAccessFS:  preset.HandledAccessFS,
		HandledAccessNet: ll.AccessNetBindTCP | ll.AccessNetConnectTCP,
		Scoped:           scoped,
	}
	if s.AnyNetwork {
		cfg.HandledAccessNet = 0
	}
	return cfg
}

const (
	readRights  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	fileRights  = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	deviceNodes = ll.AccessFSMakeChar | ll.AccessFSMakeBlock
)

// landlockRules grants ReadOnly and ReadWrite, around Hidden. A path that
// does not exist is an error rather than skipped, so a Spec never silently
// grants less, or later more, than its author read in it.
func landlockRules(s Spec, cfg landlock.Config) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	h := newHolders(s.Hidden)
	add := func(paths []string, rights landlock.AccessFSSet) error {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return &Error{Mechanism: MechanismSpec, Err: fmt.Errorf("cannot grant %s: %w", p, err)}
			}
			r := rights & cfg.HandledAccessFS
			if !fi.IsDir() {
				r &= fileRights
			}
			if h.hidden[p] {
				continue
			}
			if fi.IsDir() && h.holds[p] {
				if err := h.around(&rules, p, r); err != nil {
					return &Error{Mechanism: MechanismSpec, Err: err}
				}
				continue
			}
			rules = append(rules, landlock.PathAccess(r, p))
		}
		return nil
	}
	if err := add(s.ReadOnly, readRights); err != nil {
		return nil, err
	}
	if err := add(s.ReadWrite, cfg.HandledAccessFS&^deviceNodes); err != nil {
		return nil, err
	}
	for _, port := range s.NetworkTCP {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	return rules, nil
}

// holders are the directories that hold hidden paths, beneath which
// nothing is granted whole.
type holders struct {
	hidden, holds map[string]bool
	n             int
}

func newHolders(hidden []string) *holders {
	h := &holders{hidden: map[string]bool{}, holds: map[string]bool{}}
	for _, p := range hidden {
		p = filepath.Clean(p)
		h.hidden[p] = true
		for d := filepath.Dir(p); d != "/" && !h.holds[d]; d = filepath.Dir(d) {
			h.holds[d] = true
		}
	}
	return h
}

// around grants the directory dir only the listing of its entries and
// each entry but the hidden ones rights on its own: a directory holding a
// hidden path in turn, anything else whole. Each entry is opened beneath
// dir without following a link, and granted through its descriptor
// (/proc/self/fd), so that an entry swapped for a link between the listing
// and the grant is never granted where the link leads. The descriptors a
// rule names stay open, close-on-exec, for the life of the process: the
// ruleset opens each rule's path when it is made, and a closed number
// could by then name another file.
func (h *holders) around(rules *[]landlock.Rule, dir string, rights landlock.AccessFSSet) error {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot grant around %s: %w", dir, err)
	}
	return h.aroundFD(rules, dfd, dir, rights)
}

func (h *holders) aroundFD(rules *[]landlock.Rule, dfd int, dir string, rights landlock.AccessFSSet) error {
	self := fmt.Sprintf("/proc/self/fd/%d", dfd)
	*rules = append(*rules, landlock.PathAccess(rights&ll.AccessFSReadDir, self))
	// The listing goes through a descriptor of its own: one opened O_PATH
	// cannot be read.
	lfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot list %s to grant around what it hides: %w", dir, err)
	}
	f := os.NewFile(uintptr(lfd), dir)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("cannot list %s to grant around what it hides: %w", dir, err)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, name)
		if h.hidden[p] {
			continue
		}
		if h.n++; h.n > MaxAround {
			return fmt.Errorf("the directories holding hidden paths have more than %d entries, each granted on its own: move the hidden paths into fewer directories", MaxAround)
		}
		fd, err := unix.Openat2(dfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing: nothing to grant
		}
		if err != nil {
			return fmt.Errorf("cannot open %s to grant it: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fmt.Errorf("cannot stat %s to grant it: %w", p, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			// What a link leads to is reachable where it is granted.
			unix.Close(fd)
		case unix.S_IFDIR:
			if h.holds[p] {
				if err := h.aroundFD(rules, fd, p, rights); err != nil {
					return err
				}
				continue
			}
			*rules = append(*rules, landlock.PathAccess(rights, fmt.Sprintf("/proc/self/fd/%d", fd)))
		default:
			*rules = append(*rules, landlock.PathAccess(rights&fileRights, fmt.Sprintf("/proc/self/fd/%d", fd)))
		}
	}
	return nil
}

// loadFilter installs a seccomp filter on every thread. The filter is
// loaded here rather than with seccomp.LoadFilter because TSYNC reports a
// thread it could not synchronise as a positive return value, not an errno,
// and that must fail the confinement.
func loadFilter(raw []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(raw)), Filter: &raw[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronised", r)
	}
	return nil
}
