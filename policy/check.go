package policy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// Check decides a whole line. Every stage is decided before anything runs;
// the line's decision is the strictest stage decision, so one denied stage
// means nothing in the line runs. Paths are resolved from the workspace
// root, with cd moving the modelled working directory.
func (p *Policy) Check(line *shell.Line) *Verdict {
	return p.checkFrom(line, p.Workspace)
}

// CheckIn is Check with the line starting in the directory dir.
func (p *Policy) CheckIn(line *shell.Line, dir string) *Verdict {
	// Paths are resolved from the working directory without resolving it
	// again, so it must be physical itself.
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return p.checkFrom(line, dir)
}

func (p *Policy) checkFrom(line *shell.Line, dir string) *Verdict {
	v := &Verdict{}
	cwds := []string{dir}
	idx := 0
	for i, pl := range line.Pipelines {
		// A pipeline after && or || may not run, so a cd in it may not
		// happen: later stages are checked from every directory they could
		// start in.
		conditional := i > 0 && line.Connectors[i-1] != shell.Seq
		var next []string
		for _, st := range pl.Stages {
			var sv StageVerdict
			if st.Kind == shell.Cd {
				var dirs []string
				sv, dirs = p.checkCd(st, cwds)
				next = append(next, dirs...)
			} else {
				sv = p.checkCommand(st, cwds)
			}
			sv.Index, sv.Source = idx, st.Source
			idx++
			v.Stages = append(v.Stages, sv)
		}
		if next != nil {
			if conditional {
				next = append(next, cwds...)
			}
			cwds = dedupe(next)
		}
		if len(cwds) > maxWorkingDirs {
			// Each conditional cd can double what later stages are checked
			// from; a line that needs more than this is refused rather
			// than decided slowly.
			last := &v.Stages[len(v.Stages)-1]
			last.Decision, last.Rule = Deny, nil
			last.Reason = fmt.Sprintf("the line can be in more than %d working directories by this point: split it into several lines", maxWorkingDirs)
			break
		}
	}
	v.summarise()
	v.Notes = line.Notes
	if r := line.Opaque; r != nil {
		v.Opaque = r
		v.Reason = fmt.Sprintf("opaque shell code (%s at byte %d: %s), decided as bash -c: %s", r.Construct, r.Offset, r.Message, v.Reason)
	}
	return v
}

// maxWorkingDirs bounds the working directories a line is checked from.
const maxWorkingDirs = 16

// summarise sets the line's decision, class and reason from its stages.
func (v *Verdict) summarise() {
	worst := -1
	for i, s := range v.Stages {
		v.Class = max(v.Class, s.Class)
		if worst < 0 || s.Decision > v.Stages[worst].Decision {
			worst = i
		}
	}
	if worst < 0 {
		v.Decision, v.Reason = Deny, "the line has no stages"
		return
	}
	s := v.Stages[worst]
	v.Decision, v.Rule = s.Decision, s.Rule
	written := shortArgv(s.Argv)
	if s.Source != "" {
		written = shortSource(s.Source)
	}
	v.Reason = fmt.Sprintf("stage %d (%s): %s", s.Index, written, s.Reason)
	if s.Decision == Allow && len(v.Stages) > 1 {
		v.Rule, v.Reason = nil, fmt.Sprintf("all %d stages are allowed", len(v.Stages))
	}
}

func shortArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// shortSource is a stage as written, on one line and at most 60 bytes.
func shortSource(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// checkCd decides a cd stage and returns the directories it can lead to.
func (p *Policy) checkCd(st *shell.Stage, cwds []string) (StageVerdict, []string) {
	target := st.Dir
	if target == "" {
		target = p.home()
	}
	sv := StageVerdict{Argv: []string{"cd", st.Dir}, Class: ReadOnly}
	if st.Dir == "" {
		sv.Argv = []string{"cd"}
	}
	var dirs []string
	for _, cwd := range cwds {
		pv := p.decidePath(target, cwd, ActRead)
		if rel, ok := p.inSandboxHome(pv.Resolved); ok && pv.Decision < Deny {
			// The sandbox makes its HOME for the run, empty (but for a
			// session's files): HOME itself is the one directory known to
			// be there when the line starts.
			if rel != "" {
				pv.Decision, pv.Reason, pv.Rule = Deny, fmt.Sprintf("cd target %s lies below the sandbox's private HOME, which is made for the run: only a cd to HOME itself is known to land where it was checked", pv.Resolved), nil
			}
		} else if pv.Decision < Deny {
			fi, err := os.Stat(pv.Resolved)
			switch {
			case err != nil:
				pv.Decision, pv.Reason, pv.Rule = Deny, fmt.Sprintf("cd target %s does not exist: the line would run in another directory than the one checked", pv.Resolved), nil
			case !fi.IsDir():
				pv.Decision, pv.Reason, pv.Rule = Deny, fmt.Sprintf("cd target %s is not a directory", pv.Resolved), nil
			}
		}
		sv.Paths = appendPath(sv.Paths, pv)
		if pv.Decision < Deny {
			dirs = append(dirs, pv.Resolved)
		}
	}
	sv.Decision, sv.Reason = Allow, "cd into "+target
	sv.stricterPaths()
	return sv, dirs
}

// appendPath adds pv unless the same path, access and outcome is there.
func appendPath(ps []PathVerdict, pv PathVerdict) []PathVerdict {
	for _, q := range ps {
		if q.Path == pv.Path && q.Resolved == pv.Resolved && q.Access == pv.Access {
			return ps
		}
	}
	return append(ps, pv)
}

// stricterPaths lets a path decision override the stage's when stricter.
func (sv *StageVerdict) stricterPaths() {
	for _, pv := range sv.Paths {
		if pv.Decision > sv.Decision {
			sv.Decision, sv.Reason, sv.Rule = pv.Decision, pv.Access.verb()+" "+pv.Path+": "+pv.Reason, pv.Rule
		}
	}
}

func (a Act) verb() string {
	switch a {
	case ActRead:
		return "read"
	case ActWrite:
		return "write"
	case ActDelete:
		return "delete"
	}
	return string(a)
}

// execStrings are the forms an exec pattern is tested against: B, the
// basename of argv[0]; J, B then the arguments; R, the raw argv.
func execStrings(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	b := path.Base(argv[0])
	j := strings.Join(append([]string{b}, argv[1:]...), " ")
	r := strings.Join(argv, " ")
	if r == j {
		return []string{b, j}
	}
	return []string{b, j, r}
}

// checkCommand decides one command stage from every directory it could
// start in.
func (p *Policy) checkCommand(st *shell.Stage, cwds []string) StageVerdict {
	if in, ok := p.withEnvUnwrapped(st); ok {
		// env NAME=value cmd is cmd run with those variables.
		sv := p.checkCommand(in, cwds)
		sv.Argv, sv.Env = st.Argv, st.Env
		return sv
	}
	argv := st.Argv
	sv := StageVerdict{Argv: argv, Env: st.Env, Venv: st.Venv}
	exposedCmds := exposedRuns(argv)
	// Redirects open where the stage starts; the program's own paths are
	// relative to where a wrapper (env -C, sudo -D, go -C, make -C) moves it.
	redirectCwds := cwds
	if dir, ok := chdirOf(argv); ok {
		cwds = p.runDirs(cwds, dir)
	}

	stripped := stripBenign(argv)
	if len(stripped) == 0 {
		stripped = argv
	}
	// A link to a system program is classified as that program: ./del
	// pointing at /bin/rm is rm, with rm's hard denies and paths.
	facts := analyze(p.canonProgram(stripped, cwds))
	if data, ok := hereData(st); ok && facts.ProgramFromStdin {
		// A here-document is the program a reader of standard input runs:
		// program text, scanned as -c's is; a shell's, behind any
		// wrapper, is read as the command string it is (bash <<'EOF' is
		// bash -c), its commands exposed to the deny rules and their
		// paths decided.
		facts.Inline = append(facts.Inline, data)
		for _, sh := range hereShells(wrapped(argv), data) {
			g := analyze(sh.argv)
			facts.Reads = append(facts.Reads, g.Reads...)
			facts.Writes = append(facts.Writes, g.Writes...)
			facts.Deletes = append(facts.Deletes, g.Deletes...)
			facts.OutsideDangerous = append(facts.OutsideDangerous, g.OutsideDangerous...)
			facts.Network = facts.Network || g.Network
			if facts.HardDeny == "" {
				facts.HardDeny = g.HardDeny
			}
			for _, x := range exposedRuns(sh.argv)[1:] {
				x.dir = joinDirs(sh.dir, x.dir)
				exposedCmds = append(exposedCmds, x)
			}
		}
	}
	sv.Class = facts.Class
	classReason := facts.Reason
	if m := facts.PythonModule; m != "" {
		for _, cwd := range cwds {
			if shadow := pythonShadow(cwd, m); shadow != "" && sv.Class < Unknown {
				sv.Class, classReason = Unknown, fmt.Sprintf("python -m %s imports %s, the workspace's code, first", m, shadow)
			}
		}
	}
	if stdinArgs(argv) && sv.Class < Unknown {
		// xargs takes the program's arguments from its input, so the
		// paths it reads are not on the line.
		sv.Class, classReason = Unknown, "xargs gives it arguments from its input, which the policy cannot see"
	}
	allowForms := execStrings(stripped)
	if _, _, _, deep := stripBenignChain(argv); deep && sv.Class < ShellComplex {
		// What the innermost wrapper runs was never looked at.
		sv.Class, classReason = ShellComplex, fmt.Sprintf("wrappers nested more than %d deep", maxUnwrapDepth)
	}
	local, which, where, named := p.chainOutside(st, cwds)
	if local {
		// ./cat is whatever file the workspace holds under that name: the
		// class table's cat says nothing about it, and an allow rule for
		// cat must not allow it. Only its raw argv can be allowed.
		if sv.Class < Unknown {
			sv.Class, classReason = Unknown, fmt.Sprintf("%s is a program at %s, not a system program", which, where)
		}
		allowForms = []string{strings.Join(named, " ")}
	}

	// Paths: what the program reads, writes and deletes, and where its
	// redirects point.
	reads, writes := slices.Clone(facts.Reads), slices.Clone(facts.Writes)
	for _, r := range st.Redirects {
		if r.Op == shell.DupStdout || r.Op == shell.Input {
			continue // no path: a copy of fd 1, or a here-document's bytes
		}
		access := ActRead
		if r.IsWrite() {
			access = ActWrite
			// Writing to /dev/null, /dev/stdout or /dev/stderr mutates
			// nothing.
			if sv.Class < WorkspaceMutating && !isExemptDevice(r.Path) {
				sv.Class, classReason = WorkspaceMutating, "it redirects output into a file"
			}
		}
		for _, cwd := range redirectCwds {
			sv.Paths = appendPath(sv.Paths, p.decidePath(r.Path, cwd, access))
		}
	}
	for _, cwd := range cwds {
		writes := append(slices.Clone(writes), p.intoDirectory(path.Base(p.canonName(stripped[0], cwds)), facts.Reads, writes, cwd)...)
		for _, x := range reads {
			sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActRead))
		}
		for _, x := range writes {
			sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActWrite))
		}
		for _, x := range facts.Deletes {
			sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActDelete))
		}
		for _, x := range facts.OutsideDangerous {
			if _, own := p.inSandboxHome(lexicalAbs(p.expandHome(x), cwd)); own {
				continue // the run's own HOME, like the workspace
			}
			if r, err := workspace.PhysicalIn(cwd, p.expandHome(x)); err == nil && !p.inWorkspace(r) && sv.Class < Dangerous {
				sv.Class, classReason = Dangerous, fmt.Sprintf("%s aims at %s, outside the workspace", path.Base(stripped[0]), r)
			}
		}
	}

	// Hard denies, deny rules and ask rules reach through wrappers, sh -c
	// strings and find -exec: every command the stage exposes is tested.
	var askRule *Rule
	for i, run := range exposedCmds {
		e, ecwds := run.argv, p.runDirs(redirectCwds, run.dir)
		if dir, ok := chdirOf(e); ok {
			ecwds = p.runDirs(ecwds, dir)
		}
		ef := facts
		if i > 0 {
			ef = analyzeStripped(p.canonProgram(e, ecwds))
			// What a wrapped command reads and writes is decided like the
			// stage's own paths: sudo cat ~/.ssh/id_rsa reads a secret.
			for _, cwd := range ecwds {
				for _, x := range ef.Reads {
					sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActRead))
				}
				for _, x := range ef.Writes {
					sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActWrite))
				}
				for _, x := range ef.Deletes {
					sv.Paths = appendPath(sv.Paths, p.decidePath(x, cwd, ActDelete))
				}
			}
		}
		if a := p.hardDeny(e, ef, ecwds); a != nil {
			sv.Decision, sv.Rule, sv.Reason = Deny, a, "hard deny: "+strings.TrimPrefix(a.Rule, "hard deny: ")
			return sv
		}
		forms := p.denyForms(e, ecwds)
		if r := p.rules[ActExec][Deny].matchString(forms...); r != nil {
			sv.Decision, sv.Rule = Deny, r.attribution()
			sv.Reason = fmt.Sprintf("denied by %s", sv.Rule)
			if i > 0 {
				sv.Reason += fmt.Sprintf(", reached through the wrapper as %q", shortArgv(e))
			}
			return sv
		}
		if askRule == nil {
			askRule = p.rules[ActExec][Ask].matchString(forms...)
		}
		if ef.Class > sv.Class && i > 0 && ef.Class == Dangerous {
			sv.Class, classReason = Dangerous, ef.Reason
		}
	}

	// Inline program text is matched word by word against the protected
	// set: a script that names ~/.ssh/id_rsa is refused even though the
	// policy cannot follow what the script does.
	scanned := facts.Inline
	if len(scanned) > 0 {
		// The arguments after the program text reach it too (sys.argv).
		scanned = append(slices.Clone(scanned), stripped[1:]...)
	}
	for _, code := range scanned {
		for _, w := range inlineWords(code) {
			w = p.expandHome(w)
			for _, cwd := range cwds {
				if pr := p.protectedMatch(w, cwd, ActRead); pr != nil {
					sv.Decision, sv.Rule = Deny, pr.rule.attribution()
					sv.Reason = fmt.Sprintf("inline program names %s, protected by %s", w, sv.Rule)
					return sv
				}
			}
		}
	}

	allowRule := p.rules[ActExec][Allow].matchString(allowForms...)
	sv.Decision, sv.Reason, sv.Rule = p.table(sv.Class, classReason, askRule, allowRule, facts.Network)
	if st.Venv != "" && sv.Class < Unknown {
		// Every program the stage starts by name, not only its own,
		// is looked up in the venv's bin first (git's gpg, file's lz4):
		// the workspace's code may run, whatever the program is.
		sv.Class = Unknown
		// An allow rule lifts it only when it names the venv's own
		// program by its path: a rule for git does not allow the venv's
		// gpg.
		if sv.Decision == Allow && (allowRule == nil || !local) {
			sv.Decision, sv.Reason, sv.Rule = p.table(Unknown, fmt.Sprintf("it runs with the venv %s first on PATH, where any program it starts may be the workspace's", st.Venv), askRule, nil, facts.Network)
		}
	}
	if name, why := p.stageEnv(st.Env); name != "" {
		// A variable that can change what the program runs or reads
		// makes no program read-only, and no allow rule lifts it.
		sv.Class = max(sv.Class, Unknown)
		if sv.Decision != Deny {
			sv.Decision, sv.Rule = Ask, nil
			if p.Mode == ModeSafe {
				sv.Decision = Deny
			}
			sv.Reason = why + ": asked unless [env] set in the org or user policy names " + name
		}
	}
	sv.stricterPaths()
	return sv
}

