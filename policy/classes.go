package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// This file holds the class table: for each program rein knows, the class
// its stages have and which of its arguments are paths. The table is data;
// the per-program refinements below it read only as much of an argv as the
// decision needs.

// classRow is one row of the class table.
type classRow struct {
	// Names are the program basenames the row covers; a name holding * is
	// a glob over basenames (mkfs*, python*).
	Names []string
	// Class and Reason apply when Refine leaves them as they are.
	Class  Class
	Reason string
	// Refine reads the arguments: it records paths and inline programs, and
	// may change the class.
	Refine func(*classCall)
	// Opts is the row's option allowlist: every option of a read-only
	// program is listed with what its value is, and one not listed makes
	// the stage unknown (options.go). A row whose refinement parses the
	// words itself checks them there instead.
	Opts *argSpec
	// Examples are argvs that classify as Class; the tests run every one.
	Examples [][]string
}

// classCall is one stage being classified by its row.
type classCall struct {
	f     *stageFacts
	name  string   // basename of argv[0]
	args  []string // argv[1:]
	depth int      // how many wrappers, shell strings or find actions deep
	// perFile is set inside a find action, whose {} stands for each file.
	perFile bool
}

// set gives the stage a class, whatever it had.
func (c *classCall) set(class Class, reason string) {
	c.f.Class, c.f.Reason = class, reason
}

// raise gives the stage a class if it is stronger than the one it has, so
// that refinements can be applied in any order.
func (c *classCall) raise(class Class, reason string) {
	if class > c.f.Class {
		c.set(class, reason)
	}
}

// reads records paths the program reads; "-" is standard input.
func (c *classCall) reads(paths ...string) {
	for _, p := range paths {
		if p != "" && p != "-" && !slices.Contains(c.f.Reads, p) {
			c.f.Reads = append(c.f.Reads, p)
		}
	}
}

func (c *classCall) writes(paths ...string) {
	for _, p := range paths {
		if p != "" && !slices.Contains(c.f.Writes, p) {
			c.f.Writes = append(c.f.Writes, p)
		}
	}
}

func (c *classCall) deletes(paths ...string) {
	for _, p := range paths {
		if p != "" {
			c.f.Deletes = append(c.f.Deletes, p)
		}
	}
}

func (c *classCall) outside(paths ...string) {
	for _, p := range paths {
		if p != "" {
			c.f.OutsideDangerous = append(c.f.OutsideDangerous, p)
		}
	}
}

func (c *classCall) inline(code ...string) {
	c.f.Inline = append(c.f.Inline, code...)
}

// analyze classifies one stage's argv, whose benign wrappers the caller has
// already stripped, and returns the paths and program text it names.
func analyze(argv []string) stageFacts {
	return analyzeAt(argv, 0, false)
}

// analyzeAt classifies a command found depth levels inside a stage; perFile
// says it runs inside a find action, where {} stands for each file.
func analyzeAt(argv []string, depth int, perFile bool) stageFacts {
	if len(argv) == 0 || argv[0] == "" {
		return stageFacts{Class: Unknown, Reason: "no program to run"}
	}
	if hiddenBytes(argv[0]) {
		return stageFacts{Class: Dangerous, Reason: "the program name has non-ASCII, control or invisible characters"}
	}
	name := path.Base(argv[0])
	row := classRowFor(name)
	if row == nil {
		return stageFacts{Class: Unknown, Reason: fmt.Sprintf("%s is not in the class table", name)}
	}
	f := stageFacts{Class: row.Class, Reason: row.Reason}
	c := &classCall{f: &f, name: name, args: argv[1:], depth: depth, perFile: perFile}
	if row.Refine != nil {
		row.Refine(c)
	}
	if row.Opts != nil {
		checkOptions(c, row.Opts)
	}
	return f
}

// hiddenBytes reports whether a program name holds anything but printable
// ASCII. A look-alike (ｒｍ), a zero-width space (r\u200bm) or a NUL makes
// the name differ from what a reader, or a rule, sees.
func hiddenBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f {
			return true
		}
	}
	return false
}

// classRowsByName indexes the rows of classTable whose names are literal;
// classRowGlobs holds the others, tried in table order. They are built in
// init because the table's refinements classify inner commands through
// them, which an initializer expression could not refer to.
var (
	classRowsByName map[string]*classRow
	classRowGlobs   []*classRow
)

func init() {
	classRowsByName = make(map[string]*classRow)
	for i := range classTable {
		row := &classTable[i]
		for _, n := range row.Names {
			if strings.Contains(n, "*") {
				classRowGlobs = append(classRowGlobs, row)
				continue
			}
			classRowsByName[n] = row
		}
	}
}

func classRowFor(name string) *classRow {
	if row, ok := classRowsByName[name]; ok {
		return row
	}
	for _, row := range classRowGlobs {
		for _, n := range row.Names {
			if ok, _ := path.Match(n, name); ok && strings.Contains(n, "*") {
				return row
			}
		}
	}
	return nil
}

