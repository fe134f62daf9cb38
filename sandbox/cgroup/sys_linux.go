package cgroup

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// isCgroup2 reports whether a cgroup2 filesystem is mounted at m.
func isCgroup2(m string) bool {
	var st unix.Statfs_t
	return unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// writable reports whether this user may make groups in dir.
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }

// openDir opens a group's directory path-only, for CgroupFD.
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func gettid() int { return unix.Gettid() }

// killListed kills by pidfd each of pids that procs still lists once its
// pidfd is open.
func killListed(pids []int, procs func() ([]int, error)) {
	fds := map[int]int{}
	for _, pid := range pids {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			fds[pid] = fd
		}
	}
	still, _ := procs()
	for _, pid := range still {
		if fd, ok := fds[pid]; ok {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// alive reports whether a process pid exists.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