// wrapped returns argv and the commands its exec wrappers run, outermost
// first, each in the directory the wrappers move it to: env -C d bash is
// [env -C d bash] then [bash] in d. It follows the wrappers only, not the
// shell strings they run.
func wrapped(argv []string) []exposedRun {
	out := []exposedRun{{argv: argv}}
	dir := ""
	for range maxUnwrapDepth {
		if len(argv) == 0 {
			break
		}
		w, ok := execWrappers[path.Base(argv[0])]
		if !ok {
			break
		}
		r := w.unwrap(argv[1:])
		if len(r.argv) == 0 {
			break
		}
		dir, argv = joinDirs(dir, r.dir), r.argv
		out = append(out, exposedRun{argv: argv, dir: dir})
	}
	return out
}

// hereShells returns, for commands fed data on standard input, each shell
// among them that reads its commands from there, as the shell running
// data with -c (in the shell's directory): sh <<'EOF' runs the body.
func hereShells(runs []exposedRun, data string) []exposedRun {
	var out []exposedRun
	for _, r := range runs {
		if len(r.argv) == 0 || !isShellProgram(path.Base(r.argv[0])) {
			continue
		}
		if inv := parseShellArgs(r.argv[1:]); inv.stdin && !inv.hasCommand && !inv.flagC {
			out = append(out, exposedRun{argv: []string{r.argv[0], "-c", data}, dir: r.dir})
		}
	}
	return out
}