// classTable is the class table of the decision spec. A program in no row
// is Unknown.
var classTable = []classRow{
	// Read-only programs without path arguments.
	// echo, printf, true and false take no option that opens anything:
	// their words are printed or ignored.
	{
		Names:    []string{"echo", "printf", "true", "false"},
		Class:    ReadOnly,
		Reason:   "prints or inspects without writing",
		Opts:     &wordsOnly,
		Examples: [][]string{{"echo", "hi"}, {"printf", "%s\n", "x"}, {"true"}, {"false"}},
	},
	{Names: []string{"pwd"}, Class: ReadOnly, Reason: "prints the working directory", Opts: &pwdArgs,
		Examples: [][]string{{"pwd"}, {"pwd", "-P"}}},
	{Names: []string{"which"}, Class: ReadOnly, Reason: "finds programs on the PATH", Opts: &whichArgs,
		Examples: [][]string{{"which", "go"}, {"which", "-a", "go"}}},
	{Names: []string{"tr"}, Class: ReadOnly, Reason: "translates characters", Opts: &trArgs,
		Examples: [][]string{{"tr", "a-z", "A-Z"}, {"tr", "-d", "\r"}}},
	{Names: []string{"ls"}, Class: ReadOnly, Reason: "lists directories", Refine: readOperands(&lsArgs), Opts: &lsArgs,
		Examples: [][]string{{"ls", "-la", "src"}, {"ls"}, {"ls", "--color=auto", "-1"}}},

	// Readers: every operand is a file they read.
	{Names: []string{"cat"}, Class: ReadOnly, Reason: "reads files", Refine: readOperands(&catArgs), Opts: &catArgs,
		Examples: [][]string{{"cat", "-n", "go.mod"}}},
	{Names: []string{"head"}, Class: ReadOnly, Reason: "reads files", Refine: readOperands(&headArgs), Opts: &headArgs,
		Examples: [][]string{{"head", "-n", "5", "go.mod"}}},
	{Names: []string{"tail"}, Class: ReadOnly, Reason: "reads files", Refine: readOperands(&tailArgs), Opts: &tailArgs,
		Examples: [][]string{{"tail", "-f", "log.txt"}}},
	{Names: []string{"less"}, Class: ReadOnly, Reason: "pages through files", Refine: refineLess, Opts: &lessArgs,
		Examples: [][]string{{"less", "README.md"}}},
	{Names: []string{"more"}, Class: ReadOnly, Reason: "pages through files", Refine: refineMore, Opts: &moreArgs,
		Examples: [][]string{{"more", "+10", "README.md"}}},
	{Names: []string{"wc"}, Class: ReadOnly, Reason: "counts lines, words and bytes", Refine: refineWc, Opts: &wcArgs,
		Examples: [][]string{{"wc", "-l", "main.go"}}},
	{Names: []string{"grep", "egrep", "fgrep"}, Class: ReadOnly, Reason: "searches files", Refine: refineGrep, Opts: &grepArgs,
		Examples: [][]string{{"grep", "-rn", "TODO", "."}, {"egrep", "a|b", "f"}, {"fgrep", "x"}}},
	{Names: []string{"rg"}, Class: ReadOnly, Reason: "searches files", Refine: refineRg, Opts: &rgArgs,
		Examples: [][]string{{"rg", "-n", "TODO", "src"}}},
	{Names: []string{"sort"}, Class: ReadOnly, Reason: "sorts lines", Refine: refineSort, Opts: &sortArgs,
		Examples: [][]string{{"sort", "-k", "2", "data.txt"}}},
	{Names: []string{"diff"}, Class: ReadOnly, Reason: "compares files", Refine: refineDiff, Opts: &diffArgs,
		Examples: [][]string{{"diff", "-u", "a", "b"}}},
	{Names: []string{"cmp"}, Class: ReadOnly, Reason: "compares files", Refine: refineCmp, Opts: &cmpArgs,
		Examples: [][]string{{"cmp", "a", "b"}}},
	{Names: []string{"stat"}, Class: ReadOnly, Reason: "prints file status", Refine: readOperands(&statArgs), Opts: &statArgs,
		Examples: [][]string{{"stat", "-c", "%s", "go.mod"}}},
	{Names: []string{"file"}, Class: ReadOnly, Reason: "guesses file types", Refine: refineFile, Opts: &fileArgs,
		Examples: [][]string{{"file", "bin/rein"}}},
	{Names: []string{"strings"}, Class: ReadOnly, Reason: "prints printable strings of files", Refine: readOperands(&stringsArgs), Opts: &stringsArgs,
		Examples: [][]string{{"strings", "-n", "8", "bin/rein"}}},
	{Names: []string{"od"}, Class: ReadOnly, Reason: "dumps files", Refine: readOperands(&odArgs), Opts: &odArgs,
		Examples: [][]string{{"od", "-A", "x", "-t", "x1z", "f"}}},
	{Names: []string{"xxd"}, Class: ReadOnly, Reason: "dumps files", Refine: refineXxd,
		Examples: [][]string{{"xxd", "-l", "64", "f"}}},
	{Names: []string{"base64"}, Class: ReadOnly, Reason: "encodes files", Refine: readOperands(&base64Args), Opts: &base64Args,
		Examples: [][]string{{"base64", "-w", "0", "f"}}},
	{Names: []string{"sha*sum", "md5sum"}, Class: ReadOnly, Reason: "checksums files", Refine: readOperands(&sumArgs), Opts: &sumArgs,
		Examples: [][]string{{"sha256sum", "f"}, {"sha1sum", "f"}, {"md5sum", "f"}}},
	{Names: []string{"cut"}, Class: ReadOnly, Reason: "prints fields of lines", Refine: readOperands(&cutArgs), Opts: &cutArgs,
		Examples: [][]string{{"cut", "-d", ":", "-f", "1", "users.txt"}}},
	{Names: []string{"uniq"}, Class: ReadOnly, Reason: "filters repeated lines", Refine: refineUniq, Opts: &uniqArgs,
		Examples: [][]string{{"uniq", "-c", "sorted.txt"}}},
	{Names: []string{"jq"}, Class: ReadOnly, Reason: "queries JSON", Refine: refineJq,
		Examples: [][]string{{"jq", ".name", "package.json"}}},

	// Programs that carry a program of their own.
	{Names: []string{"sed"}, Class: ReadOnly, Reason: "edits a stream", Refine: refineSed, Opts: &sedArgs,
		Examples: [][]string{{"sed", "-n", "1,5p", "f"}, {"sed", "s/a/b/g", "f"}}},
	{Names: []string{"awk", "gawk", "mawk", "nawk"}, Class: ReadOnly, Reason: "processes text", Refine: refineAwk, Opts: &awkArgs,
		Examples: [][]string{{"awk", "{print $1}", "f"}, {"gawk", "-F", ":", "{print $2}", "f"}}},
	{Names: []string{"find"}, Class: ReadOnly, Reason: "lists files", Refine: refineFind,
		Examples: [][]string{{"find", ".", "-name", "*.go", "-type", "f"}}},

	// Writers.
	{Names: []string{"cp"}, Class: WorkspaceMutating, Reason: "copies files", Refine: refineCp,
		Examples: [][]string{{"cp", "a", "b"}, {"cp", "-t", "dir", "a"}}},
	{Names: []string{"mv"}, Class: WorkspaceMutating, Reason: "moves files", Refine: refineMv,
		Examples: [][]string{{"mv", "a", "b"}}},
	{Names: []string{"install"}, Class: WorkspaceMutating, Reason: "copies files into place", Refine: refineInstall,
		Examples: [][]string{{"install", "-m", "0755", "bin/rein", "out/rein"}}},
	{Names: []string{"tee"}, Class: WorkspaceMutating, Reason: "writes files", Refine: writeOperands(&teeArgs),
		Examples: [][]string{{"tee", "-a", "log.txt"}}},
	{Names: []string{"touch"}, Class: WorkspaceMutating, Reason: "creates files", Refine: refineTouch,
		Examples: [][]string{{"touch", "a"}}},
	{Names: []string{"mkdir"}, Class: WorkspaceMutating, Reason: "creates directories", Refine: writeOperands(&mkdirArgs),
		Examples: [][]string{{"mkdir", "-p", "a/b"}}},
	{Names: []string{"truncate"}, Class: WorkspaceMutating, Reason: "resizes files", Refine: refineTruncate,
		Examples: [][]string{{"truncate", "-s", "0", "log.txt"}}},
	{Names: []string{"rm"}, Class: WorkspaceMutating, Reason: "removes files", Refine: refineRm,
		Examples: [][]string{{"rm", "a"}, {"rm", "-f", "a", "b"}}},
	{Names: []string{"rmdir"}, Class: WorkspaceMutating, Reason: "removes empty directories", Refine: deleteOperands(&rmdirArgs),
		Examples: [][]string{{"rmdir", "a"}}},
	{Names: []string{"unlink"}, Class: WorkspaceMutating, Reason: "removes a file", Refine: deleteOperands(&unlinkArgs),
		Examples: [][]string{{"unlink", "a"}}},
	{Names: []string{"shred"}, Class: WorkspaceMutating, Reason: "overwrites files", Refine: refineShred,
		Examples: [][]string{{"shred", "-u", "secret.txt"}}},
	{Names: []string{"ln"}, Class: WorkspaceMutating, Reason: "creates links", Refine: refineLn,
		Examples: [][]string{{"ln", "-s", "target", "link"}}},
	{Names: []string{"chmod"}, Class: WorkspaceMutating, Reason: "changes file modes", Refine: refineChmod,
		Examples: [][]string{{"chmod", "+x", "run.sh"}}},
	{Names: []string{"chown", "chgrp"}, Class: WorkspaceMutating, Reason: "changes file owners", Refine: refineChown,
		Examples: [][]string{{"chown", "u:g", "f"}, {"chgrp", "g", "f"}}},

	// Builds, tests and package managers.
	{Names: []string{"git", "git-*"}, Class: Unknown, Reason: "git", Refine: refineGit,
		Examples: [][]string{{"git", "branch"}, {"git", "remote", "-v"}}},
	{Names: []string{"go"}, Class: Unknown, Reason: "go", Refine: refineGo,
		Examples: [][]string{{"go", "tool", "pprof"}}},
	{Names: []string{"make", "gmake", "pytest", "cargo"}, Class: WorkspaceMutating, Reason: "builds or tests the workspace",
		Examples: [][]string{{"make"}, {"make", "-j4", "test"}, {"pytest", "-q"}, {"cargo", "build"}}},
	{Names: []string{"npm"}, Class: Unknown, Reason: "npm", Refine: refineNpm,
		Examples: [][]string{{"npm", "view", "react"}}},
	{Names: []string{"pnpm", "yarn"}, Class: Unknown, Reason: "node package manager", Refine: refinePnpm,
		Examples: [][]string{{"pnpm", "why", "react"}, {"yarn", "info", "react"}}},
	{Names: []string{"npx", "bunx"}, Class: ShellComplex, Reason: "runs a package fetched by name",
		Examples: [][]string{{"npx", "prettier", "."}, {"bunx", "x"}}},

	// Interpreters.
	{Names: []string{"python*"}, Class: Unknown, Reason: "runs a script", Refine: refineInterpreter(&pythonInterp),
		Examples: [][]string{{"python3", "script.py"}, {"python", "x.py"}, {"python3.12", "x.py"}}},
	{Names: []string{"node"}, Class: Unknown, Reason: "runs a script", Refine: refineNode,
		Examples: [][]string{{"node", "index.js"}}},
	{Names: []string{"perl"}, Class: Unknown, Reason: "runs a script", Refine: refineInterpreter(&perlInterp),
		Examples: [][]string{{"perl", "x.pl"}}},
	{Names: []string{"ruby"}, Class: Unknown, Reason: "runs a script", Refine: refineInterpreter(&rubyInterp),
		Examples: [][]string{{"ruby", "x.rb"}}},
	{Names: []string{"php"}, Class: Unknown, Reason: "runs a script", Refine: refineInterpreter(&phpInterp),
		Examples: [][]string{{"php", "x.php"}}},
	{Names: shellPrograms, Class: Unknown, Reason: "runs a script", Refine: refineShell,
		Examples: [][]string{{"bash", "script.sh"}, {"sh", "-e", "x.sh"}, {"zsh", "x"}, {"dash", "x"}, {"ksh", "x"}}},

	// Network clients.
	{Names: []string{"curl"}, Class: WorkspaceMutating, Reason: "a network client", Refine: refineCurl,
		Examples: [][]string{{"curl", "-fsSL", "https://example.com"}}},
	{Names: []string{"wget"}, Class: WorkspaceMutating, Reason: "a network client", Refine: refineWget,
		Examples: [][]string{{"wget", "-q", "https://example.com/a.tar.gz"}}},

	// Wrappers: they run another command, which is classified too.
	{Names: []string{"timeout"}, Class: ReadOnly, Reason: "runs its command unchanged", Refine: refineWrapper, Opts: &timeoutArgs,
		Examples: [][]string{{"timeout", "5", "ls"}, {"timeout", "-k", "1", "5", "ls"}}},
	{Names: []string{"time"}, Class: ReadOnly, Reason: "runs its command unchanged", Refine: refineWrapper, Opts: &timeArgs,
		Examples: [][]string{{"time", "ls"}, {"time", "-p", "ls"}}},
	{Names: []string{"nice"}, Class: ReadOnly, Reason: "runs its command unchanged", Refine: refineWrapper, Opts: &niceArgs,
		Examples: [][]string{{"nice", "-n", "5", "ls"}, {"nice", "-10", "ls"}}},
	{Names: []string{"nohup"}, Class: ReadOnly, Reason: "runs its command unchanged", Refine: refineWrapper, Opts: &nohupArgs,
		Examples: [][]string{{"nohup", "ls"}}},
	{Names: []string{"stdbuf"}, Class: ReadOnly, Reason: "runs its command unchanged", Refine: refineWrapper, Opts: &stdbufArgs,
		Examples: [][]string{{"stdbuf", "-oL", "ls"}}},
	{Names: []string{"xargs"}, Class: ShellComplex, Reason: "xargs with options builds commands the matcher cannot see", Refine: refineWrapper,
		Examples: [][]string{{"xargs", "-0", "ls"}, {"xargs", "-n", "1", "echo"}}},
	{Names: []string{"ionice", "chrt", "taskset", "env", "command", "builtin", "exec", "watch", "setsid",
		"flock", "unbuffer", "busybox", "strace", "ltrace", "prlimit", "fakeroot", "eatmydata", "ssh-agent",
		"dbus-run-session", "firejail", "script", "catchsegv", "valgrind", "gdb", "parallel"},
		Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"env", "FOO=1", "ls"}, {"ionice", "-c", "3", "ls"}, {"chrt", "-f", "10", "ls"},
			{"taskset", "0x1", "ls"}, {"command", "ls"}, {"builtin", "echo"}, {"exec", "ls"}, {"watch", "ls"},
			{"setsid", "ls"}, {"flock", "lock", "ls"}, {"unbuffer", "ls"}, {"busybox", "ls"}, {"strace", "ls"},
			{"ltrace", "ls"}, {"prlimit", "--nofile=64", "ls"}, {"fakeroot", "ls"}, {"eatmydata", "ls"},
			{"ssh-agent", "ls"}, {"dbus-run-session", "ls"}, {"firejail", "--private", "ls"},
			{"script", "-q", "-c", "ls", "/dev/null"}, {"catchsegv", "ls"}, {"valgrind", "--tool=memcheck", "ls"},
			{"gdb", "-batch", "-ex", "run", "--args", "ls"}, {"parallel", "ls", ":::", "a", "b"}}},

	// Dangerous: escalation, remote access, raw devices.
	{Names: []string{"sudo", "doas"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"sudo", "ls"}, {"doas", "ls"}}},
	{Names: []string{"su", "pkexec"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"su", "-"}, {"pkexec", "ls"}}},
	{Names: []string{"unshare", "nsenter", "chroot", "setpriv", "runuser", "systemd-run"},
		Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"unshare", "-r", "ls"}, {"nsenter", "-t", "1", "-m", "ls"}, {"chroot", "/srv/jail", "ls"},
			{"setpriv", "--reuid=1000", "ls"}, {"runuser", "-u", "nobody", "ls"}, {"systemd-run", "--user", "ls"}}},
	{Names: []string{"ssh", "scp", "sftp", "nc", "ncat", "netcat", "socat", "rsync", "telnet"},
		Class: Dangerous, Reason: "opens a connection that leaves the machine", Refine: markNetwork,
		Examples: [][]string{{"ssh", "host"}, {"scp", "a", "host:b"}, {"sftp", "host"}, {"nc", "host", "80"},
			{"ncat", "host", "80"}, {"socat", "-", "TCP:host:80"}, {"rsync", "-a", "a", "b"}}},
	{Names: []string{"dd"}, Class: Dangerous, Reason: "dd copies raw blocks", Refine: refineDd,
		Examples: [][]string{{"dd", "if=a", "of=b"}}},
	{Names: []string{"mkfs*"}, Class: Dangerous, Reason: "mkfs formats a filesystem", Refine: refineMkfs,
		Examples: [][]string{{"mkfs", "/dev/sdb1"}, {"mkfs.ext4", "/dev/sdb1"}}},
	{Names: []string{"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "gdisk", "parted", "blkdiscard",
		"shutdown", "reboot", "poweroff", "halt"},
		Class: Dangerous, Reason: "changes disks or the running system",
		Examples: [][]string{{"wipefs", "-a", "/dev/sdb"}, {"reboot"}}},
}

// readOperands returns a refinement that records every operand as a read.
func readOperands(spec *argSpec) func(*classCall) {
	return func(c *classCall) { c.reads(spec.scan(c.args).operands()...) }
}

// writeOperands returns a refinement that records every operand as a write.
func writeOperands(spec *argSpec) func(*classCall) {
	return func(c *classCall) { c.writes(spec.scan(c.args).operands()...) }
}

// deleteOperands returns a refinement that records every operand as a
// deletion.
func deleteOperands(spec *argSpec) func(*classCall) {
	return func(c *classCall) { c.deletes(spec.scan(c.args).operands()...) }
}

func markNetwork(c *classCall) { c.f.Network = true }

// Option layouts of the programs whose operands are paths. Only options
// that take a value matter for telling values from paths; an option the
// layout does not list is read as a flag.
var (
	catArgs  = argSpec{long: longs("show-all", "number-nonblank", "show-ends", "number", "squeeze-blank", "show-tabs", "show-nonprinting")}
	headArgs = argSpec{values: "cn", long: longs("bytes=", "lines=", "quiet", "silent", "verbose", "zero-terminated")}
	tailArgs = argSpec{values: "cns", long: longs("bytes=", "lines=", "follow?", "retry", "pid=", "quiet", "silent",
		"sleep-interval=", "max-unchanged-stats=", "verbose", "zero-terminated")}
	wcArgs   = argSpec{long: longs("bytes", "chars", "lines", "files0-from=", "max-line-length", "words", "total=")}
	statArgs = argSpec{values: "c", long: longs("dereference", "file-system", "format=", "printf=", "terse", "cached=")}
	fileArgs = argSpec{values: "eFfmP", long: longs("brief", "checking-printout", "compile", "exclude=", "exclude-quiet=",
		"extension", "files-from=", "separator=", "mime", "mime-type", "mime-encoding", "keep-going", "list",
		"dereference", "no-dereference", "magic-file=", "no-buffer", "no-pad", "preserve-date", "parameter=",
		"raw", "special-files", "uncompress", "uncompress-noreport", "print0")}
	stringsArgs = argSpec{values: "nteTsU", long: longs("all", "data", "print-file-name", "bytes=", "radix=",
		"encoding=", "target=", "include-all-whitespace", "output-separator=", "unicode=")}
	odArgs = argSpec{values: "AjNSt", optional: "w", long: longs("address-radix=", "endian=", "skip-bytes=",
		"read-bytes=", "strings?", "format=", "output-duplicates", "width?", "traditional")}
	base64Args = argSpec{values: "w", long: longs("decode", "ignore-garbage", "wrap=")}
	sumArgs    = argSpec{long: longs("binary", "check", "tag", "text", "zero", "ignore-missing", "quiet", "status", "strict", "warn")}
	cutArgs    = argSpec{values: "bcdf", long: longs("bytes=", "characters=", "delimiter=", "fields=", "complement",
		"only-delimited", "output-delimiter=", "zero-terminated")}
	uniqArgs = argSpec{values: "fsw", long: longs("count", "repeated", "all-repeated?", "skip-fields=", "skip-chars=",
		"check-chars=", "group?", "ignore-case", "unique", "zero-terminated")}
	teeArgs   = argSpec{long: longs("append", "ignore-interrupts", "output-error?")}
	mkdirArgs = argSpec{values: "m", optional: "Z", long: longs("mode=", "parents", "verbose", "context?")}
	rmdirArgs = argSpec{long: longs("ignore-fail-on-non-empty", "parents", "verbose")}
	// unlink takes exactly one operand and no options but --help and
	// --version.
	unlinkArgs = argSpec{long: longs("help", "version")}
)

func refineWc(c *classCall) {
	ws := wcArgs.scan(c.args)
	filesFrom(c, ws.values("files0-from"))
	c.reads(ws.operands()...)
}

// filesFrom records the list files of --files0-from. The files named in a
// list are read too, and rein cannot see them: they come from a file's
// contents, or from standard input when the list is "-".
func filesFrom(c *classCall, lists []string) {
	if len(lists) == 0 {
		return
	}
	c.reads(lists...)
	c.raise(Unknown, c.name+" --files0-from reads files named in a list rein cannot see")
}

