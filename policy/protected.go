package policy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/reinhq/rein/workspace"
)

// protection is what a protected pattern forbids.
type protection int

const (
	// protectSecret forbids reading and writing: credentials and keys.
	protectSecret protection = iota
	// protectWrite forbids writing and deleting: start-up files, system
	// directories, git hooks and config, rein's own files.
	protectWrite
	// protectGenerated forbids writing, patching and deleting a generated
	// or third-party copy, which an edit would only desynchronise.
	protectGenerated
)

// builtinProtected is the protected set every policy starts with. Patterns
// are anchored like rule patterns: ~/ at HOME, / at the root, **/ anywhere,
// anything else at the workspace root.
var builtinProtected = []struct {
	pattern string
	kind    protection
	except  []string
}{
	{"~/.ssh/**", protectSecret, nil},
	{"~/.aws/**", protectSecret, nil},
	{"~/.config/gh/**", protectSecret, nil},
	{"~/.netrc", protectSecret, nil},
	{"~/.docker/config.json", protectSecret, nil},
	{"~/.kube/**", protectSecret, nil},
	{"**/.env", protectSecret, nil},
	{"**/.env.*", protectSecret, []string{"**/.env.example"}},
	{"**/*.pem", protectSecret, nil},
	{"**/*.key", protectSecret, nil},
	{"**/id_rsa*", protectSecret, nil},
	{"**/id_ed25519*", protectSecret, nil},
	{"/etc/shadow", protectSecret, nil},

	{"~/.bashrc", protectWrite, nil},
	{"~/.bash_profile", protectWrite, nil},
	{"~/.profile", protectWrite, nil},
	{"~/.zshrc", protectWrite, nil},
	{"~/.zprofile", protectWrite, nil},
	{"~/.gitconfig", protectWrite, nil},
	{"~/.config/git/**", protectWrite, nil},
	{"~/.config/autostart/**", protectWrite, nil},
	{"/etc/**", protectWrite, nil},
	{"/usr/**", protectWrite, nil},
	{"/bin/**", protectWrite, nil},
	{"/sbin/**", protectWrite, nil},
	{"/lib*/**", protectWrite, nil},
	{"/boot/**", protectWrite, nil},
	{"/dev/**", protectWrite, exemptDevices},
	// Repository metadata: git's own files are written by git, and a
	// .git, .gitmodules or hook the agent writes is one the host's git
	// obeys.
	{"**/.git", protectWrite, nil},
	{"**/.git/**", protectWrite, nil},
	{"**/.gitmodules", protectWrite, nil},
	// Agents', editors' and git hook managers' own configuration in the
	// workspace (workspace.HostConfig, each with its reason) is added by
	// init; at home, Claude Code's own file.
	{"~/.claude.json", protectWrite, nil},
	{"~/.config/rein/**", protectWrite, nil},
	{".rein/**", protectWrite, nil},

	{"generated/**", protectGenerated, nil},
	{"build/tmp/**", protectGenerated, nil},
	{"vendor/**", protectGenerated, nil},
	{"third_party/**", protectGenerated, nil},
	{"node_modules/**", protectGenerated, nil},
}

func init() {
	// Agents', editors' and git hook managers' configuration, at any
	// depth: a name with an extension is a file, and matched as one; any
	// other may be a file or a directory, and is matched with what is
	// beneath it.
	for _, h := range workspace.HostConfig {
		g := "**/" + h.Name
		if !strings.Contains(h.Name[1:], ".") {
			g += "/**"
		}
		builtinProtected = append(builtinProtected, struct {
			pattern string
			kind    protection
			except  []string
		}{g, protectWrite, nil})
	}
}

// exemptDevices may always be redirected to and from.
var exemptDevices = []string{"/dev/null", "/dev/stdout", "/dev/stderr"}

func isExemptDevice(p string) bool {
	for _, d := range exemptDevices {
		if p == d {
			return true
		}
	}
	return false
}

// protectedRule is a compiled entry of the protected set.
type protectedRule struct {
	rule   Rule
	glob   string
	kind   protection
	except []string
}

// guards reports whether the entry forbids access.
func (p *protectedRule) guards(access Act) bool {
	return p.kind == protectSecret || access != ActRead
}

func (p *protectedRule) matches(paths ...string) bool {
	for _, x := range paths {
		if !globPathMatch(p.glob, x) {
			continue
		}
		excepted := false
		for _, e := range p.except {
			if globPathMatch(e, x) {
				excepted = true
			}
		}
		if !excepted {
			return true
		}
	}
	return false
}

// generatedMarkers are the phrases that mark a file as generated when they
// appear in its first lines.
var generatedMarkers = [][]byte{[]byte("@generated"), []byte("DO NOT EDIT")}

// generatedHeaderLines and generatedHeaderBytes bound how much of a file
// is read to find a marker: a header, never the whole file.
const (
	generatedHeaderLines = 10
	generatedHeaderBytes = 4096
)

// isGenerated reports whether the regular file at p says in its first
// lines that it is generated ("Code generated ... DO NOT EDIT." or
// "@generated"). A file that does not exist is not generated; one that
// exists but cannot be read (a path past PATH_MAX, no permission) is
// treated as generated, so the refusal fails closed. The open never
// blocks (a FIFO has no writer) and never follows a final link.
func isGenerated(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	sc := bufio.NewScanner(io.LimitReader(f, generatedHeaderBytes))
	for n := 0; n < generatedHeaderLines && sc.Scan(); n++ {
		line := sc.Bytes()
		if bytes.Contains(line, generatedMarkers[0]) {
			return true
		}
		if bytes.Contains(line, []byte("Code generated")) && bytes.Contains(line, generatedMarkers[1]) {
			return true
		}
	}
	return false
}

// inlineWords splits program text given on the command line into the words
// that could name a path, so each can be matched against the protected
// set. It errs towards more words: a false match only asks or denies a
// line that is shell-complex anyway.
func inlineWords(code string) []string {
	f := strings.FieldsFunc(code, func(r rune) bool {
		return r <= ' ' || strings.ContainsRune("\"'`()[]{};,<>|&=+$", r)
	})
	var out []string
	for _, w := range f {
		if strings.ContainsAny(w, "/") || strings.HasPrefix(w, ".") || strings.HasPrefix(w, "~") {
			out = append(out, w)
		}
	}
	return out
}

// ProtectedWithin returns the attribution of a protected-from-reading
// entry anchored inside dir (~/.ssh inside a HOME given whole), or nil.
// Entries that match anywhere (**/.env) cannot be told apart from the
// tree without walking it, and are left to the paths' own checks.
func (p *Policy) ProtectedWithin(dir string) *Attribution {
	for i := range p.protected {
		pr := &p.protected[i]
		if !pr.guards(ActRead) {
			continue
		}
		lit := pr.glob
		if j := strings.IndexAny(lit, "*?[{"); j >= 0 {
			lit = lit[:j]
		}
		lit = strings.TrimSuffix(lit, "/")
		if strings.HasPrefix(lit, "/") && (lit == dir || strings.HasPrefix(lit, dir+"/") || dir == "/") {
			return pr.rule.attribution()
		}
	}
	return nil
}
