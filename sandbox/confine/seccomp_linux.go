package confine

import (
	"encoding/binary"
	"fmt"

	"github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM whatever their arguments. Each row is a
// way out of the sandbox or into the kernel's attack surface that no build
// or test needs.
var deniedSyscalls = [][]string{
	// Reading or steering another process.
	{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"},
	// Changing the mount table, old and new API.
	{"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"},
	// New or foreign namespaces; clone's namespace flags are refused by the argument filter.
	{"unshare", "setns"},
	// The session and user keyrings are shared with the caller.
	{"keyctl", "add_key", "request_key"},
	// Kernel attack surface and a tool for exploiting races.
	{"bpf", "perf_event_open", "userfaultfd"},
	// io_uring performs operations seccomp never sees.
	{"io_uring_setup", "io_uring_enter", "io_uring_register"},
	// The kernel itself, its log and raw port I/O.
	{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "lookup_dcookie", "uselib", "iopl", "ioperm"},
	// Host-wide names and clocks.
	{"sethostname", "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex"},
	// File handles bypass path-based confinement.
	{"open_by_handle_at", "name_to_handle_at"},
}

// enosysSyscalls fail with ENOSYS, so that libc and the Go runtime fall
// back to an older call whose arguments the filter can inspect: clone3 and
// openat2 pass their flags and mode in memory a seccomp filter cannot read.
var enosysSyscalls = []string{"clone3", "openat2"}

// setidBits are S_ISUID and S_ISGID. A setuid file left in the workspace
// would run with the command's owner's identity when the user runs it.
const setidBits = unix.S_ISUID | unix.S_ISGID

// setidSyscalls refuse to create or chmod a setuid or setgid file. The mode
// is a 16-bit value, so testing its low bits is exact whatever the caller
// puts in the upper half of the register.
var setidSyscalls = []seccomp.NameWithConditions{
	{Name: "chmod", Conditions: bitsSet(1, setidBits)},
	{Name: "fchmod", Conditions: bitsSet(1, setidBits)},
	{Name: "fchmodat", Conditions: bitsSet(2, setidBits)},
	{Name: "fchmodat2", Conditions: bitsSet(2, setidBits)},
	{Name: "mknod", Conditions: bitsSet(1, setidBits)},
	{Name: "mknodat", Conditions: bitsSet(2, setidBits)},
	{Name: "creat", Conditions: bitsSet(1, setidBits)},
	{Name: "open", Conditions: append(bitsSet(1, creating), bitsSet(2, setidBits)...)},
	{Name: "openat", Conditions: append(bitsSet(2, creating), bitsSet(3, setidBits)...)},
}

// creating are the open flags that make the mode argument meaningful:
// O_CREAT and the bit that distinguishes O_TMPFILE from O_DIRECTORY.
const creating = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

func bitsSet(arg uint32, bits uint64) seccomp.ArgumentConditions {
	return seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsSet, Value: bits}}
}

// seccompFilters returns the two filters Apply installs, assembled. The
// first is the syscall table above, built with go-seccomp-bpf. The second
// is written by hand because it compares 32-bit arguments: the kernel
// truncates ioctl's request, socket's domain and personality's persona to
// 32 bits, and go-seccomp-bpf's Equal also compares the upper half, so
// ioctl(fd, TIOCSTI|1<<32) would pass its check and still reach TIOCSTI. The
// second filter also refuses every syscall made through another
// architecture's entry point (int 0x80 on amd64), which go-seccomp-bpf lets
// through to the default action.
func seccompFilters(s Spec) ([][]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	table, err := tableFilter(info, s.NoSysVIPC)
	if err != nil {
		return nil, err
	}
	args, err := argumentFilter(info, len(s.NetworkTCP) == 0 && !s.AnyNetwork, s.AnyNetwork, s.NoUnixSockets, s.NoListen)
	if err != nil {
		return nil, err
	}
	return [][]unix.SockFilter{table, args}, nil
}

// sysvIPC are the System V IPC calls, refused with Spec.NoSysVIPC.
var sysvIPC = []string{"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl", "ipc"}