// hereData returns what a stage reads on standard input when its
// redirects settle it to a here-document's bytes.
func hereData(st *shell.Stage) (string, bool) {
	return hereOf(st.Redirects)
}

// hereOf is hereData for a list of redirects.
func hereOf(redirects []shell.Redirect) (string, bool) {
	data, ok := "", false
	for _, r := range redirects {
		switch r.Op {
		case shell.Input:
			data, ok = r.Data, true
		case shell.Read:
			data, ok = "", false
		}
	}
	return data, ok
}

// systemProgramDirs hold the programs the class table describes. A bare
// program name is looked up on the sandbox's PATH, which holds only these.
var systemProgramDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc/alternatives"}

// localProgram reports whether argv0 names a program by a path that leads
// (from any possible working directory) outside the system directories,
// and where.
func (p *Policy) localProgram(argv0 string, cwds []string) (bool, string) {
	if !strings.Contains(argv0, "/") {
		return false, ""
	}
	for _, cwd := range cwds {
		r, err := workspace.PhysicalIn(cwd, argv0)
		if err != nil {
			return true, lexicalAbs(argv0, cwd)
		}
		system := false
		for _, d := range systemProgramDirs {
			if workspace.Within(d, r) {
				system = true
			}
		}
		if !system {
			return true, r
		}
	}
	return false, ""
}

