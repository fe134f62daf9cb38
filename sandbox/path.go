package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/shell"
)

// SearchPath is the sandbox's PATH for p: the directories of the PATH in
// p.Env (hostPATH when it has none), in their order, kept to those the
// view exposes read-only: the system directories and p.HostReadPaths.
// Relative entries are dropped (they would search the working directory),
// and so is every directory the command could write (the workspace, its
// HOME, /tmp, the caches): a program planted there could be found by name
// by a later stage, or by a wrapper, where the policy saw another.
func SearchPath(p Profile) []string {
	kept, _ := splitPath(p, exposedRoots(p))
	return kept
}

// splitPath is SearchPath and the caller's entries it left out. An entry
// is kept when it lies in a directory the view exposes read-only both as
// written and where its links lead, so that it names the same directory
// inside, and nothing the command does can change what it holds: a link
// the command can write (in the workspace, or at a path the sandbox's own
// /tmp could hold) that leads into /usr/bin today could lead anywhere by
// the next stage. roots are exposedRoots(p).
func splitPath(p Profile, roots []string) (kept, dropped []string) {
	lexical := exposedLexical(p)
	for _, d := range filepath.SplitList(callerPath(p.Env)) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if slices.Contains(kept, d) || slices.Contains(dropped, d) {
			continue
		}
		// The lexical tests first: an entry outside the view as written
		// (a directory of HOME, say) is dropped without walking its links.
		if !inRoots(d, lexical) || within(d, p.Workspace) {
			dropped = append(dropped, d)
			continue
		}
		if real, err := filepath.EvalSymlinks(d); err == nil && inRoots(real, roots) && !within(real, p.Workspace) {
			kept = append(kept, d)
		} else {
			dropped = append(dropped, d)
		}
	}
	return kept, dropped
}

// exposedLexical are the directories the view shows read-only, as the
// view names them.
func exposedLexical(p Profile) []string {
	var out []string
	for _, d := range append(systemDirs(), p.HostReadPaths...) {
		out = append(out, filepath.Clean(d))
	}
	return out
}

// callerPath is the PATH in env, or hostPATH.
func callerPath(env []string) string {
	if v, ok := envLookup(env, "PATH"); ok {
		return v
	}
	return hostPATH
}

func envLookup(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// exposedRoots are the physical host directories the view shows
// read-only at their own path, where programs may live.
func exposedRoots(p Profile) []string {
	var out []string
	for _, d := range append(systemDirs(), p.HostReadPaths...) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			out = append(out, r)
		}
	}
	return out
}

func inRoots(real string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return within(real, r) })
}

// ProgramError is a program that the sandbox's PATH does not lead to.
type ProgramError struct {
	// Name is the program as the line names it.
	Name string
	// Searched is the sandbox's PATH.
	Searched []string
	// Host, when set, is where the caller's PATH finds it on the host,
	// outside what the sandbox exposes; HostDir is the directory to
	// expose.
	Host, HostDir string
}

func (e *ProgramError) Error() string { return e.Name + ": " + e.Detail() }

// Detail is the error without the program's name in front.
func (e *ProgramError) Detail() string {
	msg := fmt.Sprintf("command not found in the sandbox's PATH (%s)", strings.Join(e.Searched, ":"))
	if e.Host != "" {
		msg += fmt.Sprintf("; the host has it at %s, and %s is not in the sandbox's view: expose it with [sandbox] read_paths = [%q] in a policy file, or name a program the view holds", e.Host, e.HostDir, e.HostDir)
	}
	return msg
}

// LookPath finds the program a stage names without a slash as the sandbox
// will: on SearchPath(p), in order, the first executable file whose target
// the view holds. The path it returns is the one the runner executes, so
// the policy can decide that program and no other.
func LookPath(p Profile, name string) (string, error) {
	return newSearch(p).look(name)
}

// search is a profile's PATH, split once for every lookup of a line.
type search struct {
	p             Profile
	kept, dropped []string
	roots         []string
}

func newSearch(p Profile) *search {
	s := &search{p: p, roots: exposedRoots(p)}
	s.kept, s.dropped = splitPath(p, s.roots)
	return s
}

func (s *search) look(name string) (string, error) {
	prog, _, err := s.lookShadow(name)
	return prog, err
}

