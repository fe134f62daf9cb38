// Package toolchain is the table of the ecosystems rein knows (Go, Node,
// Python, Rust, Java, …): how each is detected in a workspace, the programs
// it needs, the caches it keeps between runs, the variables that point it
// at them, its install, build, test, lint and format commands and the
// network preset it fetches through. It is data in code, like the policy's
// class table, with a few functions that read it against a workspace and a
// host.
//
// Two kinds of cache come out of it. Per-workspace caches are directories
// rein owns, one set per workspace, writable by the command: build outputs
// and the toolchain's own download cache, kept between runs. Host caches
// are the user's own, immutable and content-addressed stores (Go's module
// download cache, Gradle's dependency cache, NuGet's packages), which the
// sandbox exposes read-only and serves to the toolchain the way it reads
// them offline: a build that needs only what the host has cached runs with
// the network off.
//
// toolchain owns the data, not the mechanism or the decision: it imports
// nothing of rein. The sandbox mounts what it names; the caller decides
// which host caches may be exposed (never a protected path).
package toolchain

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Row is one ecosystem.
type Row struct {
	// Name names the ecosystem: "go", "node", "python".
	Name string
	// Markers are files (or patterns, such as *.csproj) at the workspace
	// root whose presence says the workspace uses the ecosystem.
	Markers []string
	// Managers are its package managers or build tools; the one whose
	// lockfile is present is chosen, else the first.
	Managers []Manager
}

// Manager is one way of building an ecosystem's projects: npm, pnpm, yarn
// or bun for Node, uv, poetry or pip for Python.
type Manager struct {
	// Name names it: "npm".
	Name string
	// Lockfiles at the workspace root choose it over the row's first.
	Lockfiles []string
	// Programs it needs on the sandbox's PATH.
	Programs []Program
	// Caches it keeps between runs.
	Caches []Cache
	// Env is set in every run: NAME=value, which a variable the caller
	// passes by name overrides. It turns off what phones home.
	Env []string
	// OfflineEnv is set when the network is off, so that the manager
	// fails at once, saying it is offline, rather than retrying a network
	// it does not have.
	OfflineEnv []string
	// Commands are its usual commands. {name} in them is a local program
	// of Locals, or its fallback.
	Commands Commands
	// Locals are programs the workspace may hold itself: a name, then the
	// workspace paths tried in order, then the program used when none
	// exists (a virtual environment's python, a Gradle wrapper).
	Locals []Local
	// Presets name the policy's net presets that fetch what it needs.
	Presets []string
}

// Program is a program a manager needs, with the Debian package that
// brings it.
type Program struct {
	Name    string
	Package string
}

// Local is a program the workspace may hold itself.
type Local struct {
	Name     string
	Paths    []string
	Fallback string
}

// Commands are a manager's usual commands, as lines of rein's grammar;
// empty when it has none of a kind.
type Commands struct {
	Install string `json:"install,omitempty"`
	Build   string `json:"build,omitempty"`
	Test    string `json:"test,omitempty"`
	Lint    string `json:"lint,omitempty"`
	Format  string `json:"format,omitempty"`
}

// Cache is a directory a toolchain keeps between runs.
type Cache struct {
	// Name is the directory's name among the workspace's caches, or the
	// host cache's name: "go-build", "go-mod-download".
	Name string
	// Env is the variable that points the toolchain at it.
	Env string
	// Value is what Env is set to, {dir} standing for the directory's
	// path in the sandbox; empty is "{dir}".
	Value string
	// Online is Value when the network is on (proxy or full); empty is
	// Value. A host cache served as a file proxy falls through to the
	// network there.
	Online string
	// Host, when set, makes this a host cache: the user's own copy,
	// exposed read-only. Each entry is a candidate path ($VAR, ${VAR}
	// and a leading ~ expanded; an entry naming an unset variable is
	// skipped), and the first candidate that expands is where the host
	// keeps it, whether or not it exists.
	Host []string
}

// HostCache is a host cache found on this host: where it is, and what
// points the toolchain at it.
type HostCache struct {
	// Name is the cache's name, unique among host caches.
	Name string `json:"name"`
	// Path is the host directory, absolute and existing.
	Path string `json:"path"`
	// Env, Value and Online are the Cache's.
	Env    string `json:"env"`
	Value  string `json:"value"`
	Online string `json:"online,omitempty"`
}

// Setting is the value of a cache's variable for a directory and a
// network: Online when the network is on and it is set, else Value.
func (c Cache) Setting(dir string, online bool) string {
	v := c.Value
	if online && c.Online != "" {
		v = c.Online
	}
	if v == "" {
		v = "{dir}"
	}
	return strings.ReplaceAll(v, "{dir}", dir)
}

// Setting is the value of the host cache's variable when it is mounted at
// dir.
func (h HostCache) Setting(dir string, online bool) string {
	return Cache{Value: h.Value, Online: h.Online}.Setting(dir, online)
}

// Table is every row, in the order rein toolchain prints them.
func Table() []Row { return slices.Clone(table) }

