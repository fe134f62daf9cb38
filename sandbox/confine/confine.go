// Package confine is the irreversible self-confinement rein's in-sandbox
// init applies to itself just before it executes a command: no_new_privs,
// an empty capability set, rlimits, a Landlock domain and a seccomp filter.
// Everything it applies is inherited across fork and exec and cannot be
// undone, so whatever the command runs stays inside it.
//
// The package owns the mechanism only. It receives a plain [Spec] and never
// learns why a path or a port was granted: it must not import rein's policy,
// tool or trace packages, and it imports nothing of rein at all.
//
// Apply fails closed. If the kernel cannot enforce every part of a Spec,
// Apply returns an [*Error] and the caller must not run the command; there
// is no best-effort mode.
//
// What the mechanisms leave open, and the rung above must close by other
// means (namespaces, a private /tmp, bind mounts): Landlock below ABI 9
// does not restrict connecting to pathname unix sockets, so a socket such
// as /run/docker.sock or an ssh-agent socket is reachable wherever it is;
// System V IPC (shmget, msgget, semget) is not scoped by Landlock (the
// NoSysVIPC and NoUnixSockets options close both with seccomp, for a
// process without namespaces of its own); /proc of other processes is
// denied only because it is not granted. Landlock does not mediate
// changes of mode, owner, times and extended attributes either
// (MetadataBeneathReadWrite closes that with a supervisor), nor stat,
// reading extended attributes and flock, which stay open wherever a path
// leads.
package confine

import (
	"errors"
	"fmt"
	"strings"
)

// Spec is what the confinement grants. Everything it does not name is
// denied: the filesystem outside ReadOnly and ReadWrite, every TCP port not
// in NetworkTCP, and the syscalls of the seccomp filter whatever the Spec.
type Spec struct {
	// ReadOnly lists absolute paths (directories or files) the command may
	// read, list and execute beneath, for example "/usr" or "/etc".
	//
	// There is no separate list of executable paths: execution is granted
	// wherever reading is, in ReadOnly and ReadWrite alike. A file that can
	// be read can be run anyway, through an interpreter or the dynamic
	// loader ("ld.so ./prog" maps it without execve), so denying execve
	// beneath a readable path would add no protection.
	ReadOnly []string

	// ReadWrite lists absolute paths the command may read, execute, create,
	// write, truncate, rename within, link within and remove beneath, for
	// example the workspace and a private /tmp. Device nodes can never be
	// created, even here, and the seccomp filter refuses to create or chmod
	// setuid and setgid files.
	ReadWrite []string

	// Hidden lists absolute paths beneath ReadOnly and ReadWrite entries
	// the command may not reach at all (secrets kept in a workspace).
	// Landlock cannot deny beneath a granted directory, so a granted
	// directory that holds a hidden path is granted only the listing of
	// its entries, and each entry but the hidden one is granted on its
	// own, as deep as needed; links among those entries are not followed
	// and not granted. Entries made in such a directory while the command
	// runs get only what the directory has: they can be listed, never
	// read, written or executed; the directory's entries cannot be made,
	// removed or renamed either, so a hidden file cannot be given a name
	// the next listing would grant.
	Hidden []string

	// NetworkTCP lists the TCP ports the command may connect to. Empty means
	// no network at all: Landlock denies every TCP connect and bind, and the
	// seccomp filter refuses AF_INET and AF_INET6 sockets, so UDP and raw
	// sockets are refused too. AF_PACKET sockets are refused whatever the
	// list; unix sockets are not inet and stay allowed.
	//
	// With ports listed, inet and inet6 sockets are allowed for TCP only
	// (stream sockets of protocol 0 or IPPROTO_TCP; UDP, raw and every
	// other inet socket is refused by the seccomp filter, and so is TCP
	// Fast Open, whose connect from sendto Landlock does not check), and Landlock
	// allows TCP connect only to those ports and denies every TCP bind.
	// Landlock restricts the port, not the address: a listed port is
	// reachable on every address the host can route to, so a caller that
	// grants one must either listen on it itself in a network namespace
	// of the command's own, or accept that the same port elsewhere is
	// reachable too.
	NetworkTCP []uint16

	// NoListen refuses listen(2): without a network namespace of its own
	// (the landlock rung) a socket the command listens on without binding
	// it first gets a port of the host's, on every address, which Landlock,
	// checking only bind(2), does not see.
	NoListen bool

	// AnyNetwork leaves inet and inet6 sockets of every type open (TCP to
	// every port, UDP) and NetworkTCP unused: for a command whose network
	// namespace is isolated another way, such as one whose only way out is
	// a user-mode network stack. Packet and vsock sockets stay refused.
	AnyNetwork bool

	// ScopeSignals forbids sending signals to processes outside the
	// confinement, such as the init's parent or the user's shell. It needs
	// Landlock ABI 6.
	ScopeSignals bool

	// ScopeAbstractUnix forbids connecting to abstract unix sockets
	// ("@name") created outside the confinement, such as those of the
	// session bus or an X server. It needs Landlock ABI 6.
	ScopeAbstractUnix bool

	// NoUnixSockets refuses to create unix sockets with socket(2), so that
	// no pathname socket of the host (docker, an ssh agent, a session bus)
	// can be connected to even where Landlock cannot restrict that (below
	// ABI 9) and no mount namespace hides them. socketpair(2) still works:
	// a connected pair reaches nothing outside. For a process that runs in
	// the host's own namespaces (the landlock rung).
	NoUnixSockets bool

	// NoSysVIPC refuses System V message queues, semaphores and shared
	// memory, which no Landlock scope covers: without an IPC namespace of
	// its own, the command would reach the host's. POSIX shared memory
	// lives in /dev/shm and is denied because it is not granted.
	NoSysVIPC bool

	// LandlockThisThread enforces the Landlock domain on the calling
	// thread only; no_new_privs, capabilities, rlimits and seccomp still
	// reach every thread. Below Landlock ABI 8 a domain enforced thread by
	// thread gives each thread a domain of its own, and signal scoping
	// then forbids a thread to signal what another thread started. An
	// init whose other threads must kill the command's tree (on the death
	// of its parent) sets this and starts the command from the calling
	// thread only; its other threads run only its own code.
	LandlockThisThread bool

	// MetadataBeneathReadWrite confines changes of a file's mode, owner,
	// times and extended attributes (chmod, chown, utimes, setxattr,
	// removexattr, in their path and descriptor forms) to files beneath a
	// ReadWrite directory (or to a ReadWrite regular file); elsewhere
	// they fail with EPERM. Landlock does
	// not mediate them: without this, a command could chmod, touch or
	// tag any file its user owns, such as ~/.ssh/id_rsa, through a path or
	// a descriptor opened read-only. A supervisor thread of the calling
	// process makes each change on the command's behalf (seccomp user
	// notification); see metadata_linux.go. The inode flag ioctls
	// (chattr) are refused everywhere.
	//
	// It needs LandlockThisThread (the supervisor thread must stay
	// outside the domain to read the command's memory), Linux 6.6, and
	// the command started from the calling thread, which Apply then
	// leaves locked to its goroutine for good. The supervisor lives as
	// long as the process: once it is gone, the calls fail with ENOSYS.
	// A device granted read-write (/dev/null) keeps its metadata: it is
	// the host's.
	MetadataBeneathReadWrite bool

	// Rlimits bounds what a single process may consume.
	Rlimits Rlimits
}

