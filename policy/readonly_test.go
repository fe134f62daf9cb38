package policy

import (
	oexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// customOptions are the read-only rows whose refinement parses their words
// itself and refuses what it does not know there (jq, xxd and find do not
// read options the getopt way).
var customOptions = map[string]bool{"jq": true, "xxd": true, "find": true}

// TestReadOnlyRowsHaveAllowlists: every row the table calls read-only
// lists its options; none is read-only by default.
func TestReadOnlyRowsHaveAllowlists(t *testing.T) {
	for _, row := range classTable {
		if row.Class != ReadOnly || customOptions[row.Names[0]] {
			continue
		}
		if row.Opts == nil || row.Opts.allow == nil && row.Opts != &wordsOnly {
			t.Errorf("%v: a read-only row without an option allowlist", row.Names)
		}
	}
}

// TestUnknownOptionsAreUnknown: an option a read-only program's list does
// not have, an ambiguous abbreviation, program text or a file of arguments
// rein cannot read makes the stage unknown; known ones keep it read-only.
func TestUnknownOptionsAreUnknown(t *testing.T) {
	for _, c := range []struct {
		argv  []string
		class Class
		reads []string
	}{
		{[]string{"cat", "--unknown", "f"}, Unknown, []string{"f"}},
		{[]string{"cat", "-Z", "f"}, Unknown, []string{"f"}},
		{[]string{"cat", "-nA", "f"}, ReadOnly, []string{"f"}},
		{[]string{"cat", "--show-a", "f"}, ReadOnly, []string{"f"}}, // --show-all, abbreviated
		{[]string{"tail", "--s", "f"}, Unknown, []string{"f"}},      // --silent or --sleep-interval
		{[]string{"head", "-5", "f"}, ReadOnly, []string{"f"}},
		{[]string{"grep", "-3", "x", "f"}, ReadOnly, []string{"f"}},
		{[]string{"ls", "--hyperlink=always", "-la"}, ReadOnly, nil},
		{[]string{"ls", "-la", "/home/u/.ssh"}, ReadOnly, []string{"/home/u/.ssh"}},
		{[]string{"strings", "@.env"}, Unknown, []string{".env"}},
		{[]string{"strings", "-n", "8", "@/home/u/.aws/credentials"}, Unknown, []string{"/home/u/.aws/credentials"}},
		{[]string{"less", "--lesskey-src=keys.txt", "a.txt"}, Unknown, []string{"keys.txt", "a.txt"}},
		{[]string{"less", "-k", "keys", "a.txt"}, Unknown, []string{"keys", "a.txt"}},
		{[]string{"less", "--lesskey-file", "keys", "a.txt"}, Unknown, []string{"keys", "a.txt"}},
		{[]string{"less", "-N", "a.txt"}, ReadOnly, []string{"a.txt"}},
		{[]string{"awk", "-W", "exec", "/dev/stdin"}, Unknown, nil},
		{[]string{"awk", "-W", "source=BEGIN{system(\"id\")}"}, Unknown, nil},
		{[]string{"awk", "-Wload=x"}, Unknown, nil},
		{[]string{"awk", "-W", "version"}, ReadOnly, nil},
		{[]string{"jq", "-n", "env"}, Unknown, nil},
		{[]string{"jq", "-n", "$ENV.HOME"}, Unknown, nil},
		{[]string{"jq", "import \"config\" as $c; $c", "f"}, Unknown, []string{"f"}},
		{[]string{"jq", ".env", "f"}, ReadOnly, []string{"f"}},
		{[]string{"jq", ".environment | length", "f"}, ReadOnly, []string{"f"}},
		{[]string{"jq", "--seq", ".", "f"}, ReadOnly, []string{"f"}},
		{[]string{"jq", "--bogus", ".", "f"}, Unknown, []string{"f"}},
		{[]string{"rg", "--pre", "cat", "x"}, Unknown, nil},
		{[]string{"rg", "-z", "x", "f.gz"}, Unknown, []string{"f.gz"}},
		{[]string{"sort", "--compress-program", "sh", "f"}, ShellComplex, []string{"f"}},
		{[]string{"file", "-p", "f"}, Unknown, []string{"f"}},
		{[]string{"file", "-f", "list"}, Unknown, []string{"list"}},
		{[]string{"xxd", "-Z", "f"}, Unknown, []string{"f"}},
		{[]string{"find", "/home/u", "-name", "credentials", "-printf", "%p %s"}, ReadOnly, []string{"/home/u"}},
		{[]string{"find", ".", "-fls2", "x"}, Unknown, []string{"."}},
		{[]string{"git", "blame", "-S", "revs", "a.txt"}, ReadOnly, []string{"revs"}},
		{[]string{"git", "blame", "--ignore-revs-file=f", "a"}, ReadOnly, []string{"f"}},
		{[]string{"git", "grep", "-f", "pats"}, ReadOnly, []string{"pats"}},
		{[]string{"git", "ls-files", "--exclude-from=f"}, ReadOnly, []string{"f"}},
		{[]string{"git", "log", "-O", "f"}, ReadOnly, []string{"f"}},
		{[]string{"/usr/lib/git-core/git-stash"}, WorkspaceMutating, nil},
		{[]string{"git-pull"}, WorkspaceMutating, nil},
		{[]string{"go", "list", "-export", "."}, Unknown, nil},
		{[]string{"go", "list", "-compiled", "."}, Unknown, nil},
		{[]string{"go", "list", "-m", "-versions", "golang.org/x/sys"}, Unknown, nil},
		{[]string{"timeout", "--bogus", "5", "ls"}, Unknown, nil},
		{[]string{"go", "list", "-f", "{{.Dir}}", "-deps", "-tags", "x", "./..."}, ReadOnly, nil},
		{[]string{"go", "list", "-bogus", "."}, Unknown, nil},
		{[]string{"go", "list", "-overlay=o.json", "."}, Unknown, []string{"o.json"}},
		{[]string{"go", "list", "-modfile", "/home/u/go.mod", "."}, ReadOnly, []string{"/home/u/go.mod"}},
		{[]string{"go", "env", "-json", "GOPATH"}, ReadOnly, nil},
		{[]string{"go", "version", "-m", "bin/x"}, ReadOnly, []string{"bin/x"}},
		{[]string{"go", "doc", "-all", "fmt"}, ReadOnly, nil},
	} {
		f := analyze(c.argv)
		if f.Class < c.class || c.class == ReadOnly && f.Class != ReadOnly {
			t.Errorf("%q: %s (%s), want %s", c.argv, f.Class, f.Reason, c.class)
		}
		for _, r := range c.reads {
			found := false
			for _, got := range f.Reads {
				found = found || got == r
			}
			if !found {
				t.Errorf("%q: reads %q, want %q among them", c.argv, f.Reads, r)
			}
		}
	}
}

// TestReviewedBypassesRound2 keeps each reproduction of the second attack
// round: none is allowed in ask mode any more.
func TestReviewedBypassesRound2(t *testing.T) {
	f := newFixture(t)
	f.write(filepath.Join(f.ws, ".env"), "K=v")
	p := f.load(ModeAsk)
	for _, c := range []struct {
		line string
		want Decision
	}{
		{`echo 'BEGIN{system("id")}' | awk -W exec /dev/stdin`, Ask},
		{"less --lesskey-src=keys.txt a.txt", Ask},
		{"less -k keys.bin a.txt", Ask},
		{"strings @.env", Deny},
		{"strings @~/.aws/credentials", Deny},
		{"git blame -S ~/.ssh/id_rsa main.go", Deny},
		{"git blame --ignore-revs-file ../outside main.go", Ask},
		{"git grep -f ~/.aws/credentials", Deny},
		{"git ls-files --exclude-from=.env", Deny},
		{"git log -O ~/.ssh/id_ed25519", Deny},
		{`jq -L ~/.docker 'import "config" as $c; $c' -n`, Ask},
		{"jq -n env", Ask},
		{"jq -n '$ENV'", Ask},
		{"go list -export .", Ask},
		{"go list -compiled .", Ask},
		{"go list -m -versions golang.org/x/sys", Ask},
		{"/usr/lib/git-core/git-stash", Ask},
		{"ls -la ~/.ssh", Deny},
		{"find ~ -name credentials -printf '%p %s'", Ask},
		// What the attack pass on the allowlist found.
		{"sed ':a e touch /tmp/x' a.txt", Ask},
		{"sed ':a w .claude/settings.json' a.txt", Deny},
		{"sed -n ':x r /etc/hostname' a.txt", Ask},
		{"sed -n 'bend e id;:end' a.txt", Ask},
		{`awk 'BEGIN { SYMTAB["AR" "GV"][1] = "x"; SYMTAB["AR" "GC"]=2 } 1'`, Ask},
		{"strings -s @~/.aws/credentials a.txt b.txt", Deny},
		{"strings -n @.env a.txt", Deny},
		{"jq -n '$ ENV.SECRET_TOKEN'", Ask},
		{"jq -n '$ # c\nENV'", Ask},
		{"sha256sum -c sums.txt", Ask},
		{"less '+:e ~/.aws/credentials\n' a.txt", Ask},
		{"less +v a.txt", Ask},
		{"less +G a.txt", Allow},
		{"less +/needle a.txt", Allow},
		// And what stays read-only.
		{"grep -n TODO main.go 2>/dev/null", Allow},
		{"ls -la src", Allow},
		{"head -5 main.go", Allow},
		{"find . -name '*.go' -type f", Allow},
	} {
		if v := f.check(p, c.line); v.Decision != c.want {
			t.Errorf("%s: %s (%s), want %s", c.line, v.Decision, v.Reason, c.want)
		}
	}
	// In auto mode, a link made earlier in the line is a write of its
	// target: the write through it later cannot reach a protected path.
	p = f.load(ModeAuto)
	for _, line := range []string{"ln -s .git/hooks h3 && cp a.txt h3/pre-commit", "ln -s .claude c3; touch c3/settings.json"} {
		if v := f.check(p, line); v.Decision != Deny {
			t.Errorf("%s: %s (%s), want deny", line, v.Decision, v.Reason)
		}
	}
	// A deny rule for git push holds for its multi-call name.
	p = f.load(ModeAuto, exec(Deny, "git push*"))
	if v := f.check(p, "git-push origin main"); v.Decision != Deny {
		t.Errorf("git-push under a deny of git push*: %s (%s)", v.Decision, v.Reason)
	}
}

// helpOption finds the options a --help text lists: words that begin a
// line's option column, -x or --long.
var (
	helpLine  = regexp.MustCompile(`^\s{0,12}(-[^\s].*)$`)
	helpToken = regexp.MustCompile(`(?:^|[\s,\[|/])(--?[A-Za-z0-9#?~.][-A-Za-z0-9_]*)`)
)

func helpOptions(text string) []string {
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		m := helpLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		head := m[1]
		if i := strings.Index(head, "   "); i > 0 {
			head = head[:i]
		}
		for _, t := range helpToken.FindAllStringSubmatch(" "+head, -1) {
			seen[t[1]] = true
		}
	}
	var out []string
	for o := range seen {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// driftPrograms are the installed programs the drift test asks for their
// options, with the arguments that make each print them.
var driftPrograms = []struct {
	name string
	help []string
	spec *argSpec
}{
	{"pwd", []string{"--help"}, &pwdArgs}, {"tr", []string{"--help"}, &trArgs}, {"ls", []string{"--help"}, &lsArgs},
	{"cat", []string{"--help"}, &catArgs}, {"head", []string{"--help"}, &headArgs}, {"tail", []string{"--help"}, &tailArgs},
	{"wc", []string{"--help"}, &wcArgs}, {"stat", []string{"--help"}, &statArgs}, {"file", []string{"--help"}, &fileArgs},
	{"strings", []string{"--help"}, &stringsArgs}, {"od", []string{"--help"}, &odArgs}, {"base64", []string{"--help"}, &base64Args},
	{"sha256sum", []string{"--help"}, &sumArgs}, {"md5sum", []string{"--help"}, &sumArgs}, {"cut", []string{"--help"}, &cutArgs},
	{"uniq", []string{"--help"}, &uniqArgs}, {"less", []string{"--help"}, &lessArgs}, {"more", []string{"--help"}, &moreArgs},
	{"grep", []string{"--help"}, &grepArgs}, {"rg", []string{"--help"}, &rgArgs}, {"sort", []string{"--help"}, &sortArgs},
	{"diff", []string{"--help"}, &diffArgs}, {"cmp", []string{"--help"}, &cmpArgs}, {"sed", []string{"--help"}, &sedArgs},
	{"gawk", []string{"--help"}, &awkArgs}, {"mawk", []string{"-W", "usage"}, &awkArgs},
	{"timeout", []string{"--help"}, &timeoutArgs}, {"nice", []string{"--help"}, &niceArgs},
	{"nohup", []string{"--help"}, &nohupArgs}, {"stdbuf", []string{"--help"}, &stdbufArgs},
}

// notOptions are words a help text writes where options go that are not
// options: cut's help describes the range -M.
var notOptions = map[string][]string{"cut": {"-M"}}

// TestOptionDrift runs each listed program's own help on this machine and
// fails on an option it lists that the table neither allows nor marks: a
// new release's new option must be added on purpose, never fall through
// as read-only. CI installs every one of them.
func TestOptionDrift(t *testing.T) {
	for _, d := range driftPrograms {
		bin, err := oexec.LookPath(d.name)
		if err != nil {
			if testenv.Required() {
				t.Errorf("%s is not installed; the drift test needs it", d.name)
			}
			continue
		}
		out, _ := oexec.Command(bin, d.help...).CombinedOutput()
		opts := helpOptions(string(out))
		if len(opts) == 0 {
			t.Errorf("%s %s listed no options: the help parser no longer reads it", d.name, strings.Join(d.help, " "))
			continue
		}
		known := d.spec.optionNames()
		for _, o := range notOptions[d.name] {
			known[o] = true
		}
		for _, o := range opts {
			if known[o] || d.spec.allow != nil && d.spec.allow.numeric && regexp.MustCompile(`^-[0-9]+$|^-NUM$`).MatchString(o) {
				continue
			}
			t.Errorf("%s: its help lists %s, which the table neither allows nor marks", d.name, o)
		}
	}
}

// TestGitReadOnlyOptions: git's read-only commands keep their everyday
// options and lose read-only for one they do not list.
func TestGitReadOnlyOptions(t *testing.T) {
	for _, c := range []struct {
		line  string
		class Class
	}{
		{"git status --porcelain=v1 -uno", ReadOnly},
		{"git status -sb", ReadOnly},
		{"git log --oneline --graph --decorate --all -n 20", ReadOnly},
		{"git log -p -5 --follow -- main.go", ReadOnly},
		{"git log --pretty=format:%h%x09%s --since=2.weeks --author=me", ReadOnly},
		{"git log -S needle --no-merges --stat", ReadOnly},
		{"git diff --cached --stat=100 --no-color HEAD~1 -- a.go", ReadOnly},
		{"git diff -U0 --name-only main...HEAD", ReadOnly},
		{"git diff --no-index a b", ReadOnly},
		{"git show HEAD:calc.go", ReadOnly},
		{"git show --name-only --format= HEAD", ReadOnly},
		{"git grep -n -e foo -- *.go", ReadOnly},
		{"git grep -3 -i foo", ReadOnly},
		{"git blame -L 10,20 -w main.go", ReadOnly},
		{"git ls-files -z --others --exclude-standard", ReadOnly},
		{"git rev-parse --abbrev-ref HEAD", ReadOnly},
		{"git rev-parse --show-toplevel", ReadOnly},
		{"git rev-parse --verify --short HEAD", ReadOnly},
		{"git version --build-options", ReadOnly},
		{"git log --bogus", Unknown},
		{"git status --unknown-thing", Unknown},
		{"git diff -Y", Unknown},
		{"git grep --open-files-in-pager=id x", ShellComplex},
		{"git log --output=o", WorkspaceMutating},
		{"git diff --out=o", Unknown}, // ambiguous: --output, --output-indicator-new, ...
	} {
		f := analyze(strings.Fields(c.line))
		if f.Class != c.class {
			t.Errorf("%s: %s (%s), want %s", c.line, f.Class, f.Reason, c.class)
		}
	}
}

// TestGitOptionDrift: every long option git's read-only commands list for
// themselves, and every revision option rev-list lists, is in the table.
func TestGitOptionDrift(t *testing.T) {
	bin, err := oexec.LookPath("git")
	if err != nil {
		t.Fatalf("git is not installed: %v", err)
	}
	dir := t.TempDir()
	if out, err := oexec.Command(bin, "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	check := func(cmd string, names []string) {
		spec := gitReadOnlyArgs[cmd]
		for _, n := range names {
			n = strings.TrimRight(n, "=")
			if n == "" || n == "--" || !strings.HasPrefix(n, "--") {
				continue
			}
			name := strings.TrimPrefix(n, "--")
			base := strings.TrimPrefix(name, "no-")
			if spec.knownLong(name) || spec.knownLong(base) {
				continue
			}
			t.Errorf("git %s: git lists %s, which the table neither allows nor marks", cmd, n)
		}
	}
	for cmd := range gitReadOnlyArgs {
		if cmd == "rev-parse" {
			continue // rev-parse has no completion helper
		}
		c := oexec.Command(bin, cmd, "--git-completion-helper")
		c.Dir = dir
		out, _ := c.CombinedOutput()
		words := strings.Fields(string(out))
		if len(words) == 0 {
			t.Errorf("git %s --git-completion-helper printed nothing", cmd)
		}
		check(cmd, words)
	}
	c := oexec.Command(bin, "rev-list", "-h")
	c.Dir = dir
	out, _ := c.CombinedOutput()
	revs := regexp.MustCompile(`--[a-z][-a-z]*`).FindAllString(string(out), -1)
	if len(revs) < 20 {
		t.Fatalf("git rev-list -h listed %d options", len(revs))
	}
	check("log", revs)
}

// TestProtectedNotUTF8: a protected file whose name is not UTF-8 is
// protected as any other (the sandbox hides what the listing finds on
// disk by this test).
func TestProtectedNotUTF8(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAsk)
	for _, rel := range []string{"d\xff/id_rsa", "x\xfe.key", "d\xff/.env", "\xff/\xfe/a.pem"} {
		if p.Protection(ActRead, filepath.Join(f.ws, rel), filepath.Join(f.ws, rel)) == nil {
			t.Errorf("%q is not protected", rel)
		}
	}
	if p.Protection(ActRead, filepath.Join(f.ws, "d\xff/ok.txt"), filepath.Join(f.ws, "d\xff/ok.txt")) != nil {
		t.Error("an ordinary file is protected")
	}
}
