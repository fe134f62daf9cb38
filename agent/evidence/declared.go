package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Test is a test that a protected file declares.
type Test struct {
	// Key names it as a report does: "importpath.TestName".
	Key string `json:"key"`
	// File is the file that declares it, relative to the workspace.
	File string `json:"file"`
	// Constrained says whether the file is built only in some contexts:
	// it has a //go:build (or // +build) line, or a name ending in _GOOS,
	// _GOARCH or _GOOS_GOARCH. Whether such a test runs depends on the
	// tags and the platform, which a baseline that could not build the
	// package cannot tell.
	Constrained bool `json:"constrained,omitempty"`
}

// DeclaredGo enumerates the tests that files (slash-separated paths
// relative to ws, as the protect globs match them) declare as go test
// runs them: each top-level func TestXxx(*testing.T), and each func
// FuzzXxx(*testing.F), which runs its seed corpus as a test; "Xxx" does
// not start with a lower-case letter, and testing may be imported under
// any name or with a dot.
// Files not named _test.go are skipped, and so are those go ignores: in a
// testdata directory, or under a directory or with a name that starts
// with _ or . . A file's import path is the module path of the nearest
// go.mod between its directory and ws, joined with the directory's path
// from there; a file under no go.mod in ws is in no module go test can
// test, and is skipped. A file that does not parse is an error naming it.
//
// Enumerate at the run's start, and keep the list: what the workspace's
// go.mod files say later is the run's to change.
func DeclaredGo(ws string, files []string) ([]Test, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("evidence: opening the workspace: %w", err)
	}
	defer root.Close()
	modules := map[string]string{} // directory → the module path of its go.mod, "" for none
	var out []Test
	for _, rel := range files {
		if !fs.ValidPath(rel) || rel == "." {
			return nil, fmt.Errorf("evidence: %q is not a path relative to the workspace", rel)
		}
		if !strings.HasSuffix(rel, "_test.go") || ignoredByGo(rel) {
			continue
		}
		dir := path.Dir(rel)
		importPath, err := importPathOf(root, dir, modules)
		if err != nil {
			return nil, err
		}
		if importPath == "" {
			continue
		}
		src, err := root.ReadFile(rel)
		if err != nil {
			return nil, fmt.Errorf("evidence: reading %s: %w", rel, err)
		}
		names, constrained, err := testFuncs(rel, src)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, Test{Key: importPath + "." + n, File: rel, Constrained: constrained})
		}
	}
	slices.SortFunc(out, func(a, b Test) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ignoredByGo reports whether go ignores the file at rel: in a testdata
// directory, or anywhere under a name starting with _ or . .
func ignoredByGo(rel string) bool {
	for _, elem := range strings.Split(rel, "/") {
		if elem == "testdata" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") {
			return true
		}
	}
	return false
}

// importPathOf returns the import path of the package in dir (relative to
// root): the module path of the nearest go.mod at or above dir in root,
// joined with dir's path below it; "" when no go.mod is found.
func importPathOf(root *os.Root, dir string, modules map[string]string) (string, error) {
	for d := dir; ; d = path.Dir(d) {
		mod, seen := modules[d]
		if !seen {
			data, err := root.ReadFile(path.Join(d, "go.mod"))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				mod = ""
			case err != nil:
				return "", fmt.Errorf("evidence: reading %s: %w", path.Join(d, "go.mod"), err)
			default:
				mp := modulePath(data)
				if mp == "" {
					return "", fmt.Errorf("evidence: %s has no module line: go cannot test the packages under it", path.Join(d, "go.mod"))
				}
				mod = mp
			}
			modules[d] = mod
		}
		if mod != "" {
			if d == dir {
				return mod, nil
			}
			below := dir
			if d != "." {
				below = strings.TrimPrefix(dir, d+"/")
			}
			return mod + "/" + below, nil
		}
		if d == "." {
			return "", nil
		}
	}
}

