package policy

import (
	"path"
	"slices"
	"strings"
)

// The class table's refinements for the writers: what cp, mv, rm, ln,
// chmod and the rest write or delete, and the raw-device programs.

var (
	cpArgs = argSpec{values: "St", optional: "Z", long: longs("archive", "attributes-only", "backup?",
		"copy-contents", "dereference", "force", "interactive", "link", "no-clobber", "no-dereference",
		"preserve?", "no-preserve=", "parents", "recursive", "reflink?", "remove-destination", "sparse=",
		"strip-trailing-slashes", "suffix=", "symbolic-link", "target-directory=", "no-target-directory",
		"update?", "verbose", "one-file-system", "context?", "debug", "keep-directory-symlink")}
	mvArgs = argSpec{values: "St", optional: "Z", long: longs("backup?", "debug", "exchange", "force",
		"interactive", "no-clobber", "no-copy", "strip-trailing-slashes", "suffix=", "target-directory=",
		"no-target-directory", "update?", "verbose", "context?")}
	installArgs = argSpec{values: "gmoSt", optional: "Z", long: longs("backup?", "compare", "directory",
		"group=", "mode=", "owner=", "preserve-timestamps", "strip", "strip-program=", "suffix=",
		"target-directory=", "no-target-directory", "verbose", "preserve-context", "context?", "debug")}
	lnArgs = argSpec{values: "St", long: longs("backup?", "directory", "force", "interactive", "logical",
		"no-dereference", "physical", "relative", "symbolic", "suffix=", "target-directory=",
		"no-target-directory", "verbose")}
)

// destination splits the operands of cp, mv, install and ln into sources
// and the destination, honouring -t DIR.
func destination(ws argWords) (sources []string, dest string) {
	ops := ws.operands()
	if t := ws.values("t", "target-directory"); len(t) > 0 {
		return ops, t[len(t)-1]
	}
	if len(ops) < 2 {
		return ops, ""
	}
	return ops[:len(ops)-1], ops[len(ops)-1]
}

// refineCp treats cp -l like ln, and cp -s like ln -s: the copies are
// links to the sources.
func refineCp(c *classCall) {
	ws := cpArgs.scan(c.args)
	sources, dest := destination(ws)
	c.reads(sources...)
	if ws.has("l", "link") {
		c.writes(sources...)
	}
	c.writes(dest)
	if ws.has("s", "symbolic-link") {
		c.outside(symlinkTargets(sources, symlinkDirs(ws, len(sources), dest))...)
		c.outside(dest)
	}
}

// refineMv records sources as deletions too: moving a file away removes it
// where it was.
func refineMv(c *classCall) {
	sources, dest := destination(mvArgs.scan(c.args))
	c.reads(sources...)
	c.deletes(sources...)
	c.writes(dest)
}

func refineInstall(c *classCall) {
	ws := installArgs.scan(c.args)
	if ws.has("strip-program") {
		c.raise(ShellComplex, "install --strip-program runs a program")
	}
	if ws.has("d", "directory") {
		c.writes(ws.operands()...)
		return
	}
	sources, dest := destination(ws)
	c.reads(sources...)
	c.writes(dest)
}

var touchArgs = argSpec{values: "drt", long: longs("no-create", "date=", "no-dereference", "reference=", "time=")}

func refineTouch(c *classCall) {
	ws := touchArgs.scan(c.args)
	c.reads(ws.values("r", "reference")...)
	c.writes(ws.operands()...)
}

var truncateArgs = argSpec{values: "rs", long: longs("no-create", "io-blocks", "reference=", "size=")}

func refineTruncate(c *classCall) {
	ws := truncateArgs.scan(c.args)
	c.reads(ws.values("r", "reference")...)
	c.writes(ws.operands()...)
}

var rmArgs = argSpec{long: longs("force", "interactive?", "one-file-system", "no-preserve-root", "preserve-root?",
	"recursive", "dir", "verbose", "help", "version")}

// refineRm makes any recursive spelling dangerous: -r, -R, clusters such as
// -vfr, --recursive and its abbreviations, which getopt accepts (--rec).
func refineRm(c *classCall) {
	ws := rmArgs.scan(c.args)
	ops := ws.operands()
	c.deletes(ops...)
	c.outside(ops...)
	for _, w := range ws {
		switch {
		case w.opt == "r" || w.opt == "R" || strings.HasPrefix(w.opt, "recursive"):
			c.raise(Dangerous, "rm -r deletes recursively")
		case w.opt == "no-preserve-root":
			c.raise(Dangerous, "rm --no-preserve-root lifts the guard on /")
		}
	}
}

var shredArgs = argSpec{values: "ns", long: longs("force", "iterations=", "random-source=", "size=", "remove?",
	"verbose", "exact", "zero")}

