// Package bwrap turns a [View] of the sandbox (which host paths appear where,
// read-only or not, which namespaces are private) into the exact argv of
// bubblewrap, and starts bubblewrap with nothing of the caller's process but
// that argv, the view's environment and descriptors 0, 1 and 2.
//
// The argv is built without a shell: every path is one argv element, so
// spaces, quotes and newlines in paths need no quoting and cannot split an
// argument. The view is built from nothing: bubblewrap starts from an empty
// tmpfs root and this package adds only what the View names, the system
// directories read-only, a private /proc, /dev and /tmp; the root itself is
// read-only once built.
//
// bwrap owns the mechanism, not the decision: it never imports rein's policy,
// tool or trace packages (nor any other rein package). Which paths are
// protected, which variables are passed and which network mode applies are
// its caller's choices, handed over as plain data.
package bwrap

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Fixed paths inside the sandbox.
const (
	// SandboxHome is where View.Home is mounted. It is outside /home and
	// /root so that nothing of the host's home directories, not even their
	// names, appears in the sandbox; HOME in View.Env should name it.
	SandboxHome = "/run/rein/home"
	// SandboxInit is where View.InitPath is mounted, read-only; it is the
	// command bubblewrap runs.
	SandboxInit = "/run/rein/init"
)

// DefaultTmpSize is the size of the sandbox's /tmp when View.Tmp is 0:
// large enough for builds, small enough that filling /tmp is bounded.
const DefaultTmpSize = 512 << 20

// DefaultHostname is the sandbox's host name when View.Hostname is empty,
// so that the host's name is never copied into the sandbox's UTS namespace.
const DefaultHostname = "rein"

// DefaultSystemDirs are the host directories a command needs to run
// programs: binaries, libraries and /etc. /etc/alternatives-style links
// point into /usr, so they resolve. Directories absent on the host are
// skipped; those that are symbolic links on the host (merged /usr, where
// /bin is usr/bin) become the same link in the sandbox.
var DefaultSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// Network says whether the sandbox has a network of its own.
type Network string

// The network modes.
const (
	// NetworkOff gives the sandbox an empty network namespace: a loopback
	// interface of its own and nothing else, so the host's loopback and
	// every other address are unreachable.
	NetworkOff Network = "off"
	// NetworkFull shares the host's network namespace.
	NetworkFull Network = "full"
)

