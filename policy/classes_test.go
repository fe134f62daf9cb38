package policy

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// TestClassTableRows runs every row's examples: each must land on its own
// row and get the row's class.
func TestClassTableRows(t *testing.T) {
	for _, row := range classTable {
		t.Run(row.Names[0], func(t *testing.T) {
			if len(row.Examples) == 0 {
				t.Fatal("row has no examples")
			}
			if row.Reason == "" {
				t.Error("row has no reason")
			}
			for _, ex := range row.Examples {
				if got := classRowFor(path.Base(ex[0])); got == nil || got.Names[0] != row.Names[0] {
					t.Errorf("%q is not classified by this row", ex)
					continue
				}
				f := analyze(ex)
				if f.Class != row.Class {
					t.Errorf("analyze(%q) = %s (%s), want %s", ex, f.Class, f.Reason, row.Class)
				}
				if f.Reason == "" {
					t.Errorf("analyze(%q) gives no reason", ex)
				}
			}
		})
	}
}

// TestClassTableNames checks that no program is in two rows, so the order
// of the table never decides a class.
func TestClassTableNames(t *testing.T) {
	seen := map[string]string{}
	for _, row := range classTable {
		for _, n := range row.Names {
			if prev, ok := seen[n]; ok {
				t.Errorf("%s is in the rows of %s and %s", n, prev, row.Names[0])
			}
			seen[n] = row.Names[0]
		}
	}
	for n := range seen {
		if strings.Contains(n, "*") {
			continue
		}
		for _, g := range classRowGlobs {
			for _, pattern := range g.Names {
				if ok, _ := path.Match(pattern, n); ok && strings.Contains(pattern, "*") {
					t.Errorf("%s is also matched by the glob %s", n, pattern)
				}
			}
		}
	}
}