// WorkspaceCaches are the per-workspace caches of every row, each name
// once: the sandbox gives every run all of them, whatever the workspace
// holds, so a command in a subdirectory of another ecosystem keeps its
// outputs too.
func WorkspaceCaches() []Cache {
	var out []Cache
	seen := map[string]bool{}
	for _, r := range table {
		for _, m := range r.Managers {
			for _, c := range m.Caches {
				if c.Host == nil && !seen[c.Name] {
					seen[c.Name] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Env is the fixed environment of every row (and, with the network off,
// their offline variables), each variable once: the first row's wins.
func Env(offline bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(vs []string) {
		for _, v := range vs {
			k, _, _ := strings.Cut(v, "=")
			if !seen[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
	}
	for _, r := range table {
		for _, m := range r.Managers {
			add(m.Env)
			if offline {
				add(m.OfflineEnv)
			}
		}
	}
	return out
}

// HostCaches are the host caches of every row that exist on this host, as
// env (the caller's environment, where HOME and the toolchains' own
// variables are read) places them. The caller vets each before exposing
// it: a protected path must never be.
func HostCaches(env []string) []HostCache {
	var out []HostCache
	for _, r := range table {
		for _, m := range r.Managers {
			for _, c := range m.Caches {
				if c.Host == nil || slices.ContainsFunc(out, func(h HostCache) bool { return h.Name == c.Name }) {
					continue
				}
				p := hostPath(c.Host, env)
				if p == "" || !plainPath(p) {
					// A value such as GOPROXY is a list: a comma or a bar
					// in the path would make it name something else.
					continue
				}
				if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
					continue
				}
				out = append(out, HostCache{Name: c.Name, Path: p, Env: c.Env, Value: c.Value, Online: c.Online})
			}
		}
	}
	return out
}

// HostCachePath is where the host keeps the cache c, as env places it, or
// "" when no candidate expands (or c is no host cache).
func HostCachePath(c Cache, env []string) string { return hostPath(c.Host, env) }

// hostPath is the first candidate that expands to a clean absolute path.
func hostPath(cands []string, env []string) string {
	for _, c := range cands {
		if p, ok := expand(c, env); ok && filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
	}
	return ""
}

// expand replaces $VAR, ${VAR} and a leading ~ from env; it fails when a
// variable is unset or empty. A list variable (GOPATH) gives its first
// entry.
func expand(s string, env []string) (string, bool) {
	ok := true
	get := func(k string) string {
		v := lookup(env, k)
		if i := strings.IndexByte(v, os.PathListSeparator); i >= 0 && (k == "GOPATH") {
			v = v[:i]
		}
		if v == "" {
			ok = false
		}
		return v
	}
	if rest, found := strings.CutPrefix(s, "~"); found {
		s = "${HOME}" + rest
	}
	out := os.Expand(s, get)
	return out, ok
}

func lookup(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// Found is an ecosystem detected in a workspace.
type Found struct {
	Row     *Row
	Manager *Manager
	// Marker is the file that showed the ecosystem, Lockfile the one that
	// chose the manager ("" for the default).
	Marker   string
	Lockfile string
	// Commands are the manager's, with its local programs chosen.
	Commands Commands
}

// Detect lists the ecosystems the workspace root shows, in table order.
func Detect(ws string) []Found {
	var out []Found
	for i := range table {
		r := &table[i]
		marker := firstPresent(ws, r.Markers)
		if marker == "" {
			continue
		}
		f := Found{Row: r, Manager: &r.Managers[0], Marker: marker}
		for j := range r.Managers {
			if lf := firstPresent(ws, r.Managers[j].Lockfiles); lf != "" {
				f.Manager, f.Lockfile = &r.Managers[j], lf
				break
			}
		}
		f.Commands = f.Manager.commandsIn(ws)
		out = append(out, f)
	}
	return out
}

// firstPresent is the first of names (or patterns) that exists in dir.
func firstPresent(dir string, names []string) string {
	for _, n := range names {
		if strings.ContainsAny(n, "*?[") {
			if m, _ := filepath.Glob(filepath.Join(dir, n)); len(m) > 0 {
				return filepath.Base(m[0])
			}
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return n
		}
	}
	return ""
}

// commandsIn fills the manager's commands for the workspace ws.
func (m *Manager) commandsIn(ws string) Commands {
	repl := make([]string, 0, 2*len(m.Locals))
	for _, l := range m.Locals {
		use := l.Fallback
		for _, p := range l.Paths {
			if fi, err := os.Stat(filepath.Join(ws, p)); err == nil && !fi.IsDir() {
				use = p
				break
			}
		}
		repl = append(repl, "{"+l.Name+"}", use)
	}
	r := strings.NewReplacer(repl...)
	c := m.Commands
	for _, s := range []*string{&c.Install, &c.Build, &c.Test, &c.Lint, &c.Format} {
		*s = r.Replace(*s)
	}
	return c
}

// plainPath reports whether p holds only the characters a cache path
// needs, none of which a variable's list syntax or a URL gives a meaning.
func plainPath(p string) bool {
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("/._-+@~", r):
		default:
			return false
		}
	}
	return true
}