// refineShred treats shredded files as deleted: their content is gone,
// whether or not -u also unlinks them.
func refineShred(c *classCall) {
	ws := shredArgs.scan(c.args)
	c.reads(ws.values("random-source")...)
	var targets []string
	for _, op := range ws.operands() {
		if op != "-" {
			targets = append(targets, op)
		}
	}
	c.deletes(targets...)
	c.outside(targets...)
}

// refineLn records link names as writes. A symbolic link aimed outside
// the workspace is dangerous, so its targets go in OutsideDangerous with
// the link name. A hard link's targets are read and written through the
// new name, so they count as both.
func refineLn(c *classCall) {
	ws := lnArgs.scan(c.args)
	targets, dest := destination(ws)
	if dest == "" && len(targets) == 1 {
		dest = path.Base(targets[0])
	}
	if !ws.has("s", "symbolic") {
		c.reads(targets...)
		c.writes(targets...)
		c.writes(dest)
		return
	}
	c.writes(dest)
	linkDirs := symlinkDirs(ws, len(targets), dest)
	if ws.has("r", "relative") {
		linkDirs = []string{""}
	}
	c.outside(symlinkTargets(targets, linkDirs)...)
	c.outside(dest)
	// A link is a way to write its target later in the same line (ln -s
	// .git/hooks h && cp x h/pre-commit), where the policy decides paths
	// as the disk has them now: the target is decided as a write.
	c.writes(symlinkTargets(targets, linkDirs)...)
}

// symlinkDirs returns the directories, relative to the working directory,
// that a new symbolic link may land in: a relative target is resolved from
// there, not from the working directory. With one target and no -t or -T,
// the destination may be the link or a directory to put it in, so both
// are returned.
func symlinkDirs(ws argWords, targets int, dest string) []string {
	if len(ws.values("t", "target-directory")) > 0 || targets > 1 {
		return []string{dest}
	}
	dir := ""
	switch k := strings.LastIndexByte(strings.TrimRight(dest, "/"), '/'); {
	case k == 0:
		dir = "/"
	case k > 0:
		dir = dest[:k]
	}
	if ws.has("T", "no-target-directory") {
		return []string{dir}
	}
	return []string{dir, dest}
}

// symlinkTargets returns where each target of a symbolic link points, as
// seen from the working directory, once for each directory the link may
// land in.
func symlinkTargets(targets, dirs []string) []string {
	var out []string
	for _, t := range targets {
		for _, d := range dirs {
			p := underDir(d, t)
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// refineChmod skips the mode, which may itself begin with a dash (chmod -w
// f): GNU chmod reads a dash word made of anything but -c -f -v -R as the
// mode.
func refineChmod(c *classCall) {
	haveMode := false
	var targets []string
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "--":
			for _, op := range c.args[i+1:] {
				if haveMode {
					targets = append(targets, op)
				} else {
					haveMode = true
				}
			}
			i = len(c.args)
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			if strings.HasPrefix("reference", name) && len(name) >= 3 {
				if !hasValue && i+1 < len(c.args) {
					i++
					value = c.args[i]
				}
				c.reads(value)
				haveMode = true
			}
		case len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], "cfvR") == "":
		case !haveMode:
			haveMode = true
		default:
			targets = append(targets, a)
		}
	}
	c.writes(targets...)
	c.outside(targets...)
}

var chownArgs = argSpec{long: longs("changes", "silent", "quiet", "verbose", "dereference", "no-dereference",
	"from=", "reference=", "recursive", "preserve-root", "no-preserve-root", "help", "version")}

// refineChown skips the owner operand unless --reference names the owner.
func refineChown(c *classCall) {
	ws := chownArgs.scan(c.args)
	ref := ws.values("reference")
	c.reads(ref...)
	ops := ws.operands()
	if len(ref) == 0 && len(ops) > 0 {
		ops = ops[1:]
	}
	c.writes(ops...)
	c.outside(ops...)
}

// refineDd records if= and of=, and makes writing onto a device other than
// the three harmless ones a hard deny.
func refineDd(c *classCall) {
	for _, a := range c.args {
		switch {
		case strings.HasPrefix(a, "if="):
			c.reads(a[len("if="):])
		case strings.HasPrefix(a, "of="):
			out := a[len("of="):]
			c.writes(out)
			if p := path.Clean(out); strings.HasPrefix(p, "/dev/") && !harmlessDevice(p) && c.f.HardDeny == "" {
				c.f.HardDeny = "dd writes onto the device " + p
			}
		}
	}
}

func harmlessDevice(p string) bool {
	return p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr"
}

func refineMkfs(c *classCall) {
	c.f.HardDeny = c.name + " formats a filesystem"
}
