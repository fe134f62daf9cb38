package policy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// This file holds the class table: for each program rein knows, the class
// its stages have and which of its arguments are paths. The table is data;
// the per-program refinements read only as much of an argv as the decision
// needs. The readers' refinements follow the table here; each other family
// has a file of its own: classes_text.go (sed, awk, find), classes_write.go,
// classes_git.go, classes_build.go (go, node), classes_interp.go,
// classes_net.go; wrappers.go the exec wrappers; options.go option parsing
// and the allowlists, readonly.go the read-only programs' option lists.

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
	// recorded are the paths recorded so far, by the list they are in, so
	// that a path named twice (by a row's refinement and its allowlist)
	// is recorded once, at the cost of a lookup, not a scan.
	recorded map[*[]string]map[string]bool
}

// record appends p to list unless it is there already.
func (c *classCall) record(list *[]string, p string) {
	if c.recorded == nil {
		c.recorded = map[*[]string]map[string]bool{}
	}
	seen := c.recorded[list]
	if seen == nil {
		seen = map[string]bool{}
		for _, x := range *list {
			seen[x] = true
		}
		c.recorded[list] = seen
	}
	if !seen[p] {
		seen[p] = true
		*list = append(*list, p)
	}
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
		if p != "" && p != "-" {
			c.record(&c.f.Reads, p)
		}
	}
}

func (c *classCall) writes(paths ...string) {
	for _, p := range paths {
		if p != "" {
			c.record(&c.f.Writes, p)
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
	{Names: []string{"ionice"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"ionice", "-c", "3", "ls"}}},
	{Names: []string{"chrt"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"chrt", "-f", "10", "ls"}}},
	{Names: []string{"taskset"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"taskset", "0x1", "ls"}}},
	{Names: []string{"env"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"env", "FOO=1", "ls"}}},
	{Names: []string{"command"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"command", "ls"}}},
	{Names: []string{"builtin"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"builtin", "echo"}}},
	{Names: []string{"exec"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"exec", "ls"}}},
	{Names: []string{"watch"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"watch", "ls"}}},
	{Names: []string{"setsid"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"setsid", "ls"}}},
	{Names: []string{"flock"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"flock", "lock", "ls"}}},
	{Names: []string{"unbuffer"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"unbuffer", "ls"}}},
	{Names: []string{"busybox"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"busybox", "ls"}}},
	{Names: []string{"strace"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"strace", "ls"}}},
	{Names: []string{"ltrace"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"ltrace", "ls"}}},
	{Names: []string{"prlimit"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"prlimit", "--nofile=64", "ls"}}},
	{Names: []string{"fakeroot"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"fakeroot", "ls"}}},
	{Names: []string{"eatmydata"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"eatmydata", "ls"}}},
	{Names: []string{"ssh-agent"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"ssh-agent", "ls"}}},
	{Names: []string{"dbus-run-session"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"dbus-run-session", "ls"}}},
	{Names: []string{"firejail"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"firejail", "--private", "ls"}}},
	{Names: []string{"script"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"script", "-q", "-c", "ls", "/dev/null"}}},
	{Names: []string{"catchsegv"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"catchsegv", "ls"}}},
	{Names: []string{"valgrind"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"valgrind", "--tool=memcheck", "ls"}}},
	{Names: []string{"gdb"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"gdb", "-batch", "-ex", "run", "--args", "ls"}}},
	{Names: []string{"parallel"}, Class: ShellComplex, Reason: "a wrapper that runs another command", Refine: refineWrapper,
		Examples: [][]string{{"parallel", "ls", ":::", "a", "b"}}},

	// Dangerous: escalation, remote access, raw devices.
	{Names: []string{"sudo"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"sudo", "ls"}}},
	{Names: []string{"doas"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"doas", "ls"}}},
	{Names: []string{"su"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"su", "-"}}},
	{Names: []string{"pkexec"}, Class: Dangerous, Reason: "runs a command as another user", Refine: refineWrapper,
		Examples: [][]string{{"pkexec", "ls"}}},
	{Names: []string{"unshare"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"unshare", "-r", "ls"}}},
	{Names: []string{"nsenter"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"nsenter", "-t", "1", "-m", "ls"}}},
	{Names: []string{"chroot"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"chroot", "/srv/jail", "ls"}}},
	{Names: []string{"setpriv"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"setpriv", "--reuid=1000", "ls"}}},
	{Names: []string{"runuser"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"runuser", "-u", "nobody", "ls"}}},
	{Names: []string{"systemd-run"}, Class: Dangerous, Reason: "runs a command with other privileges, namespaces or root directory", Refine: refineWrapper,
		Examples: [][]string{{"systemd-run", "--user", "ls"}}},
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
			switch {
			case strings.ContainsAny(op, "!|"):
				c.raise(ShellComplex, "less runs a command given with +")
			case !lessPlainCommand.MatchString(op):
				// Other commands open files (:e), start the editor (v),
				// save (s) or set options (-o): less's commands are an
				// allowlist too.
				c.raise(Unknown, fmt.Sprintf("less %s runs a command rein does not know to be read-only", op))
			}
			continue
		}
		c.reads(op)
	}
}

// lessPlainCommand are the + commands known to move or search only: a
// line number, the end, follow, or a search on one line.
var lessPlainCommand = regexp.MustCompile(`^\+\+?([0-9]+[gG%pP]?|[gGF]|[/?][^\n\r:!|]*)$`)

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
		// jq reads $ and the name as two tokens: $ ENV, $ # a comment
		// and a newline, ENV.
		f = jqJoinDollar(f)
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

// jqJoinDollar removes the blanks and comments jq allows between a $ and
// the name after it.
func jqJoinDollar(f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		b.WriteByte(f[i])
		if f[i] != '$' {
			continue
		}
		for i+1 < len(f) {
			switch c := f[i+1]; {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				i++
			case c == '#':
				for i+1 < len(f) && f[i+1] != '\n' {
					i++
				}
			default:
				goto next
			}
		}
	next:
	}
	return b.String()
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