// View is what a sandboxed command sees of the host. It is plain data; Args
// checks it and reads the host filesystem only to learn which of the named
// paths exist and whether they are files, directories or links.
type View struct {
	// Workspace is the absolute host path of the workspace. It is mounted
	// at the same path, so paths printed inside mean the same outside.
	Workspace string

	// ReadOnlyWorkspace mounts the workspace read-only (safe mode, or a
	// profile that does not write).
	ReadOnlyWorkspace bool

	// Protected are workspace-relative paths bound read-only over
	// themselves when they exist, so that a command cannot plant what the
	// host later executes or trusts: callers pass .git/hooks, .git/config
	// and .rein. Each directory between the workspace and a protected path
	// (.git for .git/hooks) is bound over itself too: a mount point cannot
	// be renamed, so `mv .git .git.old && mkdir -p .git/hooks` fails
	// instead of replacing the hooks the host runs.
	//
	// When .git is a file (a worktree or a submodule checkout, "gitdir:
	// <path>"), the protected paths under .git live in the repository it
	// names. That repository is outside the workspace and so absent from
	// the view (mount it through HostReadPaths to let git read it), and
	// the .git file itself is bound read-only so it cannot be pointed at a
	// directory the command controls. A gitdir inside the workspace is
	// refused: its hooks could not be protected by name.
	//
	// A protected path that does not exist is not created; a path with a
	// symbolic link among its components is refused, since a bind mount
	// would follow the link and protect its target instead.
	Protected []string

	// Masked are workspace-relative paths hidden from the command: a file
	// is covered by an empty read-only file, a directory by an empty
	// read-only directory (secrets kept in the workspace, such as .env).
	// Paths that do not exist are skipped; symbolic links are refused as
	// for Protected. As for Protected, each directory between the
	// workspace and a masked path is bound over itself, so that neither
	// the mask nor a directory holding it can be renamed: a command of
	// another run cannot move a secret to a name the next view does not
	// mask between the listing that found it and the mount.
	Masked []string

	// EmptyFile is the host path of an empty regular file bound read-only
	// over each masked file. Empty makes each mask from a descriptor of
	// its own instead, which thousands of masks would run out of.
	EmptyFile string

	// Home is the host directory mounted read-write at SandboxHome as the
	// command's private home; empty mounts nothing there.
	Home string

	// HomeFiles maps paths relative to SandboxHome to host files or
	// directories bound read-only there (a session's settings, say). Each
	// directory between SandboxHome and such a path is made in Home and
	// bound over itself, so that neither the file nor a directory holding
	// it can be renamed away and replaced. It needs Home.
	HomeFiles map[string]string

	// Tmp is the size in bytes of the private tmpfs mounted at /tmp;
	// 0 means DefaultTmpSize.
	Tmp int64

	// Caches maps host directories to absolute sandbox paths, mounted
	// read-write: per-workspace toolchain caches (Go, npm, pip, cargo)
	// that rein owns, never the user's own.
	Caches map[string]string

	// ReadOnlyCaches maps host directories to absolute sandbox paths,
	// mounted read-only: the user's own immutable caches (Go's module
	// download cache), which the toolchain reads but never writes.
	ReadOnlyCaches map[string]string

	// HostReadPaths are extra absolute host paths mounted read-only at the
	// same path. The caller vets them; Args only refuses paths that would
	// cover the view's own mounts.
	HostReadPaths []string

	// HostWritePaths are absolute host directories, each inside one of
	// HostReadPaths, mounted writable at the same path over the read-only
	// mount. The caller vets them.
	HostWritePaths []string

	// SystemDirs are absolute host directories mounted read-only at the
	// same path, normally DefaultSystemDirs. Absent ones are skipped; host
	// symbolic links are reproduced as links.
	SystemDirs []string

	// SystemMasked are absolute host paths inside SystemDirs hidden like
	// Masked. A command started by root runs as the host's root, so it
	// could read /etc/shadow or private keys through the read-only /etc;
	// PrivateFiles lists what an unprivileged user could not read.
	SystemMasked []string

	// Network is NetworkOff or NetworkFull; there is no default.
	Network Network

	// Overlays maps absolute sandbox paths of files to host files bound
	// read-only over them, after the system directories: a resolv.conf
	// naming the user-mode network's resolver, for instance. A sandbox
	// path must lie inside SystemDirs.
	Overlays map[string]string

	// InfoFile, when set, receives bubblewrap's --info-fd report (a JSON
	// object whose "child-pid" is the host pid of the sandbox's first
	// process), to attach something to the sandbox's namespaces.
	InfoFile *os.File

	// Env is the command's complete environment, as NAME=value entries.
	// Command starts bubblewrap itself with exactly this environment
	// rather than passing --clearenv and --setenv: bubblewrap's own
	// process keeps the environment it was started with, and argv (where
	// --setenv would put secret values) is readable by other users of the
	// host through /proc/<pid>/cmdline while the environment is not.
	// bubblewrap adds PWD, set to the working directory.
	Env []string

	// Chdir is the command's working directory, an absolute sandbox path;
	// empty means Workspace.
	Chdir string

	// Hostname is the host name in the sandbox's UTS namespace; empty
	// means DefaultHostname.
	Hostname string

	// InitPath is the host path of the program to run as the sandbox's
	// init (rein's own binary); it is mounted read-only at SandboxInit and
	// started with the argv given to Args as its arguments. Empty runs
	// argv itself.
	InitPath string
}

// ViewError says which part of a View cannot be turned into a sandbox. It
// never holds an environment value, which may be a secret.
type ViewError struct {
	Field  string // the View field, e.g. "Protected"
	Value  string // the offending path or variable name
	Reason string
}