// modulePath returns the path of go.mod's module line, or "" when it has
// none. It reads the line as x/mod's modfile.ModulePath does: a // comment
// ends it, and a quoted path is unquoted.
func modulePath(gomod []byte) string {
	for line := range bytes.Lines(gomod) {
		if i := bytes.Index(line, []byte("//")); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSpace(line)
		rest, ok := bytes.CutPrefix(line, []byte("module"))
		if !ok {
			continue
		}
		if n := len(rest); len(bytes.TrimSpace(rest)) == n || n == 0 {
			continue // "modulefoo", or no path
		}
		rest = bytes.TrimSpace(rest)
		if rest[0] == '"' || rest[0] == '`' {
			p, err := strconv.Unquote(string(rest))
			if err != nil {
				return ""
			}
			return p
		}
		return string(rest)
	}
	return ""
}

// testFuncs parses one test file and returns the tests it declares, in
// the order declared, and whether it is built only in some contexts.
func testFuncs(name string, src []byte) ([]string, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false, fmt.Errorf("evidence: parsing %s: %w", name, err)
	}
	testing := map[string]bool{} // the names testing is imported under; "." for a dot import
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != "testing" {
			continue
		}
		switch {
		case imp.Name == nil:
			testing["testing"] = true
		case imp.Name.Name != "_":
			testing[imp.Name.Name] = true
		}
	}
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Type.TypeParams != nil {
			continue
		}
		n := fn.Name.Name
		switch {
		case isTestName(n, "Test") && takesPointerTo(fn, "T", testing),
			isTestName(n, "Fuzz") && takesPointerTo(fn, "F", testing):
			names = append(names, n)
		}
	}
	return names, constrainedFile(name, f), nil
}

// isTestName reports whether name is prefix followed by nothing or by a
// character that is not a lower-case letter: go test's rule, so that
// Testify is not a test.
func isTestName(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}

// takesPointerTo reports whether fn has no result and one parameter of
// type *testing.<typ>, testing imported under one of names.
func takesPointerTo(fn *ast.FuncDecl, typ string, names map[string]bool) bool {
	t := fn.Type
	if t.Results != nil && len(t.Results.List) > 0 || t.Params == nil || len(t.Params.List) != 1 || len(t.Params.List[0].Names) > 1 {
		return false
	}
	star, ok := t.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return ok && names[pkg.Name] && x.Sel.Name == typ
	case *ast.Ident:
		return names["."] && x.Name == typ
	}
	return false
}

// constrainedFile reports whether the file is built only in some
// contexts: a build constraint before its package clause, or a GOOS or
// GOARCH at the end of its name (go/build's goodOSArchFile).
func constrainedFile(name string, f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) || constraint.IsPlusBuild(c.Text) {
				return true
			}
		}
	}
	base, _, _ := strings.Cut(path.Base(name), ".")
	i := strings.IndexByte(base, '_')
	if i < 0 {
		return false
	}
	l := strings.Split(strings.TrimSuffix(base[i:], "_test"), "_")
	n := len(l)
	return n >= 1 && (knownOS[l[n-1]] || knownArch[l[n-1]])
}

// knownOS and knownArch are the GOOS and GOARCH values a file name can
// end with, as Go 1.26's internal/syslist lists them.
var (
	knownOS = map[string]bool{
		"aix": true, "android": true, "darwin": true, "dragonfly": true,
		"freebsd": true, "hurd": true, "illumos": true, "ios": true,
		"js": true, "linux": true, "nacl": true, "netbsd": true,
		"openbsd": true, "plan9": true, "solaris": true, "wasip1": true,
		"windows": true, "zos": true,
	}
	knownArch = map[string]bool{
		"386": true, "amd64": true, "amd64p32": true, "arm": true,
		"armbe": true, "arm64": true, "arm64be": true, "loong64": true,
		"mips": true, "mipsle": true, "mips64": true, "mips64le": true,
		"mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true,
		"ppc64le": true, "riscv": true, "riscv64": true, "s390": true,
		"s390x": true, "sparc": true, "sparc64": true, "wasm": true,
	}
)
