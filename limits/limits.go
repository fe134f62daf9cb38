// Package limits holds Limits, the resource limits of a run: the one type
// the policy file's [limits] table is read into (policy.Limits) and the
// sandbox enforces (sandbox.Limits). It is a leaf that imports nothing of
// rein, so that the decision layer and the execution layer share it
// without importing each other; what enforces each limit, and how, is the
// sandbox's.
package limits

// Limits bound what a run may use. Every limit set is enforced or the run
// is refused before it starts, naming the missing mechanism. A zero field
// sets no limit, but for three: a zero MemoryBytes or Processes is the
// default (half the host's memory, DefaultProcesses), applied where a
// cgroup can enforce it and otherwise dropped; a zero TmpBytes is sized
// as its comment says.
type Limits struct {
	// MemoryBytes bounds the memory of the whole tree, swap included
	// (a cgroup: v2 memory.max, or v1 memory on a hybrid host). The init
	// and, on the bwrap rung, bubblewrap count towards it (about 15 MiB).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Processes bounds the processes and threads of the command's tree (a
	// cgroup: pids.max). The group's pids.max is Processes plus
	// InitTasks, for the init's own threads and bubblewrap.
	Processes int64 `json:"processes,omitempty"`
	// CPUSeconds bounds the CPU time of each process (RLIMIT_CPU).
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// OpenFiles bounds the descriptors of each process (RLIMIT_NOFILE).
	OpenFiles int64 `json:"open_files,omitempty"`
	// FileSizeBytes bounds the size of any file a process writes
	// (RLIMIT_FSIZE).
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"`
	// TmpBytes is the size of the private /tmp, a memory-backed tmpfs on
	// the bwrap rung; zero is MemoryBytes when that is set, else
	// DefaultTmpBytes. A per-file limit does not stop many files from
	// filling it. The landlock and none rungs have no /tmp of their own:
	// asking for TmpBytes there is refused.
	TmpBytes int64 `json:"tmp_bytes,omitempty"`
}

// Each calls f with each limit's key in the policy file's [limits] table
// and its value in l, in a fixed order: the one list of the limits, so
// that a limit added to Limits and not here fails TestEachNamesEvery.
func (l *Limits) Each(f func(key string, v *int64)) {
	f("memory", &l.MemoryBytes)
	f("processes", &l.Processes)
	f("cpu_seconds", &l.CPUSeconds)
	f("open_files", &l.OpenFiles)
	f("file_size", &l.FileSizeBytes)
	f("tmp_size", &l.TmpBytes)
}

// Within is l with each limit max sets lowered to it: what a caller asks
// for may be less than the policy's limit, never more, and a limit l
// leaves unset is the policy's.
func Within(l, max Limits) Limits {
	bound := map[string]int64{}
	max.Each(func(key string, v *int64) { bound[key] = *v })
	l.Each(func(key string, v *int64) { *v = Bound(*v, bound[key]) })
	return l
}

// Bound is the limit v under the policy's limit max: v lowered to max
// where max sets one (zero: none) and v is unset or above it.
func Bound(v, max int64) int64 {
	if max > 0 && (v == 0 || v > max) {
		return max
	}
	return v
}
