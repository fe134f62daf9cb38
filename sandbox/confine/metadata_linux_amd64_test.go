package confine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The metadata actions: each changes one file's mode, owner, times or
// extended attributes by one syscall form, raw so that the form tested is
// the one named. The target state on success is metaMode, metaTimes and
// the xattr user.new=w; user.old is the attribute the file starts with.
const (
	metaMode  = 0o666
	metaStart = 0o640
	atimeSet  = 111
	mtimeSet  = 222
	fsNodump  = 0x40 // FS_NODUMP_FL
)

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	return uintptr(unsafe.Pointer(&b[0]))
}

// openOutcome opens p with flags and runs f on the descriptor.
func withFD(p string, flags int, f func(fd int) string) string {
	fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return "open " + outcome(err)
	}
	defer unix.Close(fd)
	return f(fd)
}

func sys(nr uintptr, args ...uintptr) string {
	var a [6]uintptr
	copy(a[:], args)
	return rawOutcome(unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]))
}

var (
	fdcwdArg = uintptr(fdcwd)
	ts       = [2]unix.Timespec{{Sec: atimeSet}, {Sec: mtimeSet}}
	tv       = [2]unix.Timeval{{Sec: atimeSet}, {Sec: mtimeSet}}
	utimbuf  = [2]int64{atimeSet, mtimeSet}
)

func tsArg() uintptr { return uintptr(unsafe.Pointer(&ts[0])) }

var metaActions = map[string]func(p string) string{
	"chmod":    func(p string) string { return sys(unix.SYS_CHMOD, cstr(p), metaMode) },
	"fchmodat": func(p string) string { return sys(unix.SYS_FCHMODAT, fdcwdArg, cstr(p), metaMode) },
	"fchmodat dirfd": func(p string) string {
		return withFD(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY, func(fd int) string {
			return sys(unix.SYS_FCHMODAT, uintptr(fd), cstr(filepath.Base(p)), metaMode)
		})
	},
	"chmod relative": func(p string) string {
		if err := unix.Chdir(filepath.Dir(p)); err != nil {
			return "chdir " + outcome(err)
		}
		return sys(unix.SYS_CHMOD, cstr(filepath.Base(p)), metaMode)
	},
	"fchmodat2 nofollow": func(p string) string {
		return sys(unix.SYS_FCHMODAT2, fdcwdArg, cstr(p), metaMode, unix.AT_SYMLINK_NOFOLLOW)
	},
	"fchmodat2 empty path": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_FCHMODAT2, uintptr(fd), cstr(""), metaMode, unix.AT_EMPTY_PATH)
		})
	},
	"fchmod": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string { return sys(unix.SYS_FCHMOD, uintptr(fd), metaMode) })
	},
	"fchmod O_PATH": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string { return sys(unix.SYS_FCHMOD, uintptr(fd), metaMode) })
	},
	"chmod /proc/self/fd": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_CHMOD, cstr("/proc/self/fd/"+strconv.Itoa(fd)), metaMode)
		})
	},
	"chmod /proc/pid/fd": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_CHMOD, cstr("/proc/"+strconv.Itoa(os.Getpid())+"/fd/"+strconv.Itoa(fd)), metaMode)
		})
	},

	"chown": func(p string) string { return sys(unix.SYS_CHOWN, cstr(p), uintptr(os.Getuid()), uintptr(os.Getgid())) },
	"lchown": func(p string) string {
		return sys(unix.SYS_LCHOWN, cstr(p), uintptr(os.Getuid()), uintptr(os.Getgid()))
	},
	"fchown": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string {
			return sys(unix.SYS_FCHOWN, uintptr(fd), uintptr(os.Getuid()), uintptr(os.Getgid()))
		})
	},
	"fchownat empty path": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_FCHOWNAT, uintptr(fd), cstr(""), uintptr(os.Getuid()), uintptr(os.Getgid()), unix.AT_EMPTY_PATH)
		})
	},

	"utime":  func(p string) string { return sys(unix.SYS_UTIME, cstr(p), uintptr(unsafe.Pointer(&utimbuf[0]))) },
	"utimes": func(p string) string { return sys(unix.SYS_UTIMES, cstr(p), uintptr(unsafe.Pointer(&tv[0]))) },
	"futimesat": func(p string) string {
		return sys(unix.SYS_FUTIMESAT, fdcwdArg, cstr(p), uintptr(unsafe.Pointer(&tv[0])))
	},
	"utimensat": func(p string) string { return sys(unix.SYS_UTIMENSAT, fdcwdArg, cstr(p), tsArg(), 0) },
	"futimens": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string { return sys(unix.SYS_UTIMENSAT, uintptr(fd), 0, tsArg(), 0) })
	},
	"futimesat NULL path": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string {
			return sys(unix.SYS_FUTIMESAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&tv[0])))
		})
	},
	"utimensat empty path": func(p string) string {
		return withFD(p, unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_UTIMENSAT, uintptr(fd), cstr(""), tsArg(), unix.AT_EMPTY_PATH)
		})
	},

	"setxattr":  func(p string) string { return outcome(unix.Setxattr(p, "user.new", []byte("w"), 0)) },
	"lsetxattr": func(p string) string { return outcome(unix.Lsetxattr(p, "user.new", []byte("w"), 0)) },
	"fsetxattr": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string { return outcome(unix.Fsetxattr(fd, "user.new", []byte("w"), 0)) })
	},
	"removexattr":  func(p string) string { return outcome(unix.Removexattr(p, "user.old")) },
	"lremovexattr": func(p string) string { return outcome(unix.Lremovexattr(p, "user.old")) },
	"fremovexattr": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string { return outcome(unix.Fremovexattr(fd, "user.old")) })
	},
	"setxattrat": func(p string) string {
		v := []byte("w")
		args := [2]uint64{uint64(uintptr(unsafe.Pointer(&v[0]))), 1}
		return sys(unix.SYS_SETXATTRAT, fdcwdArg, cstr(p), 0, cstr("user.new"), uintptr(unsafe.Pointer(&args[0])), 16)
	},
	"removexattrat": func(p string) string {
		return sys(unix.SYS_REMOVEXATTRAT, fdcwdArg, cstr(p), 0, cstr("user.old"))
	},
	"file_setattr": func(p string) string {
		var attr [24]byte
		return sys(unix.SYS_FILE_SETATTR, fdcwdArg, cstr(p), uintptr(unsafe.Pointer(&attr[0])), 24, 0)
	},
	"FS_IOC_SETFLAGS": func(p string) string {
		return withFD(p, unix.O_RDONLY, func(fd int) string {
			var flags int32
			if r := sys(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_GETFLAGS, uintptr(unsafe.Pointer(&flags))); r != "ok" {
				return "FS_IOC_GETFLAGS " + r
			}
			flags |= fsNodump
			return sys(unix.SYS_IOCTL, uintptr(fd), fsIocSetflags, uintptr(unsafe.Pointer(&flags)))
		})
	},
}

