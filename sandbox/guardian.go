//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// guardianFlag starts the init binary as the guardian of a rein process:
// a process outside every sandbox, in a session of its own, that outlives
// rein and puts back what rein's runs would have put back had rein not
// died (a SIGKILL, a closed terminal's process group, an out-of-memory
// kill). What a run must put back (the landlock rung's guarded files, the
// repositories below the workspace) is saved in its scratch directory
// before its command starts, so the guardian needs nothing from rein but
// its end.
const guardianFlag = "--rein-guardian"

var (
	guardianOnce sync.Once
	guardianErr  error
	// guardianPipe is the write end of the guardian's stdin: never
	// written, never closed (held here so that no finalizer closes it);
	// its end, when the process ends however it ends, is the guardian's
	// signal.
	//lint:ignore U1000 held open for the life of the process
	guardianPipe *os.File
)

// ensureGuardian starts this process's guardian, once.
func ensureGuardian() error {
	guardianOnce.Do(func() {
		runs, err := stateDir("runs")
		if err != nil {
			guardianErr = err
			return
		}
		exe, err := initExe()
		if err != nil {
			guardianErr = err
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			guardianErr = err
			return
		}
		cmd := exec.Command(exe, guardianFlag, strconv.Itoa(os.Getpid()), runs)
		cmd.Stdin = r
		// A session of its own: the terminal's SIGHUP and a signal to
		// rein's process group do not reach it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		r.Close()
		if err != nil {
			w.Close()
			guardianErr = err
			return
		}
		cmd.Process.Release()
		guardianPipe = w
	})
	if guardianErr != nil {
		return refuse(Unavailable, "starting the guardian that puts back what a run changed should rein die: %v", guardianErr)
	}
	return nil
}

// guardianMain waits for rein (pid) to end, then puts back what its runs
// left: the sweep a later rein would make, for that pid's runs, at once.
func guardianMain(pidArg, runs string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2)
	pid, err := strconv.Atoi(pidArg)
	if err != nil || pid <= 0 || !filepath.IsAbs(runs) {
		fmt.Fprintln(os.Stderr, "rein guardian: rein starts it")
		return 2
	}
	// rein's state directory is the one its runs are in, whatever rein
	// chose it by (sandbox.SetCacheDir does not reach this process).
	SetCacheDir(filepath.Dir(runs))
	io.Copy(io.Discard, os.Stdin)
	// The pipe ends as rein's descriptors close: it is dead (a zombie
	// until its parent reaps it) at once or very soon.
	for i := 0; i < 200 && alive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		return 0 // not dead: a descriptor leaked into a child; the next rein sweeps
	}
	sweepPID(runs, pid)
	return 0
}

// alive reports whether pid is a process that has not ended: neither gone
// nor a zombie waiting to be reaped.
func alive(pid int) bool {
	_, live := procStart(pid)
	return live
}

// sweepPID puts back what the runs of the dead rein pid left in runs, after
// ending whatever of their commands still runs.
func sweepPID(runs string, pid int) {
	dirs, _ := filepath.Glob(filepath.Join(runs, fmt.Sprintf("rein-run-%d-*", pid)))
	var dead []string
	for _, d := range dirs {
		if strings.HasPrefix(filepath.Base(d), fmt.Sprintf("rein-run-%d-", pid)) {
			dead = append(dead, d)
		}
	}
	if len(dead) == 0 {
		return
	}
	killRunCgroups()
	for _, d := range dead {
		// Under the workspace's lock, as a session's own sweep: a rein
		// that starts a session there now takes its baseline after the
		// put-back, never in the middle of it.
		if ws := savedWorkspace(d); ws != "" {
			unlock, err := lockWorkspaceIn(context.Background(), filepath.Join(filepath.Dir(runs), "locks"), ws, 0)
			if err == nil {
				// To the session's baseline, which may be newer than the
				// one the run saved, and recorded there for the runs
				// going on beside it to report.
				if _, err := os.Lstat(d); err == nil && !putBackForDead(ws) {
					restoreSaved(filepath.Join(d, "guard.json"))
					repoMetaSaved(filepath.Join(d, "repos.json"))
				}
				unlock()
			}
		}
		removeTree(d)
	}
}

// savedWorkspace is the workspace a run's scratch directory saved its
// put-back for, or "".
func savedWorkspace(dir string) string {
	for _, f := range []string{"guard.json", "repos.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		var v struct {
			Workspace string `json:"workspace"`
		}
		if json.Unmarshal(data, &v) == nil && v.Workspace != "" {
			return v.Workspace
		}
	}
	return ""
}