// chainOutside reports whether a program the stage runs is not a system
// program, and where, with the argv an allow rule must then name: the
// stage's own program and every benign wrapper's inner one (timeout 5 ls
// runs timeout, which runs ls), each the file a path names or, for a bare
// name, the file the sandbox's PATH found (Stage.Program, Stage.Programs).
// The class table speaks of the system's programs; a wrapper that is a
// workspace file, or found in a tool directory, runs whatever it likes.
// The argv to allow is the local member's own and what it runs (./nice ls
// in timeout 5 ./nice ls), with the file found in place of a bare name, so
// that a rule for an outer wrapper never lifts it.
func (p *Policy) chainOutside(st *shell.Stage, cwds []string) (local bool, which, where string, named []string) {
	_, _, chain, _ := stripBenignChain(st.Argv)
	for i, level := range chain {
		name := level[0]
		if st.Venv != "" && !strings.Contains(name, "/") {
			// The activated venv's bin comes first on the stage's PATH:
			// a name found there is the workspace's program, whatever
			// the resolver said.
			if p := filepath.Join(st.Venv, "bin", name); fileExists(p) {
				return true, name, p, append([]string{p}, level[1:]...)
			}
		}
		switch {
		case strings.Contains(name, "/"):
			if local, where := p.localProgram(name, cwds); local {
				return true, name, where, level
			}
		case i == 0 && st.Program != "":
			if local, where := p.foundOutside(st.Program); local {
				return true, name, where, append([]string{st.Program}, level[1:]...)
			}
		case i > 0 && st.Programs != nil:
			found, looked := st.Programs[name]
			switch {
			case !looked:
				return true, name, "a path not looked up on the sandbox's PATH", level
			case found == "":
				continue // not found: the wrapper fails to run it
			case !filepath.IsAbs(found):
				// The PATH leads to an entry the sandbox cannot vouch for
				// (a link out of the view, which a command could make
				// lead somewhere).
				return true, name, found, level
			}
			if local, where := p.foundOutside(found); local {
				return true, name, where, append([]string{found}, level[1:]...)
			}
		}
	}
	return false, "", "", nil
}

// fileExists reports whether anything (a link too) is at p.
func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// resolvedSystemDirs are where a program found on the sandbox's PATH must
// lie, as found and as reached, to be the system's: the system directories
// the sandbox mounts, not /opt, where a read path's tools would be.
var resolvedSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives"}

// foundOutside reports whether the program a resolver found for a bare
// name lies outside the system directories, and where: both the path it
// was found at and the file that path reaches must lie inside them (a
// link named cat in a tool directory that leads to /bin/rm is not cat).
func (p *Policy) foundOutside(program string) (bool, string) {
	r, err := filepath.EvalSymlinks(program)
	if err != nil || !filepath.IsAbs(r) {
		return true, program
	}
	inSystem := func(x string) bool {
		return slices.ContainsFunc(resolvedSystemDirs, func(d string) bool { return workspace.Within(d, x) })
	}
	switch {
	case !inSystem(program):
		return true, program
	case !inSystem(r):
		return true, r
	}
	return false, ""
}

// canonName returns the system program a path-named program is a link to,
// or the name unchanged: a bare name, a path that does not resolve into
// the system directories, or one that names its program already.
func (p *Policy) canonName(name string, cwds []string) string {
	if !strings.Contains(name, "/") || len(cwds) == 0 {
		return name
	}
	r, err := workspace.PhysicalIn(cwds[0], name)
	if err != nil || path.Base(r) == path.Base(name) {
		return name
	}
	// git is a multi-call program: through a link named git-stash it runs
	// git stash, so the name it is run by is what it does.
	if path.Base(r) == "git" && strings.HasPrefix(path.Base(name), "git-") {
		return name
	}
	for _, d := range systemProgramDirs {
		if workspace.Within(d, r) {
			return r
		}
	}
	return name
}

// canonProgram is argv with its program replaced by canonName's.
func (p *Policy) canonProgram(argv []string, cwds []string) []string {
	if len(argv) == 0 {
		return argv
	}
	if c := p.canonName(argv[0], cwds); c != argv[0] {
		return append([]string{c}, argv[1:]...)
	}
	return argv
}

// denyForms are the strings deny and ask rules test: B, J and R, and for a
// program named by a path, the same with the name of the file the path
// reaches, so a link ./del to /bin/rm is denied by "rm *".
func (p *Policy) denyForms(argv []string, cwds []string) []string {
	forms := execStrings(argv)
	// A command from a shell string keeps its ~; deny rules see it both
	// ways, as written and expanded.
	expanded := make([]string, len(argv))
	changed := false
	for i, a := range argv {
		expanded[i] = p.expandHome(a)
		changed = changed || expanded[i] != a
	}
	if changed {
		forms = append(forms, execStrings(expanded)...)
	}
	// git's harmless global options must not hide the subcommand from a
	// deny rule: git --no-pager push is git push.
	if g := gitCanonical(argv); g != nil {
		forms = append(forms, execStrings(g)...)
	}
	if len(argv) == 0 || !strings.Contains(argv[0], "/") {
		return forms
	}
	for _, cwd := range cwds {
		if r, err := workspace.PhysicalIn(cwd, argv[0]); err == nil && path.Base(r) != path.Base(argv[0]) {
			forms = append(forms, execStrings(append([]string{r}, argv[1:]...))...)
		}
	}
	return forms
}