func refineFile(c *classCall) {
	ws := fileArgs.scan(c.args)
	for _, m := range ws.values("m", "magic-file") {
		c.reads(strings.Split(m, ":")...)
	}
	c.reads(ws.values("f", "files-from")...)
	c.reads(ws.operands()...)
	if ws.has("C", "compile") {
		c.raise(WorkspaceMutating, "file -C writes a compiled magic file")
	}
}

var lessArgs = argSpec{values: "bhjkoOpPtTxyzD#", long: longs("log-file=", "LOG-FILE=", "lesskey-file=", "tag=",
	"tag-file=", "pattern=", "prompt=", "tabs=", "window=", "max-back-scroll=", "max-forw-scroll=", "buffers=",
	"jump-target=", "shift=", "color=", "lesskey-src=", "rscroll=", "use-color", "quit-if-one-screen", "chop-long-lines",
	"RAW-CONTROL-CHARS", "raw-control-chars", "ignore-case", "IGNORE-CASE", "LINE-NUMBERS", "line-numbers", "quiet",
	"silent", "no-init", "squeeze-blank-lines", "mouse", "wheel-lines=", "header=", "incsearch", "status-column")}

// refineLess treats +cmd operands as the commands they are: less runs them
// on every file, and ! and | there start other programs.
func refineLess(c *classCall) {
	ws := lessArgs.scan(c.args)
	c.reads(ws.values("k", "lesskey-file", "lesskey-src", "T", "tag-file")...)
	if logs := ws.values("o", "O", "log-file", "LOG-FILE"); len(logs) > 0 {
		c.writes(logs...)
		c.raise(WorkspaceMutating, "less -o copies its input to a log file")
	}
	for _, op := range ws.operands() {
		if strings.HasPrefix(op, "+") {
			if strings.ContainsAny(op, "!|") {
				c.raise(ShellComplex, "less runs a command given with +")
			}
			continue
		}
		c.reads(op)
	}
}

var moreArgs = argSpec{values: "n", long: longs("lines=", "silent", "logical", "no-pause", "print-over", "clean-print",
	"squeeze", "plain", "exit-on-eof")}

func refineMore(c *classCall) {
	for _, op := range moreArgs.scan(c.args).operands() {
		if !strings.HasPrefix(op, "+") {
			c.reads(op)
		}
	}
}

var grepArgs = argSpec{values: "ABCDdefm", long: longs("after-context=", "before-context=", "context=", "regexp=",
	"file=", "max-count=", "label=", "binary-files=", "directories=", "devices=", "include=", "exclude=",
	"exclude-from=", "exclude-dir=", "color?", "colour?", "extended-regexp", "fixed-strings", "basic-regexp",
	"perl-regexp", "ignore-case", "no-ignore-case", "word-regexp", "line-regexp", "null-data", "no-messages",
	"invert-match", "version", "help", "byte-offset", "line-number", "no-line-number", "line-buffered",
	"with-filename", "no-filename", "only-matching", "quiet", "silent", "text", "recursive",
	"dereference-recursive", "files-without-match", "files-with-matches", "count", "initial-tab", "null", "binary")}

// refineGrep skips the pattern: the first operand is a pattern unless one
// was given with -e or -f.
func refineGrep(c *classCall) {
	ws := grepArgs.scan(c.args)
	files := ws.values("f", "file")
	c.reads(files...)
	c.reads(ws.values("exclude-from")...)
	ops := ws.operands()
	if !ws.has("e", "regexp") && len(files) == 0 && len(ops) > 0 {
		ops = ops[1:]
	}
	c.reads(ops...)
}

var rgArgs = argSpec{values: "ABCEefgjMmrTtd", long: longs("after-context=", "before-context=", "context=",
	"color=", "colors=", "context-separator=", "dfa-size-limit=", "encoding=", "engine=", "field-context-separator=",
	"field-match-separator=", "file=", "glob=", "hostname-bin=", "hyperlink-format=", "iglob=", "ignore-file=",
	"max-columns=", "max-count=", "max-depth=", "maxdepth=", "max-filesize=", "path-separator=", "pre=", "pre-glob=",
	"regex-size-limit=", "regexp=", "replace=", "sort=", "sortr=", "threads=", "type=", "type-add=", "type-clear=",
	"type-not=", "generate=", "files", "type-list", "help", "version", "pcre2-version", "count", "count-matches",
	"files-with-matches", "files-without-match", "fixed-strings", "hidden", "ignore-case", "smart-case",
	"case-sensitive", "invert-match", "json", "line-number", "no-ignore", "null", "only-matching", "quiet",
	"search-zip", "text", "unrestricted", "vimgrep", "word-regexp", "line-regexp", "follow", "multiline",
	"pcre2", "no-filename", "with-filename", "heading", "no-heading", "stats", "trim", "passthru")}

// refineRg is like grep, and also catches --pre and --hostname-bin: both
// name a program rg runs.
func refineRg(c *classCall) {
	ws := rgArgs.scan(c.args)
	if ws.has("pre") {
		c.raise(ShellComplex, "rg --pre runs a program on every file")
	}
	if ws.has("hostname-bin") {
		c.raise(ShellComplex, "rg --hostname-bin runs a program")
	}
	files := ws.values("f", "file")
	c.reads(files...)
	c.reads(ws.values("ignore-file")...)
	ops := ws.operands()
	if !ws.has("e", "regexp", "files", "type-list") && len(files) == 0 && len(ops) > 0 {
		ops = ops[1:]
	}
	c.reads(ops...)
}

var sortArgs = argSpec{values: "kotTS", long: longs("check?", "compress-program=", "debug", "files0-from=",
	"field-separator=", "key=", "output=", "random-source=", "buffer-size=", "temporary-directory=", "parallel=",
	"batch-size=", "sort=", "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort",
	"ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "reverse",
	"version-sort", "merge", "stable", "unique", "zero-terminated")}

func refineSort(c *classCall) {
	ws := sortArgs.scan(c.args)
	if out := ws.values("o", "output"); len(out) > 0 {
		c.writes(out...)
		c.raise(WorkspaceMutating, "sort -o writes a file")
	}
	if ws.has("compress-program") {
		c.raise(ShellComplex, "sort --compress-program runs a program")
	}
	filesFrom(c, ws.values("files0-from"))
	c.reads(ws.values("random-source")...)
	c.reads(ws.operands()...)
}

var diffArgs = argSpec{values: "CDFILSUWXx", long: longs("normal", "brief", "report-identical-files", "context?",
	"unified?", "ed", "rcs", "side-by-side", "width=", "left-column", "suppress-common-lines", "show-c-function",
	"show-function-line=", "label=", "expand-tabs", "initial-tab", "tabsize=", "suppress-blank-empty", "paginate",
	"new-file", "unidirectional-new-file", "ignore-case", "ignore-tab-expansion", "ignore-trailing-space",
	"ignore-space-change", "ignore-all-space", "ignore-blank-lines", "ignore-matching-lines=", "text",
	"strip-trailing-cr", "recursive", "no-dereference", "starting-file=", "exclude=", "exclude-from=",
	"from-file=", "to-file=", "ignore-file-name-case", "no-ignore-file-name-case", "minimal", "horizon-lines=",
	"speed-large-files", "color?", "palette=", "line-format=", "old-line-format=", "new-line-format=",
	"unchanged-line-format=", "old-group-format=", "new-group-format=", "unchanged-group-format=",
	"changed-group-format=", "ifdef=", "GTYPE-group-format=", "LTYPE-line-format=", "help", "version")}

// refineDiff records compared files; -x is a name pattern and -S a file
// name to start from, neither is read.
func refineDiff(c *classCall) {
	ws := diffArgs.scan(c.args)
	c.reads(ws.values("X", "exclude-from", "from-file", "to-file")...)
	c.reads(ws.operands()...)
}

var cmpArgs = argSpec{values: "in", long: longs("print-bytes", "ignore-initial=", "verbose", "bytes=", "quiet", "silent")}

// refineCmp reads the first two operands; later ones are byte offsets.
func refineCmp(c *classCall) {
	ops := cmpArgs.scan(c.args).operands()
	if len(ops) > 2 {
		ops = ops[:2]
	}
	c.reads(ops...)
}

// refineXxd reads the input file; a second operand is a file xxd writes.
func refineXxd(c *classCall) {
	// xxd has its own parser: every option that takes a value takes it as
	// the next word or attached (-c16, -cols 16).
	var ops []string
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "--":
			ops = append(ops, c.args[i+1:]...)
			i = len(c.args)
		case len(a) > 1 && a[0] == '-':
			// xxd knows an option by its first letter (-a, -autoskip).
			if !strings.ContainsRune(xxdLetters, rune(a[1])) {
				c.raise(Unknown, a+" is not an option rein knows xxd to have, so xxd is not known to be read-only")
			}
			if strings.ContainsRune("cglosnR", rune(a[1])) && len(a) == 2 || isXxdLongValue(a) {
				i++
			}
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) > 0 {
		c.reads(ops[0])
	}
	if len(ops) > 1 && ops[1] != "-" {
		c.writes(ops[1])
		c.raise(WorkspaceMutating, "xxd writes its output file")
	}
}

// isXxdLongValue reports whether a word is a long spelling of an xxd
// option that takes the next word: xxd compares only the start of the
// word, so -colsX takes the next word as -cols does.
// xxdLetters are the first letters of xxd's options.
const xxdLetters = "abCcEeghilnoprdRsuv"

func isXxdLongValue(a string) bool {
	for _, long := range []string{"-cols", "-groupsize", "-len", "-offset", "-seek", "-name"} {
		if strings.HasPrefix(a, long) {
			return true
		}
	}
	return false
}

func refineUniq(c *classCall) {
	ops := uniqArgs.scan(c.args).operands()
	if len(ops) > 0 {
		c.reads(ops[0])
	}
	if len(ops) > 1 && ops[1] != "-" {
		c.writes(ops[1])
		c.raise(WorkspaceMutating, "uniq writes its output file")
	}
}

// jqLong are jq's long options, with how many words of value each takes.
var jqLong = map[string]int{"arg": 2, "argjson": 2, "slurpfile": 2, "rawfile": 2, "indent": 1, "library-path": 1,
	"from-file": 1, "args": 0, "jsonargs": 0, "seq": 0, "stream": 0, "stream-errors": 0, "slurp": 0,
	"raw-input": 0, "null-input": 0, "compact-output": 0, "tab": 0, "color-output": 0, "monochrome-output": 0,
	"ascii-output": 0, "unbuffered": 0, "sort-keys": 0, "raw-output": 0, "raw-output0": 0, "join-output": 0,
	"exit-status": 0, "version": 0, "help": 0, "build-configuration": 0}

// jqShort are jq's short flags; f and L take a value.
const jqShort = "cnesrjaSCMRhVfL"

// jqEnvWords are the names by which a jq program reads the environment
// or files rein does not see: env and $ENV print the environment (which
// the policy does not decide), and modules are read from a search path.
var jqEnvWords = []string{"env", "$ENV", "import", "include", "modulemeta", "get_search_list", "$__prog_args"}

// refineJq skips the filter and the values of --arg-style options, which
// take two words. Options are an allowlist: one jq does not list, or -L
// (its library path holds modules, any JSON file among them), makes the
// stage unknown, and so does a filter that reads the environment or
// imports modules.
func refineJq(c *classCall) {
	haveFilter, positional := false, false
	unknown := func(why string) { c.raise(Unknown, why) }
	filter := func(f string) {
		for _, w := range jqEnvWords {
			if jqHasWord(f, w) {
				unknown("the jq filter uses " + w + ", which reads the environment or files rein does not see")
			}
		}
	}
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "--":
			for _, op := range c.args[i+1:] {
				if !haveFilter {
					haveFilter = true
					filter(op)
				} else if !positional {
					c.reads(op)
				}
			}
			return
		case strings.HasPrefix(a, "--"):
			name := a[2:]
			n, ok := jqLong[name]
			if !ok {
				unknown(a + " is not an option rein knows jq to have, so jq is not known to be read-only")
				continue
			}
			switch name {
			case "slurpfile", "rawfile":
				if i+2 < len(c.args) {
					c.reads(c.args[i+2])
				}
			case "library-path":
				unknown("jq --library-path reads modules (any JSON file among them) rein cannot see")
			case "from-file":
				if i+1 < len(c.args) {
					c.reads(c.args[i+1])
				}
				unknown("jq --from-file runs a filter rein cannot see")
				haveFilter = true
			case "args", "jsonargs":
				positional = true
			}
			i += n
		case len(a) > 1 && a[0] == '-':
			// jq reads -L first, with its directory attached (-L/lib) or
			// as the next word; in any other word, a short option is any
			// letter of it, so -rf holds -f.
			if a[1] == 'L' {
				unknown("jq -L reads modules (any JSON file among them) rein cannot see")
				if len(a) == 2 {
					i++
				}
				continue
			}
			for _, ch := range a[1:] {
				if !strings.ContainsRune(jqShort, ch) || ch == 'L' {
					unknown(a + " is not an option rein knows jq to have, so jq is not known to be read-only")
				}
			}
			if strings.Contains(a, "f") {
				if i+1 < len(c.args) {
					c.reads(c.args[i+1])
				}
				unknown("jq -f runs a filter rein cannot see")
				haveFilter = true
				i++
			}
		case !haveFilter:
			haveFilter = true
			filter(a)
		case !positional:
			c.reads(a)
		}
	}
}