func TestClassification(t *testing.T) {
	cases := []struct {
		argv []string
		want Class
	}{
		// Read-only.
		{[]string{"ls", "-la"}, ReadOnly},
		{[]string{"/bin/ls"}, ReadOnly},
		{[]string{"echo", "rm", "-rf", "/"}, ReadOnly},
		{[]string{"cat", "go.mod"}, ReadOnly},
		{[]string{"/usr/bin/cat", "go.mod"}, ReadOnly},
		{[]string{"head", "-n", "5", "f"}, ReadOnly},
		{[]string{"less", "f"}, ReadOnly},
		{[]string{"wc", "-l", "f"}, ReadOnly},
		{[]string{"grep", "-rn", "TODO", "."}, ReadOnly},
		{[]string{"rg", "TODO"}, ReadOnly},
		{[]string{"sort", "-u", "f"}, ReadOnly},
		{[]string{"diff", "a", "b"}, ReadOnly},
		{[]string{"sha512sum", "f"}, ReadOnly},
		{[]string{"jq", ".", "f"}, ReadOnly},
		{[]string{"sed", "-n", "1,5p", "f"}, ReadOnly},
		{[]string{"sed", "s/we/they/", "f"}, ReadOnly},
		{[]string{"sed", "-e", "s/a/b/g;s/x/y/2", "-e", "/re/d", "f"}, ReadOnly},
		{[]string{"sed", "-n", "$!{h;d};x;G;p", "f"}, ReadOnly},
		{[]string{"sed", "/x/a\\\nwrite this", "f"}, ReadOnly},
		{[]string{"sed", "y/abc/xyz/", "f"}, ReadOnly},
		{[]string{"sed", ":a;N;$!ba;s/\\n/ /g", "f"}, ReadOnly},
		{[]string{"sed", "s|/we|/e|w", "f"}, ShellComplex},
		{[]string{"sed", "r extra.txt", "f"}, ReadOnly},
		{[]string{"awk", "{print $1}", "f"}, ReadOnly},
		{[]string{"awk", "-F", ":", "-v", "n=2", "{print $n}", "f"}, ReadOnly},
		{[]string{"find", ".", "-name", "*.go"}, ReadOnly},
		{[]string{"find", ".", "-name", "-delete"}, ReadOnly},
		{[]string{"find", "-L", ".", "-type", "f", "-print0"}, ReadOnly},
		{[]string{"git", "status"}, ReadOnly},
		{[]string{"git", "diff", "HEAD~1"}, ReadOnly},
		{[]string{"git", "log", "--oneline", "-5"}, ReadOnly},
		{[]string{"git", "show", "HEAD:go.mod"}, ReadOnly},
		{[]string{"git", "ls-files"}, ReadOnly},
		{[]string{"git", "grep", "-n", "TODO"}, ReadOnly},
		{[]string{"git", "grep", "-e", "-O"}, ReadOnly}, // -O is the pattern
		{[]string{"git", "rev-parse", "HEAD"}, ReadOnly},
		{[]string{"git", "blame", "f"}, ReadOnly},
		{[]string{"git", "--no-pager", "log"}, ReadOnly},
		{[]string{"git", "-P", "diff"}, ReadOnly},
		{[]string{"git", "--version"}, ReadOnly},
		{[]string{"git"}, ReadOnly},
		{[]string{"go", "version"}, ReadOnly},
		{[]string{"go", "env", "GOPATH"}, ReadOnly},
		{[]string{"go", "list", "-m"}, ReadOnly},
		{[]string{"go", "list", "-m", "all"}, Unknown},
		{[]string{"go", "list", "-export", "."}, Unknown},
		{[]string{"go", "list", "-m", "-versions", "golang.org/x/sys"}, Unknown},
		{[]string{"go", "list", "-json", "./..."}, ReadOnly},
		{[]string{"go", "doc", "fmt.Println"}, ReadOnly},
		{[]string{"go"}, ReadOnly},

		// Workspace-mutating.
		{[]string{"touch", "a"}, WorkspaceMutating},
		{[]string{"mkdir", "-p", "a/b"}, WorkspaceMutating},
		{[]string{"cp", "-r", "a", "b"}, WorkspaceMutating},
		{[]string{"mv", "a", "b"}, WorkspaceMutating},
		{[]string{"tee", "f"}, WorkspaceMutating},
		{[]string{"sed", "-i", "s/a/b/", "f"}, WorkspaceMutating},
		{[]string{"sed", "-i.bak", "s/a/b/", "f"}, WorkspaceMutating},
		{[]string{"sed", "--in-place", "s/a/b/", "f"}, WorkspaceMutating},
		{[]string{"sed", "-Ei", "s/a/b/", "f"}, WorkspaceMutating},
		{[]string{"rm", "a"}, WorkspaceMutating},
		{[]string{"rm", "-f", "a"}, WorkspaceMutating},
		{[]string{"rm", "-fv", "a"}, WorkspaceMutating},
		{[]string{"rm", "-d", "dir"}, WorkspaceMutating},
		{[]string{"rm", "--", "-r"}, WorkspaceMutating},
		{[]string{"rm", "--force", "--", "--recursive"}, WorkspaceMutating},
		{[]string{"rmdir", "a"}, WorkspaceMutating},
		{[]string{"ln", "-s", "a", "b"}, WorkspaceMutating},
		{[]string{"chmod", "+x", "f"}, WorkspaceMutating},
		{[]string{"sort", "-o", "out", "f"}, WorkspaceMutating},
		{[]string{"uniq", "in", "out"}, WorkspaceMutating},
		{[]string{"xxd", "-r", "dump", "bin"}, WorkspaceMutating},
		{[]string{"less", "-o", "log", "f"}, WorkspaceMutating},
		{[]string{"find", ".", "-fprint", "out"}, WorkspaceMutating},
		{[]string{"find", ".", "-fls", "out"}, WorkspaceMutating},
		{[]string{"git", "add", "."}, WorkspaceMutating},
		{[]string{"git", "commit", "-m", "x"}, WorkspaceMutating},
		{[]string{"git", "checkout", "main"}, WorkspaceMutating},
		{[]string{"git", "switch", "-c", "x"}, WorkspaceMutating},
		{[]string{"git", "stash"}, WorkspaceMutating},
		{[]string{"git", "restore", "f"}, WorkspaceMutating},
		{[]string{"git", "fetch", "origin"}, WorkspaceMutating},
		{[]string{"git", "push"}, WorkspaceMutating},
		{[]string{"git", "push", "origin", "main"}, WorkspaceMutating},
		{[]string{"git", "push", "-o", "force", "origin", "main"}, WorkspaceMutating},
		{[]string{"git", "push", "--no-force-with-lease", "origin"}, WorkspaceMutating},
		{[]string{"git", "reset", "HEAD~1"}, WorkspaceMutating},
		{[]string{"git", "reset", "--", "--hard"}, WorkspaceMutating},
		{[]string{"git", "clean", "-n"}, WorkspaceMutating},
		{[]string{"git", "clean", "-e", "f"}, WorkspaceMutating},
		{[]string{"git", "clean", "-ef"}, WorkspaceMutating},
		{[]string{"git", "log", "--output=out"}, WorkspaceMutating},
		{[]string{"git", "diff", "--output", "out"}, WorkspaceMutating},
		{[]string{"git", "log", "--", "--output=out"}, ReadOnly},
		{[]string{"go", "build", "./..."}, WorkspaceMutating},
		{[]string{"go", "test", "-run", "TestX", "./..."}, WorkspaceMutating},
		{[]string{"go", "vet", "./..."}, WorkspaceMutating},
		{[]string{"go", "run", ".", "-exec", "x"}, WorkspaceMutating},
		{[]string{"go", "generate", "./..."}, WorkspaceMutating},
		{[]string{"go", "mod", "tidy"}, WorkspaceMutating},
		{[]string{"go", "-C", "sub", "build"}, WorkspaceMutating},
		{[]string{"make", "test"}, WorkspaceMutating},
		{[]string{"pytest"}, WorkspaceMutating},
		{[]string{"cargo", "test"}, WorkspaceMutating},
		{[]string{"npm", "test"}, WorkspaceMutating},
		{[]string{"npm", "run", "build"}, WorkspaceMutating},
		{[]string{"npm", "--prefix", "web", "run", "build"}, WorkspaceMutating},
		{[]string{"pnpm", "test"}, WorkspaceMutating},
		{[]string{"curl", "https://example.com"}, WorkspaceMutating},
		{[]string{"wget", "https://example.com"}, WorkspaceMutating},

		// Unknown.
		{[]string{"frobnicate"}, Unknown},
		{[]string{"./script.sh"}, Unknown},
		{[]string{"RM", "-rf", "x"}, Unknown},
		{nil, Unknown},
		{[]string{""}, Unknown},
		{[]string{"bash", "script.sh"}, Unknown},
		{[]string{"sh", "-e", "x.sh", "arg"}, Unknown},
		{[]string{"bash", "--version"}, Unknown},
		{[]string{"python3", "script.py", "-c", "x"}, Unknown},
		{[]string{"python3", "--version"}, Unknown},
		{[]string{"node", "--inspect", "index.js"}, Unknown},
		{[]string{"perl", "-w", "x.pl"}, Unknown},
		{[]string{"ruby", "x.rb"}, Unknown},
		{[]string{"php", "-f", "x.php"}, Unknown},
		{[]string{"php", "-S", "localhost:8000"}, Unknown},
		{[]string{"git", "branch"}, Unknown},
		{[]string{"git", "tag", "v1"}, Unknown},
		{[]string{"git", "remote", "-v"}, Unknown},
		{[]string{"git", "config", "user.name"}, Unknown},
		{[]string{"git", "config", "--get", "user.name"}, Unknown},
		{[]string{"git", "config", "get", "user.name"}, Unknown},
		{[]string{"git", "cat-file", "-p", "HEAD"}, Unknown},
		{[]string{"go", "tool", "pprof"}, Unknown},
		{[]string{"npm", "view", "react"}, Unknown},
		{[]string{"sed", "-f", "script.sed", "f"}, Unknown},
		{[]string{"awk", "-f", "prog.awk", "f"}, Unknown},
		{[]string{"env"}, Unknown},
		{[]string{"command", "-v", "rm"}, Unknown},

		// Shell-complex.
		{[]string{"bash", "-c", "ls"}, ShellComplex},
		{[]string{"bash", "-lc", "ls"}, ShellComplex},
		{[]string{"bash", "-xec", "ls"}, ShellComplex},
		{[]string{"bash", "-o", "pipefail", "-c", "ls"}, ShellComplex},
		{[]string{"bash", "-c"}, ShellComplex},
		{[]string{"bash", "-c", "echo $HOME"}, ShellComplex},
		{[]string{"bash"}, ShellComplex},
		{[]string{"bash", "-s", "arg"}, ShellComplex},
		{[]string{"bash", "-i"}, ShellComplex},
		{[]string{"sh", "-"}, ShellComplex},
		{[]string{"/bin/sh", "-c", "ls"}, ShellComplex},
		{[]string{"zsh", "-c", "ls"}, ShellComplex},
		{[]string{"dash", "-c", "ls"}, ShellComplex},
		{[]string{"ksh", "-c", "ls"}, ShellComplex},
		{[]string{"python3", "-c", "x"}, ShellComplex},
		{[]string{"python", "-uc", "x"}, ShellComplex},
		{[]string{"python3.12", "-m", "http.server"}, ShellComplex},
		{[]string{"python3"}, ShellComplex},
		{[]string{"python3", "-"}, ShellComplex},
		{[]string{"node", "-e", "x"}, ShellComplex},
		{[]string{"node", "--eval=x"}, ShellComplex},
		{[]string{"node", "-p", "1+1"}, ShellComplex},
		{[]string{"node", "-r", "ts-node/register", "x.ts"}, ShellComplex},
		{[]string{"node", "-c", "x.js"}, ShellComplex},
		{[]string{"node"}, ShellComplex},
		{[]string{"perl", "-e", "print 1"}, ShellComplex},
		{[]string{"perl", "-lane", "print $F[0]", "f"}, ShellComplex},
		{[]string{"perl", "-MPOSIX", "x.pl"}, ShellComplex},
		{[]string{"ruby", "-e", "puts 1"}, ShellComplex},
		{[]string{"ruby", "-rjson", "x.rb"}, ShellComplex},
		{[]string{"php", "-r", "echo 1;"}, ShellComplex},
		{[]string{"php", "-m"}, ShellComplex},
		{[]string{"awk", "BEGIN{system(\"x\")}"}, ShellComplex},
		{[]string{"awk", "{print > \"f\"}"}, ShellComplex},
		{[]string{"awk", "{print | \"sh\"}"}, ShellComplex},
		{[]string{"awk", "{\"date\" | getline d}"}, ShellComplex},
		{[]string{"gawk", "-e", "BEGIN{system(\"x\")}"}, ShellComplex},
		{[]string{"gawk", "-l", "filefuncs", "{print}"}, ShellComplex},
		{[]string{"awk", "$1 > 5", "f"}, ShellComplex},
		{[]string{"sed", "s/a/b/e", "f"}, ShellComplex},
		{[]string{"sed", "-n", "w out", "f"}, ShellComplex},
		{[]string{"sed", "-n", "/x/w out", "f"}, ShellComplex},
		{[]string{"sed", "s/a/b/gw out", "f"}, ShellComplex},
		{[]string{"sed", "W out", "f"}, ShellComplex},
		{[]string{"sed", "1e ls", "f"}, ShellComplex},
		{[]string{"sed", "-e", "p", "-e", "e ls", "f"}, ShellComplex},
		{[]string{"sed", "k", "f"}, ShellComplex},
		{[]string{"sed", "s/a/b", "f"}, ShellComplex},
		{[]string{"sed", "-f", "-", "f"}, ShellComplex},
		{[]string{"find", ".", "-exec", "ls", "{}", ";"}, ShellComplex},
		{[]string{"find", ".", "-execdir", "ls", "{}", "+"}, ShellComplex},
		{[]string{"find", ".", "-ok", "ls", ";"}, ShellComplex},
		{[]string{"find", ".", "-okdir", "ls", ";"}, ShellComplex},
		{[]string{"find", ".", "-exec", "echo", "-delete", ";"}, ShellComplex},
		{[]string{"xargs", "-0", "ls"}, ShellComplex},
		{[]string{"xargs", "-n1", "echo"}, ShellComplex},
		{[]string{"env", "FOO=1", "ls"}, ShellComplex},
		{[]string{"ionice", "-c3", "ls"}, ShellComplex},
		{[]string{"command", "ls"}, ShellComplex},
		{[]string{"watch", "ls"}, ShellComplex},
		{[]string{"setsid", "ls"}, ShellComplex},
		{[]string{"flock", "lock", "ls"}, ShellComplex},
		{[]string{"flock", "lock", "-c", "echo $X"}, ShellComplex},
		{[]string{"unbuffer", "ls"}, ShellComplex},
		{[]string{"busybox", "ls"}, ShellComplex},
		{[]string{"strace", "ls"}, ShellComplex},
		{[]string{"strace", "-p", "1"}, ShellComplex},
		{[]string{"ltrace", "ls"}, ShellComplex},
		{[]string{"git", "-c", "core.pager=x", "log"}, ShellComplex},
		{[]string{"git", "-C", "dir", "status"}, ShellComplex},
		{[]string{"git", "--git-dir=x", "log"}, ShellComplex},
		{[]string{"git", "--git-dir", "x", "log"}, ShellComplex},
		{[]string{"git", "--work-tree", "x", "status"}, ShellComplex},
		{[]string{"git", "--exec-path=x", "status"}, ShellComplex},
		{[]string{"git", "--exec-path"}, ShellComplex},
		{[]string{"git", "-p", "log"}, ShellComplex},
		{[]string{"git", "--paginate", "log"}, ShellComplex},
		{[]string{"git", "--config-env=core.pager=PAGER", "log"}, ShellComplex},
		{[]string{"git", "--bare", "log"}, ShellComplex},
		{[]string{"git", "--frobnicate", "status"}, ShellComplex},
		{[]string{"git", "grep", "-O", "x"}, ShellComplex},
		{[]string{"git", "grep", "-Ovim", "x"}, ShellComplex},
		{[]string{"git", "grep", "-nO", "x"}, ShellComplex},
		{[]string{"git", "grep", "--open-files-in-pager", "x"}, ShellComplex},
		{[]string{"git", "grep", "--open", "x"}, ShellComplex},
		{[]string{"git", "st"}, ShellComplex},
		{[]string{"git", "frobnicate"}, ShellComplex},
		{[]string{"git", "filter-branch", "--tree-filter", "x"}, ShellComplex},
		{[]string{"git", "difftool"}, ShellComplex},
		{[]string{"git", "mergetool"}, ShellComplex},
		{[]string{"git", "rebase", "-x", "make", "main"}, ShellComplex},
		{[]string{"git", "rebase", "-ix", "make", "main"}, ShellComplex},
		{[]string{"git", "rebase", "--exec=make", "main"}, ShellComplex},
		{[]string{"git", "bisect", "run", "make"}, ShellComplex},
		{[]string{"git", "submodule", "--quiet", "foreach", "ls"}, ShellComplex},
		{[]string{"git", "config", "core.pager", "less"}, ShellComplex},
		{[]string{"git", "config", "--global", "alias.x", "!sh"}, ShellComplex},
		{[]string{"git", "config", "--unset", "core.pager"}, ShellComplex},
		{[]string{"git", "config", "set", "core.pager", "x"}, ShellComplex},
		{[]string{"git", "clone", "-c", "core.sshCommand=x", "url"}, ShellComplex},
		{[]string{"git", "clone", "--template=t", "url"}, ShellComplex},
		{[]string{"git", "init", "--template", "t"}, ShellComplex},
		{[]string{"git", "-c", "x=y", "status"}, ShellComplex},
		{[]string{"npx", "prettier"}, ShellComplex},
		{[]string{"npm", "exec", "x"}, ShellComplex},
		{[]string{"npm", "x", "y"}, ShellComplex},
		{[]string{"pnpm", "dlx", "x"}, ShellComplex},
		{[]string{"pnpm", "exec", "x"}, ShellComplex},
		{[]string{"yarn", "dlx", "x"}, ShellComplex},
		{[]string{"rg", "--pre", "cat", "x"}, ShellComplex},
		{[]string{"rg", "--pre=cat", "x"}, ShellComplex},
		{[]string{"rg", "--hostname-bin", "x", "y"}, ShellComplex},
		{[]string{"sort", "--compress-program=gzip", "f"}, ShellComplex},
		{[]string{"go", "test", "-exec", "x", "./..."}, ShellComplex},
		{[]string{"go", "build", "-toolexec=x"}, ShellComplex},
		{[]string{"go", "vet", "-vettool", "x"}, ShellComplex},
		{[]string{"go", "env", "-w", "GOFLAGS=x"}, ShellComplex},
		{[]string{"install", "--strip-program=x", "-s", "a", "b"}, ShellComplex},
		{[]string{"less", "+!ls", "f"}, ShellComplex},

		// Dangerous.
		{[]string{"rm", "-r", "x"}, Dangerous},
		{[]string{"rm", "-R", "x"}, Dangerous},
		{[]string{"rm", "-rf", "x"}, Dangerous},
		{[]string{"rm", "-fr", "x"}, Dangerous},
		{[]string{"rm", "-Rf", "x"}, Dangerous},
		{[]string{"rm", "-vfr", "x"}, Dangerous},
		{[]string{"rm", "-f", "-r", "x"}, Dangerous},
		{[]string{"rm", "x", "-r"}, Dangerous},
		{[]string{"rm", "--recursive", "x"}, Dangerous},
		{[]string{"rm", "--recursive=always", "x"}, Dangerous},
		{[]string{"rm", "--recursively", "x"}, Dangerous},
		{[]string{"rm", "--rec", "x"}, Dangerous},
		{[]string{"rm", "--r", "x"}, Dangerous},
		{[]string{"/bin/rm", "-rf", "x"}, Dangerous},
		{[]string{"rm", "--no-preserve-root", "x"}, Dangerous},
		{[]string{"find", ".", "-delete"}, Dangerous},
		{[]string{"find", ".", "-name", "*.o", "-delete"}, Dangerous},
		{[]string{"find", ".", "-exec", "rm", "-rf", "{}", "+"}, Dangerous},
		{[]string{"git", "push", "--force"}, Dangerous},
		{[]string{"git", "push", "-f"}, Dangerous},
		{[]string{"git", "push", "-uf", "origin", "x"}, Dangerous},
		{[]string{"git", "push", "origin", "main", "--force"}, Dangerous},
		{[]string{"git", "push", "--force-with-lease"}, Dangerous},
		{[]string{"git", "push", "--force-with-lease=main:abc"}, Dangerous},
		{[]string{"git", "push", "--force-if-includes"}, Dangerous},
		{[]string{"git", "push", "--forc"}, Dangerous},
		{[]string{"git", "push", "origin", "+main"}, Dangerous},
		{[]string{"git", "push", "origin", "+HEAD:refs/heads/main"}, Dangerous},
		{[]string{"git", "push", "--mirror"}, Dangerous},
		{[]string{"git", "-C", "x", "push", "-f"}, Dangerous},
		{[]string{"git", "reset", "--hard"}, Dangerous},
		{[]string{"git", "reset", "--hard", "HEAD"}, Dangerous},
		{[]string{"git", "reset", "--ha"}, Dangerous},
		{[]string{"git", "reset", "-q", "--hard", "origin/main"}, Dangerous},
		{[]string{"git", "clean", "-f"}, Dangerous},
		{[]string{"git", "clean", "-fd"}, Dangerous},
		{[]string{"git", "clean", "-xdf"}, Dangerous},
		{[]string{"git", "clean", "-xf"}, Dangerous},
		{[]string{"git", "clean", "-d", "-f"}, Dangerous},
		{[]string{"git", "clean", "--force"}, Dangerous},
		{[]string{"git", "clean", "--for"}, Dangerous},
		{[]string{"git", "fetch", "--upload-pack=x"}, Dangerous},
		{[]string{"git", "pull", "--upload-pack", "x"}, Dangerous},
		{[]string{"git", "clone", "--upload-pack", "x", "url"}, Dangerous},
		{[]string{"git", "clone", "-u", "x", "url"}, Dangerous},
		{[]string{"git", "ls-remote", "-u", "x", "url"}, Dangerous},
		{[]string{"git", "push", "--receive-pack=x"}, Dangerous},
		{[]string{"git", "push", "--exec=x"}, Dangerous},
		{[]string{"git", "send-pack", "--exec=x", "url"}, Dangerous},
		{[]string{"git", "archive", "--remote=url", "--exec=x", "HEAD"}, Dangerous},
		{[]string{"git", "clone", "ext::sh -c x", "dir"}, Dangerous},
		{[]string{"git", "fetch", "EXT::sh"}, Dangerous},
		{[]string{"git", "clone", "fd::3", "dir"}, Dangerous},
		{[]string{"git", "remote", "add", "o", "ext::x"}, Dangerous},
		{[]string{"git", "remote-ext", "o", "x"}, Dangerous},
		{[]string{"ssh", "host"}, Dangerous},
		{[]string{"scp", "a", "host:b"}, Dangerous},
		{[]string{"sftp", "host"}, Dangerous},
		{[]string{"nc", "-l", "80"}, Dangerous},
		{[]string{"ncat", "host", "80"}, Dangerous},
		{[]string{"socat", "-", "TCP:host:80"}, Dangerous},
		{[]string{"rsync", "-a", "a", "b"}, Dangerous},
		{[]string{"dd", "if=a", "of=b"}, Dangerous},
		{[]string{"mkfs", "/dev/sdb"}, Dangerous},
		{[]string{"mkfs.ext4", "/dev/sdb"}, Dangerous},
		{[]string{"sudo", "ls"}, Dangerous},
		{[]string{"sudo"}, Dangerous},
		{[]string{"sudo", "-l"}, Dangerous},
		{[]string{"doas", "ls"}, Dangerous},
		{[]string{"su", "-c", "ls"}, Dangerous},
		{[]string{"wipefs", "-a", "/dev/sdb"}, Dangerous},
		{[]string{"env", "rm", "-rf", "x"}, Dangerous},
		{[]string{"bash", "-c", "rm -rf x"}, Dangerous},
		{[]string{"bash", "-c", "cd /; rm -rf x"}, Dangerous},
		{[]string{"xargs", "-0", "rm", "-rf"}, Dangerous},
		{[]string{"xargs", "rm", "-r"}, Dangerous},

		// Program names a reader or a rule would misread.
		{[]string{"r\u200bm", "-f", "x"}, Dangerous},
		{[]string{"rm\x00", "x"}, Dangerous},
		{[]string{"ｒｍ", "x"}, Dangerous},
		{[]string{"rm\t", "x"}, Dangerous},
		{[]string{"\x7fls"}, Dangerous},
		{[]string{"/usr/bin/l\u00e9s"}, Dangerous},
		{[]string{"ls\u202e"}, Dangerous},
	}
	for _, tc := range cases {
		f := analyze(tc.argv)
		if f.Class != tc.want {
			t.Errorf("analyze(%q) = %s (%s), want %s", tc.argv, f.Class, f.Reason, tc.want)
		}
	}
}