func (e *ViewError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("bwrap view: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("bwrap view: %s %q: %s", e.Field, e.Value, e.Reason)
}

// mountedByView are the sandbox paths the view mounts itself. Nothing a
// caller names may be one of them or an ancestor, nor lie beneath one,
// except beneath /tmp: callers' mounts come after the tmpfs and stay
// visible on it.
var mountedByView = []string{"/proc", "/dev", "/tmp", "/run/rein"}

// Args returns bubblewrap's arguments (without the program name) for running
// argv in the view, in a deterministic order: namespaces, system
// directories, /proc, /dev, /tmp, home, caches, host read paths, the
// workspace, its protected and masked paths, the init, then "--" and the
// command.
//
// Masked files are created from descriptors 3, 4, … in the order they
// appear in the result (--ro-bind-data); Command supplies them, each an
// empty file. bubblewrap closes them before starting the command.
//
// The user namespace is always new and further user namespaces are
// disabled; capabilities are dropped. The command runs as pid 1 of its own
// pid namespace (--as-pid-1), with no bubblewrap reaper above it: when it
// exits, or when bubblewrap is killed (--die-with-parent sends it SIGKILL),
// the kernel kills every process left in the namespace, daemons included.
// As pid 1 it must reap its own children, which rein's init does.
func Args(v View, argv []string) ([]string, error) {
	a, files, err := build(v, argv)
	closeAll(files)
	return a, err
}

type builder struct {
	args []string
	// files are the descriptors 3, 4, … the arguments name: nil for an
	// empty file (--ro-bind-data), or an O_PATH descriptor a bind takes
	// its source from.
	files []*os.File
}

func (b *builder) add(s ...string) { b.args = append(b.args, s...) }

// fd returns the descriptor number f will have in bubblewrap.
func (b *builder) fd(f *os.File) string {
	b.files = append(b.files, f)
	return strconv.Itoa(2 + len(b.files))
}

// emptyFile covers path with an empty read-only file read from the next
// descriptor.
func (b *builder) emptyFile(path string) {
	b.add("--perms", "0444", "--ro-bind-data", b.fd(nil), path)
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// mask hides path, which exists on the host with the given mode, with an
// empty read-only directory or file (empty, when not "", on the host).
func (b *builder) mask(path string, mode fs.FileMode, empty string) {
	switch {
	case mode.IsDir():
		b.add("--tmpfs", path, "--remount-ro", path)
	case empty != "":
		b.add("--ro-bind", empty, path)
	default:
		b.emptyFile(path)
	}
}

func build(v View, argv []string) (args []string, files []*os.File, err error) {
	var b builder
	defer func() {
		if err != nil {
			closeAll(b.files)
		}
	}()
	args, err = b.build(v, argv)
	return args, b.files, err
}

func (b *builder) build(v View, argv []string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &ViewError{Field: "argv", Reason: "no command to run"}
	}
	ws, err := absPath("Workspace", v.Workspace)
	if err != nil {
		return nil, err
	}
	if coversView(ws) {
		return nil, &ViewError{Field: "Workspace", Value: ws, Reason: "covers a path the sandbox mounts itself"}
	}
	if err := isDir("Workspace", ws); err != nil {
		return nil, err
	}
	if err := checkEnv(v.Env); err != nil {
		return nil, err
	}
	tmp := v.Tmp
	switch {
	case tmp == 0:
		tmp = DefaultTmpSize
	case tmp < 0:
		return nil, &ViewError{Field: "Tmp", Value: strconv.FormatInt(tmp, 10), Reason: "size must not be negative"}
	}
	hostname := v.Hostname
	if hostname == "" {
		hostname = DefaultHostname
	}
	chdir := v.Chdir
	if chdir == "" {
		chdir = ws
	}
	if chdir, err = absPath("Chdir", chdir); err != nil {
		return nil, err
	}

	// --unshare-all only tries a user namespace; asking for one makes its
	// absence an error rather than a sandbox without it, and
	// --disable-userns requires it.
	b.add("--unshare-all", "--unshare-user")
	switch v.Network {
	case NetworkOff:
	case NetworkFull:
		b.add("--share-net")
	default:
		return nil, &ViewError{Field: "Network", Value: string(v.Network), Reason: `must be "off" or "full"`}
	}
	b.add("--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1", "--hostname", hostname)

	// bubblewrap leaves /proc/sys writable when started by root (its own
	// check asks access(2), which the directory's mode refuses even to
	// root), and root in the sandbox is the host's root: it could set the
	// host's sysctls. Sysctl files answer for the namespaces of the process
	// reading them, so the host's /proc/sys bound read-only shows the
	// sandbox its own values.
	b.add("--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger")
	b.add("--dev", "/dev")
	b.add("--size", strconv.FormatInt(tmp, 10), "--tmpfs", "/tmp")

	if err := systemDirs(b, v.SystemDirs, v.SystemMasked); err != nil {
		return nil, err
	}
	overlays := make([]string, 0, len(v.Overlays))
	for dest := range v.Overlays {
		overlays = append(overlays, dest)
	}
	slices.Sort(overlays)
	for _, dest := range overlays {
		d, err := absPath("Overlays", dest)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(v.SystemDirs, func(s string) bool { return within(d, filepath.Clean(s)) && d != filepath.Clean(s) }) {
			return nil, &ViewError{Field: "Overlays", Value: d, Reason: "not inside SystemDirs"}
		}
		h, err := absPath("Overlays", v.Overlays[dest])
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(h); err != nil || !fi.Mode().IsRegular() {
			return nil, &ViewError{Field: "Overlays", Value: h, Reason: "not a regular file"}
		}
		b.add("--ro-bind", h, d)
	}
	if v.InfoFile != nil {
		f, err := dupFile(v.InfoFile)
		if err != nil {
			return nil, &ViewError{Field: "InfoFile", Reason: err.Error()}
		}
		b.add("--info-fd", b.fd(f))
	}

	if v.Home != "" {
		home, err := absPath("Home", v.Home)
		if err != nil {
			return nil, err
		}
		if err := isDir("Home", home); err != nil {
			return nil, err
		}
		b.add("--bind", home, SandboxHome)
		if err := bindHomeFiles(b, home, v.HomeFiles); err != nil {
			return nil, err
		}
	} else if len(v.HomeFiles) > 0 {
		return nil, &ViewError{Field: "HomeFiles", Reason: "needs Home"}
	}

	for _, m := range []struct {
		op   string
		maps map[string]string
	}{{"--bind", v.Caches}, {"--ro-bind", v.ReadOnlyCaches}} {
		if err := bindCaches(b, m.op, m.maps); err != nil {
			return nil, err
		}
	}

	for _, p := range v.HostReadPaths {
		p, err := absPath("HostReadPaths", p)
		if err != nil {
			return nil, err
		}
		if coversView(p) || within(p, ws) {
			return nil, &ViewError{Field: "HostReadPaths", Value: p, Reason: "covers the workspace or a path the sandbox mounts itself"}
		}
		if _, err := os.Stat(p); err != nil {
			return nil, &ViewError{Field: "HostReadPaths", Value: p, Reason: err.Error()}
		}
		b.add("--ro-bind", p, p)
	}
	for _, p := range v.HostWritePaths {
		p, err := absPath("HostWritePaths", p)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(v.HostReadPaths, func(r string) bool { return within(p, filepath.Clean(r)) }) || within(ws, p) {
			return nil, &ViewError{Field: "HostWritePaths", Value: p, Reason: "not inside a host read path, or covers the workspace"}
		}
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return nil, &ViewError{Field: "HostWritePaths", Value: p, Reason: "not a directory"}
		}
		b.add("--bind", p, p)
	}

	if v.ReadOnlyWorkspace {
		b.add("--ro-bind", ws, ws)
	} else {
		b.add("--bind", ws, ws)
	}
	if v.EmptyFile != "" {
		empty, err := absPath("EmptyFile", v.EmptyFile)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Lstat(empty); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
			return nil, &ViewError{Field: "EmptyFile", Value: empty, Reason: "not an empty regular file"}
		}
	}
	var masked []string
	var modes []fs.FileMode
	for _, rel := range v.Masked {
		p, fi, err := inWorkspace("Masked", ws, rel)
		if err != nil {
			return nil, err
		}
		if fi != nil {
			masked, modes = append(masked, p), append(modes, fi.Mode())
		}
	}
	if err := protect(b, ws, v.Protected, masked, v.ReadOnlyWorkspace); err != nil {
		return nil, err
	}
	for i, p := range masked {
		b.mask(p, modes[i], v.EmptyFile)
	}

	cmd := argv
	if v.InitPath != "" {
		init, err := absPath("InitPath", v.InitPath)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(init); err != nil || !fi.Mode().IsRegular() {
			return nil, &ViewError{Field: "InitPath", Value: init, Reason: "not a regular file"}
		}
		b.add("--ro-bind", init, SandboxInit)
		cmd = append([]string{SandboxInit}, argv...)
	}

	// The root tmpfs holds only mount points and links; making it
	// read-only leaves nothing outside the named mounts to write to.
	b.add("--remount-ro", "/", "--chdir", chdir, "--")
	b.add(cmd...)
	return b.args, nil
}