// runDirs returns the directories a command exposed by a wrapper runs in:
// the stage's own, moved by a cd in the wrapper's shell string.
func (p *Policy) runDirs(cwds []string, dir string) []string {
	if dir == "" {
		return cwds
	}
	dir = p.expandHome(dir)
	out := make([]string, 0, len(cwds))
	for _, cwd := range cwds {
		r, err := workspace.PhysicalIn(cwd, dir)
		if err != nil {
			r = lexicalAbs(dir, cwd)
		}
		out = append(out, r)
	}
	return out
}

// intoDirectory returns the files cp, mv, install and ln create when their
// destination is an existing directory: DEST/basename(SOURCE) for each
// source. Checking DEST alone would let cp -r hooks .git write
// .git/hooks. A destination in the sandbox's private HOME is not on the
// host to look at, so it is taken to be a directory: cp .gitconfig ~
// writes ~/.gitconfig.
func (p *Policy) intoDirectory(prog string, sources, dests []string, cwd string) []string {
	switch prog {
	case "cp", "mv", "install", "ln":
	default:
		return nil
	}
	var out []string
	for _, d := range dests {
		_, own := p.inSandboxHome(lexicalAbs(p.expandHome(d), cwd))
		r, err := workspace.PhysicalIn(cwd, d)
		if err != nil && !own {
			continue
		}
		if fi, err := os.Stat(r); !own && (err != nil || !fi.IsDir()) {
			continue
		}
		for _, s := range sources {
			if b := path.Base(strings.TrimRight(s, "/")); b != "." && b != "/" && b != ".." {
				out = append(out, d+"/"+b)
			}
		}
	}
	return out
}

// analyzeStripped classifies argv as allow matching sees it: with the
// benign wrappers stripped, unless nothing is left.
func analyzeStripped(argv []string) stageFacts {
	if s := stripBenign(argv); len(s) > 0 {
		return analyze(s)
	}
	return analyze(argv)
}

// table is the per-stage decision table of the spec, after deny rules and
// hard denies.
func (p *Policy) table(c Class, why string, askRule, allowRule *Rule, network bool) (Decision, string, *Attribution) {
	safe := p.Mode == ModeSafe
	g := ForMode(p.Mode)
	orDeny := func(d Decision) Decision {
		if safe {
			return Deny
		}
		return d
	}
	switch {
	case askRule != nil:
		a := askRule.attribution()
		return orDeny(Ask), "asked by " + a.String(), a
	case c >= ShellComplex:
		return orDeny(Ask), fmt.Sprintf("%s (%s): no allow rule can lift it", c, why), nil
	case c == WorkspaceMutating && !g.WorkspaceWrite:
		return Deny, fmt.Sprintf("%s mode does not write (%s)", p.Mode, why), nil
	case network && !g.Network:
		return Deny, fmt.Sprintf("%s mode has no network (%s)", p.Mode, why), nil
	case allowRule != nil:
		a := allowRule.attribution()
		return Allow, "allowed by " + a.String(), a
	case c == ReadOnly:
		return Allow, "read-only (" + why + ")", nil
	case safe:
		return Deny, fmt.Sprintf("%s: safe mode runs only read-only programs and allowed rules", c), nil
	case p.Mode == ModeAsk:
		return Ask, fmt.Sprintf("%s (%s): ask mode asks unless a rule allows it", c, why), nil
	case network:
		return Ask, fmt.Sprintf("network client (%s): auto mode asks before reaching the network unless a rule allows it", why), nil
	}
	return Allow, fmt.Sprintf("%s (%s): auto mode runs it", c, why), nil
}

// hardDeny returns the builtin attribution of a hard deny of argv, which
// no rule and no mode can lift: rm and friends aimed at /, a top-level
// directory, HOME, the workspace or an ancestor of it; mkfs; dd onto a
// device.
func (p *Policy) hardDeny(argv []string, f stageFacts, cwds []string) *Attribution {
	hard := func(why string) *Attribution {
		return &Attribution{Rule: "hard deny: " + why, Act: ActExec, Effect: Deny, Layer: LayerBuiltin}
	}
	if f.HardDeny != "" {
		return hard(f.HardDeny)
	}
	prog := path.Base(p.canonName(argv[0], cwds))
	if s := stripBenign(argv); len(s) > 0 {
		prog = path.Base(p.canonName(s[0], cwds))
	}
	switch prog {
	case "rm", "rmdir", "unlink", "shred":
	default:
		return nil
	}
	for _, x := range f.Deletes {
		for _, cwd := range cwds {
			r, err := workspace.PhysicalIn(cwd, p.expandHome(x))
			if err != nil {
				return hard(fmt.Sprintf("%s of %s, which cannot be resolved: %v", prog, x, err))
			}
			if why := p.vitalDir(r); why != "" {
				return hard(fmt.Sprintf("%s of %s (%s)", prog, r, why))
			}
		}
	}
	return nil
}

