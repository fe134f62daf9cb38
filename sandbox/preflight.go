//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/shell"
)

// How long preflight results are trusted. A change to rein's binary,
// bubblewrap's, the kernel or the user makes a new key and a new probe.
const (
	preflightOKTTL   = 24 * time.Hour
	preflightFailTTL = time.Hour
)

var preflightMem sync.Map // key -> PreflightResult

// Preflight runs a real minimal sandbox on rung in workspace, once per
// (rung, workspace) and host state: later calls answer from the cache in
// memory or on disk. Fresh probes again whatever is cached (rein doctor).
// Its init asserts, from inside the confinement, the working directory,
// the workspace's writability, HOME, TMPDIR and that no network is
// reachable; a version string proves nothing.
func Preflight(ctx context.Context, rung Rung, workspace string, fresh bool) PreflightResult {
	return preflight(ctx, rung, NetworkOff, workspace, fresh)
}

// PreflightFull runs a real minimal sandbox with network full in
// workspace, once per workspace and host state, like Preflight: the bwrap
// rung with slirp4netns attached, whose init asserts that its namespace
// has an interface with a default route.
func PreflightFull(ctx context.Context, workspace string, fresh bool) PreflightResult {
	if pf := Preflight(ctx, RungBwrap, workspace, fresh); !pf.OK {
		return pf
	}
	return preflight(ctx, RungBwrap, NetworkFull, workspace, fresh)
}

// preflightFor is the preflight a run of rung and network needs.
func preflightFor(ctx context.Context, rung Rung, network Network, workspace string) PreflightResult {
	if network == NetworkFull {
		return PreflightFull(ctx, workspace, false)
	}
	return Preflight(ctx, rung, workspace, false)
}

func preflight(ctx context.Context, rung Rung, network Network, workspace string, fresh bool) PreflightResult {
	if rung == RungNone {
		return PreflightResult{Rung: rung, OK: true, At: time.Now()}
	}
	if err := checkInit(); err != nil {
		// Not remembered: the program, not the host, is what is missing.
		return PreflightResult{Rung: rung, Problem: ErrNoInit.Error(), Fix: "add sandbox.Main() as the first statement of main", At: time.Now()}
	}
	name := string(rung)
	if network == NetworkFull {
		name += "-full"
	}
	key := preflightKey(name, workspace)
	file := filepath.Join(CacheDir(), "preflight", name+"-"+workspaceKey(key)+".json")
	if !fresh {
		if v, ok := preflightMem.Load(key); ok {
			return v.(PreflightResult)
		}
		var c PreflightResult
		if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &c) == nil && c.Key == key {
			ttl := preflightOKTTL
			if !c.OK {
				ttl = preflightFailTTL
			}
			if time.Since(c.At) < ttl {
				preflightMem.Store(key, c)
				return c
			}
		}
	}
	var res PreflightResult
	if network == NetworkFull {
		res = probeFull(ctx, workspace)
	} else {
		res = probeRung(ctx, rung, workspace)
	}
	res.Rung, res.At, res.Key = rung, time.Now(), key
	if res.OK || res.Terminal {
		preflightMem.Store(key, res)
		if data, err := json.Marshal(res); err == nil {
			os.MkdirAll(filepath.Dir(file), 0o700)
			tmp := fmt.Sprintf("%s.%d", file, os.Getpid())
			if os.WriteFile(tmp, data, 0o600) == nil {
				os.Rename(tmp, file)
			}
		}
	} else {
		preflightMem.Delete(key)
		os.Remove(file)
	}
	return res
}

func preflightKey(rung, workspace string) string {
	parts := []string{rung, workspace, fmt.Sprint(os.Getuid())}
	if exe, err := initExe(); err == nil {
		parts = append(parts, fileStamp(exe))
	}
	if rung == string(RungBwrap)+"-full" {
		if sl, err := slirpPath(); err == nil {
			parts = append(parts, fileStamp(sl))
		} else {
			parts = append(parts, "no slirp4netns")
		}
	}
	if strings.HasPrefix(rung, string(RungBwrap)) {
		if bw, err := bwrap.Find(); err == nil {
			parts = append(parts, fileStamp(bw))
		} else {
			parts = append(parts, "no bwrap")
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		parts = append(parts, unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Version[:]))
	}
	return strings.Join(parts, "\x00")
}

