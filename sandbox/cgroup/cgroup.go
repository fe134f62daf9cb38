// Package cgroup makes the cgroup v2 group a run's processes start in, so
// that the whole tree can be killed at once (cgroup.kill) and its death
// confirmed (cgroup.events), whatever the processes did to leave their
// parent: setsid, a double fork, the death of their init. A process cannot
// move itself out of a group without write access to the hierarchy, which
// the sandbox never grants.
//
// The package owns the mechanism only, the cgroupfs file protocol. It
// imports nothing of rein: it must not learn why a run was started.
package cgroup

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Hierarchy is a mounted cgroup v2 hierarchy and the calling process's
// group in it, where new groups are made.
type Hierarchy struct {
	// Mount is where the cgroup2 filesystem is mounted: /sys/fs/cgroup on
	// a unified host, /sys/fs/cgroup/unified on a hybrid one.
	Mount string
	// Parent is the absolute directory new groups are made in: the
	// calling process's own group.
	Parent string
}

// ErrUnavailable wraps every reason a hierarchy cannot be used.
var ErrUnavailable = errors.New("no writable cgroup v2 hierarchy")

// Find locates the cgroup v2 hierarchy and checks that the calling process
// may make groups in its own group and kill them. It changes nothing.
func Find() (*Hierarchy, error) {
	self, err := selfPath("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if !isCgroup2(m) {
			continue
		}
		h := &Hierarchy{Mount: m, Parent: filepath.Join(m, self)}
		// The root group has no cgroup.kill; New checks the groups it makes.
		if _, err := os.Stat(filepath.Join(h.Parent, "cgroup.kill")); err != nil && h.Parent != filepath.Clean(m) {
			return nil, fmt.Errorf("%w: %s has no cgroup.kill (Linux 5.14 or later is needed)", ErrUnavailable, h.Parent)
		}
		if err := writable(h.Parent); err != nil {
			return nil, fmt.Errorf("%w: %s is not writable by this user (run as root, or under a delegated systemd unit)", ErrUnavailable, h.Parent)
		}
		return h, nil
	}
	return nil, fmt.Errorf("%w: cgroup2 is mounted neither at /sys/fs/cgroup nor at /sys/fs/cgroup/unified", ErrUnavailable)
}

// selfPath reads the v2 entry ("0::/path") of a /proc/PID/cgroup file.
func selfPath(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			if !strings.HasPrefix(p, "/") || strings.Contains(p, "/..") {
				return "", fmt.Errorf("unexpected cgroup path %q", p)
			}
			return p, nil
		}
	}
	return "", errors.New("the process is in no cgroup v2 group")
}

// Group is one run's group, open for the life of the run.
type Group struct {
	Path string
	dir  *os.File
}

// New makes an empty group named prefix-PID-random under h.Parent; PID is
// the caller's, so that Sweep can tell groups whose maker died.
func (h *Hierarchy) New(prefix string) (*Group, error) {
	var b [6]byte
	rand.Read(b[:])
	p := filepath.Join(h.Parent, fmt.Sprintf("%s-%d-%s", prefix, os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(p, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(p, "cgroup.kill")); err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("%w: the group has no cgroup.kill (Linux 5.14 or later is needed)", ErrUnavailable)
	}
	g, err := Open(p)
	if err != nil {
		os.Remove(p)
	}
	return g, err
}

// Open opens the existing group at path.
func Open(path string) (*Group, error) {
	dir, err := openDir(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &Group{Path: path, dir: dir}, nil
}

// FD is the group's directory descriptor, for SysProcAttr.CgroupFD with
// UseCgroupFD: the child is born in the group (clone3 CLONE_INTO_CGROUP),
// with no moment outside it.
func (g *Group) FD() int { return int(g.dir.Fd()) }

// Kill sends SIGKILL to every process in the group, atomically with
// respect to forks.
func (g *Group) Kill() error {
	return os.WriteFile(filepath.Join(g.Path, "cgroup.kill"), []byte("1"), 0)
}

// Populated reports whether any process is still in the group.
func (g *Group) Populated() (bool, error) {
	return populated(g.Path)
}

func populated(p string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(p, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "populated "); ok {
			return v != "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no populated field", p)
}

// KillAndWait kills the group and waits up to timeout until it is empty.
// It returns nil only when the kernel reports no process left.
func (g *Group) KillAndWait(timeout time.Duration) error {
	return killAndWait(g.Path, timeout)
}

func killAndWait(p string, timeout time.Duration) error {
	if pop, err := populated(p); err == nil && !pop {
		return nil
	}
	if err := os.WriteFile(filepath.Join(p, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup.kill: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		pop, err := populated(p)
		if err != nil {
			return err
		}
		if !pop {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes are still in %s %s after cgroup.kill", p, timeout)
		}
		time.Sleep(wait)
	}
}

// Remove removes the emptied group and closes it.
func (g *Group) Remove() error {
	g.dir.Close()
	return os.Remove(g.Path)
}

// Sweep kills and removes the groups under h.Parent named prefix-PID-*
// whose maker PID is no longer running: runs whose rein was killed.
func (h *Hierarchy) Sweep(prefix string) {
	sweep(h.Parent, prefix, func(d string) error { return killAndWait(d, time.Second) })
}
