package tool

import (
	"path/filepath"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/toolchain"
	"github.com/reinhq/rein/workspace"
)

// HostCaches are the host's toolchain caches (toolchain.HostCaches, as
// env places them) that a command may read under p: a cache that a
// protected pattern guards against reading, as named or as resolved, or
// that holds one, is never exposed; nor is one that overlaps the
// workspace, which the command sees (and may write) anyway, or rein's
// state directory.
func HostCaches(env []string, p *policy.Policy) []toolchain.HostCache {
	var out []toolchain.HostCache
	state := sandbox.CacheDir()
	for _, h := range toolchain.HostCaches(env) {
		real, err := filepath.EvalSymlinks(h.Path)
		if err != nil || p.Protection(policy.ActRead, h.Path, real) != nil || p.ProtectedWithin(real) != nil || p.ProtectedWithin(h.Path) != nil ||
			overlaps(real, p.Workspace) || overlaps(real, state) {
			continue
		}
		h.Path = real
		out = append(out, h)
	}
	return out
}

func overlaps(a, b string) bool { return workspace.Within(a, b) || workspace.Within(b, a) }

// Hidden is the sandbox's Profile.Hidden for p: a workspace entry the
// protected set forbids reading (the .env, key and certificate files of
// the builtin set, and what [workspace] protected adds) is hidden from
// the command, as the file tools refuse it.
func Hidden(p *policy.Policy) func(path string) bool {
	return func(path string) bool {
		return p.Protection(policy.ActRead, path, path) != nil
	}
}