// MaxAround bounds the entries granted one by one around Spec.Hidden;
// past it Apply refuses the Spec.
const MaxAround = 8192

// Rlimits are per-process resource limits, set as both soft and hard limit
// so that the command cannot raise them again, but for CPU time, whose
// hard limit is one second above the soft one: at the soft limit the
// kernel sends SIGXCPU, which names the cause when it kills the process,
// and at the hard limit SIGKILL, for a process that caught the first. A
// zero field leaves the inherited limit in place, except that core dumps
// are always disabled: a core file would copy the command's memory,
// secrets included, to disk.
//
// The limits apply to the calling process too, from the moment they are
// set: CPU time the init has already used counts towards CPUSeconds.
// When a limit is already lower than asked, the lower one is kept.
type Rlimits struct {
	CPUSeconds uint64 `json:"cpu_seconds,omitempty"` // RLIMIT_CPU; SIGXCPU at the limit, SIGKILL a second later
	OpenFiles  uint64 `json:"open_files,omitempty"`  // RLIMIT_NOFILE; open and socket fail with EMFILE beyond it
	FileSize   uint64 `json:"file_size,omitempty"`   // RLIMIT_FSIZE in bytes; a write beyond it raises SIGXFSZ, or fails with EFBIG where that is caught
}

// SetRlimits sets r on the calling process, which its children inherit;
// Apply does it too. It is for the rung with nothing else to apply.
func SetRlimits(r Rlimits) error {
	return setRlimits(r)
}

// RequiredABI reports the lowest Landlock ABI version that can enforce s.
// Every Spec restricts the filesystem, including truncation (ABI 3), and TCP
// (ABI 4); the scopes need ABI 6.
func (s Spec) RequiredABI() int {
	if s.ScopeSignals || s.ScopeAbstractUnix {
		return 6
	}
	return 4
}

// Support is what this host can enforce, as rein doctor reports it.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 when Landlock is
	// not built in or not enabled at boot.
	LandlockABI int
	// Seccomp reports whether seccomp filters can be installed.
	Seccomp bool
}