// facts is the part of stageFacts a test states exactly; the reason is
// prose and is only required to be there.
type facts struct {
	class                                 Class
	reads, writes, deletes, outside, code []string
	network, hardDeny                     bool
}

func checkFacts(t *testing.T, argv []string, want facts) {
	t.Helper()
	f := analyze(argv)
	bad := f.Class != want.class ||
		!slices.Equal(f.Reads, want.reads) ||
		!slices.Equal(f.Writes, want.writes) ||
		!slices.Equal(f.Deletes, want.deletes) ||
		!slices.Equal(f.OutsideDangerous, want.outside) ||
		!slices.Equal(f.Inline, want.code) ||
		f.Network != want.network ||
		(f.HardDeny != "") != want.hardDeny
	if bad {
		t.Errorf("analyze(%q)\n got class=%s reads=%q writes=%q deletes=%q outside=%q inline=%q network=%v hardDeny=%q\nwant class=%s reads=%q writes=%q deletes=%q outside=%q inline=%q network=%v hardDeny=%v",
			argv, f.Class, f.Reads, f.Writes, f.Deletes, f.OutsideDangerous, f.Inline, f.Network, f.HardDeny,
			want.class, want.reads, want.writes, want.deletes, want.outside, want.code, want.network, want.hardDeny)
	}
	if f.Reason == "" {
		t.Errorf("analyze(%q) gives no reason", argv)
	}
}

