package bwrap

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

const (
	sysCloseRange          = 436 // close_range(2), the same number on every Linux architecture
	closeRangeCloexec      = 1 << 2
	maxFD             uint = ^uint(0)
)

// closeOnExecFrom marks every descriptor from low up close-on-exec, in one
// system call where the kernel has it (Linux 5.11) and by listing
// /proc/self/fd otherwise.
func closeOnExecFrom(low int) error {
	_, _, errno := syscall.Syscall(sysCloseRange, uintptr(low), uintptr(maxFD), closeRangeCloexec)
	if errno == 0 {
		return nil
	}
	if !errors.Is(errno, syscall.ENOSYS) && !errors.Is(errno, syscall.EINVAL) {
		return errno
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < low || fd == int(d.Fd()) {
			continue
		}
		syscall.CloseOnExec(fd)
	}
	return nil
}

// dupFile returns a close-on-exec duplicate of f, which the caller may
// close independently.
func dupFile(f *os.File) (*os.File, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 3)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(fd, f.Name()), nil
}
