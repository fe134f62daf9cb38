//go:build linux

package sandbox

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/toolchain"
)

const (
	initFlag = "--rein-sandbox-init"
	// ioDir is where the bwrap rung mounts the run's io directory.
	ioDir = "/rein/io"
	// sandboxCaches is where the bwrap rung mounts the workspace's
	// toolchain caches, and sandboxHostCaches the host's read-only ones
	// (each at its name), so that no host path shows inside.
	sandboxCaches     = "/var/cache/rein"
	sandboxHostCaches = "/var/cache/rein-host"
	// sandboxSeeds is where it mounts a run's own read-only caches
	// (CacheSet.GoSeed, CacheSet.GoModules).
	sandboxSeeds = "/var/cache/rein-seed"
)

// bwrapCommand builds the bubblewrap command whose init runs line.
func (r *run) bwrapCommand(line *shell.Line, exe string, caches string) (*exec.Cmd, error) {
	p := r.p
	bw, err := bwrap.Find()
	if err != nil {
		return nil, refuse(Unavailable, "%v", err)
	}
	masked, err := systemMasks(RungBwrap)
	if err != nil {
		return nil, refuse(Unavailable, "listing the private files of /etc: %v", err)
	}
	hidden, empty, err := r.hiddenView()
	if err != nil {
		return nil, err
	}
	dir := p.Dir
	if dir == "" {
		dir = p.Workspace
	}
	mounts := map[string]string{r.hostIO: ioDir}
	env := withDefaults(withPath(p), "HOME="+bwrap.SandboxHome, "TMPDIR=/tmp")
	var ports []uint16
	var forwards []forward
	if r.hostNet != "" {
		mounts[r.hostNet] = sandboxNet
	}
	if r.egress != nil {
		env = proxyEnv(env, sandboxProxyPort, p.Session != nil && len(p.Session.Services) > 0)
		ports = []uint16{sandboxProxyPort}
		forwards = append(forwards, forward{Listen: "127.0.0.1:" + strconv.Itoa(sandboxProxyPort), Socket: sandboxNet + "/proxy.sock"})
	}
	if p.Session != nil {
		for _, svc := range p.Session.Services {
			ports = append(ports, svc.Port)
			forwards = append(forwards, forward{Listen: "127.0.0.1:" + strconv.Itoa(int(svc.Port)), Socket: sandboxNet + "/" + serviceSocket(svc.Port)})
		}
	}
	rw := []string{"/tmp", bwrap.SandboxHome, "/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
	ro := append(systemDirs(), "/proc", "/dev/urandom", "/dev/random", bwrap.SandboxInit)
	if caches != "" {
		mounts[caches] = sandboxCaches
		rw = append(rw, sandboxCaches)
	}
	hostCaches := map[string]string{}
	hostAt := func(h toolchain.HostCache) string {
		if d, ok := hostCaches[h.Path]; ok {
			return d
		}
		d := filepath.Join(sandboxHostCaches, h.Name)
		hostCaches[h.Path] = d
		ro = append(ro, d)
		return d
	}
	own, err := ownPlaces(p, bwrap.SandboxInit, sandboxCaches, "/tmp", func(name, host string) string {
		d := filepath.Join(sandboxSeeds, name)
		hostCaches[host] = d
		ro = append(ro, d)
		return d
	})
	if err != nil {
		return nil, err
	}
	env = toolchainEnv(env, p, caches != "", sandboxCaches, hostAt, own)
	if !p.ReadOnly {
		rw = append(rw, p.Workspace)
	}
	ro = append(ro, p.HostReadPaths...)
	if p.ReadOnly {
		ro = append(ro, p.Workspace)
	} else {
		rw = append(rw, p.HostWritePaths...)
	}
	req := request{Line: line, NotFound: r.notFound, Dir: dir, Home: bwrap.SandboxHome, Env: env, Rlimits: rlimits(p.Limits), GoPrefill: own.prefillOf(), Confine: &confine.Spec{
		ReadOnly: ro, ReadWrite: rw, ScopeSignals: true, ScopeAbstractUnix: true, LandlockThisThread: true,
		// With a proxy or a session's services, their ports: the init's
		// forwarders on the sandbox's own loopback, the only interface
		// it has.
		NetworkTCP: ports,
	}}
	req.Forwards = forwards
	if r.full != nil {
		// Full: inet sockets of every kind (DNS needs UDP); the
		// namespace's only way out is slirp4netns, with the host's
		// loopback off.
		req.Confine.NetworkTCP = nil
		req.Confine.AnyNetwork = true
	}
	if r.preflight {
		req.Check = &check{Workspace: p.Workspace, ReadOnly: p.ReadOnly, Home: bwrap.SandboxHome, Tmp: "/tmp", Network: p.Network}
	}
	var overlays map[string]string
	var info *os.File
	if r.full != nil {
		dest, host, err := r.resolvConf()
		if err != nil {
			return nil, refuse(Unavailable, "network full: writing the sandbox's resolv.conf: %v", err)
		}
		if dest != "" {
			overlays = map[string]string{dest: host}
		}
		info = r.full.infoW
	}
	view := bwrap.View{
		SystemMasked: masked,
		Workspace:    p.Workspace, ReadOnlyWorkspace: p.ReadOnly,
		Protected:      r.protected,
		Masked:         hidden,
		EmptyFile:      empty,
		Home:           filepath.Join(r.scratch, "home"),
		Caches:         mounts,
		ReadOnlyCaches: hostCaches,
		HostReadPaths:  p.HostReadPaths,
		HostWritePaths: hostWrites(p),
		SystemDirs:     bwrap.DefaultSystemDirs,
		Network:        bwrap.NetworkOff,
		Overlays:       overlays,
		InfoFile:       info,
		Env:            env,
		Chdir:          dir,
		InitPath:       exe,
		Tmp:            tmpBytes(p.Limits),
	}
	if p.Session != nil {
		view.HomeFiles = p.Session.HomeFiles
		req.Session = true
	}
	cmd, err := bwrap.Command(bw, view, []string{initFlag, ioDir, wireFingerprint()})
	if err != nil {
		return nil, refuse(Denied, "%v", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if r.full != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, r.full.goR, r.full.upW)
		r.full.goR, r.full.upW = nil, nil // closed with the other extra files
		req.NetGoFD, req.NetUpFD = 1+len(cmd.ExtraFiles), 2+len(cmd.ExtraFiles)
	}
	if err := r.reportPipe(cmd, &req); err != nil {
		closeExtra(cmd)
		return nil, err
	}
	if line == nil {
		if err := r.warmPipes(cmd, &req); err != nil {
			return nil, err
		}
		r.masked = masked
	}
	if p.Session != nil {
		rd, wr, err := os.Pipe()
		if err != nil {
			closeExtra(cmd)
			return nil, refuse(Unavailable, "making the session's signal pipe: %v", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, rd)
		req.SignalFD = 2 + len(cmd.ExtraFiles)
		r.signals = wr
	}
	if err := writeRequest(r.hostIO, req); err != nil {
		closeExtra(cmd)
		return nil, err
	}
	if p.Session == nil {
		// The output pipes are added, and the request written again, by
		// pipes.
		r.req = &req
	}
	return cmd, nil
}

// hiddenView is what the bwrap rung masks: the workspace paths the run's
// start found hidden, and the empty file bound over the masked files,
// made in the run's scratch directory, which no command sees.
func (r *run) hiddenView() (masked []string, empty string, err error) {
	if len(r.hidden) == 0 {
		return nil, "", nil
	}
	empty = filepath.Join(r.scratch, "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return nil, "", refuse(Unavailable, "making the file that covers the hidden ones: %v", err)
	}
	return r.hidden, empty, nil
}

// hostCommand builds the command of the landlock and none rungs: the init
// in the host's namespaces, in a session of its own (no controlling
// terminal to read or push keystrokes into), with a lifeline on
// descriptor 3 whose end tells it that rein is gone.
// warmPipes gives a warm sandbox's init its pipes: the plan comes later
// on one, and the init says on the other that it is ready, then whether
// its view holds.
func (r *run) warmPipes(cmd *exec.Cmd, req *request) error {
	planR, planW, err := os.Pipe()
	if err != nil {
		closeExtra(cmd)
		return refuse(Unavailable, "making the warm sandbox's plan pipe: %v", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		planR.Close()
		planW.Close()
		closeExtra(cmd)
		return refuse(Unavailable, "making the warm sandbox's ready pipe: %v", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, planR, readyW)
	req.PlanFD, req.ReadyFD = 1+len(cmd.ExtraFiles), 2+len(cmd.ExtraFiles)
	r.planW, r.readyR = planW, readyR
	return nil
}

func (r *run) hostCommand(line *shell.Line, exe string, caches string) (*exec.Cmd, error) {
	p := r.p
	dir := p.Dir
	if dir == "" {
		dir = p.Workspace
	}
	home, tmp := r.home, r.tmp
	env := withDefaults(withPath(p), "HOME="+home, "TMPDIR="+tmp)
	rw := []string{home, tmp, "/dev/null", "/dev/zero", "/dev/full"}
	var hostRO []string
	if caches != "" {
		rw = append(rw, caches)
	}
	// No layout on these rungs: TMPDIR is a directory on the host's disk,
	// where making hundreds of files costs more than the program's
	// round trips.
	own, err := ownPlaces(p, exe, caches, "", func(_, host string) string {
		hostRO = append(hostRO, host)
		return host
	})
	if err != nil {
		return nil, err
	}
	env = toolchainEnv(env, p, caches != "", caches, func(h toolchain.HostCache) string {
		hostRO = append(hostRO, h.Path)
		return h.Path
	}, own)
	if p.Limits.TmpBytes > 0 {
		return nil, refuse(Unavailable, "the %s limit needs the bwrap rung: on the %s rung the command's TMPDIR is a directory on the host's disk, which no size cap covers", LimitTmp, r.rung)
	}
	if r.egress != nil {
		env = proxyEnv(env, r.egress.port, false)
	}
	req := request{Line: line, NotFound: r.notFound, Dir: dir, Home: home, Env: env, Subreaper: true, Lifeline: true, Rlimits: rlimits(p.Limits), GoPrefill: own.prefillOf()}
	if r.rung == RungLandlock {
		ro, err := landlockSystemRead()
		if err != nil {
			return nil, refuse(Unavailable, "listing the private files of /etc: %v", err)
		}
		ro = append(ro, p.HostReadPaths...)
		ro = append(ro, hostRO...)
		if p.ReadOnly {
			ro = append(ro, p.Workspace)
		} else {
			rw = append(rw, p.Workspace)
			rw = append(rw, p.HostWritePaths...)
		}
		var abs []string
		for _, h := range r.hidden {
			abs = append(abs, filepath.Join(p.Workspace, h))
		}
		req.Confine = &confine.Spec{
			ReadOnly: ro, ReadWrite: rw, Hidden: abs, ScopeSignals: true, ScopeAbstractUnix: true,
			// No namespace hides the host's unix sockets and System V IPC.
			NoUnixSockets: true, NoSysVIPC: true,
			// A port of the host's, on every address, for a socket that
			// listens without binding (which Landlock checks).
			NoListen: true,
			// The init's other threads kill the tree when the lifeline
			// ends; they must stay outside the domain to signal it.
			LandlockThisThread: true,
			// Landlock does not mediate chmod, chown, utimes and xattrs.
			MetadataBeneathReadWrite: true,
		}
		if r.egress != nil {
			// No namespace of its own: TCP to the proxy's port, which
			// Landlock allows on every address, not only the proxy's.
			req.Confine.NetworkTCP = []uint16{uint16(r.egress.port)}
		}
	}
	if r.preflight {
		req.Check = &check{Workspace: p.Workspace, ReadOnly: p.ReadOnly, Home: home, Tmp: tmp, Network: p.Network}
	}
	if err := bwrap.CloseOnExecFrom(3); err != nil {
		return nil, refuse(Unavailable, "marking inherited descriptors close-on-exec: %v", err)
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, refuse(Unavailable, "making the init's lifeline: %v", err)
	}
	r.lifeline = wr
	cmd := exec.Command(exe, initFlag, r.hostIO, wireFingerprint())
	cmd.Env, cmd.Dir, cmd.ExtraFiles = env, dir, []*os.File{rd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if line == nil {
		// Landlock's grants are made on the inodes that exist at the
		// confinement: around a hidden file each entry is granted on its
		// own, so an entry made between the start and the call would be
		// out of reach. A workspace that hides nothing is granted whole.
		if len(r.hidden) > 0 {
			closeExtra(cmd)
			return nil, refuse(Unavailable, "a workspace with hidden files is not kept warm on the %s rung", r.rung)
		}
		if err := r.warmPipes(cmd, &req); err != nil {
			return nil, err
		}
		masked, err := privateSystemFiles()
		if err != nil {
			closeExtra(cmd)
			return nil, refuse(Unavailable, "listing the private files of /etc: %v", err)
		}
		r.masked = masked
	}
	if err := r.reportPipe(cmd, &req); err != nil {
		closeExtra(cmd)
		return nil, err
	}
	if err := writeRequest(r.hostIO, req); err != nil {
		closeExtra(cmd)
		return nil, err
	}
	return cmd, nil
}

// maxReport bounds what rein reads of the init's report.
const maxReport = 16 << 20

// reportPipe adds the pipe the init reports through as cmd's last extra
// descriptor and starts reading it.
func (r *run) reportPipe(cmd *exec.Cmd, req *request) error {
	rd, wr, err := os.Pipe()
	if err != nil {
		return refuse(Unavailable, "making the init's report pipe: %v", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, wr)
	req.ReportFD = 2 + len(cmd.ExtraFiles)
	r.reportDone = make(chan struct{})
	go func() {
		defer close(r.reportDone)
		defer rd.Close()
		r.reportData, _ = io.ReadAll(io.LimitReader(rd, maxReport))
	}()
	return nil
}

func writeRequest(dir string, req request) error {
	// gob, not JSON: a path, an argument or a variable need not be UTF-8,
	// and JSON would carry such bytes as U+FFFD, so that the init would
	// hide, grant or run other names than the ones decided.
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(req)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, requestFile), buf.Bytes(), 0o600)
	}
	if err != nil {
		return refuse(Unavailable, "writing the init's request: %v", err)
	}
	return nil
}

// withDefaults adds each NAME=value of defs whose name env does not set.
func withDefaults(env []string, defs ...string) []string {
	out := append([]string(nil), env...)
	for _, d := range defs {
		k, _, _ := strings.Cut(d, "=")
		found := false
		for _, e := range env {
			if n, _, _ := strings.Cut(e, "="); n == k {
				found = true
				break
			}
		}
		if !found {
			out = append(out, d)
		}
	}
	return out
}

// withPath is p.Env with its PATH replaced by the sandbox's (SearchPath).
func withPath(p Profile) []string {
	out := make([]string, 0, len(p.Env)+1)
	for _, e := range p.Env {
		if !strings.HasPrefix(e, "PATH=") {
			out = append(out, e)
		}
	}
	return append(out, "PATH="+strings.Join(SearchPath(p), ":"))
}

// toolchainEnv adds the toolchain table's variables that env does not
// set: each per-workspace cache under base (as the command sees it) when
// there are caches, each host cache where at says it is mounted, and the
// table's fixed variables, with the offline ones when the network is off.
//
// With a run's own caches (own not nil), the per-workspace caches'
// variables and GOCACHEPROG are the sandbox's whatever env says, so that
// nothing points the toolchain at a cache of another's; the Go seed is
// served through GOCACHEPROG, and the run's module cache as a further
// file:// entry of GOPROXY.
func toolchainEnv(env []string, p Profile, caches bool, base string, at func(toolchain.HostCache) string, own *ownCacheEnv) []string {
	online := p.Network != NetworkOff
	var defs []string
	if own != nil {
		drop := []string{"GOCACHEPROG"}
		for _, c := range toolchain.WorkspaceCaches() {
			drop = append(drop, c.Env)
		}
		env = slices.DeleteFunc(slices.Clone(env), func(e string) bool {
			k, _, _ := strings.Cut(e, "=")
			return slices.Contains(drop, k)
		})
		if own.goCacheProg != "" {
			defs = append(defs, "GOCACHEPROG="+own.goCacheProg)
		}
	}
	if caches {
		for _, c := range toolchain.WorkspaceCaches() {
			v := c.Setting(filepath.Join(base, c.Name), online)
			if own != nil && own.prefill != nil && c.Name == goBuildCache {
				v = own.prefill.Dir
			}
			defs = append(defs, c.Env+"="+v)
		}
	}
	proxy := false
	for _, h := range p.HostCaches {
		v := h.Setting(at(h), online)
		if h.Env == "GOPROXY" && own != nil && len(own.goModules) > 0 && !proxy {
			// After the host's own entries, before any network one.
			v = withFileProxy(v, own.goModules)
			proxy = true
		}
		defs = append(defs, h.Env+"="+v)
	}
	if own != nil && len(own.goModules) > 0 && !proxy {
		defs = append(defs, "GOPROXY="+withFileProxy("", own.goModules))
	}
	defs = append(defs, toolchain.Env(!online)...)
	return withDefaults(env, defs...)
}

// withFileProxy is the GOPROXY list v with a file:// entry for each of
// dirs added after its leading file:// entries.
func withFileProxy(v string, dirs []string) string {
	var parts []string
	if v != "" {
		parts = strings.Split(v, ",")
	}
	i := 0
	for i < len(parts) && strings.HasPrefix(parts[i], "file://") {
		i++
	}
	add := make([]string, len(dirs))
	for j, d := range dirs {
		add[j] = "file://" + d
	}
	return strings.Join(slices.Insert(parts, i, add...), ",")
}

// ownCacheEnv is what a run's own caches add to its environment: the
// GOCACHEPROG command that serves the Go seed, and where the run's module
// cache is, as the command sees them.
type ownCacheEnv struct {
	goCacheProg string
	goModules   []string
	// prefill, when set, is the Go build cache the init lays out, which
	// GOCACHE names.
	prefill *goPrefill
}

func (o *ownCacheEnv) prefillOf() *goPrefill {
	if o == nil {
		return nil
	}
	return o.prefill
}

// ownPlaces places a run's own read-only caches with at (which mounts or
// grants them and says where the command sees them, by name and host
// path), for a command whose init is at exe, whose caches are under base
// and whose TMPDIR is tmp (each as the command sees it; tmp "" when the
// Go build cache is not to be laid out there); nil without a CacheSet.
func ownPlaces(p Profile, exe, base, tmp string, at func(name, host string) string) (*ownCacheEnv, error) {
	c := p.Caches
	if c == nil {
		return nil, nil
	}
	own := &ownCacheEnv{}
	for i, m := range c.GoModules {
		own.goModules = append(own.goModules, at(fmt.Sprintf("go-mod-download-%d", i), m))
	}
	if len(c.GoSeeds) > 0 {
		var seeds []string
		for i, g := range c.GoSeeds {
			seeds = append(seeds, at(fmt.Sprintf("go-build-%d", i), g))
		}
		if c.GoUsed != "" && tmp != "" {
			// The working set laid out beforehand by the init, in the
			// command's own TMPDIR: the go command reads its own cache.
			actions, err := readGoUsed(c.GoUsed)
			if err != nil {
				return nil, refuse(Unavailable, "reading the list of Go actions to lay out: %v", err)
			}
			own.prefill = &goPrefill{Dir: filepath.Join(tmp, goBuildCache), Seeds: seeds, Actions: actions}
			return own, nil
		}
		var err error
		own.goCacheProg, err = goCacheProg(exe, filepath.Join(base, goBuildCache), seeds...)
		if err != nil {
			return nil, refuse(InvalidPath, "serving the Go build seeds: %v", err)
		}
	}
	return own, nil
}

// hostWrites are the host paths p's plan may write besides its
// workspace: none for a read-only plan.
func hostWrites(p Profile) []string {
	if p.ReadOnly {
		return nil
	}
	return p.HostWritePaths
}