func init() {
	for name, f := range metaActions {
		actions["meta "+name] = f
	}
	// "child": the action named before "|" run by a new process of the
	// test binary, which inherits the confinement without applying it:
	// the supervisor then serves another process than its own.
	actions["child"] = func(arg string) string {
		action, p, _ := strings.Cut(arg, "|")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, specEnv+"=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, helperEnv+"="+action, argEnv+"="+p)
		out, err := cmd.CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(line, resultPrefix); ok {
				return r
			}
		}
		return "child " + outcome(err) + " " + strings.TrimSpace(string(out))
	}
	// A listener of the command's own would receive the calls before the
	// supervisor and could let them through.
	actions["nested listener"] = func(string) string {
		prog := []unix.SockFilter{{Code: 0x06, K: unix.SECCOMP_RET_USER_NOTIF}}
		fp := unix.SockFprog{Len: 1, Filter: &prog[0]}
		fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fp)))
		if e == 0 {
			unix.Close(int(fd))
		}
		return outcome(e)
	}
}

// fileState is everything a metadata change could alter.
type fileState struct {
	mode, uid, gid      uint32
	atime, mtime, ctime unix.Timespec
	xattrs              string
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	s := fileState{mode: st.Mode, uid: st.Uid, gid: st.Gid, atime: st.Atim, mtime: st.Mtim, ctime: st.Ctim}
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	sort.Strings(names)
	for _, name := range names {
		if name == "" {
			continue
		}
		v := make([]byte, 256)
		m, _ := unix.Lgetxattr(p, name, v)
		s.xattrs += name + "=" + string(v[:max(m, 0)]) + ";"
	}
	return s
}

