package tool

import (
	"path/filepath"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/toolchain"
	"github.com/reinhq/rein/workspace"
)

// HostCaches are the host's toolchain caches (toolchain.HostCaches, as
// env places them) that a command may read under p: a cache that a
// protected pattern guards against reading, as named or as resolved, or
// that holds one, is never exposed; nor is one that overlaps the
// workspace, which the command sees (and may write) anyway.
func HostCaches(env []string, p *policy.Policy) []toolchain.HostCache {
	var out []toolchain.HostCache
	for _, h := range toolchain.HostCaches(env) {
		real, err := filepath.EvalSymlinks(h.Path)
		if err != nil || p.Protection(policy.ActRead, h.Path, real) != nil || p.ProtectedWithin(real) != nil ||
			workspace.Within(real, p.Workspace) || workspace.Within(p.Workspace, real) {
			continue
		}
		h.Path = real
		out = append(out, h)
	}
	return out
}