// Probe reports what this host can enforce. It changes nothing.
func Probe() Support {
	return probe()
}

// Apply confines the calling process irreversibly: it sets no_new_privs,
// drops every capability, sets the rlimits, enforces a Landlock domain for
// s and installs the seccomp filter, in that order, on every thread of the
// process.
//
// Apply is meant for a process that is about to exec the command. Call it
// from a goroutine locked to its OS thread (runtime.LockOSThread) and exec
// from that same goroutine. Every mechanism reaches every thread of the
// process: rlimits are per process, capabilities and Landlock go through
// all-threads enforcement (the psx mechanism, or Landlock's TSYNC from ABI
// 8), seccomp uses SECCOMP_FILTER_FLAG_TSYNC, which also gives every thread
// the caller's no_new_privs (Apply checks that each has it). Locking still
// matters because the thread that calls execve is the one whose state the
// command inherits, and a locked goroutine makes that the thread Apply ran
// on. After Apply the process itself is confined: it can no longer open
// what s does not grant.
//
// When any mechanism is missing or too old for s, Apply returns an *Error
// before it changes anything. If an error comes later, the process is
// partly confined and must exit rather than run the command.
func Apply(s Spec) error {
	if err := s.validate(); err != nil {
		return err
	}
	return apply(s)
}

// Mechanisms, as named by [Error.Mechanism].
const (
	MechanismSpec         = "spec"
	MechanismNoNewPrivs   = "no_new_privs"
	MechanismCapabilities = "capabilities"
	MechanismRlimit       = "rlimit"
	MechanismLandlock     = "landlock"
	MechanismSeccomp      = "seccomp"
	MechanismSupervisor   = "supervisor"
	MechanismPlatform     = "platform"
)

// remedy says, per mechanism, what the user can do about a failure.
var remedy = map[string]string{
	MechanismSpec:         "fix the execution profile that produced it",
	MechanismNoNewPrivs:   "the kernel refused prctl(PR_SET_NO_NEW_PRIVS), or a thread did not get it from the seccomp filter's synchronisation; run on Linux 3.5 or later, and report the second",
	MechanismCapabilities: "the process could not drop its capabilities; do not run rein's init under a capability-restricting wrapper that forbids capset",
	MechanismRlimit:       "lower or remove the limit in the configuration",
	MechanismLandlock:     "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= boot parameter, Linux 6.7 or later for ABI 4, 6.12 for ABI 6), or use the bwrap rung",
	MechanismSeccomp:      "run on a kernel built with CONFIG_SECCOMP_FILTER, outside any container policy that forbids installing filters",
	MechanismSupervisor:   "run on Linux 6.6 or later (seccomp user notification with killable waits, fchmodat2) with /proc mounted, or use the bwrap rung",
	MechanismPlatform:     "use a Linux host, or sandbox = \"none\" if you accept running unconfined",
}

// Error is a confinement that could not be applied. Err says what failed;
// Error() also says what to do about it.
type Error struct {
	Mechanism string // one of the Mechanism constants
	Err       error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("confine: %s: %v", e.Mechanism, e.Err)
	if r, ok := remedy[e.Mechanism]; ok {
		msg += "; " + r
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ABIError is a Spec that needs a newer Landlock ABI than the kernel offers.
type ABIError struct {
	Required int // the ABI the Spec needs, from Spec.RequiredABI
	Found    int // the kernel's ABI; 0 when Landlock is unavailable
}

func (e *ABIError) Error() string {
	if e.Found == 0 {
		return fmt.Sprintf("Landlock ABI %d is required but Landlock is not available in this kernel", e.Required)
	}
	return fmt.Sprintf("Landlock ABI %d is required but this kernel has ABI %d", e.Required, e.Found)
}

// ErrSeccompUnavailable means the kernel cannot install seccomp filters.
var ErrSeccompUnavailable = errors.New("seccomp filters are not available")

// ErrUnsupported means this platform has none of the mechanisms.
var ErrUnsupported = errors.New("self-confinement is implemented only on Linux")

func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return &Error{Mechanism: MechanismSpec, Err: fmt.Errorf(format, args...)}
	}
	for _, list := range [][]string{s.ReadOnly, s.ReadWrite} {
		for _, p := range list {
			if !strings.HasPrefix(p, "/") {
				return bad("path %q is not absolute", p)
			}
		}
	}
	if s.MetadataBeneathReadWrite && !s.LandlockThisThread {
		return bad("MetadataBeneathReadWrite needs LandlockThisThread")
	}
	if s.AnyNetwork && len(s.NetworkTCP) > 0 {
		return bad("AnyNetwork and NetworkTCP cannot both be set")
	}
	for _, port := range s.NetworkTCP {
		if port == 0 {
			return bad("TCP port 0 cannot be granted")
		}
	}
	return nil
}