func tableFilter(info *arch.Info, noSysV bool) ([]unix.SockFilter, error) {
	// Names the architecture lacks (open, chmod, iopl on arm64) cannot be
	// called there, so they are left out rather than failing the assembly.
	known := func(names []string) []string {
		var out []string
		for _, n := range names {
			if _, ok := info.SyscallNames[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	var denied []string
	for _, row := range deniedSyscalls {
		denied = append(denied, known(row)...)
	}
	if noSysV {
		denied = append(denied, known(sysvIPC)...)
	}
	var setid []seccomp.NameWithConditions
	for _, c := range setidSyscalls {
		if _, ok := info.SyscallNames[c.Name]; ok {
			setid = append(setid, c)
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: denied, NamesWithCondtions: setid, Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM)},
			{Names: known(enosysSyscalls), Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
		},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the syscall table: %w", err)
	}
	return assemble(insts)
}

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// cloneNamespaces are the CLONE_NEW* flags clone(2) accepts. unshare and
// setns are denied outright; clone with these flags is the other way to
// make a namespace, a nested user namespace above all.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// personalityAllowed are the only personality(2) arguments allowed: the
// query 0xffffffff and PER_LINUX, the default. Everything else, such as
// ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC, weakens the exec'd program's
// memory protections; neither glibc nor the Go runtime sets a persona.
var personalityAllowed = []uint32{0xffffffff, perLinux}

const perLinux = 0

// sockTypeMask is the part of socket(2)'s type argument that is the
// type; the rest are the SOCK_NONBLOCK and SOCK_CLOEXEC flags.
const sockTypeMask = 0xf

// ioprioWhoProcess is IOPRIO_WHO_PROCESS of ioprio_set(2).
const ioprioWhoProcess = 1

// argumentFilter refuses, with EPERM, TIOCSTI and TIOCLINUX (pushing
// keystrokes into a terminal), clone with namespace flags, personality
// other than the default, prlimit, setpriority, ioprio_set and the
// scheduler and page-migration calls on any process but the caller, and sockets of any family but unix and netlink
// (and inet and inet6 for TCP unless noInet, of every type with anyInet,
// unix unless noUnix): packet, vsock and the rest always.
func argumentFilter(info *arch.Info, noInet, anyInet, noUnix, noListen bool) ([]unix.SockFilter, error) {
	lo := func(arg uint32) uint32 {
		off := offArgs + 8*arg
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			off += 4
		}
		return off
	}
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}

	// Each block loads one argument's low half and compares it; a block
	// ends with its own return, so jumps never leave their block.
	type block struct {
		nr   int
		body []bpf.Instruction
	}
	// oneOf returns to deny when the low half of arg equals any of vals.
	oneOf := func(arg uint32, vals []uint32) []bpf.Instruction {
		b := []bpf.Instruction{bpf.LoadAbsolute{Off: lo(arg), Size: 4}}
		for i, v := range vals {
			b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - i)})
		}
		return append(b, allow, deny)
	}
	// noneOf returns to allow only when the low half of arg equals one of
	// vals: an allowlist, so a family nobody thought of (vsock, which no
	// network namespace isolates) is refused rather than let through.
	noneOf := func(arg uint32, vals []uint32) []bpf.Instruction {
		b := []bpf.Instruction{bpf.LoadAbsolute{Off: lo(arg), Size: 4}}
		for i, v := range vals {
			b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - i)})
		}
		return append(b, deny, allow)
	}
	// equal returns to allow only when the low half of each argument
	// equals its value, and to deny otherwise.
	equal := func(conds ...[2]uint32) []bpf.Instruction {
		var b []bpf.Instruction
		for i, c := range conds {
			rest := len(conds) - 1 - i
			b = append(b, bpf.LoadAbsolute{Off: lo(c[0]), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: c[1], SkipFalse: uint8(2*rest + 1)})
		}
		return append(b, allow, deny)
	}
	families := []uint32{unix.AF_NETLINK}
	if !noUnix {
		families = append(families, unix.AF_UNIX)
	}
	if anyInet {
		families = append(families, unix.AF_INET, unix.AF_INET6)
	}
	socket := noneOf(0, families)
	if !noInet && !anyInet {
		// inet and inet6 for TCP only: a stream socket (whatever its
		// SOCK_NONBLOCK and SOCK_CLOEXEC bits) of protocol 0 or TCP.
		// Landlock restricts TCP by port; UDP and raw sockets, which it
		// cannot see, are refused here.
		socket = []bpf.Instruction{bpf.LoadAbsolute{Off: lo(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: uint8(len(families) + 3)},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipTrue: uint8(len(families) + 2)}}
		for i, v := range families {
			socket = append(socket, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(families) - i)})
		}
		socket = append(socket, deny, allow,
			bpf.LoadAbsolute{Off: lo(1), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipFalse: 3},
			bpf.LoadAbsolute{Off: lo(2), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipTrue: 1},
			deny, allow)
	}
	blocks := []block{
		{unix.SYS_IOCTL, oneOf(1, []uint32{unix.TIOCSTI, unix.TIOCLINUX})},
		{unix.SYS_SOCKET, socket},
		{unix.SYS_CLONE, []bpf.Instruction{
			bpf.LoadAbsolute{Off: lo(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaces, SkipTrue: 1},
			allow, deny,
		}},
		// Calls that act on another process by pid and that no LSM hook
		// of Landlock covers: without a pid namespace (the landlock rung)
		// they would reach every host process of the same user, to set a
		// CPU limit that kills it, or to starve it. Each is allowed on the
		// caller only (pid 0).
		{unix.SYS_PRLIMIT64, equal([2]uint32{0, 0})},
		{unix.SYS_SETPRIORITY, equal([2]uint32{0, unix.PRIO_PROCESS}, [2]uint32{1, 0})},
		{unix.SYS_IOPRIO_SET, equal([2]uint32{0, ioprioWhoProcess}, [2]uint32{1, 0})},
		{unix.SYS_SCHED_SETAFFINITY, equal([2]uint32{0, 0})},
		{unix.SYS_SCHED_SETSCHEDULER, equal([2]uint32{0, 0})},
		{unix.SYS_SCHED_SETPARAM, equal([2]uint32{0, 0})},
		{unix.SYS_SCHED_SETATTR, equal([2]uint32{0, 0})},
		{unix.SYS_MIGRATE_PAGES, equal([2]uint32{0, 0})},
		{unix.SYS_MOVE_PAGES, equal([2]uint32{0, 0})},
		{unix.SYS_PERSONALITY, func() []bpf.Instruction {
			b := []bpf.Instruction{bpf.LoadAbsolute{Off: lo(0), Size: 4}}
			for i, v := range personalityAllowed {
				b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(personalityAllowed) - i)})
			}
			return append(b, deny, allow)
		}()},
	}

	if !noInet && !anyInet {
		// TCP Fast Open connects from sendto, sendmsg and sendmmsg,
		// where Landlock's check of connect(2) never sees it: with ports
		// granted, a command could reach every port of every host.
		fastOpen := func(arg uint32) []bpf.Instruction {
			return []bpf.Instruction{bpf.LoadAbsolute{Off: lo(arg), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.MSG_FASTOPEN, SkipTrue: 1}, allow, deny}
		}
		blocks = append(blocks,
			block{unix.SYS_SENDTO, fastOpen(3)}, block{unix.SYS_SENDMSG, fastOpen(2)}, block{unix.SYS_SENDMMSG, fastOpen(3)})
	}
	if noListen {
		// A socket that listen(2) binds itself: Landlock checks bind(2).
		blocks = append(blocks, block{unix.SYS_LISTEN, []bpf.Instruction{deny}})
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		deny,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	// The dispatch is a chain of comparisons, one per block, ending in
	// allow; each jumps over the rest of the chain and the blocks before
	// its own.
	tail := len(blocks)
	offset := 0
	for i, b := range blocks {
		jump := (tail - i - 1) + 1 + offset
		if jump > 255 {
			return nil, fmt.Errorf("the argument filter's dispatch jumps %d instructions, more than a BPF jump can", jump)
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(b.nr), SkipTrue: uint8(jump)})
		offset += len(b.body)
	}
	prog = append(prog, allow)
	for _, b := range blocks {
		prog = append(prog, b.body...)
	}
	return assemble(prog)
}

func assemble(insts []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}