// jqHasWord reports whether a jq filter holds w as a word of its own (not
// part of a longer name, or of a field .env).
func jqHasWord(f, w string) bool {
	isName := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	for i := 0; ; {
		k := strings.Index(f[i:], w)
		if k < 0 {
			return false
		}
		k += i
		before := k == 0 || !isName(f[k-1]) && f[k-1] != '.' && (w[0] == '$' || f[k-1] != '$')
		after := k+len(w) == len(f) || !isName(f[k+len(w)])
		if before && after {
			return true
		}
		i = k + 1
	}
}

var sedArgs = argSpec{values: "efl", optional: "i", long: longs("expression=", "file=", "in-place?", "line-length=",
	"quiet", "silent", "debug", "posix", "sandbox", "follow-symlinks", "regexp-extended", "separate", "unbuffered",
	"null-data", "zero-terminated", "binary", "help", "version")}

// refineSed reads the sed program: without -e or -f the first operand is
// the program, and its e, w, W, r and R commands decide the class.
func refineSed(c *classCall) {
	ws := sedArgs.scan(c.args)
	scripts := ws.values("e", "expression")
	files := ws.values("f", "file")
	ops := ws.operands()
	if len(scripts) == 0 && len(files) == 0 && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	c.inline(scripts...)
	for _, f := range files {
		if f == "-" {
			c.raise(ShellComplex, "sed reads its program from standard input")
			continue
		}
		c.reads(f)
		c.raise(Unknown, "sed runs a program file rein cannot see")
	}
	prog := sedProgram(strings.Join(scripts, "\n"))
	c.reads(prog.reads...)
	switch {
	case !prog.ok:
		c.raise(ShellComplex, "the sed program is not understood")
	case prog.runs:
		c.raise(ShellComplex, "the sed program runs commands")
	case len(prog.writes) > 0:
		c.writes(prog.writes...)
		c.raise(ShellComplex, "the sed program writes files")
	}
	c.reads(ops...)
	if ws.has("i", "in-place") {
		c.writes(ops...)
		c.raise(WorkspaceMutating, "sed -i edits files in place")
	}
}

// sedFacts is what a sed program does besides printing.
type sedFacts struct {
	runs   bool     // e command or s///e: runs shell commands
	writes []string // w, W and s///w files
	reads  []string // r and R files
	ok     bool     // false when the program is not understood
}

// sedProgram reads a GNU sed program command by command. It has to parse
// rather than search: "s/we/they/" holds a w and an e that are neither
// commands nor flags, while "s/a/b/e" runs its result as a command.
func sedProgram(p string) sedFacts {
	var f sedFacts
	i := 0
	skip := func(set string) {
		for i < len(p) && strings.IndexByte(set, p[i]) >= 0 {
			i++
		}
	}
	toEOL := func() string {
		j := strings.IndexByte(p[i:], '\n')
		if j < 0 {
			j = len(p) - i
		}
		s := p[i : i+j]
		i += j
		return s
	}
	// delimited reads up to the unescaped delimiter d and moves past it. In
	// a regex a bracket expression is read whole, since GNU sed does not end
	// the regex at a delimiter inside one: s/[/]/x/ replaces a slash.
	delimited := func(d byte, regex bool) bool {
		for i < len(p) {
			switch p[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			case '[':
				if regex {
					end := sedBracketEnd(p, i)
					if end < 0 {
						return false
					}
					i = end
					continue
				}
			}
			i++
		}
		return false
	}
	address := func() bool {
		if i >= len(p) {
			return true
		}
		switch ch := p[i]; {
		case ch >= '0' && ch <= '9':
			skip("0123456789")
			if i < len(p) && p[i] == '~' {
				i++
				skip("0123456789")
			}
		case ch == '$':
			i++
		case ch == '/':
			i++
			if !delimited('/', true) {
				return false
			}
			skip("IM")
		case ch == '\\':
			if i+1 >= len(p) {
				return false
			}
			d := p[i+1]
			i += 2
			if !delimited(d, true) {
				return false
			}
			skip("IM")
		}
		return true
	}
	for {
		skip(" \t\n;")
		if i >= len(p) {
			f.ok = true
			return f
		}
		if p[i] == '#' {
			toEOL()
			continue
		}
		if !address() {
			return f
		}
		skip(" \t")
		if i < len(p) && p[i] == ',' {
			i++
			skip(" \t")
			if i < len(p) && (p[i] == '+' || p[i] == '~') {
				i++
				skip("0123456789")
			} else if !address() {
				return f
			}
		}
		skip(" \t!")
		if i >= len(p) {
			return f
		}
		cmd := p[i]
		i++
		switch cmd {
		case '{', '}':
			continue
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			skip(" \t")
			skip("0123456789")
		case 'a', 'i', 'c':
			// Text runs to an unescaped newline.
			for i < len(p) && p[i] != '\n' {
				if p[i] == '\\' {
					i++
				}
				i++
			}
			continue
		case ':', 'b', 't', 'T', 'v':
			skip(" \t")
			for i < len(p) && p[i] != '\n' && p[i] != ';' {
				i++
			}
			continue
		case 'r', 'R':
			skip(" \t")
			f.reads = append(f.reads, toEOL())
			continue
		case 'w', 'W':
			skip(" \t")
			f.writes = append(f.writes, toEOL())
			continue
		case 'e':
			f.runs = true
			toEOL()
			continue
		case 'y', 's':
			if i >= len(p) || p[i] == '\n' || p[i] == '\\' {
				return f
			}
			d := p[i]
			i++
			// The pattern, then the replacement (or the two sets of y).
			for k := range 2 {
				if !delimited(d, cmd == 's' && k == 0) {
					return f
				}
			}
			if cmd == 's' {
				for i < len(p) && strings.IndexByte("gpiImMe0123456789w", p[i]) >= 0 {
					switch p[i] {
					case 'e':
						f.runs = true
					case 'w':
						i++
						skip(" \t")
						f.writes = append(f.writes, toEOL())
						continue
					}
					i++
				}
			}
		default:
			return f
		}
		skip(" \t")
		if i < len(p) && strings.IndexByte(";\n}#", p[i]) < 0 {
			return f
		}
	}
}

// sedBracketEnd returns the index just past the bracket expression that
// opens at p[start], or -1 when it does not close on its line. As in POSIX,
// a ] right after [ or [^ is a member, a backslash is literal, and [:, [.
// and [= open a class, collating symbol or equivalence class that runs to
// the matching :], .] or =], so that [[:alpha:]/] holds a slash.
func sedBracketEnd(p string, start int) int {
	j := start + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != '\n' {
		switch {
		case p[j] == ']':
			return j + 1
		case p[j] == '[' && j+1 < len(p) && strings.IndexByte(":.=", p[j+1]) >= 0:
			closing := string([]byte{p[j+1], ']'})
			k := strings.Index(p[j+2:], closing)
			if k < 0 || strings.IndexByte(p[j+2:j+2+k], '\n') >= 0 {
				return -1
			}
			j += 2 + k + 2
		default:
			j++
		}
	}
	return -1
}

// gawkOutputs are gawk's options that write a file, with the file each
// writes when none is attached.
var gawkOutputs = map[string]string{"d": "awkvars.out", "dump-variables": "awkvars.out",
	"p": "awkprof.out", "profile": "awkprof.out", "o": "awkprof.out", "pretty-print": "awkprof.out"}

var awkArgs = argSpec{values: "FvfEeilW", optional: "dDop", long: longs("field-separator=", "assign=", "file=",
	"exec=", "include=", "load=", "source=", "dump-variables?", "debug?", "profile?", "pretty-print?",
	"characters-as-bytes", "traditional", "copyright", "gen-pot", "help", "lint?", "bignum", "use-lc-numeric",
	"non-decimal-data", "optimize", "no-optimize", "posix", "re-interval", "sandbox", "lint-old", "version",
	"csv")}

// awkDanger are the words that let an awk program run commands, write
// files or read files rein cannot name: system(), pipes, output
// redirection, getline, gawk's @ directives (@load, @include) and indirect
// calls. The test is on the program text as a whole, so a comparison with >
// or an @ in a string counts too; that errs towards asking.
var awkDanger = []string{"system", "|", ">", "getline", "@",
	// Computed file names and calls: ARGV can be rewritten to name other
	// input files, ENVIRON and PROCINFO carry values rein does not see,
	// and gawk's @name() calls whatever function name holds.
	"ARGV", "ENVIRON", "PROCINFO"}

// awkSafeW are the -W words known to print or set a mode only.
var awkSafeW = setOf("version", "v", "usage", "help", "interactive", "i", "posix_space", "posix", "traditional",
	"compat", "sprintf", "random", "re-interval", "lint", "characters-as-bytes", "copyright")

func refineAwk(c *classCall) {
	ws := awkArgs.scan(c.args)
	progs := ws.values("e", "source")
	files := ws.values("f", "file", "E", "exec", "i", "include")
	ops := ws.operands()
	if len(progs) == 0 && len(files) == 0 && len(ops) > 0 {
		progs, ops = ops[:1], ops[1:]
	}
	c.inline(progs...)
	for _, f := range files {
		c.reads(f)
		c.raise(Unknown, "awk runs a program file rein cannot see")
	}
	if ws.has("l", "load") {
		c.raise(ShellComplex, "gawk -l loads a compiled extension")
	}
	// -W takes mawk's and gawk's own option words: only those that print
	// or set a mode are known; exec, source, load, include and the rest
	// read or run programs.
	for _, v := range ws.values("W") {
		name, _, _ := strings.Cut(v, "=")
		if !awkSafeW[name] {
			c.raise(Unknown, fmt.Sprintf("awk -W %s is not an option word rein knows to be read-only", v))
		}
	}
	for _, prog := range progs {
		for _, d := range awkDanger {
			if strings.Contains(prog, d) {
				c.raise(ShellComplex, "the awk program can run commands or write files ("+d+")")
			}
		}
	}
	for _, w := range ws {
		if out, ok := gawkOutputs[w.opt]; ok {
			if w.hasValue {
				out = w.value
			}
			c.writes(out)
			c.raise(WorkspaceMutating, "gawk writes a dump or profile file")
		}
	}
	for _, op := range ops {
		if !isAssignment(op) {
			c.reads(op)
		}
	}
}

// isAssignment reports whether a word is NAME=VALUE with NAME an
// identifier: awk operands, env and sudo words of that form set variables.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if ch != '_' && (ch < 'a' || ch > 'z') && (ch < 'A' || ch > 'Z') && (i == 0 || ch < '0' || ch > '9') {
			return false
		}
	}
	return true
}

// findScan is what a find expression does besides listing names.
type findScan struct {
	execs   [][]string // -exec, -execdir, -ok, -okdir commands with their arguments, {} kept
	deletes bool       // -delete
	writes  []string   // -fprint, -fprint0, -fprintf, -fls files
	reads   []string   // starting points, -files0-from and reference files
	// unknown says why the expression is not known to be read-only: a
	// word find has that rein does not know, or starting points from a
	// file.
	unknown string
}

// findOneArg are find's primaries that take one argument, which must not
// be read as a primary itself (find . -name -delete deletes nothing).
// findNoArg are find's options, tests, actions and operators that take no
// argument; findReference are the tests that name a file whose times or
// identity they compare.
var (
	findNoArg = setOf("-daystart", "-depth", "-d", "-follow", "-ignore_readdir_race", "-noignore_readdir_race",
		"-mount", "-noleaf", "-xdev", "-warn", "-nowarn", "-empty", "-executable", "-false", "-nogroup", "-nouser",
		"-readable", "-writable", "-true", "-print", "-print0", "-ls", "-prune", "-quit", "-delete", "-a", "-and",
		"-o", "-or", "-not", "-help", "--help", "-version", "--version")
	findReference = setOf("-newer", "-anewer", "-cnewer", "-samefile")
)

var findOneArg = setOf("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-lname", "-ilname", "-type", "-xtype", "-user", "-group", "-uid", "-gid", "-perm", "-size", "-mtime",
	"-atime", "-ctime", "-mmin", "-amin", "-cmin", "-newer", "-anewer", "-cnewer", "-samefile", "-inum",
	"-links", "-used", "-maxdepth", "-mindepth", "-fstype", "-context", "-printf", "-regextype")