// metaFile makes the file each case changes: mode 0640, old times and
// the attribute user.old=v.
func metaFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "meta")
	if err := os.WriteFile(p, []byte("secret"), metaStart); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p, metaStart); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p, "user.old", []byte("v"), 0); err != nil {
		t.Fatalf("user.* extended attributes are not supported in %s: %v", dir, err)
	}
	if err := unix.UtimesNano(p, []unix.Timespec{{Sec: 1e9}, {Sec: 1e9 + 1}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// metaResult says whether the change the action names was made to s.
func metaChanged(action string, s fileState) bool {
	switch {
	case strings.Contains(action, "chmod"):
		return s.mode&0o7777 == metaMode
	case strings.Contains(action, "time"):
		return s.atime.Sec == atimeSet && s.mtime.Sec == mtimeSet
	case strings.Contains(action, "removexattr"):
		return !strings.Contains(s.xattrs, "user.old=")
	case strings.Contains(action, "setxattr"):
		return strings.Contains(s.xattrs, "user.new=w;")
	}
	return false // chown to the same owner changes only the ctime
}

// TestMetadataBeneathReadWrite runs every form of chmod, chown, utimes
// and the xattr calls on a file in a ReadWrite directory, a ReadOnly one
// and one not granted, from the confined process and from a child of it.
// Outside ReadWrite each fails with the exact errno and leaves the file
// as it was, ctime included; inside it makes the change.
func TestMetadataBeneathReadWrite(t *testing.T) {
	requireSandbox(t, 6)
	type want struct{ rw, ro, outside string }
	refused := want{"ok", "EPERM", "EPERM"}
	// Forms whose descriptor must be opened for reading: Landlock refuses
	// that outside what is granted, before the supervisor sees anything.
	readFD := want{"ok", "EPERM", "open EACCES"}
	cases := map[string]want{
		"chmod": refused, "fchmodat": refused, "fchmodat dirfd": refused, "chmod relative": refused,
		"fchmodat2 nofollow": refused, "fchmodat2 empty path": refused, "fchmod": readFD,
		"fchmod O_PATH":       {"EBADF", "EBADF", "EBADF"},
		"chmod /proc/self/fd": refused, "chmod /proc/pid/fd": refused,
		"chown": refused, "lchown": refused, "fchown": readFD, "fchownat empty path": refused,
		"utime": refused, "utimes": refused, "futimesat": refused, "utimensat": refused,
		"futimens": readFD, "futimesat NULL path": readFD, "utimensat empty path": refused,
		"setxattr": refused, "lsetxattr": refused, "fsetxattr": readFD,
		"removexattr": refused, "lremovexattr": refused, "fremovexattr": readFD,
		"setxattrat":      {"ENOSYS", "ENOSYS", "ENOSYS"},
		"removexattrat":   {"ENOSYS", "ENOSYS", "ENOSYS"},
		"file_setattr":    {"ENOSYS", "ENOSYS", "ENOSYS"},
		"FS_IOC_SETFLAGS": {"EPERM", "EPERM", "open EACCES"},
	}
	if len(cases) != len(metaActions) {
		t.Fatalf("%d cases for %d actions", len(cases), len(metaActions))
	}
	for action, w := range cases {
		for _, proc := range []string{"self", "child"} {
			t.Run(proc+"/"+action, func(t *testing.T) {
				t.Parallel()
				wd := newWorld(t)
				s := wd.spec()
				s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
				s.ReadOnly = append(s.ReadOnly, filepath.Dir(os.Args[0]))
				for _, where := range []struct{ dir, want string }{{wd.rw, w.rw}, {wd.ro, w.ro}, {wd.outside, w.outside}} {
					p := metaFile(t, where.dir)
					before := stateOf(t, p)
					helper, arg := "meta "+action, p
					if proc == "child" {
						helper, arg = "child", "meta "+action+"|"+p
					}
					got := runHelperProcess(t, &s, helper, arg)
					after := stateOf(t, p)
					if got != where.want {
						t.Errorf("%s in %s = %q, want %q", action, where.dir, got, where.want)
					}
					switch {
					case got == "ok" && action != "chown" && action != "lchown" && action != "fchown" && action != "fchownat empty path" && !metaChanged(action, after):
						t.Errorf("%s in %s answered ok but the file is %+v", action, where.dir, after)
					case got != "ok" && after != before:
						t.Errorf("%s in %s failed but changed the file:\n before %+v\n after  %+v", action, where.dir, before, after)
					case got == "ok" && after.ctime == before.ctime:
						t.Errorf("%s in %s answered ok but the ctime did not move", action, where.dir)
					}
				}
			})
		}
	}
}

// TestMetadataThroughLinks: a symlink or a relative path from the
// ReadWrite directory to a file outside it does not reach the file; a
// symlink inside is changed itself by the forms that do not follow it.
func TestMetadataThroughLinks(t *testing.T) {
	requireSandbox(t, 6)
	for _, c := range []struct {
		action, path, want string
		changed            bool // whether the file outside changes
	}{
		{"meta chmod", "rw/link", "EPERM", false},
		{"meta chmod", "rw/dirlink/meta", "EPERM", false},
		{"meta chmod", "rw/../outside/meta", "EPERM", false},
		{"meta utimensat", "rw/link", "EPERM", false},
		{"meta setxattr", "rw/link", "EPERM", false},
		{"meta lchown", "rw/link", "ok", false},
		{"meta fchmodat2 nofollow", "rw/link", "ENOTSUP", false},
	} {
		t.Run(c.action+" "+c.path, func(t *testing.T) {
			t.Parallel()
			wd := newWorld(t)
			s := wd.spec()
			s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
			// rw and outside side by side, so that "rw/../outside" is one.
			root := t.TempDir()
			rw, outside := filepath.Join(root, "rw"), filepath.Join(root, "outside")
			os.Mkdir(rw, 0o755)
			os.Mkdir(outside, 0o755)
			s.ReadWrite[0] = rw
			target := metaFile(t, outside)
			os.Symlink(target, filepath.Join(rw, "link"))
			os.Symlink(outside, filepath.Join(rw, "dirlink"))
			before := stateOf(t, target)
			got := runHelperProcess(t, &s, c.action, filepath.Join(root, c.path))
			if got != c.want {
				t.Errorf("%s(%s) = %q, want %q", c.action, c.path, got, c.want)
			}
			if after := stateOf(t, target); (after != before) != c.changed {
				t.Errorf("%s(%s) left the file outside %+v, was %+v", c.action, c.path, after, before)
			}
		})
	}
}

// TestMetadataBaseline: without the supervisor the same calls change a
// file the caller owns, unconfined and under Landlock alike, so the
// refusals above are the supervisor's.
func TestMetadataBaseline(t *testing.T) {
	requireSandbox(t, 6)
	for _, action := range []string{"chmod", "fchmod", "fchmodat2 empty path", "chmod /proc/self/fd", "utimensat", "futimens", "fsetxattr", "fremovexattr", "FS_IOC_SETFLAGS"} {
		for _, confined := range []bool{false, true} {
			t.Run(action+"/"+strconv.FormatBool(confined), func(t *testing.T) {
				t.Parallel()
				wd := newWorld(t)
				var s *Spec
				if confined {
					spec := wd.spec()
					spec.LandlockThisThread = true
					s = &spec
				}
				p := metaFile(t, wd.ro)
				before := stateOf(t, p)
				if got := runHelperProcess(t, s, "meta "+action, p); got != "ok" {
					t.Errorf("%s = %q, want ok", action, got)
				}
				if stateOf(t, p) == before {
					t.Errorf("%s did not change the file", action)
				}
			})
		}
	}
}

func init() {
	actions["fchmod memfd"] = func(string) string {
		fd, err := unix.MemfdCreate("meta", unix.MFD_CLOEXEC)
		if err != nil {
			return "memfd " + outcome(err)
		}
		defer unix.Close(fd)
		return sys(unix.SYS_FCHMOD, uintptr(fd), 0o600)
	}
	// "hold memfd": a memfd of mode 0600 held, with no capabilities,
	// until stdin ends; its descriptor is the result.
	actions["hold memfd"] = func(string) string {
		fd, err := unix.MemfdCreate("host", unix.MFD_CLOEXEC)
		if err == nil {
			err = unix.Fchmod(fd, 0o600)
		}
		if err == nil {
			err = dropCapabilities()
		}
		if err != nil {
			return outcome(err)
		}
		fmt.Printf("%s%d\n", resultPrefix, fd)
		os.Stdin.Read(make([]byte, 1))
		return "done"
	}
	actions["fchmod O_TMPFILE"] = func(dir string) string {
		return withFD(dir, unix.O_TMPFILE|unix.O_RDWR, func(fd int) string { return sys(unix.SYS_FCHMOD, uintptr(fd), 0o600) })
	}
}

// TestMetadataUnnamed: a file with no name is the caller's to change
// through its own descriptor, but not through another process's
// /proc/PID/fd, which the supervisor could open where the caller cannot.
func TestMetadataUnnamed(t *testing.T) {
	requireSandbox(t, 6)
	wd := newWorld(t)
	s := wd.spec()
	s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
	for action, arg := range map[string]string{"fchmod memfd": "", "fchmod O_TMPFILE": wd.rw} {
		if got := runHelperProcess(t, &s, action, arg); got != "ok" {
			t.Errorf("%s = %q, want ok", action, got)
		}
	}
	// A host process with no capabilities, as an ordinary user's are:
	// one whose descriptors the supervisor, with none either, can open.
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperEnv+"=hold memfd")
	stdin, _ := host.StdinPipe()
	stdout, _ := host.StdoutPipe()
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Wait()
	defer stdin.Close()
	line := make([]byte, 64)
	n, _ := stdout.Read(line)
	fd, ok := strings.CutPrefix(strings.TrimSpace(string(line[:n])), resultPrefix)
	if !ok {
		t.Fatalf("the host process printed %q", line[:n])
	}
	memfd := "/proc/" + strconv.Itoa(host.Process.Pid) + "/fd/" + fd
	for _, action := range []string{"meta chmod", "meta utimensat", "meta setxattr"} {
		if got := runHelperProcess(t, &s, action, memfd); got != "EPERM" {
			t.Errorf("%s of a host process's memfd = %q, want EPERM", action, got)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(memfd, &st); err != nil || st.Mode&0o7777 != 0o600 || st.Mtim.Sec == mtimeSet {
		t.Errorf("the host process's memfd changed: %+v %v", st, err)
	}
}

func TestMetadataNestedListener(t *testing.T) {
	requireSandbox(t, 6)
	wd := newWorld(t)
	s := wd.spec()
	s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
	if got := runHelperProcess(t, &s, "nested listener", ""); got != "EBUSY" {
		t.Errorf("a second listener = %q, want EBUSY", got)
	}
}

// TestMetadataShell: the tools, as a command runs them.
func TestMetadataShell(t *testing.T) {
	requireSandbox(t, 6)
	wd := newWorld(t)
	s := wd.spec()
	s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
	out := metaFile(t, wd.outside)
	before := stateOf(t, out)
	script := strings.Join([]string{
		"set -e", "cd " + wd.rw,
		"printf '#!/bin/sh\\necho ran\\n' > run.sh", "chmod +x run.sh", "./run.sh > ran",
		"touch -d 2001-02-03 stamp", "cp -p run.sh copy.sh",
		"mkdir t && tar cf a.tar run.sh && tar xpf a.tar -C t",
		"! chmod 666 " + out + " 2>/dev/null", "! chmod 777 " + wd.outside + " 2>/dev/null",
		"! touch -d 2001-02-03 " + out + " 2>/dev/null", "! touch " + out + " 2>/dev/null",
	}, "\n")
	if got := runHelperProcess(t, &s, "shell", script); got != "ok" {
		t.Fatalf("script = %q", got)
	}
	for p, mode := range map[string]os.FileMode{"run.sh": 0o755, "copy.sh": 0o755, "t/run.sh": 0o755} {
		fi, err := os.Stat(filepath.Join(wd.rw, p))
		if err != nil || fi.Mode().Perm() != mode&^umask() {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, mode&^umask())
		}
	}
	if data, _ := os.ReadFile(filepath.Join(wd.rw, "ran")); !bytes.Equal(data, []byte("ran\n")) {
		t.Errorf("run.sh printed %q", data)
	}
	if fi, err := os.Stat(filepath.Join(wd.rw, "stamp")); err != nil || fi.ModTime().UTC().Year() != 2001 {
		t.Errorf("stamp: %v %v", fi, err)
	}
	if after := stateOf(t, out); after != before {
		t.Errorf("the file outside changed: %+v, was %+v", after, before)
	}
	if fi, _ := os.Stat(wd.outside); fi.Mode().Perm() == 0o777 {
		t.Error("the directory outside became 0777")
	}
}

func umask() os.FileMode {
	m := unix.Umask(0)
	unix.Umask(m)
	return os.FileMode(m)
}

func init() {
	// "chmod-loop N|PATH": N chmods of PATH, printed as nanoseconds each.
	actions["chmod-loop"] = func(arg string) string {
		count, p, _ := strings.Cut(arg, "|")
		n, _ := strconv.Atoi(count)
		path := cstr(p)
		start := time.Now()
		for i := range n {
			if _, _, e := unix.Syscall(unix.SYS_FCHMODAT, fdcwdArg, path, uintptr(0o600|i&1<<5)); e != 0 {
				return outcome(e)
			}
		}
		return strconv.FormatInt(time.Since(start).Nanoseconds()/int64(max(n, 1)), 10)
	}
}

// BenchmarkChmod is a chmod of a file in a ReadWrite directory, bare,
// under Landlock alone, and through the supervisor, in the confined
// process and in a child of it; each is reported against the bare call
// measured in the same run.
func BenchmarkChmod(b *testing.B) {
	supportOnce.Do(func() { support = Probe() })
	if support.LandlockABI < 6 || !support.Seccomp {
		b.Skip("this host cannot confine")
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	base := Spec{ReadOnly: []string{filepath.Dir(os.Args[0])}, ReadWrite: []string{dir, "/dev/null"}, LandlockThisThread: true}
	for _, d := range hostDirs {
		if _, err := os.Stat(d); err == nil {
			base.ReadOnly = append(base.ReadOnly, d)
		}
	}
	supervised := base
	supervised.MetadataBeneathReadWrite = true
	run := func(s *Spec, action string) float64 {
		arg := strconv.Itoa(b.N) + "|" + p
		if action == "child" {
			arg = "chmod-loop|" + arg
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+action, argEnv+"="+arg)
		if s != nil {
			js, _ := json.Marshal(s)
			cmd.Env = append(cmd.Env, specEnv+"="+string(js))
		}
		out, err := cmd.CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(line, resultPrefix); ok {
				ns, err := strconv.ParseFloat(r, 64)
				if err != nil {
					b.Fatalf("%s: %s", action, r)
				}
				return ns
			}
		}
		b.Fatalf("%s: %v %s", action, err, out)
		return 0
	}
	bare := run(nil, "chmod-loop")
	landlock := run(&base, "chmod-loop")
	self := run(&supervised, "chmod-loop")
	child := run(&supervised, "child")
	b.ReportMetric(bare, "ns/chmod-bare")
	b.ReportMetric(landlock/bare, "landlock/bare")
	b.ReportMetric(self/bare, "supervised/bare")
	b.ReportMetric(child/bare, "supervised-child/bare")
	b.ReportMetric(child, "ns/chmod-supervised-child")
	b.ReportMetric(0, "ns/op")
}

// oddCalls are calls with arguments the kernel refuses or treats
// specially, each run on a directory holding "meta" (a file), "dangling"
// (a symlink to nothing) and "sub" (an empty directory).
var oddCalls = map[string]func(dir string) string{
	"chmod NULL":        func(string) string { return sys(unix.SYS_CHMOD, 0, metaMode) },
	"chmod bad pointer": func(string) string { return sys(unix.SYS_CHMOD, 1, metaMode) },
	"chmod empty":       func(string) string { return sys(unix.SYS_CHMOD, cstr(""), metaMode) },
	"chmod missing":     func(dir string) string { return sys(unix.SYS_CHMOD, cstr(dir+"/missing"), metaMode) },
	"chmod too long": func(dir string) string {
		return sys(unix.SYS_CHMOD, cstr(dir+"/"+strings.Repeat("a/", 2100)), metaMode)
	},
	"chmod through file": func(dir string) string { return sys(unix.SYS_CHMOD, cstr(dir+"/meta/x"), metaMode) },
	"chmod dangling":     func(dir string) string { return sys(unix.SYS_CHMOD, cstr(dir+"/dangling"), metaMode) },
	"lchown dangling": func(dir string) string {
		return sys(unix.SYS_LCHOWN, cstr(dir+"/dangling"), uintptr(os.Getuid()), uintptr(os.Getgid()))
	},
	"chmod directory": func(dir string) string { return sys(unix.SYS_CHMOD, cstr(dir+"/sub"), 0o700) },
	"fchmodat negative fd": func(string) string {
		fd := -5
		return sys(unix.SYS_FCHMODAT, uintptr(fd), cstr("meta"), metaMode)
	},
	"fchmodat closed fd": func(string) string { return sys(unix.SYS_FCHMODAT, 999, cstr("meta"), metaMode) },
	"fchmodat file fd": func(dir string) string {
		return withFD(dir+"/meta", unix.O_RDONLY, func(fd int) string { return sys(unix.SYS_FCHMODAT, uintptr(fd), cstr("x"), metaMode) })
	},
	"fchmodat2 bad flags": func(dir string) string {
		return sys(unix.SYS_FCHMODAT2, fdcwdArg, cstr(dir+"/meta"), metaMode, 0x8000)
	},
	"fchmod closed fd": func(string) string { return sys(unix.SYS_FCHMOD, 999, metaMode) },
	"fchmod pipe": func(string) string {
		return pipeCall(func(fd int) string { return sys(unix.SYS_FCHMOD, uintptr(fd), 0o600) })
	},
	"utimensat NULL at cwd": func(string) string { return sys(unix.SYS_UTIMENSAT, fdcwdArg, 0, tsArg(), 0) },
	"utimensat bad nsec":    func(dir string) string { return utimensatWith(dir, unix.Timespec{Sec: 1, Nsec: 2e9}) },
	"utimensat omit":        func(dir string) string { return utimensatWith(dir, unix.Timespec{Nsec: unix.UTIME_OMIT}) },
	"utimensat now":         func(dir string) string { return sys(unix.SYS_UTIMENSAT, fdcwdArg, cstr(dir+"/meta"), 0, 0) },
	"utimensat bad times":   func(dir string) string { return sys(unix.SYS_UTIMENSAT, fdcwdArg, cstr(dir+"/meta"), 8, 0) },
	"futimens NULL with flags": func(dir string) string {
		return withFD(dir+"/meta", unix.O_RDONLY, func(fd int) string { return sys(unix.SYS_UTIMENSAT, uintptr(fd), 0, tsArg(), unix.AT_SYMLINK_NOFOLLOW) })
	},
	"utimes bad usec": func(dir string) string {
		v := [2]unix.Timeval{{Usec: 2e6}, {}}
		return sys(unix.SYS_UTIMES, cstr(dir+"/meta"), uintptr(unsafe.Pointer(&v[0])))
	},
	"setxattr empty name": func(dir string) string { return outcome(unix.Setxattr(dir+"/meta", "", []byte("w"), 0)) },
	"setxattr long name": func(dir string) string {
		return outcome(unix.Setxattr(dir+"/meta", "user."+strings.Repeat("n", 300), []byte("w"), 0))
	},
	"setxattr too big": func(dir string) string {
		return outcome(unix.Setxattr(dir+"/meta", "user.big", make([]byte, 70000), 0))
	},
	"setxattr empty value": func(dir string) string { return outcome(unix.Setxattr(dir+"/meta", "user.e", nil, 0)) },
	"setxattr create existing": func(dir string) string {
		return outcome(unix.Setxattr(dir+"/meta", "user.old", []byte("w"), unix.XATTR_CREATE))
	},
	"setxattr replace missing": func(dir string) string {
		return outcome(unix.Setxattr(dir+"/meta", "user.none", []byte("w"), unix.XATTR_REPLACE))
	},
	"setxattr bad flags":    func(dir string) string { return outcome(unix.Setxattr(dir+"/meta", "user.x", []byte("w"), 8)) },
	"setxattr trusted":      func(dir string) string { return outcome(unix.Setxattr(dir+"/meta", "trusted.x", []byte("w"), 0)) },
	"setxattr no namespace": func(dir string) string { return outcome(unix.Setxattr(dir+"/meta", "plain", []byte("w"), 0)) },
	"lsetxattr on symlink":  func(dir string) string { return outcome(unix.Lsetxattr(dir+"/dangling", "user.x", []byte("w"), 0)) },
	"removexattr missing":   func(dir string) string { return outcome(unix.Removexattr(dir+"/meta", "user.none")) },
	"fsetxattr O_PATH": func(dir string) string {
		return withFD(dir+"/meta", unix.O_PATH, func(fd int) string { return outcome(unix.Fsetxattr(fd, "user.x", []byte("w"), 0)) })
	},
	"fchownat empty no flag": func(dir string) string {
		return withFD(dir+"/meta", unix.O_PATH, func(fd int) string {
			return sys(unix.SYS_FCHOWNAT, uintptr(fd), cstr(""), uintptr(os.Getuid()), uintptr(os.Getgid()), 0)
		})
	},
	"fchownat unchanged owners": func(dir string) string {
		return sys(unix.SYS_FCHOWNAT, fdcwdArg, cstr(dir+"/meta"), 0xffffffff, 0xffffffff, 0)
	},
	"chown to another user": func(dir string) string { return sys(unix.SYS_CHOWN, cstr(dir+"/meta"), 12345, 12345) },
}

func pipeCall(f func(fd int) string) string {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return outcome(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	return f(p[0])
}

func utimensatWith(dir string, t unix.Timespec) string {
	v := [2]unix.Timespec{t, t}
	return sys(unix.SYS_UTIMENSAT, fdcwdArg, cstr(dir+"/meta"), uintptr(unsafe.Pointer(&v[0])), 0)
}

func init() {
	for name, f := range oddCalls {
		actions["odd "+name] = f
	}
}

// TestMetadataOddArguments cross-checks the supervisor against the
// kernel: each odd call gets the same answer supervised, in the ReadWrite
// directory, as from the kernel under the same confinement without the
// supervisor (no capabilities either), but for a pipe, which has no name
// beneath it.
func TestMetadataOddArguments(t *testing.T) {
	requireSandbox(t, 6)
	differ := map[string]string{"fchmod pipe": "EPERM"}
	for name := range oddCalls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			results := map[bool]string{}
			for _, supervised := range []bool{false, true} {
				wd := newWorld(t)
				metaFile(t, wd.rw)
				os.Symlink(filepath.Join(wd.rw, "nothing"), filepath.Join(wd.rw, "dangling"))
				os.Mkdir(filepath.Join(wd.rw, "sub"), 0o755)
				s := wd.spec()
				s.LandlockThisThread, s.MetadataBeneathReadWrite = true, supervised
				results[supervised] = runHelperProcess(t, &s, "odd "+name, wd.rw)
			}
			want := results[false]
			if d, ok := differ[name]; ok {
				want = d
			}
			if results[true] != want {
				t.Errorf("%s: supervised %q, by the kernel %q, want %q", name, results[true], results[false], want)
			}
		})
	}
}