func systemDirs(b *builder, dirs, masked []string) error {
	for _, d := range dirs {
		d, err := absPath("SystemDirs", d)
		if err != nil {
			return err
		}
		if coversView(d) {
			return &ViewError{Field: "SystemDirs", Value: d, Reason: "covers a path the sandbox mounts itself"}
		}
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return &ViewError{Field: "SystemDirs", Value: d, Reason: err.Error()}
			}
			b.add("--symlink", target, d)
		case fi.IsDir():
			b.add("--ro-bind", d, d)
		default:
			return &ViewError{Field: "SystemDirs", Value: d, Reason: "not a directory"}
		}
	}
	for _, p := range masked {
		p, err := absPath("SystemMasked", p)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(dirs, func(d string) bool { return within(p, filepath.Clean(d)) && p != filepath.Clean(d) }) {
			return &ViewError{Field: "SystemMasked", Value: p, Reason: "not inside SystemDirs"}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A link's target is hidden or absent on its own account;
			// binding over the link would follow it.
			continue
		}
		b.mask(p, fi.Mode(), "")
	}
	return nil
}

// protect binds every existing protected path read-only over itself, after
// binding the directories between it, or a masked path, and the workspace
// over themselves so that they cannot be renamed away.
func protect(b *builder, ws string, protected, masked []string, readOnly bool) error {
	guard := "--bind"
	if readOnly {
		guard = "--ro-bind"
	}
	guarded := map[string]bool{}
	var ro []string
	for _, rel := range protected {
		clean, err := relPath("Protected", rel)
		if err != nil {
			return err
		}
		if first, _, nested := strings.Cut(clean, string(filepath.Separator)); nested && first == ".git" {
			gitFile, err := dotGitFile(ws)
			if err != nil {
				return err
			}
			if gitFile {
				ro = append(ro, filepath.Join(ws, ".git"))
				continue
			}
		}
		p, fi, err := inWorkspace("Protected", ws, clean)
		if err != nil {
			return err
		}
		if fi == nil {
			continue
		}
		for dir := filepath.Dir(clean); dir != "."; dir = filepath.Dir(dir) {
			guarded[dir] = true
		}
		ro = append(ro, p)
	}
	for _, p := range masked {
		rel, _ := filepath.Rel(ws, p)
		for dir := filepath.Dir(rel); dir != "."; dir = filepath.Dir(dir) {
			guarded[dir] = true
		}
	}
	dirs := make([]string, 0, len(guarded))
	for d := range guarded {
		dirs = append(dirs, d)
	}
	// Parents before children: a later bind of a parent would hide the
	// mounts made beneath it.
	slices.SortFunc(dirs, func(x, y string) int {
		if c := strings.Count(x, "/") - strings.Count(y, "/"); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	// The sources are opened beneath the workspace without following any
	// link, and bound by descriptor: a command of another run in the same
	// workspace cannot swap a directory for a link between the check
	// above and the mount.
	root, err := openRoot(ws)
	if err != nil {
		return &ViewError{Field: "Workspace", Value: ws, Reason: err.Error()}
	}
	defer root.Close()
	bind := func(kind, p string) error {
		rel, _ := filepath.Rel(ws, p)
		f, err := openBeneath(root, rel, p)
		if err != nil {
			return &ViewError{Field: "Protected", Value: rel, Reason: "cannot be opened without following a link: " + err.Error()}
		}
		b.add(kind+"-fd", b.fd(f), p)
		return nil
	}
	for _, d := range dirs {
		if err := bind(guard, filepath.Join(ws, d)); err != nil {
			return err
		}
	}
	for _, p := range compactSorted(ro) {
		if err := bind("--ro-bind", p); err != nil {
			return err
		}
	}
	return nil
}

// dotGitFile reports whether the workspace's .git is a file naming a git
// directory outside the workspace, and refuses one that names a directory
// inside it.
func dotGitFile(ws string) (bool, error) {
	p := filepath.Join(ws, ".git")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return false, &ViewError{Field: "Protected", Value: ".git", Reason: err.Error()}
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return false, &ViewError{Field: "Protected", Value: ".git", Reason: `a .git file without "gitdir:"`}
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(ws, gitdir)
	}
	if within(filepath.Clean(gitdir), ws) {
		return false, &ViewError{Field: "Protected", Value: ".git", Reason: "names a git directory inside the workspace, whose hooks and config cannot be protected"}
	}
	return true, nil
}

// inWorkspace resolves a workspace-relative path and returns its info, or
// nil info when it does not exist. A symbolic link on the way is refused.
func inWorkspace(field, ws, rel string) (string, fs.FileInfo, error) {
	clean, err := relPath(field, rel)
	if err != nil {
		return "", nil, err
	}
	p := ws
	var fi fs.FileInfo
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err = os.Lstat(p)
		if err != nil {
			return p, nil, nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, &ViewError{Field: field, Value: rel, Reason: "is or passes through a symbolic link; a mount would follow it"}
		}
	}
	return p, fi, nil
}

