//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

// TestUseInit: the program UseInit names is the one started as the init,
// on both rungs, and the lean init's runs are those of the test binary's.
func TestUseInit(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		// An init that leaves a mark and fails: the run must fail to
		// start, and on the landlock rung (where it runs on the host) the
		// mark is there.
		dir := t.TempDir()
		mark := filepath.Join(dir, "mark")
		fake := filepath.Join(dir, "init")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho used > "+mark+"\nexit 7\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := UseInit(fake); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { UseInit("") })
		l, _ := shell.Parse("true")
		ws := workspaceDir(t)
		res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: rung}, nil, nil)
		if err == nil && res.Status == OK {
			t.Fatalf("a run with a failing init succeeded: %+v", res)
		}
		if _, err := os.Stat(mark); rung == RungLandlock && err != nil {
			t.Errorf("the init UseInit named was not started: %v", err)
		}

		useLeanInit(t)
		res = runLine(t, ws, "echo hi > f && cat f; grep -c NoNewPrivs:.1 /proc/self/status", Profile{Rung: rung})
		if res.Status != OK || res.ExitCode != 0 || res.Stdout.Text != "hi\n1\n" {
			t.Fatalf("through the lean init: %+v stdout %q stderr %q", res, res.Stdout.Text, res.Stderr.Text)
		}
	})
}

// TestUseInitRefuses: an init rein cannot trust is refused by name.
func TestUseInitRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "init")
	if err := os.WriteFile(good, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o775)
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	inShared := filepath.Join(shared, "init")
	if err := os.WriteFile(inShared, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"init", "not an absolute path"},
		{filepath.Join(dir, "missing"), "no such file"},
		{dir, "not a regular file"},
		{open, "writable by others"},
		{plain, "not executable"},
		{inShared, "writable by others"},
	} {
		err := UseInit(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("UseInit(%s) = %v, want %q", c.path, err, c.want)
		}
		if initProgram.Load() != nil {
			t.Fatalf("a refused init was kept")
		}
	}
	if err := UseInit(good); err != nil {
		t.Fatalf("a trusted init was refused: %v", err)
	}
	UseInit("")
	if initProgram.Load() != nil {
		t.Fatal("UseInit(\"\") kept the init")
	}
}

// TestInitOfAnotherBuild: an init whose wire types are not the starting
// program's refuses before it reads anything, with exit status 125.
func TestInitOfAnotherBuild(t *testing.T) {
	bin, err := leanInit()
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range []string{"", "0123456789abcdef01234567", wireFingerprint() + "x"} {
		out, err := exec.Command(bin, initFlag, t.TempDir(), fp).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "another build of rein") {
			t.Errorf("wire %q: %v %s", fp, err, out)
		}
	}
	// The same fingerprint gets past the check (and fails on the missing
	// request instead).
	out, _ := exec.Command(bin, initFlag, t.TempDir(), wireFingerprint()).CombinedOutput()
	if strings.Contains(string(out), "another build") || !strings.Contains(string(out), requestFile) {
		t.Errorf("the init of this build refused its fingerprint: %s", out)
	}
	// A change to a wire type changes the fingerprint.
	var b1, b2 strings.Builder
	describeType(&b1, reflect.TypeFor[request](), map[reflect.Type]bool{})
	type requestPlus struct {
		request
		Extra bool
	}
	describeType(&b2, reflect.TypeFor[requestPlus](), map[reflect.Type]bool{})
	if b1.String() == b2.String() {
		t.Error("a new field left the description unchanged")
	}
}

// TestPlatformError: the refusal every entry point gives off Linux (run
// there only as compiled; checked here by its value), and none on Linux.
func TestPlatformError(t *testing.T) {
	if err := checkPlatform(); err != nil {
		t.Fatalf("on Linux: %v", err)
	}
	for _, p := range [][2]string{{"darwin", "arm64"}, {"windows", "amd64"}} {
		err := platformError(p[0], p[1])
		want := "sandbox: unavailable: rein's sandbox needs Linux (bubblewrap or Landlock); this is " + p[0] + "/" + p[1] + ": run rein on a Linux host or in a Linux virtual machine"
		var se *Error
		if !errors.As(err, &se) || se.Status != Unavailable || !errors.Is(err, ErrUnsupported) || err.Error() != want {
			t.Errorf("%s/%s: %v; want %q, wrapping ErrUnsupported", p[0], p[1], err, want)
		}
	}
}