func scanFind(args []string) findScan {
	var s findScan
	i := 0
	// Leading options, then starting points up to the first word that
	// begins an expression.
	for i < len(args) {
		switch a := args[i]; {
		case a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O"):
			i++
		case a == "-D":
			i += 2
		default:
			goto points
		}
	}
points:
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == ")" || a == "!" || a == "," {
			break
		}
		// A starting point is read: find prints the names, sizes and
		// times of what is beneath it.
		s.reads = append(s.reads, a)
		i++
	}
	for i < len(args) {
		a := args[i]
		i++
		switch {
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			var cmd []string
			for i < len(args) {
				w := args[i]
				i++
				// ";" always ends the command; "+" only right after "{}".
				if w == ";" || w == "+" && len(cmd) > 0 && cmd[len(cmd)-1] == "{}" {
					break
				}
				cmd = append(cmd, w)
			}
			if len(cmd) > 0 {
				s.execs = append(s.execs, cmd)
			}
		case a == "-delete":
			s.deletes = true
		case a == "-fprint" || a == "-fprint0" || a == "-fls" || a == "-fprintf":
			if i < len(args) {
				s.writes = append(s.writes, args[i])
			}
			i++
			if a == "-fprintf" {
				i++
			}
		case a == "-files0-from":
			if i < len(args) {
				s.reads = append(s.reads, args[i])
			}
			s.unknown = "find -files0-from reads its starting points from a file rein cannot see"
			i++
		case findReference[a] || strings.HasPrefix(a, "-newer") && len(a) == len("-newerXY"):
			// The file's times or identity are read.
			if i < len(args) && !(len(a) == len("-newerXY") && a[len(a)-1] == 't') {
				s.reads = append(s.reads, args[i])
			}
			i++
		case findOneArg[a]:
			i++
		case findNoArg[a] || a == "(" || a == ")" || a == "!" || a == ",":
		default:
			if s.unknown == "" {
				s.unknown = a + " is not a find expression rein knows, so find is not known to be read-only"
			}
		}
	}
	return s
}

func refineFind(c *classCall) {
	s := scanFind(c.args)
	c.reads(s.reads...)
	if s.unknown != "" {
		c.raise(Unknown, s.unknown)
	}
	if len(s.writes) > 0 {
		c.writes(s.writes...)
		c.raise(WorkspaceMutating, "find -fprint writes a file")
	}
	if len(s.execs) > 0 {
		c.raise(ShellComplex, "find -exec runs a command on every file")
		runs := make([]innerRun, len(s.execs))
		for i, cmd := range s.execs {
			runs[i] = innerRun{argv: cmd, perFile: true}
		}
		c.absorb(runs)
	}
	if s.deletes {
		c.raise(Dangerous, "find -delete deletes every file it finds")
	}
}

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

// Git.

// gitCommands is every command git ships, as listed by `git help -a` and
// `git --list-cmds=main,others,nohelpers,builtins` on git 2.39, with the
// commands added since. A subcommand outside this list is an alias or a
// git-NAME program on PATH, which the matcher cannot see.
var gitCommands = setOf(strings.Fields(`
	add am annotate apply archimport archive bisect blame branch bugreport bundle cat-file check-attr
	check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone
	column commit commit-graph commit-tree config count-objects credential credential-cache credential-store
	cvsexportcommit cvsimport cvsserver daemon describe diagnose diff diff-files diff-index diff-tree difftool
	fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo
	format-patch fsck fsck-objects gc get-tar-commit-id grep gui hash-object help hook http-backend http-fetch
	http-push imap-send index-pack init init-db instaweb interpret-trailers log ls-files ls-remote ls-tree
	mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-octopus merge-one-file
	merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-resolve merge-subtree
	merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes p4 pack-objects pack-redundant
	pack-refs patch-id pickaxe prune prune-packed pull push quiltimport range-diff read-tree rebase
	receive-pack reflog remote remote-ext remote-fd remote-ftp remote-ftps remote-http remote-https repack
	replace request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack shell
	shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace submodule
	subtree svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
	update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag version
	whatchanged worktree write-tree
	add--interactive bisect--helper checkout--worker credential-cache--daemon difftool--helper env--helper
	fsmonitor--daemon sh-i18n--envsubst submodule--helper upload-archive--writer web--browse
	backfill last-modified refs replay repo`)...)

// gitClasses classifies the git commands that are not Unknown.
var gitClasses = func() map[string]Class {
	m := make(map[string]Class)
	for class, names := range map[Class]string{
		ReadOnly: "status diff log show ls-files grep rev-parse blame version",
		WorkspaceMutating: `add stage commit checkout switch stash restore fetch push pull merge rebase
			cherry-pick revert reset rm mv init init-db clone am apply notes worktree gc prune repack pack-refs
			maintenance format-patch archive sparse-checkout submodule clean bisect`,
		ShellComplex: `filter-branch difftool difftool--helper mergetool instaweb send-email credential
			credential-cache credential-store credential-cache--daemon hook for-each-repo web--browse shell daemon`,
		Dangerous: "remote-ext remote-fd",
	} {
		for _, n := range strings.Fields(names) {
			m[n] = class
		}
	}
	return m
}()

var gitClassReasons = map[Class]string{
	ReadOnly:          "only reads the repository",
	WorkspaceMutating: "changes the repository or the working tree",
	ShellComplex:      "runs programs or hooks the matcher cannot see",
	Dangerous:         "runs a command through a transport",
	Unknown:           "is a git command the class table does not classify",
}

// gitGlobals is what git's global options, the words before the command,
// say.
type gitGlobals struct {
	// rest is the command and its arguments; -v and -h are turned into the
	// version and help commands they run.
	rest []string
	// n counts the words of global options, their values included.
	n int
	// complex says why the options make the command shell-complex; empty
	// when they do not.
	complex string
}

// gitGlobalValues are the global options that take a value, attached with
// = or as the next word; -c and -C only take the next word.
var gitGlobalValues = setOf("--git-dir", "--work-tree", "--config-env", "--namespace", "--super-prefix",
	"--attr-source")

// parseGitGlobals reads git's global options as git does: by exact name,
// never abbreviated.
func parseGitGlobals(args []string) gitGlobals {
	var g gitGlobals
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, _, hasValue := strings.Cut(a, "=")
		switch name {
		case "-c", "-C":
			g.complex = "git " + a + " changes the configuration or repository git runs with"
		case "--git-dir", "--work-tree", "--config-env":
			g.complex = "git " + name + " changes the configuration or repository git runs with"
		case "--exec-path", "--bare":
			g.complex = "git " + name + " changes where git finds its programs or repository"
		case "-p", "--paginate":
			g.complex = "git " + name + " runs the configured pager"
		case "--namespace", "--super-prefix", "--attr-source", "-P", "--no-pager", "--no-replace-objects",
			"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
			"--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--list-cmds", "--html-path",
			"--man-path", "--info-path":
		case "-v", "--version":
			g.rest, g.n = append([]string{"version"}, args[i+1:]...), i+1
			return g
		case "-h", "--help":
			g.rest, g.n = append([]string{"help"}, args[i+1:]...), i+1
			return g
		default:
			g.complex = "git " + name + " is not a global option git documents"
		}
		if name == "-c" || name == "-C" || gitGlobalValues[name] && !hasValue {
			i++
		}
	}
	if i < len(args) {
		g.rest = args[i:]
	}
	g.n = min(i, len(args))
	return g
}

// gitCanonical returns a git argv with its global options and their values
// removed (git --no-pager push becomes git push), so that a rule naming a
// git command also matches it when global options precede it. It returns
// nil when argv is not git or has no global options.
func gitCanonical(argv []string) []string {
	if sub, ok := gitMultiCall(argv); ok {
		// git-push origin is git push origin to a rule.
		return append([]string{"git", sub}, argv[1:]...)
	}
	if len(argv) < 2 || path.Base(argv[0]) != "git" {
		return nil
	}
	g := parseGitGlobals(argv[1:])
	if g.n == 0 {
		return nil
	}
	return append([]string{argv[0]}, g.rest...)
}

// gitTransports are the commands that reach another repository and take
// the name of the program to run at its end (--upload-pack,
// --receive-pack, --exec).
var gitTransports = setOf("push", "fetch", "pull", "clone", "ls-remote", "archive", "send-pack", "fetch-pack")

// refineGit reads git's global options, then its subcommand. Global options
// that load configuration or another repository can make any git command
// run arbitrary programs (core.pager, core.fsmonitor, hooks).
// gitMultiCall reports the command a git multi-call name runs: git-stash,
// /usr/lib/git-core/git-upload-pack.
func gitMultiCall(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	sub, ok := strings.CutPrefix(path.Base(argv[0]), "git-")
	return sub, ok && sub != ""
}

// gitReadFiles are options of git's commands whose value is a file git
// reads: a list of revisions to ignore, patterns, an order file, the
// contents to blame.
var gitReadFiles = map[string][]string{
	"blame":        {"S", "ignore-revs-file", "contents"},
	"annotate":     {"S", "ignore-revs-file", "contents"},
	"grep":         {"f"},
	"ls-files":     {"X", "exclude-from"},
	"log":          {"O"},
	"show":         {"O"},
	"diff":         {"O"},
	"whatchanged":  {"O"},
	"format-patch": {"O"},
	"diff-tree":    {"O"},
	"diff-index":   {"O"},
	"diff-files":   {"O"},
}

// gitFileValues returns the values of a command's file options: -S FILE,
// -SFILE, --opt FILE, --opt=FILE.
func gitFileValues(sub string, args []string) []string {
	var out []string
	opts := gitReadFiles[sub]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, o := range opts {
			switch {
			case len(o) == 1 && a == "-"+o:
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
			case len(o) == 1 && strings.HasPrefix(a, "-"+o) && !strings.HasPrefix(a, "--"):
				out = append(out, a[2:])
			case len(o) > 1 && a == "--"+o:
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
			case len(o) > 1 && strings.HasPrefix(a, "--"+o+"="):
				out = append(out, a[len(o)+3:])
			}
		}
	}
	return out
}

func refineGit(c *classCall) {
	if sub, ok := gitMultiCall([]string{c.name}); ok {
		// git's multi-call names run the command they name.
		c.args = append([]string{sub}, c.args...)
	}
	g := parseGitGlobals(c.args)
	sub, rest := "", []string(nil)
	if len(g.rest) > 0 {
		sub, rest = g.rest[0], g.rest[1:]
	}
	switch class, known := gitClasses[sub]; {
	case sub == "":
		c.set(ReadOnly, "git without a command prints its usage")
	case !gitCommands[sub]:
		c.set(ShellComplex, "git "+sub+" is not a git command; it may be an alias")
	case known:
		c.set(class, "git "+sub+" "+gitClassReasons[class])
	default:
		c.set(Unknown, "git "+sub+" "+gitClassReasons[Unknown])
	}
	if refine := gitRefinements[sub]; refine != nil && gitCommands[sub] {
		refine(c, rest)
	}
	if out := gitOutputs(rest); len(out) > 0 {
		c.writes(out...)
		c.raise(WorkspaceMutating, "git "+sub+" --output writes a file")
	}
	c.reads(gitPathspecFiles(rest)...)
	c.reads(gitFileValues(sub, rest)...)
	if g.complex != "" {
		c.raise(ShellComplex, g.complex)
	}
	for _, a := range c.args {
		lower := strings.ToLower(a)
		switch {
		case strings.Contains(lower, "ext::") || strings.Contains(lower, "fd::"):
			c.raise(Dangerous, "git with an ext:: or fd:: transport runs a command")
		case strings.HasPrefix(a, "--upload-pack") || strings.HasPrefix(a, "--receive-pack"):
			c.raise(Dangerous, "git "+strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")+" runs a command")
		}
	}
	if gitTransports[sub] {
		for _, a := range rest {
			if a == "--" {
				break
			}
			if gitLongAbbrev(a, "upload-pack", "receive-pack", "exec") {
				c.raise(Dangerous, "git "+sub+" "+a+" names a program to run")
			}
		}
	}
}

// gitLongAbbrev reports whether a word is a long option that git could read
// as one of the named ones: git's option parser takes any unambiguous
// prefix (--upl for --upload-pack, even --u where nothing else begins with
// u). A prefix that is ambiguous is counted too, since what else git knows
// varies between versions.
func gitLongAbbrev(word string, names ...string) bool {
	opt, ok := strings.CutPrefix(word, "--")
	if !ok {
		return false
	}
	opt, _, _ = strings.Cut(opt, "=")
	if opt == "" {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, opt) {
			return true
		}
	}
	return false
}

// gitPathspecFiles returns the files of --pathspec-from-file, which add,
// commit, checkout, reset, restore, rm and stash read.
func gitPathspecFiles(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name == "--pathspec-from-file" || len(name) > len("--pathspec-f") && strings.HasPrefix("--pathspec-from-file", name) {
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			out = append(out, value)
		}
	}
	return out
}

// gitOutputs returns the files named by --output, before any "--".
func gitOutputs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return out
		case a == "--output":
			if i+1 < len(args) {
				out = append(out, args[i+1])
			}
			i++
		case strings.HasPrefix(a, "--output="):
			out = append(out, a[len("--output="):])
		}
	}
	return out
}

var gitRefinements = map[string]func(*classCall, []string){
	"push":      refineGitPush,
	"reset":     refineGitReset,
	"clean":     refineGitClean,
	"clone":     refineGitClone,
	"init":      refineGitInit,
	"init-db":   refineGitInit,
	"rebase":    refineGitRebase,
	"bisect":    refineGitSubcommand("run", "git bisect run runs a command at every step"),
	"submodule": refineGitSubcommand("foreach", "git submodule foreach runs a command in every submodule"),
	"config":    refineGitConfig,
	"grep":      refineGitGrep,
	"diff":      refineGitDiff,
	"log":       refineGitPathsAfterDashes,
	"show":      refineGitPathsAfterDashes,
	"blame":     refineGitBlame,
	"commit":    refineGitMessageFile(&gitCommitArgs),
	"tag":       refineGitMessageFile(&gitTagArgs),
	"notes":     refineGitNotes,
	"hash-object": func(c *classCall, args []string) {
		c.reads(gitHashObjectArgs.scan(args).operands()...)
	},
	"archive":   refineGitArchive,
	"ls-remote": refineGitLsRemote,
	"fetch-pack": func(c *classCall, args []string) {
		refineGitExec(c, args)
	},
	"send-pack": refineGitSendPack,
	"format-patch": func(c *classCall, args []string) {
		c.writes(gitFormatPatchArgs.scan(args).values("o", "output-directory")...)
	},
}