func relPath(field, rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", &ViewError{Field: field, Value: rel, Reason: "must be a path relative to the workspace"}
	}
	clean := filepath.Clean(rel)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &ViewError{Field: field, Value: rel, Reason: "escapes the workspace"}
	}
	return clean, nil
}

func absPath(field, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", &ViewError{Field: field, Value: p, Reason: "must be an absolute path"}
	}
	return filepath.Clean(p), nil
}

func isDir(field, p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return &ViewError{Field: field, Value: p, Reason: err.Error()}
	}
	if !fi.IsDir() {
		return &ViewError{Field: field, Value: p, Reason: "not a directory"}
	}
	return nil
}

func checkEnv(env []string) error {
	seen := make(map[string]bool, len(env))
	for i, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsRune(kv, 0) {
			return &ViewError{Field: "Env", Value: strconv.Itoa(i), Reason: "entry is not NAME=value"}
		}
		if seen[name] {
			return &ViewError{Field: "Env", Value: name, Reason: "variable set twice"}
		}
		seen[name] = true
	}
	return nil
}

// coversView reports whether a mount at p would cover or be covered by one
// of mountedByView.
func coversView(p string) bool {
	for _, m := range mountedByView {
		if within(m, p) || (m != "/tmp" && within(p, m)) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies under it; both are clean.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// compactSorted sorts and removes duplicates.
func compactSorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// bindCaches adds a bind of op for each host directory of caches, in the
// order of their sandbox paths.
func bindCaches(b *builder, op string, caches map[string]string) error {
	dests := make([]string, 0, len(caches))
	byDest := make(map[string]string, len(caches))
	for host, dest := range caches {
		h, err := absPath("Caches", host)
		if err != nil {
			return err
		}
		d, err := absPath("Caches", dest)
		if err != nil {
			return err
		}
		if coversView(d) {
			return &ViewError{Field: "Caches", Value: d, Reason: "covers a path the sandbox mounts itself"}
		}
		if err := isDir("Caches", h); err != nil {
			return err
		}
		dests = append(dests, d)
		byDest[d] = h
	}
	slices.Sort(dests)
	for _, d := range dests {
		b.add(op, byDest[d], d)
	}
	return nil
}

// bindHomeFiles binds each of files read-only at its path below
// SandboxHome, after binding each directory between over itself (made in
// home, the host directory mounted there, when missing).
func bindHomeFiles(b *builder, home string, files map[string]string) error {
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	bound := map[string]bool{}
	for _, rel := range rels {
		clean := filepath.Clean(rel)
		if rel == "" || filepath.IsAbs(rel) || clean != rel || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return &ViewError{Field: "HomeFiles", Value: rel, Reason: "is not a clean path inside the home directory"}
		}
		host, err := absPath("HomeFiles", files[rel])
		if err != nil {
			return err
		}
		if _, err := os.Stat(host); err != nil {
			return &ViewError{Field: "HomeFiles", Value: host, Reason: err.Error()}
		}
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			if _, ok := files[dir]; ok {
				return &ViewError{Field: "HomeFiles", Value: rel, Reason: "lies inside another of the home files"}
			}
			if bound[dir] {
				continue
			}
			hostDir := filepath.Join(home, dir)
			if fi, err := os.Lstat(hostDir); err == nil && !fi.IsDir() {
				return &ViewError{Field: "HomeFiles", Value: rel, Reason: dir + " is not a directory"}
			}
			if err := os.Mkdir(hostDir, 0o700); err != nil && !os.IsExist(err) {
				return &ViewError{Field: "HomeFiles", Value: rel, Reason: err.Error()}
			}
			b.add("--bind", hostDir, SandboxHome+"/"+dir)
			bound[dir] = true
		}
		b.add("--ro-bind", host, SandboxHome+"/"+rel)
	}
	return nil
}
