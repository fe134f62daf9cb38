package testenv

import (
	"slices"
	"time"
)

// BareBwrapArgs are bubblewrap's arguments for /bin/true in the
// namespaces a bwrap run of rein's has, the host's root bound read-only:
// the bare mechanism every start-up benchmark is a ratio to.
func BareBwrapArgs() []string {
	return []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--unshare-net",
		"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"}
}

// MedianMS is the median of ds in milliseconds.
func MedianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}