var gitFormatPatchArgs = argSpec{values: "ov", long: longs("output-directory=", "start-number=", "subject-prefix=",
	"suffix=", "in-reply-to=", "attach?", "inline?", "thread?", "signature=", "signature-file=", "base=",
	"from?", "to=", "cc=", "add-header=", "reroll-count=", "interdiff=", "range-diff=", "creation-factor=",
	"filename-max-length=", "cover-letter", "numbered", "no-numbered", "stdout", "rfc?")}

// refineGitExec catches --exec in any abbreviation, which names the
// program git runs on the other side of a transport.
func refineGitExec(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "exec") {
			c.raise(Dangerous, "git --exec runs a command")
		}
	}
}

// refineGitSendPack reads send-pack like push, whose plumbing it is: it
// pushes without the checks and hooks of git push, and force-pushes with
// --force, -f or a +refspec.
func refineGitSendPack(c *classCall, args []string) {
	c.raise(ShellComplex, "git send-pack pushes without the checks of git push")
	refineGitPush(c, args)
}

var gitPushArgs = argSpec{values: "o", long: longs("repo=", "all", "branches", "mirror", "delete", "tags",
	"dry-run", "porcelain", "force", "force-with-lease?", "force-if-includes", "recurse-submodules=", "thin",
	"receive-pack=", "exec=", "set-upstream", "progress", "prune", "no-verify", "verify", "follow-tags",
	"signed?", "atomic", "push-option=", "verbose", "quiet", "ipv4", "ipv6", "no-force-with-lease",
	"no-force-if-includes", "no-thin", "no-signed", "no-atomic", "no-follow-tags")}

// refineGitPush makes a force push dangerous in every spelling: -f in a
// cluster, --force*, --mirror (which force-updates every ref) and a
// refspec beginning with +.
func refineGitPush(c *classCall, args []string) {
	refineGitExec(c, args)
	ws := gitPushArgs.scan(args)
	for _, w := range ws {
		switch {
		case w.opt == "":
			if strings.HasPrefix(w.text, "+") {
				c.raise(Dangerous, "git push "+w.text+" force-pushes")
			}
		case w.opt == "f" || strings.HasPrefix(w.opt, "force") ||
			gitLongAbbrev(w.text, "force-with-lease", "force-if-includes"):
			c.raise(Dangerous, "git push --force rewrites the remote")
		case w.opt == "mirror" || gitLongAbbrev(w.text, "mirror"):
			c.raise(Dangerous, "git push --mirror rewrites every remote ref")
		}
	}
}

func refineGitReset(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "hard") {
			c.raise(Dangerous, "git reset --hard discards uncommitted work")
		}
	}
}

var gitCleanArgs = argSpec{values: "e", long: longs("force", "dry-run", "interactive", "quiet", "exclude=")}

func refineGitClean(c *classCall, args []string) {
	for _, w := range gitCleanArgs.scan(args) {
		if w.opt == "f" || gitLongAbbrev(w.text, "force") {
			c.raise(Dangerous, "git clean -f deletes untracked files")
		}
	}
}

var gitCloneArgs = argSpec{values: "bcjou", long: longs("template=", "local", "shared", "no-hardlinks", "quiet",
	"verbose", "progress", "no-checkout", "bare", "mirror", "origin=", "branch=", "upload-pack=", "reference=",
	"reference-if-able=", "dissociate", "separate-git-dir=", "depth=", "shallow-since=", "shallow-exclude=",
	"single-branch", "no-single-branch", "no-tags", "recurse-submodules?", "shallow-submodules", "jobs=",
	"config=", "server-option=", "filter=", "sparse", "remote-submodules", "bundle-uri=", "ref-format=",
	"revision=", "also-filter-submodules", "reject-shallow")}

// refineGitClone catches -u (another spelling of --upload-pack), and -c and
// --template: configuration and hooks that the clone itself already uses.
func refineGitClone(c *classCall, args []string) {
	for _, w := range gitCloneArgs.scan(args) {
		switch {
		case w.opt == "u":
			c.raise(Dangerous, "git clone -u runs a command")
		case w.opt == "c" || gitLongAbbrev(w.text, "config", "template"):
			c.raise(ShellComplex, "git clone "+w.text+" sets configuration or hooks the clone runs")
		}
	}
}

// refineGitInit catches --template, which installs hooks into .git/hooks.
func refineGitInit(c *classCall, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if gitLongAbbrev(a, "template") {
			c.raise(ShellComplex, "git init --template installs hooks")
		}
	}
}

var gitRebaseArgs = argSpec{values: "sXx", optional: "CS", long: longs("exec=", "strategy=", "strategy-option=",
	"onto=", "interactive", "merge", "quiet", "verbose", "keep-base", "continue", "abort", "skip", "quit",
	"edit-todo", "show-current-patch", "apply", "empty=", "keep-empty", "no-keep-empty", "allow-empty-message",
	"autosquash", "no-autosquash", "autostash", "no-autostash", "rebase-merges?", "root", "update-refs",
	"signoff", "gpg-sign?", "committer-date-is-author-date", "reset-author-date", "ignore-whitespace",
	"whitespace=", "force-rebase", "no-ff", "fork-point", "no-fork-point", "reschedule-failed-exec",
	"no-reschedule-failed-exec", "stat", "no-stat", "no-verify", "verify")}

func refineGitRebase(c *classCall, args []string) {
	for _, w := range gitRebaseArgs.scan(args) {
		if w.opt == "x" || w.opt == "exec" || gitLongAbbrev(w.text, "exec") {
			c.raise(ShellComplex, "git rebase --exec runs a command after every commit")
		}
	}
}

// refineGitSubcommand makes one subcommand of a git command (bisect run,
// submodule foreach) shell-complex.
func refineGitSubcommand(word, reason string) func(*classCall, []string) {
	return func(c *classCall, args []string) {
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				if a == word {
					c.raise(ShellComplex, reason)
				}
				return
			}
		}
	}
}

var gitConfigArgs = argSpec{values: "f", long: longs("global", "system", "local", "worktree", "file=", "blob=",
	"get", "get-all", "get-regexp", "get-urlmatch", "replace-all", "add", "unset", "unset-all",
	"rename-section", "remove-section", "list", "fixed-value", "edit", "get-color", "get-colorbool", "null",
	"name-only", "show-origin", "show-scope", "type=", "bool", "int", "bool-or-int", "path", "expiry-date",
	"no-type", "includes", "no-includes", "default=", "comment=", "all", "regexp", "value=", "url=")}

// refineGitConfig makes setting configuration shell-complex: it can name the
// programs git runs (core.pager, core.hooksPath, alias.*).
func refineGitConfig(c *classCall, args []string) {
	ws := gitConfigArgs.scan(args)
	ops := ws.operands()
	write := ws.has("replace-all", "add", "unset", "unset-all", "rename-section", "remove-section", "e", "edit")
	for _, w := range ws {
		if w.opt != "" && gitLongAbbrev(w.text, "replace-all", "add", "unset", "unset-all", "rename-section",
			"remove-section", "edit") {
			write = true
		}
	}
	read := ws.has("get", "get-all", "get-regexp", "get-urlmatch", "l", "list", "get-color", "get-colorbool")
	if len(ops) > 0 {
		switch ops[0] {
		case "get", "list":
			read = true
		case "set", "unset", "rename-section", "remove-section", "edit":
			write = true
		}
	}
	if !read && len(ops) >= 2 {
		write = true
	}
	files := ws.values("f", "file")
	if write {
		c.writes(files...)
		c.raise(ShellComplex, "git config can set the programs git runs")
		return
	}
	c.reads(files...)
}

var gitGrepArgs = argSpec{values: "efABCm", optional: "O", long: longs("open-files-in-pager?", "max-depth=",
	"threads=", "context=", "after-context=", "before-context=", "max-count=", "color?", "cached", "no-index",
	"untracked", "no-exclude-standard", "exclude-standard", "recurse-submodules", "text", "textconv",
	"no-textconv", "ignore-case", "word-regexp", "invert-match", "full-name", "extended-regexp", "basic-regexp",
	"perl-regexp", "fixed-strings", "line-number", "column", "files-with-matches", "name-only",
	"files-without-match", "null", "only-matching", "count", "break", "heading", "show-function",
	"function-context", "and", "or", "not", "all-match", "quiet")}

func refineGitGrep(c *classCall, args []string) {
	ws := gitGrepArgs.scan(args)
	open := ws.has("O", "open-files-in-pager")
	for _, w := range ws {
		open = open || w.opt != "" && gitLongAbbrev(w.text, "open-files-in-pager")
	}
	if open {
		c.raise(ShellComplex, "git grep -O runs a program on the matching files")
	}
	if !ws.has("no-index") {
		return
	}
	files := ws.values("f")
	c.reads(files...)
	ops := ws.operands()
	if !ws.has("e") && len(files) == 0 && len(ops) > 0 {
		ops = ops[1:]
	}
	c.reads(ops...)
}

// gitDiffValues are the diff options that take the next word as their
// value when none is attached; it is not a path git compares.
var gitDiffValues = setOf("-S", "-G", "-I", "--output", "--skip-to", "--rotate-to", "--find-object",
	"--anchored", "--word-diff-regex", "--diff-algorithm", "--ws-error-highlight", "--color-moved-ws",
	"--src-prefix", "--dst-prefix", "--line-prefix", "--inter-hunk-context", "--output-indicator-new",
	"--output-indicator-old", "--output-indicator-context", "--ignore-matching-lines", "--diff-filter",
	"--stat-width", "--stat-name-width", "--stat-graph-width", "--stat-count")

// refineGitDiff records every operand as a read: git diff switches to
// --no-index by itself when a path lies outside the repository, so any
// operand that is not a revision may be a file anywhere on the machine.
// The -O order file is read too.
func refineGitDiff(c *classCall, args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.reads(args[i+1:]...)
			return
		case a == "-" || !strings.HasPrefix(a, "-"):
			c.reads(a)
		case a == "-O" && i+1 < len(args):
			i++
			c.reads(args[i])
		case strings.HasPrefix(a, "-O"):
			c.reads(a[2:])
		case gitDiffValues[a]:
			i++
		}
	}
}

// refineGitPathsAfterDashes records the paths after "--" of log and show,
// which may name files outside the repository.
func refineGitPathsAfterDashes(c *classCall, args []string) {
	if k := slices.Index(args, "--"); k >= 0 {
		c.reads(args[k+1:]...)
	}
}

// refineGitBlame records the paths after "--" and the file of --contents,
// which blame reads in place of the working tree's copy.
func refineGitBlame(c *classCall, args []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.reads(args[i+1:]...)
			return
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name == "--contents" || len(name) > len("--con") && strings.HasPrefix("--contents", name) {
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.reads(value)
		}
	}
}

var (
	gitCommitArgs = argSpec{values: "CcFmt", optional: "uS", long: longs("file=", "template=", "message=",
		"reuse-message=", "reedit-message=", "fixup=", "squash=", "author=", "date=", "cleanup=", "trailer=",
		"pathspec-from-file=", "untracked-files?", "gpg-sign?", "all", "patch", "short", "branch", "porcelain",
		"long", "null", "reset-author", "signoff", "no-verify", "verify", "allow-empty", "allow-empty-message",
		"edit", "no-edit", "amend", "include", "only", "verbose", "quiet", "dry-run", "status", "no-status")}
	gitTagArgs = argSpec{values: "Fmu", optional: "n", long: longs("file=", "message=", "local-user=",
		"cleanup=", "sort=", "format=", "contains=", "no-contains=", "merged=", "no-merged=", "points-at=",
		"column?", "color?", "trailer=", "annotate", "sign", "delete", "verify", "list", "force", "create-reflog",
		"ignore-case", "omit-empty", "edit", "no-edit")}
	gitNotesArgs = argSpec{values: "FmCc", long: longs("file=", "message=", "reuse-message=",
		"reedit-message=", "ref=", "separator?", "force", "allow-empty", "no-separator", "stripspace",
		"no-stripspace")}
	gitHashObjectArgs = argSpec{values: "t", long: longs("path=", "stdin", "stdin-paths", "no-filters",
		"literally")}
)

// refineGitMessageFile records the message and template files of commit
// and tag (-F FILE, --file=FILE, -t FILE).
func refineGitMessageFile(spec *argSpec) func(*classCall, []string) {
	return func(c *classCall, args []string) {
		ws := spec.scan(args)
		c.reads(ws.values("F", "file", "template")...)
		if spec == &gitCommitArgs {
			c.reads(ws.values("t")...)
		}
	}
}

// refineGitNotes records the message files of notes add, append and edit.
func refineGitNotes(c *classCall, args []string) {
	c.reads(gitNotesArgs.scan(args).values("F", "file")...)
}