// vitalDir says why deleting r would be a disaster, or "".
func (p *Policy) vitalDir(r string) string {
	switch {
	case r == "/":
		return "the root"
	case p.Home != "" && r == p.Home, p.SandboxHome != "" && r == p.SandboxHome:
		return "HOME"
	case p.Workspace != "" && r == p.Workspace:
		return "the workspace"
	case p.Workspace != "" && workspace.Within(r, p.Workspace):
		return "an ancestor of the workspace"
	case strings.Count(r, "/") == 1:
		return "a top-level directory"
	}
	return ""
}

func (p *Policy) inWorkspace(r string) bool {
	return p.Workspace != "" && workspace.Within(p.Workspace, r)
}

// home is where a bare cd goes: the sandbox's HOME when the lines run in
// one, else the user's.
func (p *Policy) home() string {
	if p.SandboxHome != "" {
		return p.SandboxHome
	}
	return p.Home
}

// inSandboxHome reports whether abs, an absolute clean path, lies in the
// sandbox's private HOME, and its rest below it ("" for HOME itself, else
// starting with /).
func (p *Policy) inSandboxHome(abs string) (rest string, ok bool) {
	h := p.SandboxHome
	switch {
	case h == "":
		return "", false
	case abs == h:
		return "", true
	case strings.HasPrefix(abs, h+"/"):
		return abs[len(h):], true
	}
	return "", false
}

// expandHome expands a leading ~ with the policy's HOME. The line's own
// words arrive expanded by the parser; a ~ that is still there comes from
// a shell string inside the line (bash -c 'cat ~/x'), or was quoted, in
// which case reading it as HOME errs on the side of the protected set.
func (p *Policy) expandHome(x string) string {
	if p.Home != "" && (x == "~" || strings.HasPrefix(x, "~/")) {
		return p.Home + x[1:]
	}
	return x
}

// lexicalAbs makes x absolute against cwd without touching the disk, so a
// protected pattern is decided on the path as written too.
func lexicalAbs(x, cwd string) string {
	if filepath.IsAbs(x) {
		return filepath.Clean(x)
	}
	return filepath.Join(cwd, x)
}

// protectedMatch returns the protected entry forbidding access to x, if
// any: the path as written and the file it reaches are both tested, so
// neither a link nor a .. changes the answer.
func (p *Policy) protectedMatch(x, cwd string, access Act) *protectedRule {
	abs := lexicalAbs(x, cwd)
	resolved, err := workspace.PhysicalIn(cwd, x)
	if err != nil {
		resolved = abs
	}
	return p.protectedOf(abs, resolved, access)
}

func (p *Policy) protectedOf(abs, resolved string, access Act) *protectedRule {
	if access != ActRead && isExemptDevice(abs) {
		return nil
	}
	best := -1
	for _, x := range []string{abs, resolved} {
		p.protectedIndex.candidates(x, func(i int) bool {
			if best < 0 || i < best {
				if pr := &p.protected[i]; pr.guards(access) && pr.matches(x) {
					best = i
				}
			}
			return true
		})
	}
	if best < 0 {
		return nil
	}
	return &p.protected[best]
}

// generatedRule is the rule text of the generated-file refusal.
const generatedRule = "generated file (its header says so)"

// Protection returns the attribution of what protects a path against an
// access, or nil: the protected set (builtin and [workspace] protected)
// tested on the path as written and on the file it reaches (both
// absolute), and, for writes and deletes, a header saying the file is
// generated. The file tools call it through their guard.
func (p *Policy) Protection(access Act, written, resolved string) *Attribution {
	if pr := p.protectedOf(written, resolved, access); pr != nil {
		return pr.rule.attribution()
	}
	if access != ActRead && isGenerated(resolved) {
		return &Attribution{Rule: generatedRule, Act: access, Effect: Deny, Layer: LayerBuiltin}
	}
	return nil
}