func init() {
	// "race IN|OUT": chmod of a path another thread keeps rewriting from
	// IN to OUT (two paths of one length) and back, from several threads
	// at once; the result is how many calls succeeded, or the first
	// unexpected errno.
	actions["race"] = func(arg string) string {
		in, out, _ := strings.Cut(arg, "|")
		if len(in) != len(out) {
			return "paths of different lengths"
		}
		buf := append([]byte(in), 0)
		stop := make(chan struct{})
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				src := in
				if i&1 == 1 {
					src = out
				}
				for j := range len(src) {
					*(*byte)(unsafe.Add(unsafe.Pointer(&buf[0]), j)) = src[j]
				}
			}
		}()
		defer close(stop)
		results := make(chan string, 4)
		for range 4 {
			go func() {
				ok := 0
				for i := range 500 {
					_, _, e := unix.Syscall(unix.SYS_CHMOD, uintptr(unsafe.Pointer(&buf[0])), uintptr(0o600|i&1<<2), 0)
					switch e {
					case 0:
						ok++
					case unix.EPERM, unix.ENOENT:
					default:
						results <- outcome(e)
						return
					}
				}
				results <- strconv.Itoa(ok)
			}()
		}
		total := 0
		for range 4 {
			r := <-results
			n, err := strconv.Atoi(r)
			if err != nil {
				return r
			}
			total += n
		}
		return "ok " + strconv.Itoa(total)
	}
}