var gitArchiveArgs = argSpec{values: "o", long: longs("output=", "remote=", "exec=", "format=", "prefix=",
	"add-file=", "add-virtual-file=", "mtime=", "list", "verbose", "worktree-attributes")}

func refineGitArchive(c *classCall, args []string) {
	ws := gitArchiveArgs.scan(args)
	c.writes(ws.values("o")...)
	c.reads(ws.values("add-file")...)
	if ws.has("exec") {
		c.raise(Dangerous, "git archive --exec runs a command")
	}
}

var gitLsRemoteArgs = argSpec{values: "ou", long: longs("heads", "tags", "branches", "refs", "upload-pack=",
	"exit-code", "get-url", "symref", "sort=", "server-option=", "quiet")}

func refineGitLsRemote(c *classCall, args []string) {
	if gitLsRemoteArgs.scan(args).has("u") {
		c.raise(Dangerous, "git ls-remote -u runs a command")
	}
}

// Go.

// goValueFlags are the go command's build and test flags that take a value
// as the next word.
var goValueFlags = setOf("o", "p", "asmflags", "buildmode", "buildvcs", "compiler", "gccgoflags", "gcflags",
	"installsuffix", "ldflags", "mod", "modfile", "overlay", "pgo", "pkgdir", "tags", "toolexec", "exec",
	"vettool", "coverpkg", "covermode", "coverprofile", "cpuprofile", "memprofile", "memprofilerate",
	"blockprofile", "blockprofilerate", "mutexprofile", "mutexprofilefraction", "trace", "outputdir", "run",
	"skip", "bench", "benchtime", "count", "cpu", "parallel", "timeout", "shuffle", "fuzz", "fuzztime",
	"fuzzminimizetime", "list", "fullpath")

// goOutputFlags name files the go command writes.
var goOutputFlags = setOf("o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir")

var goClasses = map[string]Class{
	"version": ReadOnly, "list": ReadOnly, "doc": ReadOnly, "help": ReadOnly, "env": ReadOnly,
	"build": WorkspaceMutating, "test": WorkspaceMutating, "vet": WorkspaceMutating, "run": WorkspaceMutating,
	"generate": WorkspaceMutating, "install": WorkspaceMutating, "mod": WorkspaceMutating,
	"get": WorkspaceMutating, "fmt": WorkspaceMutating, "clean": WorkspaceMutating, "fix": WorkspaceMutating,
	"work": WorkspaceMutating,
}

// refineGo classifies by subcommand, and makes -exec, -toolexec and
// -vettool shell-complex: they name a program the go command runs instead
// of, or around, its own.
func refineGo(c *classCall) {
	args := c.args
	if len(args) >= 2 && args[0] == "-C" {
		args = args[2:]
	} else if len(args) >= 1 && strings.HasPrefix(args[0], "-C=") {
		args = args[1:]
	}
	if len(args) == 0 {
		c.set(ReadOnly, "go without a command prints its usage")
		return
	}
	sub, rest := args[0], args[1:]
	class, ok := goClasses[sub]
	if !ok {
		c.set(Unknown, "go "+sub+" is not classified")
		return
	}
	c.set(class, "go "+sub)
	switch class {
	case ReadOnly:
		c.f.Reason = "go " + sub + " only prints"
	case WorkspaceMutating:
		c.f.Reason = "go " + sub + " builds, tests or changes the module"
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" || a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub == "run" {
				break
			}
			if sub == "list" && (strings.Contains(a, "@") || slices.Contains(rest[:i], "-m")) {
				c.raise(Unknown, "go list "+a+" may look modules up over the network")
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && goValueFlags[name] && i+1 < len(rest) {
			i++
			value, hasValue = rest[i], true
		}
		switch {
		case sub == "list" && (name == "export" || name == "compiled"):
			c.raise(Unknown, "go list -"+name+" builds the packages: cgo and the C compiler run, and print what they read")
		case sub == "list" && (name == "u" || name == "versions" || name == "retracted" || name == "reuse"):
			c.raise(Unknown, "go list -"+name+" queries the module proxy over the network")
		case sub == "env" && (name == "w" || name == "u"):
			c.raise(ShellComplex, "go env -w changes the go command's configuration")
		case name == "exec" || name == "toolexec" || name == "vettool":
			c.raise(ShellComplex, "go -"+name+" runs a program of its own")
		case goOutputFlags[name] && hasValue:
			c.writes(value)
		}
	}
}

// Node package managers.

// npmMutating are npm commands that run package scripts or change
// node_modules and the lock file.
var npmMutating = setOf("test", "t", "tst", "run", "run-script", "rum", "urn", "start", "stop", "restart",
	"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add", "ci",
	"clean-install", "ic", "install-clean", "isntall-clean", "install-test", "it", "install-ci-test", "cit",
	"update", "up", "upgrade", "udpate", "uninstall", "remove", "rm", "r", "un", "unlink", "link", "ln",
	"rebuild", "rb", "dedupe", "ddp", "prune", "pack", "publish")

// npmValueOptions take the next word as their value.
var npmValueOptions = setOf("--prefix", "-w", "--workspace", "--registry", "--cache", "--userconfig",
	"--globalconfig", "--loglevel", "-C", "--dir")

// packageManagerCommand returns the first word that is not an option.
func packageManagerCommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case npmValueOptions[a]:
			i++
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}

func refineNpm(c *classCall) {
	sub := packageManagerCommand(c.args)
	switch {
	case sub == "exec" || sub == "x":
		c.set(ShellComplex, "npm "+sub+" runs a package fetched by name")
	case npmMutating[sub]:
		c.set(WorkspaceMutating, "npm "+sub+" runs package scripts or changes node_modules")
	default:
		c.set(Unknown, "npm "+sub+" is not classified")
	}
}

func refinePnpm(c *classCall) {
	sub := packageManagerCommand(c.args)
	switch {
	case sub == "dlx" || sub == "exec":
		c.set(ShellComplex, c.name+" "+sub+" runs a command the matcher cannot see")
	case npmMutating[sub] || c.name == "yarn" && sub == "":
		c.set(WorkspaceMutating, c.name+" "+sub+" runs package scripts or changes node_modules")
	default:
		c.set(Unknown, c.name+" "+sub+" is not classified")
	}
}

// Interpreters.

// interpreter describes how a script interpreter takes program text.
type interpreter struct {
	args argSpec
	// code are the options whose value is program text (python -c).
	code []string
	// complex are options that make it run code the matcher cannot see
	// (python -m, perl -M); the spec names -c, -e and -m for every one.
	complex []string
	// script are options whose value names the script file (php -f).
	script []string
	// lines are options that make the operands input files (perl -n).
	lines []string
	// inPlace are options that rewrite those input files (perl -i).
	inPlace []string
	// info are options that only print (--version).
	info []string
}

var pythonInterp = interpreter{
	args:    argSpec{values: "cmWX", final: "cm", posix: true, long: longs("check-hash-based-pycs=", "help", "help-env", "help-xoptions", "help-all", "version")},
	code:    []string{"c"},
	complex: []string{"m"},
	info:    []string{"V", "version", "h", "help", "?", "help-env", "help-xoptions", "help-all"},
}

var perlInterp = interpreter{
	args: argSpec{values: "eEIMm", optional: "iFxdDCV", digits: "0l", posix: true,
		long: longs("help", "version")},
	code:    []string{"e", "E"},
	complex: []string{"c", "M", "m", "d"},
	lines:   []string{"n", "p"},
	inPlace: []string{"i"},
	info:    []string{"v", "version", "h", "help", "V"},
}

var rubyInterp = interpreter{
	args: argSpec{values: "eIrCE", optional: "iFxWTK", digits: "0", posix: true,
		long: longs("enable=", "disable=", "encoding=", "external-encoding=", "internal-encoding=", "dump=",
			"backtrace-limit=", "crash-report=", "version", "help", "verbose", "copyright", "jit", "yjit")},
	code:    []string{"e"},
	complex: []string{"c", "r", "m"},
	lines:   []string{"n", "p"},
	inPlace: []string{"i"},
	info:    []string{"v", "version", "h", "help", "copyright"},
}

var phpInterp = interpreter{
	args: argSpec{values: "rBREFfcdzSt", posix: true,
		long: longs("ini", "rf=", "rc=", "re=", "rz=", "ri=", "help", "version")},
	code: []string{"r", "B", "R", "E"},
	// -c names an ini file, -d sets an ini value and -z loads an extension:
	// each can make php run code (auto_prepend_file) rein cannot see.
	complex: []string{"c", "e", "m", "a", "d", "z"},
	script:  []string{"f", "F", "S"},
	info:    []string{"v", "version", "h", "help", "i", "ini", "rf", "rc", "re", "rz", "ri"},
}

func refineInterpreter(in *interpreter) func(*classCall) {
	return func(c *classCall) {
		ws := in.args.scan(c.args)
		ops := ws.operands()
		code := ws.values(in.code...)
		c.inline(code...)
		switch {
		case len(code) > 0:
			c.set(ShellComplex, c.name+" runs program text given on the command line")
		case ws.has(in.complex...):
			c.set(ShellComplex, c.name+" runs code the matcher cannot see (a module or configuration)")
		case len(ws.values(in.script...)) > 0:
			c.set(Unknown, c.name+" runs a script")
			return
		case len(ops) == 0 && ws.has(in.info...):
			c.set(Unknown, c.name+" prints information")
			return
		case len(ops) == 0 || ops[0] == "-" || isStdinPath(ops[0]):
			c.set(ShellComplex, c.name+" reads its program from standard input")
			return
		default:
			c.set(Unknown, c.name+" runs a script")
			return
		}
		// With program text on the command line the operands are its
		// arguments, or its input files under -n and -p.
		if ws.has(in.lines...) {
			c.reads(ops...)
			if ws.has(in.inPlace...) {
				c.writes(ops...)
			}
		}
	}
}

// nodeValueOptions take the next word as their value. Node does not
// cluster short options, so each word is read whole.
var nodeValueOptions = setOf("-C", "--conditions", "--input-type", "--title", "--redirect-warnings",
	"--test-reporter", "--test-reporter-destination", "--test-name-pattern", "--watch-path",
	"--disable-warning", "--inspect-port", "--debug-port", "--icu-data-dir", "--openssl-config",
	"--diagnostic-dir", "--report-dir", "--secure-heap", "--heapsnapshot-signal", "--experimental-config-file")

func refineNode(c *classCall) {
	args := c.args
	info := false
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			i++
			break options
		case a == "-" || !strings.HasPrefix(a, "-"):
			break options
		case name == "-e" || name == "--eval" || name == "-p" || name == "--print" || name == "-pe":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.inline(value)
			c.raise(ShellComplex, "node runs program text given on the command line")
		case name == "-r" || name == "--require" || name == "--import" || name == "--loader" ||
			name == "--experimental-loader":
			if !hasValue {
				i++
			}
			c.raise(ShellComplex, "node "+name+" preloads code the matcher cannot see")
		case name == "-c" || name == "--check" || name == "-i" || name == "--interactive":
			c.raise(ShellComplex, "node "+name+" runs code the matcher cannot see")
		case name == "--env-file" || name == "--env-file-if-exists":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			c.reads(value)
		case nodeValueOptions[name]:
			if !hasValue {
				i++
			}
		case name == "-v" || name == "--version" || name == "-h" || name == "--help" || name == "--v8-options":
			info = true
		}
	}
	if c.f.Class == ShellComplex {
		return
	}
	switch {
	case i < len(args) && args[i] != "-" && !isStdinPath(args[i]):
		c.set(Unknown, "node runs a script")
	case info:
		c.set(Unknown, "node prints information")
	default:
		c.set(ShellComplex, "node reads its program from standard input")
	}
}

// Shells.

