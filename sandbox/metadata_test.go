//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/internal/testenv"
)

// hostHome is a home directory outside the workspace with the files an
// attack would change the metadata of.
type hostHome struct {
	dir, ssh, key string
}

func newHostHome(t *testing.T) hostHome {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := hostHome{dir: root, ssh: filepath.Join(root, ".ssh"), key: filepath.Join(root, ".ssh", "id_rsa")}
	if err := os.Mkdir(h.ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.key, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(h.key, "user.kept", []byte("v"), 0); err != nil {
		t.Fatalf("user.* extended attributes are not supported in %s: %v", root, err)
	}
	for _, p := range []string{h.key, h.ssh} {
		if err := unix.UtimesNano(p, []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// metadata is what a change of mode, owner, times or attributes alters.
type metadata struct {
	mode         uint32
	uid, gid     uint32
	atime, mtime int64
	ctime        unix.Timespec
	xattrs       string
}

func metadataOf(t *testing.T, p string) metadata {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	n, _ := unix.Llistxattr(p, buf)
	return metadata{st.Mode, st.Uid, st.Gid, st.Atim.Sec, st.Mtim.Sec, st.Ctim, string(buf[:max(n, 0)])}
}

// TestLandlockMetadataOutside: on the landlock rung, chmod, touch and
// setxattr of a file outside the workspace fail, by path, through a
// descriptor opened read-only and through /proc/self/fd, and the file
// keeps its mode, times and attributes.
func TestLandlockMetadataOutside(t *testing.T) {
	requireRung(t, RungLandlock)
	h := newHostHome(t)
	ws := workspaceDir(t)
	// The home is readable, as a vetted host read path is: a descriptor
	// opened read-only must not carry a change either.
	p := Profile{Rung: RungLandlock, HostReadPaths: []string{h.dir}}
	py := func(code string) string {
		return "python3 -c '" + strings.ReplaceAll(code, "KEY", h.key) + "'"
	}
	before := map[string]metadata{h.key: metadataOf(t, h.key), h.ssh: metadataOf(t, h.ssh)}
	for _, c := range []struct{ line, stderr string }{
		{"chmod 666 " + h.key, "Operation not permitted"},
		{"chmod 777 " + h.ssh, "Operation not permitted"},
		// touch names the error of its open for writing, which Landlock
		// refuses; its utimensat, the supervisor's EPERM, comes after.
		{"touch -d 2001-01-01 " + h.key, "cannot touch"},
		{"touch " + h.key, "cannot touch"},
		{py(`import os; os.fchmod(os.open("KEY", os.O_RDONLY), 0o666)`), "PermissionError: [Errno 1]"},
		{py(`import os; os.chmod("/proc/self/fd/%d" % os.open("KEY", os.O_RDONLY), 0o666)`), "PermissionError: [Errno 1]"},
		{py(`import os; os.utime(os.open("KEY", os.O_RDONLY), (5, 5))`), "PermissionError: [Errno 1]"},
		{py(`import os; os.utime("KEY", (5, 5), follow_symlinks=False)`), "PermissionError: [Errno 1]"},
		{py(`import os; os.setxattr("KEY", "user.new", b"1")`), "PermissionError: [Errno 1]"},
		{py(`import os; os.setxattr(os.open("KEY", os.O_RDONLY), "user.new", b"1")`), "PermissionError: [Errno 1]"},
		{py(`import os; os.removexattr("KEY", "user.kept")`), "PermissionError: [Errno 1]"},
		{py(`import os; os.chown(os.open("KEY", os.O_RDONLY), os.getuid(), os.getgid())`), "PermissionError: [Errno 1]"},
		{"sh -c 'ln -s " + h.key + " link && chmod 666 link'", "Operation not permitted"},
	} {
		res := runLine(t, ws, c.line, p)
		if res.Status != Failed || !strings.Contains(res.Stderr.Text, c.stderr) {
			t.Errorf("%s: %s %q, want failed with %q", c.line, res.Status, res.Stderr.Text, c.stderr)
		}
	}
	for path, b := range before {
		if after := metadataOf(t, path); after != b {
			t.Errorf("%s changed: %+v, was %+v", path, after, b)
		}
	}
}

// TestLandlockMetadataInside: what builds and tools do to the modes and
// times of their own files still works in the workspace, TMPDIR and HOME.
func TestLandlockMetadataInside(t *testing.T) {
	requireRung(t, RungLandlock)
	ws := workspaceDir(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "no go command: %v", err)
	}
	p := Profile{Rung: RungLandlock, Timeout: 2 * time.Minute, Env: []string{"PATH=" + filepath.Dir(goTool) + ":/usr/bin:/bin"}}
	os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() { println(\"built\") }\n"), 0o644)
	for _, c := range []struct{ line, stdout string }{
		{"sh -c 'chmod +x ./run.sh && ./run.sh'", "ran\n"},
		{"sh -c 'touch -d 2001-02-03 stamp && stat -c %y stamp | cut -c1-10'", "2001-02-03\n"},
		{"sh -c 'cp -p run.sh copy.sh && stat -c %a copy.sh'", "755\n"},
		{"sh -c 'tar cf a.tar run.sh && mkdir t && tar xpf a.tar -C t && stat -c %a t/run.sh'", "755\n"},
		{"sh -c 'f=$(mktemp) && chmod 640 $f && touch -d 2001-02-03 $f && stat -c %a-%y $f | cut -c1-14'", "640-2001-02-03\n"},
		{"sh -c 'touch ~/h && chmod 700 ~/h && stat -c %a ~/h'", "700\n"},
		{"python3 -c 'import os; open(\"x\", \"w\"); os.setxattr(\"x\", \"user.a\", b\"1\"); print(os.getxattr(\"x\", \"user.a\").decode())'", "1\n"},
		{"sh -c 'python3 -m venv --without-pip venv && test -x venv/bin/python3 && echo venv'", "venv\n"},
		{"sh -c 'git init -q sub && cd sub && echo x > f && chmod +x f && git add f && git -c user.name=a -c user.email=a@b commit -qm x && git ls-files -s f | cut -c1-6'", "100755\n"},
		{"sh -c 'go build -buildvcs=false -o hello . && stat -c %a hello && ./hello'", "755\n"},
	} {
		res := runLine(t, ws, c.line, p)
		if res.Status != OK || res.Stdout.Text != c.stdout {
			t.Errorf("%s: %s %q %q, want ok %q", c.line, res.Status, res.Stdout.Text, res.Stderr.Text, c.stdout)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh: %v %v", fi, err)
	}
}