// lookShadow is look, also naming the first entry of that name on the
// way that is a link the view cannot follow (dangling, or leading out of
// what the view exposes). The lookup passes it by, but a program that
// searches PATH itself inside the sandbox (a wrapper) would find it once
// a command made its target exist there, so the policy may not take the
// program found for the one a wrapper runs.
func (s *search) lookShadow(name string) (prog, shadow string, err error) {
	if name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not a program name without a slash", name)
	}
	p, kept, dropped, roots := s.p, s.kept, s.dropped, s.roots
	e := &ProgramError{Name: name, Searched: kept}
	for _, d := range kept {
		c := filepath.Join(d, name)
		if !isExecutable(c) {
			if fi, lerr := os.Lstat(c); lerr == nil && fi.Mode()&os.ModeSymlink != 0 && shadow == "" {
				shadow = c
			}
			continue
		}
		if real, err := filepath.EvalSymlinks(c); err == nil && inRoots(real, roots) && !within(real, p.Workspace) {
			return c, shadow, nil
		} else if err == nil && e.Host == "" {
			// A link out of the view: found here, absent inside.
			e.Host, e.HostDir = c, filepath.Dir(real)
			if shadow == "" {
				shadow = c
			}
		}
	}
	if e.Host == "" {
		for _, d := range dropped {
			if c := filepath.Join(d, name); isExecutable(c) {
				// The directory to expose is the one the entry leads to
				// (a /usr/local/go that links to /opt/go is exposed as
				// /opt/go/bin).
				e.Host, e.HostDir = c, d
				if real, err := filepath.EvalSymlinks(d); err == nil {
					e.HostDir = real
				}
				break
			}
		}
	}
	return "", shadow, e
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// programWords bounds how many leading words of a stage are looked up
// for Stage.Programs: a chain of wrappers and their options is short.
const programWords = 32

// ResolvePrograms looks up, as LookPath does, the program of every command
// stage of line that names one without a slash and has no Program yet,
// and sets the stage's Program to it; and fills Stage.Programs with what
// the stage's first words without a slash lead to, for the programs a
// wrapper in the stage runs. The stages not found are left without a
// Program and returned by their index among all the line's stages, each
// with its error: the runner reports them when (and if) they run, as a
// shell reports a missing command, so `a || b` still runs b.
func ResolvePrograms(line *shell.Line, p Profile) map[int]error {
	var missing map[int]error
	var s *search
	idx := 0
	for _, pl := range line.Pipelines {
		for _, st := range pl.Stages {
			i := idx
			idx++
			if st.Kind != shell.Command || len(st.Argv) == 0 {
				continue
			}
			if s == nil && (st.Programs == nil || (st.Program == "" && !strings.Contains(st.Argv[0], "/"))) {
				// Split once for the line, and only when a lookup is left:
				// a line the caller resolved is not looked up again.
				s = newSearch(p)
			}
			if st.Programs == nil {
				st.Programs = map[string]string{}
				for _, w := range st.Argv[:min(len(st.Argv), programWords)] {
					if _, done := st.Programs[w]; done || strings.Contains(w, "/") || w == "" || w[0] == '-' {
						continue
					}
					if p := venvProgram(st.Venv, w); p != "" {
						st.Programs[w] = p
						continue
					}
					prog, shadow, _ := s.lookShadow(w)
					st.Programs[w] = prog
					if shadow != "" {
						// Not an absolute path: the policy takes it for a
						// program it cannot vouch for.
						st.Programs[w] = "unresolved: " + shadow + " is a link the sandbox's view cannot follow"
					}
				}
			}
			if st.Program != "" || strings.Contains(st.Argv[0], "/") {
				continue
			}
			if p := venvProgram(st.Venv, st.Argv[0]); p != "" {
				st.Program = p
				continue
			}
			prog, err := s.look(st.Argv[0])
			if err != nil {
				if missing == nil {
					missing = map[int]error{}
				}
				missing[i] = err
				continue
			}
			st.Program = prog
		}
	}
	return missing
}

// venvProgram is the program name names in the bin of venv, a workspace
// virtual environment the line activated, which is first on the stage's
// PATH; "" when there is none (or no venv).
func venvProgram(venv, name string) string {
	if venv == "" || name == "" || strings.Contains(name, "/") {
		return ""
	}
	p := venv + "/bin/" + name
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	return ""
}

// resolved is a copy of line with every stage's program resolved, and the
// messages of those not found by stage index, for the runner.
func resolved(line *shell.Line, p Profile) (*shell.Line, map[int]string) {
	cp := &shell.Line{Connectors: line.Connectors}
	for _, pl := range line.Pipelines {
		np := &shell.Pipeline{}
		for _, st := range pl.Stages {
			c := *st
			c.Programs = maps.Clone(st.Programs)
			np.Stages = append(np.Stages, &c)
		}
		cp.Pipelines = append(cp.Pipelines, np)
	}
	var msgs map[int]string
	for i, err := range ResolvePrograms(cp, p) {
		if msgs == nil {
			msgs = map[int]string{}
		}
		msgs[i] = err.Error()
		if pe, ok := err.(*ProgramError); ok {
			msgs[i] = pe.Detail()
		}
	}
	return cp, msgs
}