// shellPrograms are the shells whose -c STRING is parsed and whose
// invocation without a script reads commands from standard input.
var shellPrograms = []string{"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "rbash", "yash", "fish", "csh", "tcsh"}

func refineShell(c *classCall) {
	inv := parseShellArgs(c.args)
	switch {
	case inv.hasCommand:
		c.inline(inv.command)
		c.set(ShellComplex, c.name+" -c runs a command string")
		c.absorb(shellStringRuns(inv.command, c.perFile))
	case inv.flagC:
		c.set(ShellComplex, c.name+" -c runs a command string")
	case inv.stdin:
		c.set(ShellComplex, c.name+" reads commands from standard input")
	case inv.info:
		c.set(Unknown, c.name+" prints information")
	default:
		c.set(Unknown, c.name+" runs a script")
	}
}

// Network clients.

var curlArgs = argSpec{values: "AbcCdDeEFHKmoPQrTuUwxXYyzt", long: longs("abstract-unix-socket=", "alt-svc=",
	"aws-sigv4=", "cacert=", "capath=", "cert=", "cert-type=", "ciphers=", "config=", "connect-timeout=",
	"connect-to=", "continue-at=", "cookie=", "cookie-jar=", "create-file-mode=", "crlfile=", "curves=", "data=",
	"data-ascii=", "data-binary=", "data-raw=", "data-urlencode=", "delegation=", "dns-interface=",
	"dns-ipv4-addr=", "dns-ipv6-addr=", "dns-servers=", "doh-url=", "dump-header=", "egd-file=", "engine=",
	"etag-compare=", "etag-save=", "expect100-timeout=", "form=", "form-string=", "ftp-account=",
	"ftp-alternative-to-user=", "ftp-method=", "ftp-port=", "ftp-ssl-ccc-mode=", "happy-eyeballs-timeout-ms=",
	"haproxy-clientip=", "header=", "hostpubmd5=", "hostpubsha256=", "hsts=", "interface=", "ipfs-gateway=",
	"json=", "keepalive-time=", "key=", "key-type=", "krb=", "libcurl=", "limit-rate=", "local-port=",
	"login-options=", "mail-auth=", "mail-from=", "mail-rcpt=", "max-filesize=", "max-redirs=", "max-time=",
	"netrc-file=", "noproxy=", "oauth2-bearer=", "output=", "output-dir=", "parallel-max=", "pass=",
	"pinnedpubkey=", "preproxy=", "proto=", "proto-default=", "proto-redir=", "proxy=", "proxy-cacert=",
	"proxy-capath=", "proxy-cert=", "proxy-cert-type=", "proxy-ciphers=", "proxy-crlfile=", "proxy-header=",
	"proxy-key=", "proxy-key-type=", "proxy-pass=", "proxy-pinnedpubkey=", "proxy-service-name=",
	"proxy-tls13-ciphers=", "proxy-tlsauthtype=", "proxy-tlspassword=", "proxy-tlsuser=", "proxy-user=",
	"proxy1.0=", "pubkey=", "quote=", "random-file=", "range=", "rate=", "referer=", "request=",
	"request-target=", "resolve=", "retry=", "retry-delay=", "retry-max-time=", "sasl-authzid=",
	"service-name=", "socks4=", "socks4a=", "socks5=", "socks5-gssapi-service=", "socks5-hostname=",
	"speed-limit=", "speed-time=", "stderr=", "telnet-option=", "tftp-blksize=", "time-cond=", "tls-max=",
	"tls13-ciphers=", "tlsauthtype=", "tlspassword=", "tlsuser=", "trace=", "trace-ascii=", "trace-config=",
	"unix-socket=", "upload-file=", "url=", "url-query=", "user=", "user-agent=", "variable=", "write-out=",
	"remote-name", "remote-name-all", "remote-header-name", "location", "silent", "show-error", "fail",
	"include", "head", "insecure", "verbose", "compressed", "globoff", "get", "next", "create-dirs")}

// refineCurl records the files curl writes (-o, -O, cookie jars, traces)
// and reads (uploads, @file data, config and key files).
func refineCurl(c *classCall) {
	c.f.Network = true
	ws := curlArgs.scan(c.args)
	for _, out := range ws.values("o", "output", "c", "cookie-jar", "D", "dump-header", "trace", "trace-ascii",
		"stderr", "libcurl", "etag-save", "hsts", "alt-svc") {
		if out != "-" {
			c.writes(out)
		}
	}
	c.reads(ws.values("T", "upload-file", "K", "config", "E", "cert", "key", "cacert", "netrc-file",
		"etag-compare", "proxy-cacert", "proxy-cert", "proxy-key")...)
	for _, d := range ws.values("d", "data", "data-ascii", "data-binary", "data-urlencode", "json") {
		if i := strings.IndexByte(d, '@'); i >= 0 && !strings.Contains(d[:i], "=") {
			c.reads(d[i+1:])
		}
	}
	for _, form := range ws.values("F", "form") {
		_, v, _ := strings.Cut(form, "=")
		if strings.HasPrefix(v, "@") || strings.HasPrefix(v, "<") {
			file, _, _ := strings.Cut(v[1:], ";")
			c.reads(file)
		}
	}
	for _, jar := range ws.values("b", "cookie") {
		if !strings.Contains(jar, "=") {
			c.reads(jar)
		}
	}
	if ws.has("O", "remote-name", "remote-name-all") {
		dir := ""
		if d := ws.values("output-dir"); len(d) > 0 {
			dir = d[len(d)-1]
		}
		urls := append(ws.operands(), ws.values("url")...)
		for _, u := range urls {
			if name := urlBase(u); name != "" {
				c.writes(joinDir(dir, name))
			}
		}
	}
}

var wgetArgs = argSpec{values: "aBeiOoPtTwQUlARDIXn", long: longs("output-file=", "append-output=", "execute=",
	"input-file=", "base=", "config=", "tries=", "output-document=", "timeout=", "dns-timeout=",
	"connect-timeout=", "read-timeout=", "wait=", "waitretry=", "quota=", "directory-prefix=", "user-agent=",
	"level=", "accept=", "reject=", "domains=", "exclude-domains=", "include-directories=",
	"exclude-directories=", "post-data=", "post-file=", "body-data=", "body-file=", "method=", "header=",
	"load-cookies=", "save-cookies=", "user=", "password=", "http-user=", "http-password=", "ftp-user=",
	"ftp-password=", "proxy-user=", "proxy-password=", "certificate=", "private-key=", "ca-certificate=",
	"ca-directory=", "bind-address=", "limit-rate=", "restrict-file-names=", "referer=", "cut-dirs=",
	"default-page=", "warc-file=", "rejected-log=", "hsts-file=", "recursive", "mirror", "page-requisites",
	"quiet", "verbose", "no-verbose", "continue", "timestamping", "no-clobber", "spider", "background",
	"content-disposition", "no-check-certificate", "force-directories", "no-directories")}

// wgetrcWrites are the wgetrc commands of -e that name a file wget writes,
// with dashes and underscores removed as wget does.
var wgetrcWrites = setOf("outputdocument", "logfile", "dirprefix", "savecookies")

// refineWget records where wget saves: -O, -P, the log and cookie files,
// and otherwise the name it takes from each URL.
func refineWget(c *classCall) {
	c.f.Network = true
	ws := wgetArgs.scan(c.args)
	docs := ws.values("O", "output-document")
	for _, out := range ws.values("o", "output-file", "a", "append-output", "save-cookies", "warc-file", "rejected-log", "hsts-file") {
		c.writes(out)
	}
	for _, cmd := range ws.values("e", "execute") {
		key, value, ok := strings.Cut(cmd, "=")
		key = strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(key))
		if ok && wgetrcWrites[key] {
			value = strings.TrimSpace(value)
			if key == "outputdocument" {
				docs = append(docs, value)
			} else {
				c.writes(value)
			}
		}
	}
	for _, in := range ws.values("i", "input-file") {
		if !strings.Contains(in, "://") {
			c.reads(in)
		}
	}
	c.reads(ws.values("post-file", "body-file", "load-cookies", "config", "certificate", "private-key",
		"ca-certificate")...)
	if len(docs) > 0 {
		for _, d := range docs {
			if d != "-" {
				c.writes(d)
			}
		}
		return
	}
	dir := ""
	if p := ws.values("P", "directory-prefix"); len(p) > 0 {
		dir = p[len(p)-1]
	}
	if ws.has("r", "recursive", "m", "mirror", "p", "page-requisites", "x", "force-directories") {
		if dir == "" {
			dir = "."
		}
		c.writes(dir)
		return
	}
	for _, u := range ws.operands() {
		name := urlBase(u)
		if name == "" {
			name = "index.html"
		}
		c.writes(joinDir(dir, name))
	}
}

// urlBase returns the last segment of a URL's path: the name curl -O and
// wget give the file they save.
func urlBase(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
		slash := strings.IndexByte(u, '/')
		if slash < 0 {
			return ""
		}
		u = u[slash:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if u == "" || strings.HasSuffix(u, "/") {
		return ""
	}
	return path.Base(u)
}

func joinDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// Option parsing.

// optKind says whether a long option takes a value.
type optKind uint8

const (
	optFlag     optKind = iota // --verbose
	optValue                   // --output FILE or --output=FILE
	optOptional                // --in-place or --in-place=SUFFIX, never the next word
)

// longs builds a long option table: a name ending in = takes a value, one
// ending in ? takes an optional attached value.
func longs(names ...string) map[string]optKind {
	m := make(map[string]optKind, len(names))
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "="):
			m[strings.TrimSuffix(n, "=")] = optValue
		case strings.HasSuffix(n, "?"):
			m[strings.TrimSuffix(n, "?")] = optOptional
		default:
			m[n] = optFlag
		}
	}
	return m
}

// argSpec describes a program's options the way getopt_long reads them, so
// that an option's value is never taken for a path. A short option it does
// not list is read as a flag.
type argSpec struct {
	values   string // short options that take a value, attached or as the next word: -n 5, -n5
	optional string // short options whose value, if any, is the rest of the word: sed -i.bak
	digits   string // short options whose value, if any, is the digits that follow: perl -0777, -l
	final    string // short options whose value ends option parsing: python -c CODE ARGS
	long     map[string]optKind
	// posix ends options at the first operand, as a "+" optstring does;
	// otherwise options may follow operands, as GNU tools allow.
	posix bool
	// allow, when set, makes the layout an allowlist: an option it does
	// not list is marked unknown (see options.go).
	allow *allowlist
}

// argWord is one option or operand of a scanned argv.
type argWord struct {
	// opt is the option's name without dashes ("r", "recursive"), an
	// abbreviated long option resolved to its full name; empty for an
	// operand.
	opt      string
	value    string
	hasValue bool
	// text is the word as written; for an operand, the operand.
	text string
	// next is the index in the scanned args just past the word and its
	// value.
	next int
	// unknown marks an option an allowlist does not list, or an
	// ambiguous abbreviation.
	unknown bool
}

type argWords []argWord

// scan splits args into options and operands.
func (s *argSpec) scan(args []string) argWords {
	ws, rest := s.scanHead(args)
	for k := rest; k < len(args); k++ {
		ws = append(ws, argWord{text: args[k], next: k + 1})
	}
	return ws
}

// split is scan for a posix layout, whose operands all come after its
// options: it returns the operands as a slice of args, so that a wrapper
// costs only its own words however long the command it runs.
func (s *argSpec) split(args []string) (argWords, []string) {
	ws, rest := s.scanHead(args)
	return ws, args[rest:]
}

// scanHead reads args up to the point from which every word is an operand
// ("--", the value of a final option, or the first operand of a posix
// layout) and returns what it read and that index.
func (s *argSpec) scanHead(args []string) (argWords, int) {
	var out argWords
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out, i + 1
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			name = s.longName(name)
			w := argWord{opt: name, value: value, hasValue: hasValue, text: a, unknown: !s.knownLong(name)}
			if !hasValue && s.long[name] == optValue && i+1 < len(args) {
				i++
				w.value, w.hasValue = args[i], true
			}
			w.next = i + 1
			out = append(out, w)
		case len(a) > 1 && a[0] == '-':
			final := false
		cluster:
			for j := 1; j < len(a); j++ {
				ch := a[j]
				w := argWord{opt: a[j : j+1], text: a, next: i + 1}
				switch {
				case strings.IndexByte(s.values, ch) >= 0:
					if j+1 < len(a) {
						w.value, w.hasValue = a[j+1:], true
					} else if i+1 < len(args) {
						i++
						w.value, w.hasValue, w.next = args[i], true, i+1
					}
					out = append(out, w)
					final = strings.IndexByte(s.final, ch) >= 0
					break cluster
				case strings.IndexByte(s.optional, ch) >= 0:
					if j+1 < len(a) {
						w.value, w.hasValue = a[j+1:], true
					}
					out = append(out, w)
					break cluster
				case strings.IndexByte(s.digits, ch) >= 0:
					k := j + 1
					for k < len(a) && a[k] >= '0' && a[k] <= '9' {
						k++
					}
					if k > j+1 {
						w.value, w.hasValue = a[j+1:k], true
					}
					out = append(out, w)
					j = k - 1
				case s.allow != nil && s.allow.numeric && ch >= '0' && ch <= '9':
					// -NUM: the rest of the word is the number.
					w.opt, w.value, w.hasValue = "NUM", a[j:], true
					w.unknown = !isDecimal(a[j:])
					out = append(out, w)
					break cluster
				default:
					w.unknown = !s.knownShort(ch)
					out = append(out, w)
				}
			}
			if final {
				return out, i + 1
			}
		case s.posix:
			return out, i
		default:
			out = append(out, argWord{text: a, next: i + 1})
		}
	}
	return out, len(args)
}

// longName resolves an abbreviated long option to the one option it
// abbreviates, as getopt_long does; an unknown or ambiguous name is
// returned as written, since the program would refuse it.
func (s *argSpec) longName(name string) string {
	if _, ok := s.long[name]; ok || name == "" {
		return name
	}
	match := ""
	for full := range s.long {
		if strings.HasPrefix(full, name) {
			if match != "" {
				return name
			}
			match = full
		}
	}
	if match == "" {
		return name
	}
	return match
}

// operands returns the words that are not options, in order.
func (ws argWords) operands() []string {
	var out []string
	for _, w := range ws {
		if w.opt == "" {
			out = append(out, w.text)
		}
	}
	return out
}

// has reports whether any of the named options was given.
func (ws argWords) has(opts ...string) bool {
	for _, w := range ws {
		for _, o := range opts {
			if w.opt != "" && w.opt == o {
				return true
			}
		}
	}
	return false
}

// values returns the values given to any of the named options, in order.
func (ws argWords) values(opts ...string) []string {
	var out []string
	for _, w := range ws {
		for _, o := range opts {
			if w.opt != "" && w.opt == o && w.hasValue {
				out = append(out, w.value)
			}
		}
	}
	return out
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
