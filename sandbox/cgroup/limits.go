package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Limits are what a group's processes may use together; a zero field
// sets no limit.
type Limits struct {
	// MemoryBytes bounds the group's memory, swap included: the group
	// cannot swap at all.
	MemoryBytes int64
	// Processes bounds the group's tasks, threads included; a fork beyond
	// it fails with EAGAIN.
	Processes int64
}

// Events are what the kernel counted in a group over its life.
type Events struct {
	// OOMKills is how many processes the OOM killer ended for the group's
	// memory limit.
	OOMKills int64
	// ForksRefused is how many forks the process limit refused.
	ForksRefused int64
}

// Controllers are the cgroup controllers Limits needs.
func (l Limits) Controllers() []string {
	var out []string
	if l.MemoryBytes > 0 {
		out = append(out, "memory")
	}
	if l.Processes > 0 {
		out = append(out, "pids")
	}
	return out
}

// Enable makes the controllers available to the groups New makes, by
// writing them to the parent's cgroup.subtree_control where they are not
// there yet. It fails, naming the cause, when the parent was not given a
// controller (cgroup.controllers) or when it holds processes of its own,
// which cgroup v2 forbids in a group that hands controllers down.
func (h *Hierarchy) Enable(controllers ...string) error {
	have, err := readWords(filepath.Join(h.Parent, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	on, err := readWords(filepath.Join(h.Parent, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, c := range controllers {
		if on[c] {
			continue
		}
		if !have[c] {
			return fmt.Errorf("%w: the %s controller is not delegated to %s (its cgroup.controllers lists %s)", ErrUnavailable, c, h.Parent, list(have))
		}
		if err := write(filepath.Join(h.Parent, "cgroup.subtree_control"), "+"+c); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("%w: %s holds processes of its own, so cgroup v2 cannot hand the %s controller to its children", ErrUnavailable, h.Parent, c)
			}
			return fmt.Errorf("%w: enabling the %s controller in %s: %w", ErrUnavailable, c, h.Parent, err)
		}
	}
	return nil
}

// SetLimits writes l to the group: memory.max with memory.swap.max 0 and
// memory.oom.group 1 (an out-of-memory kill takes the whole group, never
// half a build), and pids.max. The controllers must have been enabled.
func (g *Group) SetLimits(l Limits) error {
	if l.MemoryBytes > 0 {
		if err := write(filepath.Join(g.Path, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return fmt.Errorf("%w: setting memory.max: %w", ErrUnavailable, err)
		}
		// Without swap accounting the file is absent and there is no swap
		// to bound.
		if err := write(filepath.Join(g.Path, "memory.swap.max"), "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: setting memory.swap.max: %w", ErrUnavailable, err)
		}
		if err := write(filepath.Join(g.Path, "memory.oom.group"), "1"); err != nil {
			return fmt.Errorf("%w: setting memory.oom.group: %w", ErrUnavailable, err)
		}
	}
	if l.Processes > 0 {
		if err := write(filepath.Join(g.Path, "pids.max"), strconv.FormatInt(l.Processes, 10)); err != nil {
			return fmt.Errorf("%w: setting pids.max: %w", ErrUnavailable, err)
		}
	}
	return nil
}

// Events reads what the kernel counted in the group; a controller that is
// not enabled counts nothing.
func (g *Group) Events() Events {
	var e Events
	e.OOMKills = keyed(filepath.Join(g.Path, "memory.events"), "oom_kill")
	e.ForksRefused = keyed(filepath.Join(g.Path, "pids.events"), "max")
	return e
}

// write writes one value to an existing control file, as the kernel
// wants it: a single write, never creating the file.
func write(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readWords reads a space-separated control file as a set.
func readWords(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, w := range strings.Fields(string(data)) {
		out[w] = true
	}
	return out, nil
}

func list(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	var out []string
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// keyed reads the value of key in a flat-keyed control file ("key N" per
// line); absent file or key is 0.
func keyed(file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
