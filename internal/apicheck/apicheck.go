package apicheck

import (
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// module is rein's module path: what a line names a package by, without it.
const module = "github.com/reinhq/rein"

// File is where the surface is kept, from the module's root.
const File = "api/rein.txt"

// header opens the file: it is generated, and says how.
const header = "# rein's exported Go API, one line per name. Generated: go test ./internal/apicheck -update\n"

// Surface lists the exported API of the module rooted at dir: for each
// public package, a line per const, var, type, field, interface method,
// method and func, sorted.
func Surface(dir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Name}}\t{{.Module}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apicheck: go list -export: %w\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var public []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("apicheck: go list printed %q", line)
		}
		path, export, name, mod := f[0], f[1], f[2], f[3]
		exports[path] = export
		if mod == module && name != "main" && !isInternal(path) {
			public = append(public, path)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		e, ok := exports[path]
		if !ok || e == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(e)
	})
	var lines []string
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("apicheck: reading %s: %w", path, err)
		}
		lines = append(lines, pkgLines(pkg)...)
	}
	sort.Strings(lines)
	return lines, nil
}

// Format is the file's content for lines.
func Format(lines []string) []byte {
	return []byte(header + strings.Join(lines, "\n") + "\n")
}

// Parse reads the file's lines back, without its header.
func Parse(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// Diff is what changed from old to new: the lines removed ("-") and
// added ("+"), each in order.
func Diff(old, new []string) []string {
	have := map[string]bool{}
	for _, l := range new {
		have[l] = true
	}
	had := map[string]bool{}
	for _, l := range old {
		had[l] = true
	}
	var out []string
	for _, l := range old {
		if !have[l] {
			out = append(out, "-"+l)
		}
	}
	for _, l := range new {
		if !had[l] {
			out = append(out, "+"+l)
		}
	}
	return out
}

// Root is the module's root: the directory of go.mod above dir.
func Root(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("apicheck: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("apicheck: no go.mod above %s", dir)
		}
	}
}

func isInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// qualifier names another package by its path, rein's without the
// module's prefix: trace.Store, sandbox/bwrap.View, context.Context.
func qualifier(p *types.Package) string {
	return strings.TrimPrefix(p.Path(), module+"/")
}

func pkgLines(pkg *types.Package) []string {
	prefix := "pkg " + qualifier(pkg) + ", "
	q := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return qualifier(p)
	}
	ts := func(t types.Type) string { return types.TypeString(t, q) }
	var out []string
	add := func(format string, args ...any) { out = append(out, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s", name, ts(o.Type()))
			add("const %s = %s", name, o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, ts(o.Type()))
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(ts(o.Type()), "func"))
		case *types.TypeName:
			out = append(out, typeLines(prefix, o, ts)...)
		}
	}
	return out
}

func typeLines(prefix string, o *types.TypeName, ts func(types.Type) string) []string {
	name := o.Name()
	var out []string
	add := func(format string, args ...any) { out = append(out, prefix+fmt.Sprintf(format, args...)) }
	if o.IsAlias() {
		add("type %s = %s", name, ts(types.Unalias(o.Type())))
		return out
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return out
	}
	tparams := ""
	if tp := named.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := 0; i < tp.Len(); i++ {
			ps = append(ps, tp.At(i).Obj().Name()+" "+ts(tp.At(i).Constraint()))
		}
		tparams = "[" + strings.Join(ps, ", ") + "]"
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s%s struct", name, tparams)
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				add("type %s struct, embedded %s", name, ts(f.Type()))
				continue
			}
			add("type %s struct, %s %s", name, f.Name(), ts(f.Type()))
		}
	case *types.Interface:
		add("type %s%s interface", name, tparams)
		for i := 0; i < u.NumEmbeddeds(); i++ {
			add("type %s interface, embedded %s", name, ts(u.EmbeddedType(i)))
		}
		for i := 0; i < u.NumExplicitMethods(); i++ {
			m := u.ExplicitMethod(i)
			if !m.Exported() {
				add("type %s interface, unexported methods", name)
				continue
			}
			add("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(ts(m.Type()), "func"))
		}
		return out
	default:
		add("type %s%s %s", name, tparams, ts(u))
	}
	// The methods of T and *T, promoted ones included: what a caller can
	// call is the surface, wherever it is declared.
	value := map[string]bool{}
	vs := types.NewMethodSet(named)
	for i := 0; i < vs.Len(); i++ {
		value[vs.At(i).Obj().Name()] = true
	}
	ms := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i).Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if value[m.Name()] {
			recv = name
		}
		add("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(ts(m.Type()), "func"))
	}
	return out
}
