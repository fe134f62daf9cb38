//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPutBackOutlivesRein: what a run changed that rein puts back is put
// back however rein ends: a SIGHUP (a closed terminal) is caught and the
// run ended as at a SIGTERM; after a SIGKILL of rein's whole process group
// the guardian, in a session of its own, puts it back at once, with no
// later rein run. On the landlock rung a command can change .git/config
// while it runs; on every rung it can plant a repository below the
// workspace whose config the host's git would obey.
func TestPutBackOutlivesRein(t *testing.T) {
	requireBwrap(t)
	for _, c := range []struct {
		name, rung string
		sig        syscall.Signal
		plant      string
		planted    func(ws string) bool
	}{
		{"landlock-kill", "landlock", syscall.SIGKILL, `printf "[core]\n\tfsmonitor = touch /tmp/pwned\n" >> .git/config`,
			func(ws string) bool {
				data, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
				return strings.Contains(string(data), "fsmonitor")
			}},
		{"landlock-hup", "landlock", syscall.SIGHUP, `printf "[core]\n\tfsmonitor = touch /tmp/pwned\n" >> .git/config`,
			func(ws string) bool {
				data, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
				return strings.Contains(string(data), "fsmonitor")
			}},
		{"bwrap-kill", "bwrap", syscall.SIGKILL, `mkdir -p nested/.git && printf "[core]\n\tfsmonitor = touch /tmp/pwned\n" > nested/.git/config`,
			func(ws string) bool { _, err := os.Lstat(filepath.Join(ws, "nested", ".git")); return err == nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ws := docFixture(t)
			os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
			os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			// A script: what it does the policy cannot see before it runs.
			os.WriteFile(filepath.Join(ws, "plant.sh"), []byte(c.plant+"\ntouch started\nsleep 50\n"), 0o755)
			cmd := exec.Command(os.Args[0], "shell", "--rung", c.rung, "--mode", "auto", "--approve", "all", "--timeout", "60s", "--", "sh plant.sh")
			cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the command never started")
				}
			}
			if !c.planted(ws) {
				t.Fatal("the plant did not land")
			}
			if c.sig == syscall.SIGKILL {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			} else {
				cmd.Process.Signal(c.sig)
			}
			for deadline := time.Now().Add(15 * time.Second); c.planted(ws); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("15 s after rein's %s, the plant is still there", c.sig)
				}
			}
		})
	}
}