func l(s ...string) []string { return s }

func TestClassFacts(t *testing.T) {
	const (
		R = ReadOnly
		M = WorkspaceMutating
		U = Unknown
		S = ShellComplex
		D = Dangerous
	)
	cases := []struct {
		argv []string
		want facts
	}{
		// Readers.
		{l("cat", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("cat", "-", "a"), facts{class: R, reads: l("a")}},
		{l("cat", "-n", "--", "-b"), facts{class: R, reads: l("-b")}},
		{l("head", "-n", "5", "f"), facts{class: R, reads: l("f")}},
		{l("head", "-n5", "-c", "10", "f"), facts{class: R, reads: l("f")}},
		{l("head", "-5", "f"), facts{class: R, reads: l("f")}},
		{l("tail", "-n", "+3", "-f", "f"), facts{class: R, reads: l("f")}},
		{l("tail", "--lines", "3", "f"), facts{class: R, reads: l("f")}},
		{l("less", "+G", "f"), facts{class: R, reads: l("f")}},
		{l("less", "-o", "log", "f"), facts{class: M, reads: l("f"), writes: l("log")}},
		{l("more", "-n", "5", "+/x", "f"), facts{class: R, reads: l("f")}},
		{l("wc", "-l", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("wc", "--files0-from=list"), facts{class: U, reads: l("list")}},
		{l("grep", "PAT", "f", "g"), facts{class: R, reads: l("f", "g")}},
		{l("grep", "-e", "PAT", "f", "g"), facts{class: R, reads: l("f", "g")}},
		{l("grep", "-ePAT", "f"), facts{class: R, reads: l("f")}},
		{l("grep", "--regexp=PAT", "f"), facts{class: R, reads: l("f")}},
		{l("grep", "-f", "pats", "f"), facts{class: R, reads: l("pats", "f")}},
		{l("grep", "-rn", "TODO", "src"), facts{class: R, reads: l("src")}},
		{l("grep", "-A", "3", "-m", "1", "x", "f"), facts{class: R, reads: l("f")}},
		{l("grep", "--exclude-from=ex", "x", "f"), facts{class: R, reads: l("ex", "f")}},
		{l("grep", "x", "f", "-i"), facts{class: R, reads: l("f")}},
		{l("grep", "--", "-x", "f"), facts{class: R, reads: l("f")}},
		{l("egrep", "a|b", "f"), facts{class: R, reads: l("f")}},
		{l("rg", "x"), facts{class: R}},
		{l("rg", "-e", "x", "src"), facts{class: R, reads: l("src")}},
		{l("rg", "-g", "*.go", "-t", "go", "x", "src"), facts{class: R, reads: l("src")}},
		{l("rg", "--files", "src"), facts{class: R, reads: l("src")}},
		{l("rg", "-f", "p", "src"), facts{class: R, reads: l("p", "src")}},
		{l("rg", "--pre", "cat", "x", "src"), facts{class: S, reads: l("src")}},
		{l("sort", "-k", "2", "-t", ",", "f"), facts{class: R, reads: l("f")}},
		{l("sort", "-rnk2", "f"), facts{class: R, reads: l("f")}},
		{l("sort", "-o", "out", "f"), facts{class: M, reads: l("f"), writes: l("out")}},
		{l("sort", "--output=out", "f"), facts{class: M, reads: l("f"), writes: l("out")}},
		{l("diff", "-u", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("diff", "-r", "-x", "pat", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("diff", "-X", "ex", "a", "b"), facts{class: R, reads: l("ex", "a", "b")}},
		{l("cmp", "a", "b", "10", "20"), facts{class: R, reads: l("a", "b")}},
		{l("cmp", "-n", "5", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("stat", "-c", "%s", "f"), facts{class: R, reads: l("f")}},
		{l("file", "-m", "magic", "f"), facts{class: R, reads: l("magic", "f")}},
		{l("strings", "-n", "8", "f"), facts{class: R, reads: l("f")}},
		{l("od", "-A", "x", "-t", "x1z", "f"), facts{class: R, reads: l("f")}},
		{l("xxd", "-s", "10", "-l", "64", "a"), facts{class: R, reads: l("a")}},
		{l("xxd", "-r", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("base64", "-w", "0", "f"), facts{class: R, reads: l("f")}},
		{l("sha256sum", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("md5sum", "-c", "sums"), facts{class: U, reads: l("sums")}},
		{l("cut", "-d", ":", "-f", "1", "f"), facts{class: R, reads: l("f")}},
		{l("uniq", "-c", "a"), facts{class: R, reads: l("a")}},
		{l("uniq", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("jq", ".x", "f"), facts{class: R, reads: l("f")}},
		{l("jq", "-r", ".x", "f", "g"), facts{class: R, reads: l("f", "g")}},
		{l("jq", "-n", "--arg", "a", "b", ".x"), facts{class: R}},
		{l("jq", "--slurpfile", "v", "s.json", ".", "f"), facts{class: R, reads: l("s.json", "f")}},
		{l("jq", "-f", "prog.jq", "f"), facts{class: U, reads: l("prog.jq", "f")}},
		{l("jq", "-n", ".", "--args", "a", "b"), facts{class: R}},

		// Writers.
		{l("cp", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("cp", "a", "b", "dir"), facts{class: M, reads: l("a", "b"), writes: l("dir")}},
		{l("cp", "-t", "dir", "a", "b"), facts{class: M, reads: l("a", "b"), writes: l("dir")}},
		{l("cp", "--target-directory=dir", "a"), facts{class: M, reads: l("a"), writes: l("dir")}},
		{l("cp", "-S", ".bak", "-r", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("cp", "a"), facts{class: M, reads: l("a")}},
		{l("mv", "a", "b"), facts{class: M, reads: l("a"), writes: l("b"), deletes: l("a")}},
		{l("mv", "-t", "dir", "a", "b"), facts{class: M, reads: l("a", "b"), writes: l("dir"), deletes: l("a", "b")}},
		{l("install", "-m", "755", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("install", "-d", "x", "y"), facts{class: M, writes: l("x", "y")}},
		{l("tee", "-a", "f", "g"), facts{class: M, writes: l("f", "g")}},
		{l("touch", "-r", "ref", "f"), facts{class: M, reads: l("ref"), writes: l("f")}},
		{l("touch", "-d", "2020-01-01", "f"), facts{class: M, writes: l("f")}},
		{l("mkdir", "-p", "-m", "755", "a"), facts{class: M, writes: l("a")}},
		{l("truncate", "-s", "0", "f"), facts{class: M, writes: l("f")}},
		{l("rm", "a", "b"), facts{class: M, deletes: l("a", "b"), outside: l("a", "b")}},
		{l("rm", "--", "-r"), facts{class: M, deletes: l("-r"), outside: l("-r")}},
		{l("rm", "-rf", "/"), facts{class: D, deletes: l("/"), outside: l("/")}},
		{l("rmdir", "-p", "a/b"), facts{class: M, deletes: l("a/b")}},
		{l("unlink", "a"), facts{class: M, deletes: l("a")}},
		{l("shred", "-u", "-n", "3", "f"), facts{class: M, deletes: l("f"), outside: l("f")}},
		{l("ln", "-s", "t", "l"), facts{class: M, writes: l("l", "t", "l/t"), outside: l("t", "l/t", "l")}},
		{l("ln", "t", "l"), facts{class: M, reads: l("t"), writes: l("t", "l")}},
		{l("ln", "-s", "/etc/passwd"), facts{class: M, writes: l("passwd", "/etc/passwd"), outside: l("/etc/passwd", "passwd")}},
		{l("ln", "-sf", "-t", "dir", "a", "b"), facts{class: M, writes: l("dir", "dir/a", "dir/b"), outside: l("dir/a", "dir/b", "dir")}},
		{l("chmod", "755", "f"), facts{class: M, writes: l("f"), outside: l("f")}},
		{l("chmod", "-w", "f"), facts{class: M, writes: l("f"), outside: l("f")}},
		{l("chmod", "-R", "u+x", "d"), facts{class: M, writes: l("d"), outside: l("d")}},
		{l("chmod", "--reference=r", "f"), facts{class: M, reads: l("r"), writes: l("f"), outside: l("f")}},
		{l("chmod", "--", "-x", "f"), facts{class: M, writes: l("f"), outside: l("f")}},
		{l("chown", "-R", "u:g", "d"), facts{class: M, writes: l("d"), outside: l("d")}},
		{l("chown", "--reference", "r", "f"), facts{class: M, reads: l("r"), writes: l("f"), outside: l("f")}},
		{l("chgrp", "g", "f"), facts{class: M, writes: l("f"), outside: l("f")}},
		{l("dd", "if=a", "of=b", "bs=1M"), facts{class: D, reads: l("a"), writes: l("b")}},
		{l("dd", "if=img", "of=/dev/sda"), facts{class: D, reads: l("img"), writes: l("/dev/sda"), hardDeny: true}},
		{l("dd", "of=//dev/sda"), facts{class: D, writes: l("//dev/sda"), hardDeny: true}},
		{l("dd", "of=/dev/../dev/nvme0n1"), facts{class: D, writes: l("/dev/../dev/nvme0n1"), hardDeny: true}},
		{l("dd", "if=f", "of=/dev/null"), facts{class: D, reads: l("f"), writes: l("/dev/null")}},
		{l("dd", "if=f", "of=/dev/stdout"), facts{class: D, reads: l("f"), writes: l("/dev/stdout")}},
		{l("mkfs.ext4", "/dev/sdb1"), facts{class: D, hardDeny: true}},
		{l("mkfs", "-t", "vfat", "/dev/sdb1"), facts{class: D, hardDeny: true}},

		// Programs carrying programs.
		{l("sed", "-i", "s/a/b/", "f"), facts{class: M, reads: l("f"), writes: l("f"), code: l("s/a/b/")}},
		{l("sed", "-ie", "s/a/b/", "f"), facts{class: M, reads: l("f"), writes: l("f"), code: l("s/a/b/")}},
		{l("sed", "-n", "p", "f", "g"), facts{class: R, reads: l("f", "g"), code: l("p")}},
		{l("sed", "-e", "p", "-e", "w out", "f"), facts{class: S, reads: l("f"), writes: l("out"), code: l("p", "w out")}},
		{l("sed", "r extra", "f"), facts{class: R, reads: l("extra", "f"), code: l("r extra")}},
		{l("sed", "s/a/b/w out", "f"), facts{class: S, reads: l("f"), writes: l("out"), code: l("s/a/b/w out")}},
		{l("sed", "-f", "s.sed", "f"), facts{class: U, reads: l("s.sed", "f")}},
		{l("awk", "{print $1}", "f"), facts{class: R, reads: l("f"), code: l("{print $1}")}},
		{l("awk", "-F", ":", "-v", "x=1", "p", "a=1", "f"), facts{class: R, reads: l("f"), code: l("p")}},
		{l("awk", "-f", "p.awk", "f"), facts{class: U, reads: l("p.awk", "f")}},
		{l("awk", "{print > \"/etc/x\"}"), facts{class: S, code: l("{print > \"/etc/x\"}")}},
		{l("find", ".", "-fprint", "out"), facts{class: M, reads: l("."), writes: l("out")}},
		{l("find", ".", "-fprintf", "out", "%p"), facts{class: M, reads: l("."), writes: l("out")}},
		{l("find", ".", "-files0-from", "list"), facts{class: U, reads: l(".", "list")}},
		{l("find", ".", "-exec", "cp", "{}", "/tmp/x", ";"), facts{class: S, reads: l("."), writes: l("/tmp/x")}},
		{l("find", ".", "-exec", "rm", "{}", "+"), facts{class: S, reads: l(".")}},
		{l("find", ".", "-exec", "sh", "-c", "cat {} > /tmp/out", ";"), facts{class: S, reads: l("."), writes: l("/tmp/out"), code: l("cat {} > /tmp/out")}},
		{l("python3", "-c", "import os"), facts{class: S, code: l("import os")}},
		{l("python3", "-cimport os", "a"), facts{class: S, code: l("import os")}},
		{l("python3", "-m", "http.server", "8000"), facts{class: S}},
		{l("node", "-e", "x"), facts{class: S, code: l("x")}},
		{l("node", "--print=1+1"), facts{class: S, code: l("1+1")}},
		{l("node", "--env-file", ".env", "app.js"), facts{class: U, reads: l(".env")}},
		{l("perl", "-ne", "print", "f"), facts{class: S, reads: l("f"), code: l("print")}},
		{l("perl", "-pi", "-e", "s/a/b/", "f"), facts{class: S, reads: l("f"), writes: l("f"), code: l("s/a/b/")}},
		{l("perl", "-0777", "-ne", "print", "f"), facts{class: S, reads: l("f"), code: l("print")}},
		{l("perl", "-e", "print", "arg"), facts{class: S, code: l("print")}},
		{l("ruby", "-e", "puts 1"), facts{class: S, code: l("puts 1")}},
		{l("php", "-r", "echo 1;"), facts{class: S, code: l("echo 1;")}},
		{l("bash", "-c", "cat a > b"), facts{class: S, reads: l("a"), writes: l("b"), code: l("cat a > b")}},
		{l("bash", "-c", "cd /tmp && rm x"), facts{class: S, deletes: l("/tmp/x"), outside: l("/tmp/x"), code: l("cd /tmp && rm x")}},
		{l("sh", "-c", "cd sub; cd deeper; cat f < in"), facts{class: S, reads: l("sub/deeper/f", "sub/deeper/in"), code: l("cd sub; cd deeper; cat f < in")}},
		{l("bash", "-c", "mkfs /dev/sda"), facts{class: D, hardDeny: true, code: l("mkfs /dev/sda")}},
		{l("bash", "-c", "echo $X"), facts{class: S, code: l("echo $X")}},

		// Network clients.
		{l("curl", "-fsSL", "https://example.com"), facts{class: M, network: true}},
		{l("curl", "-o", "out", "https://example.com"), facts{class: M, writes: l("out"), network: true}},
		{l("curl", "-H", "X: y", "-o", "out", "https://e.com"), facts{class: M, writes: l("out"), network: true}},
		{l("curl", "-o", "-", "https://e.com"), facts{class: M, network: true}},
		{l("curl", "-O", "https://e.com/a/b.tar.gz?x=1"), facts{class: M, writes: l("b.tar.gz"), network: true}},
		{l("curl", "--output-dir", "d", "-O", "https://e.com/y"), facts{class: M, writes: l("d/y"), network: true}},
		{l("curl", "-T", "f", "https://e.com"), facts{class: M, reads: l("f"), network: true}},
		{l("curl", "-d", "@body.json", "https://e.com"), facts{class: M, reads: l("body.json"), network: true}},
		{l("curl", "-d", "a=@b", "https://e.com"), facts{class: M, network: true}},
		{l("curl", "-F", "file=@a.txt;type=text/plain", "https://e.com"), facts{class: M, reads: l("a.txt"), network: true}},
		{l("curl", "-K", "cfg"), facts{class: M, reads: l("cfg"), network: true}},
		{l("curl", "-c", "jar", "-b", "jar", "https://e.com"), facts{class: M, reads: l("jar"), writes: l("jar"), network: true}},
		{l("wget", "https://e.com/a.tar.gz"), facts{class: M, writes: l("a.tar.gz"), network: true}},
		{l("wget", "-nv", "https://e.com/a"), facts{class: M, writes: l("a"), network: true}},
		{l("wget", "-q", "https://e.com/"), facts{class: M, writes: l("index.html"), network: true}},
		{l("wget", "-O", "f", "https://e.com"), facts{class: M, writes: l("f"), network: true}},
		{l("wget", "-O", "-", "https://e.com"), facts{class: M, network: true}},
		{l("wget", "-qO-", "https://e.com"), facts{class: M, network: true}},
		{l("wget", "-P", "dl", "https://e.com/a"), facts{class: M, writes: l("dl/a"), network: true}},
		{l("wget", "-r", "https://e.com/"), facts{class: M, writes: l("."), network: true}},
		{l("wget", "-e", "output_document=/tmp/x", "https://e.com"), facts{class: M, writes: l("/tmp/x"), network: true}},
		{l("wget", "-i", "urls.txt"), facts{class: M, reads: l("urls.txt"), network: true}},
		{l("ssh", "host", "ls"), facts{class: D, network: true}},

		// Git and go paths.
		{l("git", "log", "--output=o"), facts{class: M, writes: l("o")}},
		{l("git", "diff", "--no-index", "a", "b"), facts{class: R, reads: l("a", "b")}},
		{l("git", "grep", "--no-index", "x", "a"), facts{class: R, reads: l("a")}},
		{l("git", "archive", "-o", "a.tar", "HEAD"), facts{class: M, writes: l("a.tar")}},
		{l("git", "format-patch", "-o", "out", "HEAD~1"), facts{class: M, writes: l("out")}},
		{l("go", "build", "-o", "bin/x", "."), facts{class: M, writes: l("bin/x")}},
		{l("go", "test", "-coverprofile=c.out", "./..."), facts{class: M, writes: l("c.out")}},

		// Wrappers carry their command's facts.
		{l("env", "cat", "/home/u/.ssh/id_rsa"), facts{class: S, reads: l("/home/u/.ssh/id_rsa")}},
		{l("timeout", "5", "cat", "f"), facts{class: R, reads: l("f")}},
		{l("time", "-o", "t.txt", "ls"), facts{class: M, writes: l("t.txt")}},
		{l("flock", "/tmp/lock", "ls"), facts{class: S, writes: l("/tmp/lock")}},
		{l("xargs", "-a", "list", "rm"), facts{class: S, reads: l("list")}},
		{l("sudo", "rm", "-rf", "/"), facts{class: D, deletes: l("/"), outside: l("/")}},
		{l("sudo", "-e", "/etc/hosts"), facts{class: D, writes: l("/etc/hosts")}},
		{l("sudo", "mkfs", "/dev/sda"), facts{class: D, hardDeny: true}},
		{l("strace", "-o", "trace.out", "ls"), facts{class: S, writes: l("trace.out")}},

		// sed: a bracket expression does not end at the delimiter.
		{l("sed", "s/[/]/;#/e"), facts{class: S, code: l("s/[/]/;#/e")}},
		{l("sed", "s/[/]/;#/w ~/.bashrc"), facts{class: S, writes: l("~/.bashrc"), code: l("s/[/]/;#/w ~/.bashrc")}},
		{l("sed", "-n", "/[/]/w out", "f"), facts{class: S, reads: l("f"), writes: l("out"), code: l("/[/]/w out")}},
		{l("sed", "\\,[,],w out", "f"), facts{class: S, reads: l("f"), writes: l("out"), code: l("\\,[,],w out")}},
		{l("sed", "s|[|]|x|e"), facts{class: S, code: l("s|[|]|x|e")}},
		{l("sed", "s/[]/]/x/e"), facts{class: S, code: l("s/[]/]/x/e")}},
		{l("sed", "s/[^]/]/x/w o"), facts{class: S, writes: l("o"), code: l("s/[^]/]/x/w o")}},
		{l("sed", "s/[[:alpha:]/]/x/g", "f"), facts{class: R, reads: l("f"), code: l("s/[[:alpha:]/]/x/g")}},
		{l("sed", "s/[\\]/x/", "f"), facts{class: R, reads: l("f"), code: l("s/[\\]/x/")}},
		{l("sed", "s/\\[/]/;#/e"), facts{class: R, code: l("s/\\[/]/;#/e")}},
		{l("sed", "y/[/]/x/"), facts{class: S, code: l("y/[/]/x/")}},
		{l("sed", "s/[[:]/x/", "f"), facts{class: S, reads: l("f"), code: l("s/[[:]/x/")}},
		{l("sed", "s/[/x/"), facts{class: S, code: l("s/[/x/")}},

		// Paths named in a list rein cannot see.
		{l("sort", "--files0-from=-"), facts{class: U}},
		{l("sort", "--files0-from", "-"), facts{class: U}},
		{l("sort", "--files0-from=list"), facts{class: U, reads: l("list")}},
		{l("wc", "--files0-from=-"), facts{class: U}},
		{l("du", "--files0-from=-"), facts{class: U}},

		// git: paths outside the repository, message files.
		{l("git", "diff", "/etc/passwd", "x"), facts{class: R, reads: l("/etc/passwd", "x")}},
		{l("git", "diff", "HEAD~1"), facts{class: R, reads: l("HEAD~1")}},
		{l("git", "diff", "-S", "needle", "-Oorder", "a", "--", "b"), facts{class: R, reads: l("order", "a", "b")}},
		{l("git", "diff", "-O", "order", "--stat"), facts{class: R, reads: l("order")}},
		{l("git", "log", "-p", "--", "/etc/shadow"), facts{class: R, reads: l("/etc/shadow")}},
		{l("git", "log", "main"), facts{class: R}},
		{l("git", "show", "HEAD", "--", "x"), facts{class: R, reads: l("x")}},
		{l("git", "blame", "--contents", "/etc/shadow", "f"), facts{class: R, reads: l("/etc/shadow")}},
		{l("git", "blame", "--contents=/x", "--", "f"), facts{class: R, reads: l("/x", "f")}},
		{l("git", "commit", "-F", "/tmp/msg"), facts{class: M, reads: l("/tmp/msg")}},
		{l("git", "commit", "--file=m", "-t", "tpl", "-m", "x"), facts{class: M, reads: l("m", "tpl")}},
		{l("git", "tag", "-a", "v1", "-F", "m"), facts{class: U, reads: l("m")}},
		{l("git", "notes", "add", "-F", "m"), facts{class: M, reads: l("m")}},
		{l("git", "hash-object", "-w", "a", "b"), facts{class: U, reads: l("a", "b")}},
		{l("git", "add", "--pathspec-from-file=/etc/x"), facts{class: M, reads: l("/etc/x")}},

		// git: abbreviated long options.
		{l("git", "fetch", "--upload=touch x", "o"), facts{class: D}},
		{l("git", "fetch", "--upl=touch x", "o"), facts{class: D}},
		{l("git", "pull", "--upload-p=x", "o"), facts{class: D}},
		{l("git", "push", "--receive=x", "o"), facts{class: D}},
		{l("git", "push", "--exe=x", "o"), facts{class: D}},
		{l("git", "push", "--exec=x", "o"), facts{class: D}},
		{l("git", "send-pack", "--exe=x", "o"), facts{class: D}},
		{l("git", "fetch-pack", "--exe=x", "o"), facts{class: D}},
		{l("git", "archive", "--exe=x", "--remote=o"), facts{class: D}},
		{l("git", "ls-remote", "--u=x", "o"), facts{class: D}},
		{l("git", "clone", "--upl=x", "o"), facts{class: D}},
		{l("git", "push", "--forc", "o"), facts{class: D}},
		{l("git", "push", "--force-w", "o"), facts{class: D}},
		{l("git", "push", "--mir", "o"), facts{class: D}},
		{l("git", "reset", "--ha"), facts{class: D}},
		{l("git", "clean", "--fo"), facts{class: D}},
		{l("git", "grep", "--open=less", "x"), facts{class: S}},
		{l("git", "rebase", "--ex=make", "main"), facts{class: S}},
		{l("git", "init", "--templ=t"), facts{class: S}},
		{l("git", "clone", "--conf=core.pager=x", "o"), facts{class: S}},
		{l("git", "config", "--unse", "user.name"), facts{class: S}},
		{l("git", "send-pack", "r", "main"), facts{class: S}},
		{l("git", "send-pack", "--force", "r", "main"), facts{class: D}},
		{l("git", "send-pack", "-f", "r", "main"), facts{class: D}},
		{l("git", "send-pack", "r", "+main"), facts{class: D}},

		// jq: an attached -L value is no reason to skip a word; a library
		// path is modules rein cannot see.
		{l("jq", "-R", "-L/tmp", ".", "/home/u/.ssh/id_rsa"), facts{class: U, reads: l("/home/u/.ssh/id_rsa")}},
		{l("jq", "-L", "/tmp", ".", "f"), facts{class: U, reads: l("f")}},
		{l("jq", "-Lfoo", ".", "f"), facts{class: U, reads: l("f")}},
		{l("jq", "--library-path", "lib", ".", "f"), facts{class: U, reads: l("f")}},
		{l("xxd", "-c16", "a", "b"), facts{class: M, reads: l("a"), writes: l("b")}},
		{l("xxd", "-colsX", "16", "a"), facts{class: R, reads: l("a")}},

		// awk: computed file names and indirect calls.
		{l("awk", "BEGIN{ARGV[1]=\"/etc/shadow\"; ARGC=2} {print}"), facts{class: S, code: l("BEGIN{ARGV[1]=\"/etc/shadow\"; ARGC=2} {print}")}},
		{l("awk", "{print ENVIRON[\"X\"]}", "f"), facts{class: S, reads: l("f"), code: l("{print ENVIRON[\"X\"]}")}},
		{l("awk", "{f=\"system\"; @f(\"id\")}"), facts{class: S, code: l("{f=\"system\"; @f(\"id\")}")}},
		{l("gawk", "{print PROCINFO[\"pid\"]}"), facts{class: S, code: l("{print PROCINFO[\"pid\"]}")}},

		// Shells and interpreters whose script is their input.
		{l("sh", "/dev/stdin"), facts{class: S}},
		{l("bash", "/dev/fd/0"), facts{class: S}},
		{l("bash", "/proc/self/fd/0"), facts{class: S}},
		{l("sh", "-s"), facts{class: S}},
		{l("bash", "-"), facts{class: S}},
		{l("python3", "/dev/stdin"), facts{class: S}},
		{l("node", "/dev/stdin"), facts{class: S}},

		// Links: where a symbolic link points, and what a hard link writes.
		{l("ln", "-s", "../x", "sub/l"), facts{class: M, writes: l("sub/l", "sub/../x", "sub/l/../x"), outside: l("sub/../x", "sub/l/../x", "sub/l")}},
		{l("ln", "-sT", "../x", "sub/l"), facts{class: M, writes: l("sub/l", "sub/../x"), outside: l("sub/../x", "sub/l")}},
		{l("ln", "-sr", "../x", "sub/l"), facts{class: M, writes: l("sub/l", "../x"), outside: l("../x", "sub/l")}},
		{l("ln", "-s", "x", "/l"), facts{class: M, writes: l("/l", "/x", "/l/x"), outside: l("/x", "/l/x", "/l")}},
		{l("ln", "-s", "~/.ssh", "k"), facts{class: M, writes: l("k", "~/.ssh"), outside: l("~/.ssh", "k")}},
		{l("ln", "a", "b", "dir"), facts{class: M, reads: l("a", "b"), writes: l("a", "b", "dir")}},
		{l("cp", "-l", "a", "b"), facts{class: M, reads: l("a"), writes: l("a", "b")}},
		{l("cp", "--link", "a", "b"), facts{class: M, reads: l("a"), writes: l("a", "b")}},
		{l("cp", "-s", "/etc/passwd", "b"), facts{class: M, reads: l("/etc/passwd"), writes: l("b"), outside: l("/etc/passwd", "b")}},

		// Wrappers outside the spec's list.
		{l("prlimit", "rm", "-rf", "/"), facts{class: D, deletes: l("/"), outside: l("/")}},
		{l("prlimit", "--nofile=64", "-c", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("prlimit", "--pid", "1", "--nofile=1"), facts{class: U}},
		{l("unshare", "-r", "rm", "-rf", "~"), facts{class: D, deletes: l("~"), outside: l("~")}},
		{l("unshare", "-r", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("nsenter", "-t", "1", "-m", "-u", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("chroot", "/srv"), facts{class: D}},
		{l("chroot", "--userspec=u", "/srv", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("setpriv", "--reuid=1000", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("setpriv", "--dump"), facts{class: D}},
		{l("systemd-run", "-p", "X=1", "--unit", "u", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("runuser", "-u", "nobody", "--", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("runuser", "nobody", "-c", "cat f"), facts{class: D, reads: l("f")}},
		{l("su", "-c", "rm -rf /", "root"), facts{class: D, deletes: l("/"), outside: l("/")}},
		{l("pkexec", "cat", "f"), facts{class: D, reads: l("f")}},
		{l("fakeroot", "-s", "state", "cat", "f"), facts{class: S, reads: l("f"), writes: l("state")}},
		{l("fakeroot"), facts{class: S}},
		{l("eatmydata", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("ssh-agent", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("ssh-agent", "-k"), facts{class: U}},
		{l("dbus-run-session", "--config-file", "c", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("firejail", "--private", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("firejail"), facts{class: S}},
		{l("script", "-q", "-c", "cat f", "log"), facts{class: S, reads: l("f"), writes: l("log")}},
		{l("script"), facts{class: S, writes: l("typescript")}},
		{l("catchsegv", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("valgrind", "--log-file=v.log", "cat", "f"), facts{class: S, reads: l("f"), writes: l("v.log")}},
		{l("gdb", "-ex", "run", "--args", "cat", "f"), facts{class: S, reads: l("f")}},
		{l("gdb", "-ex", "run", "prog"), facts{class: S}},
		{l("parallel", "cat", ":::", "a", "b"), facts{class: S, reads: l("a", "b")}},
		{l("parallel", "rm -rf {}", ":::", "/"), facts{class: D, deletes: l("/"), outside: l("/")}},
		{l("parallel", "-j", "4", "cat", "::::", "list"), facts{class: S, reads: l("list")}},
	}
	for _, tc := range cases {
		checkFacts(t, tc.argv, tc.want)
	}
}

// TestClassSedProgram pins the sed reader on programs whose letters look
// like commands but are not.
func TestClassSedProgram(t *testing.T) {
	cases := []struct {
		prog   string
		want   sedFacts
		wantOK bool
	}{
		{"p", sedFacts{}, true},
		{"s/we/they/g", sedFacts{}, true},
		{"s/a/b/e", sedFacts{runs: true}, true},
		{"s/a/b/3e", sedFacts{runs: true}, true},
		{"s/e/w/", sedFacts{}, true},
		{`s/a\/w/b/`, sedFacts{}, true},
		{"s,a,b,w out", sedFacts{writes: l("out")}, true},
		{"s/a/b/w out; p", sedFacts{writes: l("out; p")}, true},
		{"w out", sedFacts{writes: l("out")}, true},
		{"1,/x/W out", sedFacts{writes: l("out")}, true},
		{"$!N;P;D", sedFacts{}, true},
		{"/x/{s/a/b/;e date\n}", sedFacts{runs: true}, true},
		{"r in\np", sedFacts{reads: l("in")}, true},
		{"\\,x,d", sedFacts{}, true},
		{"0~4d", sedFacts{}, true},
		{"2,+3d", sedFacts{}, true},
		{"/x/I,~4p", sedFacts{}, true},
		{"a hello; e not a command", sedFacts{}, true},
		{"# comment w x\np", sedFacts{}, true},
		{"y/ew/we/", sedFacts{}, true},
		{"b end; :end", sedFacts{}, true},
		{"q5", sedFacts{}, true},
		{"", sedFacts{}, true},
		{"s/[/]/;#/e", sedFacts{runs: true}, true},
		{"s/[/]/;#/w f", sedFacts{writes: l("f")}, true},
		{"/[/]/w f", sedFacts{writes: l("f")}, true},
		{"\\%[%]%w f", sedFacts{writes: l("f")}, true},
		{"s/[[:space:]/]/x/w f", sedFacts{writes: l("f")}, true},
		{"s/[[.-.]/]/x/e", sedFacts{runs: true}, true},
		{"s/[[=a=]/]/x/e", sedFacts{runs: true}, true},
		{"s/a/[/", sedFacts{}, true},
		{"y/[/]/", sedFacts{}, true},
		{"y/[/]/x/", sedFacts{}, false},
		{"s/[/x/", sedFacts{}, false},
		{"s/[[:/]/x/", sedFacts{}, false},
		{"/[\n/]/p", sedFacts{}, false},
		{"k", sedFacts{}, false},
		{"s/a/b", sedFacts{}, false},
		{"pq", sedFacts{}, false},
	}
	for _, tc := range cases {
		got := sedProgram(tc.prog)
		if got.ok != tc.wantOK || got.runs != tc.want.runs || !slices.Equal(got.writes, tc.want.writes) || !slices.Equal(got.reads, tc.want.reads) {
			t.Errorf("sedProgram(%q) = %+v, want %+v ok=%v", tc.prog, got, tc.want, tc.wantOK)
		}
	}
}

func TestClassArgScan(t *testing.T) {
	spec := argSpec{values: "nt", optional: "i", long: longs("recursive", "reference=", "in-place?", "regexp=")}
	cases := []struct {
		args     []string
		opts     []string
		operands []string
	}{
		{l("-rf", "x"), l("r", "f"), l("x")},
		{l("-n", "5", "x"), l("n"), l("x")},
		{l("-n5", "x"), l("n"), l("x")},
		{l("-vn", "5", "x"), l("v", "n"), l("x")},
		{l("-i.bak", "x"), l("i"), l("x")},
		{l("-i", "x"), l("i"), l("x")},
		{l("--rec", "x"), l("recursive"), l("x")},
		{l("--ref", "r", "x"), l("reference"), l("x")},
		{l("--re", "x"), l("re"), l("x")},
		{l("--in-place=.bak", "x"), l("in-place"), l("x")},
		{l("x", "-r"), l("r"), l("x")},
		{l("--", "-r", "x"), nil, l("-r", "x")},
		{l("-", "x"), nil, l("-", "x")},
		{l("-t"), l("t"), nil},
	}
	for _, tc := range cases {
		ws := spec.scan(tc.args)
		var opts []string
		for _, w := range ws {
			if w.opt != "" {
				opts = append(opts, w.opt)
			}
		}
		if !slices.Equal(opts, tc.opts) || !slices.Equal(ws.operands(), tc.operands) {
			t.Errorf("scan(%q): options %q operands %q, want %q %q", tc.args, opts, ws.operands(), tc.opts, tc.operands)
		}
	}
	posix := argSpec{values: "n", posix: true}
	if got := posix.scan(l("-n", "1", "cmd", "-x")).operands(); !slices.Equal(got, l("cmd", "-x")) {
		t.Errorf("posix scan operands = %q", got)
	}
}

func TestGitCanonical(t *testing.T) {
	cases := []struct {
		argv, want []string
	}{
		{l("git", "--no-pager", "push"), l("git", "push")},
		{l("git", "-P", "-p", "--paginate", "push", "-f"), l("git", "push", "-f")},
		{l("git", "-c", "a=b", "-C", "d", "--git-dir=x", "--work-tree", "w", "log", "-p"), l("git", "log", "-p")},
		{l("git", "--git-dir", "x", "--namespace", "n", "--super-prefix=p", "push"), l("git", "push")},
		{l("git", "--config-env", "a=B", "--config-env=c=D", "push"), l("git", "push")},
		{l("git", "--exec-path=/x", "--exec-path", "push"), l("git", "push")},
		{l("git", "--bare", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
			"--no-optional-locks", "--no-replace-objects", "--no-lazy-fetch", "--no-advice", "push"), l("git", "push")},
		{l("/usr/bin/git", "-P", "reset", "--hard"), l("/usr/bin/git", "reset", "--hard")},
		{l("git", "--list-cmds=main"), l("git")},
		{l("git", "-P", "--version"), l("git", "version")},
		{l("git", "--help", "push"), l("git", "help", "push")},
		{l("git", "push", "--no-pager"), nil},
		{l("git", "push"), nil},
		{l("git"), nil},
		{l("ls", "--no-pager"), nil},
		{nil, nil},
	}
	for _, tc := range cases {
		if got := gitCanonical(tc.argv); !slices.Equal(got, tc.want) {
			t.Errorf("gitCanonical(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}