func fileStamp(p string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return p + ":absent"
	}
	return fmt.Sprintf("%s:%d:%d.%d:%d", p, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ino)
}

// minABI is the Landlock ABI the init's confinement needs: signal and
// abstract socket scoping came with ABI 6.
const minABI = 6

func probeRung(ctx context.Context, rung Rung, ws string) PreflightResult {
	sup := confine.Probe()
	if sup.LandlockABI < minABI || !sup.Seccomp {
		return PreflightResult{Terminal: true,
			Problem: fmt.Sprintf("the init's self-confinement needs Landlock ABI %d and seccomp; this kernel has Landlock ABI %d, seccomp %v", minABI, sup.LandlockABI, sup.Seccomp),
			Fix:     "boot Linux 6.12 or later with landlock in the lsm= boot parameter"}
	}
	if rung == RungBwrap {
		path, err := bwrap.Find()
		if err != nil {
			return PreflightResult{Terminal: true, Problem: "bubblewrap is not installed (absent)", Fix: "apt-get install bubblewrap (or dnf install bubblewrap)"}
		}
		out, err := exec.CommandContext(ctx, path, "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err != nil && !errors.As(err, &ee):
			return PreflightResult{Terminal: true, Problem: fmt.Sprintf("bubblewrap at %s cannot be executed (inexecutable): %v", path, err), Fix: "reinstall bubblewrap, or make it executable"}
		case err != nil:
			return PreflightResult{Terminal: true, Problem: "user namespaces are refused (refused): " + firstLine(string(out)),
				Fix: "sysctl -w kernel.unprivileged_userns_clone=1 (Debian), or on Ubuntu 24.04 allow bwrap in AppArmor (or use the landlock rung)"}
		}
	}
	line, err := shell.FromArgv([]string{"true"})
	if err != nil {
		return PreflightResult{Problem: err.Error()}
	}
	return probeRun(ctx, Profile{Workspace: ws, Timeout: 20 * time.Second, Rung: rung}, line)
}

// probeFull runs a minimal sandbox with network full.
func probeFull(ctx context.Context, ws string) PreflightResult {
	if _, err := slirpPath(); err != nil {
		return PreflightResult{Terminal: true, Problem: err.Error() + " (absent)", Fix: "apt-get install slirp4netns"}
	}
	line, err := shell.FromArgv([]string{"true"})
	if err != nil {
		return PreflightResult{Problem: err.Error()}
	}
	return probeRun(ctx, Profile{Workspace: ws, Timeout: 20 * time.Second, Rung: RungBwrap, Network: NetworkFull}, line)
}

// probeRun runs line as a preflight under p.
func probeRun(ctx context.Context, p Profile, line *shell.Line) PreflightResult {
	rung := p.Rung
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.validate(); err != nil {
		return PreflightResult{Problem: err.Error(), Fix: "pass an existing workspace directory"}
	}
	r, err := start(ctx, line, p, rung, true, nil, nil)
	if err != nil {
		return PreflightResult{Problem: "a minimal sandbox could not start: " + err.Error(), Fix: "see the reason"}
	}
	<-r.done
	res := r.res
	switch {
	case res.Status != OK:
		return PreflightResult{Problem: fmt.Sprintf("a minimal sandbox failed: %s: %s", res.Status, res.Reason), Fix: "see the reason; rein doctor shows every rung"}
	case res.Reason != "":
		return PreflightResult{Problem: "a minimal sandbox broke its promises: " + res.Reason, Fix: "report this: the sandbox is not what rein expects here"}
	}
	return PreflightResult{OK: true}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
