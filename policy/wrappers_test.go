package policy

import (
	"path"
	"slices"
	"strings"
	"testing"
)

func TestStripBenign(t *testing.T) {
	cases := []struct {
		argv, want []string
	}{
		{l("ls", "-l"), l("ls", "-l")},
		{nil, nil},
		{l("timeout", "5", "ls"), l("ls")},
		{l("timeout", "-s", "KILL", "10", "rm", "-rf", "x"), l("rm", "-rf", "x")},
		{l("timeout", "--signal=KILL", "-k", "5", "10", "rm"), l("rm")},
		{l("timeout", "--preserve-status", "1m", "make", "-j4"), l("make", "-j4")},
		{l("timeout", "5"), nil},
		{l("timeout"), nil},
		{l("/usr/bin/timeout", "5", "ls"), l("ls")},
		{l("nice", "-n", "10", "make"), l("make")},
		{l("nice", "-n10", "make"), l("make")},
		{l("nice", "-10", "make"), l("make")},
		{l("nice", "--10", "make"), l("make")},
		{l("nice", "--adjustment=5", "make"), l("make")},
		{l("nice", "make", "-n", "1"), l("make", "-n", "1")},
		{l("nice"), nil},
		{l("nohup", "make"), l("make")},
		{l("nohup", "--", "make"), l("make")},
		{l("stdbuf", "-oL", "rm"), l("rm")},
		{l("stdbuf", "-o", "0", "-e", "0", "grep", "x"), l("grep", "x")},
		{l("stdbuf", "--output=L", "tail", "-f", "f"), l("tail", "-f", "f")},
		{l("time", "ls"), l("ls")},
		{l("time", "-p", "ls"), l("ls")},
		{l("time", "-f", "%e", "ls"), l("ls")},
		{l("time", "-o", "t", "ls"), l("time", "-o", "t", "ls")},
		{l("nice", "time", "--output=t", "ls"), l("time", "--output=t", "ls")},
		{l("xargs", "rm"), l("rm")},
		{l("xargs", "rm", "-rf"), l("rm", "-rf")},
		{l("xargs", "--", "rm"), l("rm")},
		{l("xargs"), nil},
		{l("xargs", "-0", "rm"), l("xargs", "-0", "rm")},
		{l("xargs", "-n1", "rm"), l("xargs", "-n1", "rm")},
		{l("timeout", "5", "nice", "-n", "1", "nohup", "xargs", "rm", "-f"), l("rm", "-f")},
		{l("timeout", "5", "env", "rm", "x"), l("env", "rm", "x")},
		{l("nice", "timeout", "5", "sudo", "rm"), l("sudo", "rm")},
		{l("env", "rm"), l("env", "rm")},
		{l("sudo", "timeout", "5", "rm"), l("sudo", "timeout", "5", "rm")},
		{l("ionice", "-c3", "rm"), l("ionice", "-c3", "rm")},
		{l("timeout\u200b", "5", "ls"), l("timeout\u200b", "5", "ls")},
	}
	for _, tc := range cases {
		if got := stripBenign(tc.argv); !slices.Equal(got, tc.want) {
			t.Errorf("stripBenign(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestExposed(t *testing.T) {
	cases := []struct {
		argv []string
		want [][]string
	}{
		{nil, nil},
		{l("ls", "-l"), [][]string{l("ls", "-l")}},

		// Exec wrappers.
		{l("timeout", "-s", "KILL", "10", "rm", "-rf", "x"), [][]string{
			l("timeout", "-s", "KILL", "10", "rm", "-rf", "x"), l("rm", "-rf", "x")}},
		{l("nice", "-n", "10", "make"), [][]string{l("nice", "-n", "10", "make"), l("make")}},
		{l("nohup", "rm"), [][]string{l("nohup", "rm"), l("rm")}},
		{l("stdbuf", "-oL", "rm"), [][]string{l("stdbuf", "-oL", "rm"), l("rm")}},
		{l("time", "-o", "t", "rm"), [][]string{l("time", "-o", "t", "rm"), l("rm")}},
		{l("env", "-i", "PATH=/bin", "FOO=bar", "rm", "x"), [][]string{
			l("env", "-i", "PATH=/bin", "FOO=bar", "rm", "x"), l("rm", "x")}},
		{l("env", "-u", "HOME", "-C", "/tmp", "rm", "x"), [][]string{
			l("env", "-u", "HOME", "-C", "/tmp", "rm", "x"), l("rm", "x")}},
		{l("env", "-", "FOO=1", "rm"), [][]string{l("env", "-", "FOO=1", "rm"), l("rm")}},
		{l("env", "--unset=A", "--", "rm"), [][]string{l("env", "--unset=A", "--", "rm"), l("rm")}},
		{l("env", "-S", "rm -rf x"), [][]string{l("env", "-S", "rm -rf x"), l("rm", "-rf", "x")}},
		{l("env", "-Srm -rf 'a b'"), [][]string{l("env", "-Srm -rf 'a b'"), l("rm", "-rf", "a b")}},
		{l("env", "-S", "-i FOO=1 rm x", "y"), [][]string{l("env", "-S", "-i FOO=1 rm x", "y"), l("rm", "x", "y")}},
		{l("env", "--split-string=rm\\_x # comment"), [][]string{l("env", "--split-string=rm\\_x # comment"), l("rm", "x")}},
		{l("env", "-S", "rm\\_-rf\\_/"), [][]string{l("env", "-S", "rm\\_-rf\\_/"), l("rm", "-rf", "/")}},
		{l("env", "-S", "\\_git push"), [][]string{l("env", "-S", "\\_git push"), l("git", "push")}},
		{l("env", "-S", `"rm\_-rf" x`), [][]string{l("env", "-S", `"rm\_-rf" x`), l("rm -rf", "x")}},
		{l("sudo", "-u", "root", "--", "rm", "x"), [][]string{l("sudo", "-u", "root", "--", "rm", "x"), l("rm", "x")}},
		{l("sudo", "-E", "FOO=1", "rm", "x"), [][]string{l("sudo", "-E", "FOO=1", "rm", "x"), l("rm", "x")}},
		{l("sudo", "-iu", "root", "rm"), [][]string{l("sudo", "-iu", "root", "rm"), l("rm")}},
		{l("sudo", "-l", "rm"), [][]string{l("sudo", "-l", "rm")}},
		{l("sudo", "-e", "f"), [][]string{l("sudo", "-e", "f")}},
		{l("doas", "-u", "root", "rm", "x"), [][]string{l("doas", "-u", "root", "rm", "x"), l("rm", "x")}},
		{l("xargs", "-0", "-n1", "rm"), [][]string{l("xargs", "-0", "-n1", "rm"), l("rm")}},
		{l("xargs", "-I", "{}", "rm", "{}"), [][]string{l("xargs", "-I", "{}", "rm", "{}"), l("rm", "{}")}},
		{l("xargs", "-P4", "-a", "list", "rm"), [][]string{l("xargs", "-P4", "-a", "list", "rm"), l("rm")}},
		{l("xargs", "rm"), [][]string{l("xargs", "rm"), l("rm")}},
		{l("flock", "/tmp/lock", "rm", "x"), [][]string{l("flock", "/tmp/lock", "rm", "x"), l("rm", "x")}},
		{l("flock", "-x", "/tmp/lock", "-c", "rm x"), [][]string{l("flock", "-x", "/tmp/lock", "-c", "rm x"), l("rm", "x")}},
		{l("flock", "-w", "5", "/tmp/lock", "--command", "rm x; ls"), [][]string{
			l("flock", "-w", "5", "/tmp/lock", "--command", "rm x; ls"), l("rm", "x"), l("ls")}},
		{l("flock", "-n", "9"), [][]string{l("flock", "-n", "9")}},
		{l("watch", "-n", "1", "rm", "x"), [][]string{l("watch", "-n", "1", "rm", "x"), l("rm", "x")}},
		{l("watch", "rm -rf x; ls"), [][]string{l("watch", "rm -rf x; ls"), l("rm", "-rf", "x"), l("ls")}},
		{l("watch", "-x", "rm", "a b"), [][]string{l("watch", "-x", "rm", "a b"), l("rm", "a b")}},
		{l("chrt", "-f", "10", "rm"), [][]string{l("chrt", "-f", "10", "rm"), l("rm")}},
		{l("chrt", "-p", "10", "123"), [][]string{l("chrt", "-p", "10", "123")}},
		{l("taskset", "-c", "0", "rm"), [][]string{l("taskset", "-c", "0", "rm"), l("rm")}},
		{l("taskset", "0x1", "rm"), [][]string{l("taskset", "0x1", "rm"), l("rm")}},
		{l("taskset", "-p", "0x1", "123"), [][]string{l("taskset", "-p", "0x1", "123")}},
		{l("ionice", "-c", "3", "rm"), [][]string{l("ionice", "-c", "3", "rm"), l("rm")}},
		{l("ionice", "-c3", "-n7", "rm"), [][]string{l("ionice", "-c3", "-n7", "rm"), l("rm")}},
		{l("ionice", "-p", "123"), [][]string{l("ionice", "-p", "123")}},
		{l("busybox", "rm", "-rf", "x"), [][]string{l("busybox", "rm", "-rf", "x"), l("rm", "-rf", "x")}},
		{l("busybox", "--list"), [][]string{l("busybox", "--list")}},
		{l("strace", "-f", "-o", "out", "rm", "x"), [][]string{l("strace", "-f", "-o", "out", "rm", "x"), l("rm", "x")}},
		{l("strace", "-e", "trace=open", "-o", "|rm x", "ls"), [][]string{
			l("strace", "-e", "trace=open", "-o", "|rm x", "ls"), l("ls"), l("rm", "x")}},
		{l("ltrace", "-o", "out", "rm"), [][]string{l("ltrace", "-o", "out", "rm"), l("rm")}},
		{l("command", "rm", "x"), [][]string{l("command", "rm", "x"), l("rm", "x")}},
		{l("command", "-v", "rm"), [][]string{l("command", "-v", "rm")}},
		{l("builtin", "echo", "x"), [][]string{l("builtin", "echo", "x"), l("echo", "x")}},
		{l("exec", "-a", "name", "rm", "x"), [][]string{l("exec", "-a", "name", "rm", "x"), l("rm", "x")}},
		{l("setsid", "-f", "rm"), [][]string{l("setsid", "-f", "rm"), l("rm")}},
		{l("unbuffer", "-p", "rm"), [][]string{l("unbuffer", "-p", "rm"), l("rm")}},
		{l("/usr/bin/env", "rm"), [][]string{l("/usr/bin/env", "rm"), l("rm")}},

		// Wrappers outside the spec's list.
		{l("prlimit", "rm", "-rf", "/"), [][]string{l("prlimit", "rm", "-rf", "/"), l("rm", "-rf", "/")}},
		{l("prlimit", "--nofile=64", "-n", "rm"), [][]string{l("prlimit", "--nofile=64", "-n", "rm"), l("rm")}},
		{l("prlimit", "--pid", "1", "rm"), [][]string{l("prlimit", "--pid", "1", "rm")}},
		{l("unshare", "rm", "-rf", "~"), [][]string{l("unshare", "rm", "-rf", "~"), l("rm", "-rf", "~")}},
		{l("unshare", "-Urm", "--mount-proc", "-w", "/", "rm"), [][]string{
			l("unshare", "-Urm", "--mount-proc", "-w", "/", "rm"), l("rm")}},
		{l("nsenter", "-t", "1", "-m", "--", "rm", "x"), [][]string{l("nsenter", "-t", "1", "-m", "--", "rm", "x"), l("rm", "x")}},
		{l("chroot", "/srv", "rm", "x"), [][]string{l("chroot", "/srv", "rm", "x"), l("rm", "x")}},
		{l("setpriv", "--reuid=0", "rm"), [][]string{l("setpriv", "--reuid=0", "rm"), l("rm")}},
		{l("fakeroot", "-i", "st", "--", "rm"), [][]string{l("fakeroot", "-i", "st", "--", "rm"), l("rm")}},
		{l("eatmydata", "rm"), [][]string{l("eatmydata", "rm"), l("rm")}},
		{l("ssh-agent", "-t", "60", "rm"), [][]string{l("ssh-agent", "-t", "60", "rm"), l("rm")}},
		{l("dbus-run-session", "--", "rm"), [][]string{l("dbus-run-session", "--", "rm"), l("rm")}},
		{l("firejail", "--noprofile", "rm", "-x"), [][]string{l("firejail", "--noprofile", "rm", "-x"), l("rm", "-x")}},
		{l("systemd-run", "--user", "-p", "A=1", "rm"), [][]string{l("systemd-run", "--user", "-p", "A=1", "rm"), l("rm")}},
		{l("runuser", "-u", "u", "--", "rm", "-rf", "x"), [][]string{l("runuser", "-u", "u", "--", "rm", "-rf", "x"), l("rm", "-rf", "x")}},
		{l("su", "root", "-c", "rm x"), [][]string{l("su", "root", "-c", "rm x"), l("rm", "x")}},
		{l("su", "-", "root"), [][]string{l("su", "-", "root")}},
		{l("script", "-c", "rm x", "/dev/null"), [][]string{l("script", "-c", "rm x", "/dev/null"), l("rm", "x")}},
		{l("script", "--command", "rm x"), [][]string{l("script", "--command", "rm x"), l("rm", "x")}},
		{l("catchsegv", "rm"), [][]string{l("catchsegv", "rm"), l("rm")}},
		{l("valgrind", "-q", "--tool=none", "rm"), [][]string{l("valgrind", "-q", "--tool=none", "rm"), l("rm")}},
		{l("gdb", "-ex", "r", "--args", "rm", "x"), [][]string{l("gdb", "-ex", "r", "--args", "rm", "x"), l("rm", "x")}},
		{l("gdb", "-ex", "--args", "prog"), [][]string{l("gdb", "-ex", "--args", "prog")}},
		{l("parallel", "rm", "-rf", ":::", "/", "x"), [][]string{
			l("parallel", "rm", "-rf", ":::", "/", "x"), l("rm", "-rf"), l("rm", "-rf", "/"), l("rm", "-rf", "x")}},
		{l("parallel", "-j2", "rm {} x", ":::", "a"), [][]string{
			l("parallel", "-j2", "rm {} x", ":::", "a"), l("rm", "{}", "x"), l("rm", "a", "x")}},

		// Shells.
		{l("bash", "-lc", "rm -rf x"), [][]string{l("bash", "-lc", "rm -rf x"), l("rm", "-rf", "x")}},
		{l("sh", "-c", "cd /; rm -rf x"), [][]string{l("sh", "-c", "cd /; rm -rf x"), l("rm", "-rf", "x")}},
		{l("bash", "-c", "ls | grep x && rm y"), [][]string{l("bash", "-c", "ls | grep x && rm y"), l("ls"), l("grep", "x"), l("rm", "y")}},
		{l("bash", "-ec", "rm x"), [][]string{l("bash", "-ec", "rm x"), l("rm", "x")}},
		{l("bash", "-o", "pipefail", "-c", "rm x"), [][]string{l("bash", "-o", "pipefail", "-c", "rm x"), l("rm", "x")}},
		{l("bash", "-x", "-c", "rm x", "name", "arg"), [][]string{l("bash", "-x", "-c", "rm x", "name", "arg"), l("rm", "x")}},
		{l("bash", "-c", "--", "rm x"), [][]string{l("bash", "-c", "--", "rm x"), l("rm", "x")}},
		{l("zsh", "-c", "rm x"), [][]string{l("zsh", "-c", "rm x"), l("rm", "x")}},
		{l("dash", "-c", "rm 'a b'"), [][]string{l("dash", "-c", "rm 'a b'"), l("rm", "a b")}},
		{l("/bin/ksh", "-c", "rm x > out"), [][]string{l("/bin/ksh", "-c", "rm x > out"), l("rm", "x")}},
		{l("bash", "script.sh"), [][]string{l("bash", "script.sh")}},
		{l("bash", "-c"), [][]string{l("bash", "-c")}},
		// Opaque code: the commands rein can read in it, each up to its
		// first word that expands.
		{l("bash", "-c", "echo $HOME; rm x"), [][]string{l("bash", "-c", "echo $HOME; rm x"), l("echo", "~"), l("rm", "x")}},
		{l("bash", "-c", "echo $FOO; rm x"), [][]string{l("bash", "-c", "echo $FOO; rm x"), l("echo"), l("rm", "x")}},
		{l("bash", "-c", "for f in *.go; do git push $f; done"), [][]string{l("bash", "-c", "for f in *.go; do git push $f; done"), l("git", "push")}},
		{l("bash", "-c", "cat > .env <<EOF\n$X\nEOF"), [][]string{l("bash", "-c", "cat > .env <<EOF\n$X\nEOF"), l("cat")}},
		{l("bash", "-c", "rm (x"), [][]string{l("bash", "-c", "rm (x")}},

		// find actions.
		{l("find", ".", "-name", "x", "-exec", "rm", "{}", ";"), [][]string{
			l("find", ".", "-name", "x", "-exec", "rm", "{}", ";"), l("rm", "{}")}},
		{l("find", ".", "-execdir", "sh", "-c", "rm x", ";"), [][]string{
			l("find", ".", "-execdir", "sh", "-c", "rm x", ";"), l("sh", "-c", "rm x"), l("rm", "x")}},
		{l("find", ".", "-exec", "rm", "{}", "+", "-ok", "ls", ";"), [][]string{
			l("find", ".", "-exec", "rm", "{}", "+", "-ok", "ls", ";"), l("rm", "{}"), l("ls")}},
		{l("find", ".", "-exec", "echo", "+", ";"), [][]string{l("find", ".", "-exec", "echo", "+", ";"), l("echo", "+")}},
		{l("find", ".", "-okdir", "rm", "{}"), [][]string{l("find", ".", "-okdir", "rm", "{}"), l("rm", "{}")}},
		{l("find", ".", "-name", "-exec", "-print"), [][]string{l("find", ".", "-name", "-exec", "-print")}},
		{l("find", ".", "-exec", "sh", "-c", "rm -rf {}", ";"), [][]string{
			l("find", ".", "-exec", "sh", "-c", "rm -rf {}", ";"), l("sh", "-c", "rm -rf {}"), l("rm", "-rf", "{}")}},
		{l("find", ".", "-exec", "sudo", "sh", "-c", "mv '{}' {}.bak", ";"), [][]string{
			l("find", ".", "-exec", "sudo", "sh", "-c", "mv '{}' {}.bak", ";"), l("sudo", "sh", "-c", "mv '{}' {}.bak"),
			l("sh", "-c", "mv '{}' {}.bak"), l("mv", "{}", "{}.bak")}},
		// Outside find, {} is two literal braces.
		{l("sh", "-c", "rm {}"), [][]string{l("sh", "-c", "rm {}"), l("rm", "{}")}},

		// Nesting, outer first.
		{l("sudo", "timeout", "5", "bash", "-c", "nice rm -rf /"), [][]string{
			l("sudo", "timeout", "5", "bash", "-c", "nice rm -rf /"),
			l("timeout", "5", "bash", "-c", "nice rm -rf /"),
			l("bash", "-c", "nice rm -rf /"),
			l("nice", "rm", "-rf", "/"),
			l("rm", "-rf", "/")}},
		{l("bash", "-c", "sudo sh -c 'rm x' && env ls"), [][]string{
			l("bash", "-c", "sudo sh -c 'rm x' && env ls"),
			l("sudo", "sh", "-c", "rm x"),
			l("sh", "-c", "rm x"),
			l("rm", "x"),
			l("env", "ls"),
			l("ls")}},

		// Wrappers with nothing to run.
		{l("timeout", "5"), [][]string{l("timeout", "5")}},
		{l("env"), [][]string{l("env")}},
		{l("env", "FOO=1"), [][]string{l("env", "FOO=1")}},
		{l("sudo"), [][]string{l("sudo")}},
		{l("xargs"), [][]string{l("xargs")}},
		{l("nice"), [][]string{l("nice")}},
	}
	for _, tc := range cases {
		got := exposed(tc.argv)
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("exposed(%q)\n got %q\nwant %q", tc.argv, got, tc.want)
		}
	}
}

// TestExposedDepthLimit checks that unwrapping stops at maxUnwrapDepth
// levels below the stage, and that classification then asks.
func TestExposedDepthLimit(t *testing.T) {
	var argv []string
	for range 20 {
		argv = append(argv, "nice")
	}
	argv = append(argv, "rm")
	got := exposed(argv)
	if len(got) != maxUnwrapDepth+1 {
		t.Fatalf("exposed %d commands, want %d", len(got), maxUnwrapDepth+1)
	}
	for k, cmd := range got {
		if !slices.Equal(cmd, argv[k:]) {
			t.Fatalf("level %d = %q, want %q", k, cmd, argv[k:])
		}
	}
	if got := stripBenign(argv); !slices.Equal(got, argv[maxUnwrapDepth:]) {
		t.Errorf("stripBenign of %d nested wrappers = %q, want %q", len(argv)-1, got, argv[maxUnwrapDepth:])
	}
	if f := analyze(argv); f.Class != ShellComplex {
		t.Errorf("analyze of %d nested wrappers = %s, want shell-complex", len(argv)-1, f.Class)
	}
	if f := analyze(argv[20-maxUnwrapDepth:]); f.Class != WorkspaceMutating {
		t.Errorf("analyze of %d nested wrappers = %s, want workspace-mutating", maxUnwrapDepth, f.Class)
	}

	// Shell strings count towards the same depth. Quoting grows threefold
	// with each level, so a few shells carry a long run of wrappers.
	line := strings.Repeat("nice ", 20) + "rm x"
	for range 4 {
		line = "bash -c " + shellQuote(line)
	}
	nested := exposed([]string{"bash", "-c", line})
	if len(nested) != maxUnwrapDepth+1 {
		t.Errorf("nested shell strings exposed %d commands, want %d", len(nested), maxUnwrapDepth+1)
	}
	if last := nested[len(nested)-1]; !slices.Equal(last, append(slices.Repeat(l("nice"), 9), "rm", "x")) {
		t.Errorf("deepest exposed command = %q", last)
	}
	if f := analyze([]string{"bash", "-c", line}); f.Class != ShellComplex {
		t.Errorf("analyze of nested shell strings = %s, want shell-complex", f.Class)
	}
}

// shellQuote quotes s as one single-quoted shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestWrapperClass checks that a wrapper's class is at least its own and at
// least its command's.
func TestWrapperClass(t *testing.T) {
	cases := []struct {
		argv []string
		want Class
	}{
		{l("timeout", "5", "ls"), ReadOnly},
		{l("timeout", "5", "rm", "-rf", "x"), Dangerous},
		{l("timeout", "5"), Unknown},
		{l("time", "-o", "t", "ls"), WorkspaceMutating},
		{l("xargs", "ls"), Unknown},
		{l("xargs", "cat"), Unknown},
		{l("xargs", "rm"), Unknown},
		{l("xargs", "rm", "-rf"), Dangerous},
		{l("xargs"), Unknown},
		{l("xargs", "-0", "ls"), ShellComplex},
		{l("env", "ls"), ShellComplex},
		{l("env", "FOO=1"), Unknown},
		{l("env", "rm", "-rf", "x"), Dangerous},
		{l("env", "-S", "rm -rf x"), Dangerous},
		{l("command", "-v", "rm"), Unknown},
		{l("ionice", "-p", "1"), Unknown},
		{l("sudo", "ls"), Dangerous},
		{l("sudo", "-l"), Dangerous},
		{l("watch", "rm -rf x"), Dangerous},
		{l("watch", "echo $X"), ShellComplex},
		{l("flock", "l", "-c", "rm -rf x"), Dangerous},
		{l("busybox", "rm", "-rf", "x"), Dangerous},
		{l("strace", "-o", "|rm -rf x", "ls"), Dangerous},
		{l("bash", "-c", "ls"), ShellComplex},
		{l("bash", "-c", "sudo ls"), Dangerous},
		{l("bash", "-c", "git push --force"), Dangerous},
		{l("find", ".", "-exec", "sh", "-c", "rm -rf {}", ";"), Dangerous},
		{l("find", ".", "-exec", "bash", "-c", "echo {} > {}.txt", ";"), ShellComplex},
		{l("nice", "-n", "5", "python3", "-c", "x"), ShellComplex},
		{l("timeout", "5", "r\u200bm", "x"), Dangerous},
		{l("prlimit", "ls"), ShellComplex},
		{l("prlimit", "-p", "1"), Unknown},
		{l("unshare", "ls"), Dangerous},
		{l("nsenter", "-t", "1", "ls"), Dangerous},
		{l("chroot", "/srv"), Dangerous},
		{l("setpriv", "ls"), Dangerous},
		{l("runuser", "-u", "u", "ls"), Dangerous},
		{l("systemd-run", "ls"), Dangerous},
		{l("su", "-c", "ls"), Dangerous},
		{l("fakeroot", "ls"), ShellComplex},
		{l("eatmydata", "ls"), ShellComplex},
		{l("ssh-agent", "ls"), ShellComplex},
		{l("dbus-run-session", "ls"), ShellComplex},
		{l("firejail", "ls"), ShellComplex},
		{l("script", "-c", "ls"), ShellComplex},
		{l("script", "-c", "rm -rf x"), Dangerous},
		{l("catchsegv", "ls"), ShellComplex},
		{l("valgrind", "ls"), ShellComplex},
		{l("gdb", "--args", "ls"), ShellComplex},
		{l("gdb", "-batch", "-ex", "shell id"), ShellComplex},
		{l("parallel", "ls"), ShellComplex},
		{l("parallel", "rm", "-rf", ":::", "x"), Dangerous},
	}
	for _, tc := range cases {
		if f := analyze(tc.argv); f.Class != tc.want {
			t.Errorf("analyze(%q) = %s (%s), want %s", tc.argv, f.Class, f.Reason, tc.want)
		}
	}
}

func TestWrapperEnvSplitString(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"rm -rf x", l("rm", "-rf", "x")},
		{"  a\tb  ", l("a", "b")},
		{`'a b' "c d" e\_f`, l("a b", "c d", "e", "f")},
		{`"e\_f" 'g\_h'`, l("e f", `g\_h`)},
		{`\_a\_\_b\_`, l("a", "b")},
		{`rm\_-rf\_/`, l("rm", "-rf", "/")},
		{`"a\tb"`, l("a\tb")},
		{`a "b \" c"`, l("a", `b " c`)},
		{"a # b c", l("a")},
		{`a\cb c`, l("a")},
		{"a#b", l("a#b")},
		{"", nil},
	}
	for _, tc := range cases {
		if got := splitEnvString(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitEnvString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzExposed feeds arbitrary argvs, words separated by NUL, to the
// unwrapping and the class table: neither may panic, exposed starts with
// the stage itself and stays within the depth bound's reach, and
// stripBenign only ever drops a prefix.
func FuzzExposed(f *testing.F) {
	for _, seed := range []string{
		"ls\x00-l",
		"sudo\x00timeout\x005\x00bash\x00-c\x00nice rm -rf /",
		"env\x00-S\x00-S 'rm -rf x'",
		"find\x00.\x00-exec\x00sh\x00-c\x00rm {}\x00;",
		"flock\x00l\x00-c\x00cd /; rm x",
		"git\x00-c\x00x=y\x00push\x00-uf\x00origin\x00+main",
		"sed\x00-n\x00s/a/b/w out",
		"awk\x00BEGIN{system(\"x\")}",
		"xargs\x00-I\x00{}\x00sh\x00-c\x00echo {}",
		"perl\x00-0777\x00-pi\x00-e\x00s/a/b/\x00f",
		"curl\x00-O\x00https://e.com/a",
		"watch\x00-n\x001\x00rm x; ls",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		got := exposed(argv)
		if len(got) == 0 || !slices.Equal(got[0], argv) {
			t.Fatalf("exposed(%q) does not start with the stage", argv)
		}
		stripped := stripBenign(argv)
		if !slices.Equal(stripped, argv[len(argv)-len(stripped):]) {
			t.Fatalf("stripBenign(%q) = %q, not a suffix", argv, stripped)
		}
		if c := analyze(argv).Class; c < ReadOnly || c > Dangerous {
			t.Fatalf("analyze(%q) = %d", argv, c)
		}
		analyze(stripped)
	})
}

func TestStdinArgs(t *testing.T) {
	cases := []struct {
		argv []string
		want bool
	}{
		{l("xargs", "cat"), true},
		{l("xargs", "--", "cat"), true},
		{l("xargs"), true},
		{l("timeout", "5", "xargs", "cat"), true},
		{l("nice", "-n", "1", "nohup", "xargs", "stdbuf", "-oL", "cat"), true},
		{l("/usr/bin/xargs", "cat"), true},
		{l("xargs", "-0", "cat"), false},
		{l("nice", "xargs", "-n1", "cat"), false},
		{l("cat", "xargs"), false},
		{l("env", "xargs", "cat"), false},
		{l("time", "-o", "t", "xargs", "cat"), false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := stdinArgs(tc.argv); got != tc.want {
			t.Errorf("stdinArgs(%q) = %v, want %v", tc.argv, got, tc.want)
		}
		if got := stripBenign(tc.argv); tc.want && len(got) > 0 && path.Base(got[0]) == "xargs" {
			t.Errorf("stripBenign(%q) = %q keeps the bare xargs", tc.argv, got)
		}
	}
}

func TestChdirOf(t *testing.T) {
	cases := []struct {
		argv  []string
		want  string
		moved bool
	}{
		{l("env", "-C", "/tmp", "cat", "x"), "/tmp", true},
		{l("env", "-C/tmp", "cat", "x"), "/tmp", true},
		{l("env", "--chdir=sub", "cat"), "sub", true},
		{l("env", "--chdir", "a", "-C", "b", "cat"), "b", true},
		{l("env", "-S", "-C /srv rm x"), "/srv", true},
		{l("env", "-i", "FOO=1", "cat"), "", false},
		{l("sudo", "-D", "/var", "cat"), "/var", true},
		{l("sudo", "--chdir=d", "env", "--chdir=e", "cat"), "d/e", true},
		{l("sudo", "-u", "root", "-D", "~", "cat"), "~", true},
		{l("timeout", "5", "env", "-C", "x", "cat"), "x", true},
		{l("go", "-C", "sub", "build"), "sub", true},
		{l("go", "-C=sub", "build"), "sub", true},
		{l("go", "build", "-C", "sub"), "", false},
		{l("make", "-C", "a", "-Cb", "--directory=c", "all"), "a/b/c", true},
		{l("make", "-C", "a", "-C", "/abs"), "/abs", true},
		{l("make", "all", "--directory", "a"), "a", true},
		{l("gmake", "-j", "-C", "a"), "a", true},
		{l("env", "-C", "/srv", "make", "-C", "sub"), "/srv/sub", true},
		{l("nice", "make", "-C", "x"), "x", true},
		{l("make"), "", false},
		{l("ls", "-C", "x"), "", false},
		{l("cd", "x"), "", false},
		{nil, "", false},
	}
	for _, tc := range cases {
		got, moved := chdirOf(tc.argv)
		if got != tc.want || moved != tc.moved {
			t.Errorf("chdirOf(%q) = %q, %v; want %q, %v", tc.argv, got, moved, tc.want, tc.moved)
		}
	}
}