// TestMetadataPathRace: a path rewritten in the caller's memory while the
// calls are in flight, by a thread of its own, from several threads at
// once, never changes the file outside: the supervisor reads the path
// once and changes the file it resolved.
func TestMetadataPathRace(t *testing.T) {
	requireSandbox(t, 6)
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "ou")
	os.Mkdir(in, 0o755)
	os.Mkdir(out, 0o755)
	target := metaFile(t, out)
	metaFile(t, in)
	before := stateOf(t, target)
	wd := newWorld(t)
	s := wd.spec()
	s.LandlockThisThread, s.MetadataBeneathReadWrite = true, true
	s.ReadWrite = []string{in, "/dev/null"}
	s.ReadOnly = append(s.ReadOnly, filepath.Dir(os.Args[0]))
	got := runHelperProcess(t, &s, "child", "race|"+filepath.Join(in, "meta")+"|"+target)
	n, err := strconv.Atoi(strings.TrimPrefix(got, "ok "))
	if !strings.HasPrefix(got, "ok ") || err != nil || n == 0 {
		t.Errorf("race = %q, want ok and some calls that succeeded", got)
	}
	t.Logf("%d of 2000 calls changed the file inside", n)
	if after := stateOf(t, target); after != before {
		t.Errorf("the file outside changed: %+v, was %+v", after, before)
	}
}