// decidePath decides one access to the path x (as written) from cwd.
func (p *Policy) decidePath(x, cwd string, access Act) PathVerdict {
	pv := PathVerdict{Path: x, Access: access}
	x = p.expandHome(x)
	abs := lexicalAbs(x, cwd)
	if _, ok := p.inSandboxHome(abs); ok {
		return p.decideSandboxHome(pv, abs)
	}
	if _, from := p.inSandboxHome(cwd); from && !filepath.IsAbs(x) {
		// A .. out of the private HOME is lexical here, but on the rungs
		// that keep HOME elsewhere it climbs from there instead.
		pv.Resolved, pv.Decision = abs, Deny
		pv.Reason = "climbs out of the sandbox's private HOME with ..: where that leads depends on the sandbox; name the path from / instead"
		return pv
	}
	if isExemptDevice(abs) {
		pv.Resolved, pv.Decision, pv.Reason = abs, Allow, "an exempt device"
		return pv
	}
	resolved, err := workspace.PhysicalIn(cwd, x)
	if err != nil {
		pv.Resolved, pv.Decision, pv.Reason = abs, Deny, fmt.Sprintf("cannot be resolved: %v", err)
		return pv
	}
	pv.Resolved = resolved
	if a := p.Protection(access, abs, resolved); a != nil {
		pv.Decision, pv.Rule = Deny, a
		pv.Reason = "protected by " + a.String()
		if a.Rule == generatedRule {
			pv.Reason = "the file says it is generated: change its generator, not the copy"
		}
		return pv
	}
	rules := p.rules[access]
	if r := rules[Deny].matchPath(abs, resolved); r != nil {
		pv.Decision, pv.Rule = Deny, r.attribution()
		pv.Reason = "denied by " + pv.Rule.String()
		return pv
	}
	// Read-only comes before ask rules: an ask rule (from an untrusted
	// project file, say) must not turn a deny into a question.
	inside := p.inWorkspace(resolved)
	if inside && access != ActRead && (p.ReadOnly || p.Mode == ModeSafe) {
		pv.Decision, pv.Reason = Deny, "the workspace is read-only"
		if p.Mode == ModeSafe {
			pv.Reason += " in safe mode"
		}
		return pv
	}
	if r := rules[Ask].matchPath(abs, resolved); r != nil {
		pv.Decision, pv.Rule = Ask, r.attribution()
		if p.Mode == ModeSafe {
			pv.Decision = Deny
		}
		pv.Reason = "asked by " + pv.Rule.String()
		return pv
	}
	if r := rules[Allow].matchPath(abs, resolved); r != nil {
		pv.Decision, pv.Rule = Allow, r.attribution()
		pv.Reason = "allowed by " + pv.Rule.String()
		return pv
	}
	if inside {
		pv.Decision, pv.Reason = Allow, "inside the workspace"
		return pv
	}
	pv.Decision, pv.Reason = Ask, "outside the workspace"
	if p.Mode == ModeSafe {
		pv.Decision = Deny
	}
	return pv
}

// decideSandboxHome decides an access to abs, a clean path in the
// sandbox's private HOME. The sandbox makes that directory for the run, so
// it is not on the host to resolve and what it holds is the run's own: it
// is decided like the workspace, writable but in safe mode. The protected
// set and the deny and ask rules are tested on abs and on the same path in
// Home, since a ~/.gitconfig or ~/.ssh written there is one the run's
// later commands obey or read just the same.
func (p *Policy) decideSandboxHome(pv PathVerdict, abs string) PathVerdict {
	pv.Resolved = abs
	paths := []string{abs}
	if rest, _ := p.inSandboxHome(abs); p.Home != "" {
		paths = append(paths, path.Join(p.Home, rest))
	}
	for _, x := range paths {
		if pr := p.protectedOf(x, x, pv.Access); pr != nil {
			pv.Decision, pv.Rule = Deny, pr.rule.attribution()
			pv.Reason = "protected by " + pv.Rule.String()
			return pv
		}
	}
	rules := p.rules[pv.Access]
	if r := rules[Deny].matchPath(paths...); r != nil {
		pv.Decision, pv.Rule = Deny, r.attribution()
		pv.Reason = "denied by " + pv.Rule.String()
		return pv
	}
	if pv.Access != ActRead && p.Mode == ModeSafe {
		pv.Decision, pv.Reason = Deny, "safe mode writes nothing, the sandbox's private HOME included"
		return pv
	}
	if r := rules[Ask].matchPath(paths...); r != nil {
		pv.Decision, pv.Rule = Ask, r.attribution()
		if p.Mode == ModeSafe {
			pv.Decision = Deny
		}
		pv.Reason = "asked by " + pv.Rule.String()
		return pv
	}
	pv.Decision, pv.Reason = Allow, "in the sandbox's private HOME"
	return pv
}

// pythonShadow returns the entry of dir that python -m module would import
// in the module's place (Python puts the working directory first on its
// path): module.py, a package directory, a compiled module, any
// module.SUFFIX. "" when there is none.
func pythonShadow(dir, module string) string {
	top, _, _ := strings.Cut(module, ".")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return filepath.Join(dir, top) + " (the directory cannot be listed)"
	}
	for _, e := range ents {
		if n := e.Name(); n == top || strings.HasPrefix(n, top+".") {
			return filepath.Join(dir, n)
		}
	}
	return ""
}
