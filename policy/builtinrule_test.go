package policy

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// builtinRulePrefixes are the builtin rule texts that vary before any
// ":", and why what varies is not the run's.
var builtinRulePrefixes = map[string]string{
	"preset ": "a net preset's name, which a policy file names and rein checks against its own presets",
}

// TestBuiltinRuleTexts: a builtin rule's text is fixed, or carries what
// varies (the command it refused, the path it protects) after its first
// ":" ("hard deny: rm of /data (a top-level directory)"). trace/otlp
// exports, without content, only the part before that ":" of a builtin
// rule, as the kind of rule: a builtin rule that put a command's
// arguments before it would send them to the collector. The test reads
// every Attribution of the builtin layer the module's code writes.
func TestBuiltinRuleTexts(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root is not %s: %v", root, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		// Only the files that name the layer are parsed.
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte("LayerBuiltin")) {
			return err
		}
		f, err := parser.ParseFile(fset, p, data, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	named := func(e ast.Expr, name string) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == name
		case *ast.SelectorExpr:
			return e.Sel.Name == name
		}
		return false
	}
	seen := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !named(lit.Type, "Attribution") {
				return true
			}
			var rule ast.Expr
			builtin := false
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch {
				case named(kv.Key, "Rule"):
					rule = kv.Value
				case named(kv.Key, "Layer"):
					builtin = named(kv.Value, "LayerBuiltin")
				}
			}
			if !builtin {
				return true
			}
			seen++
			at := fset.Position(lit.Pos())
			// The text's first operand: the part that comes first.
			first := rule
			for {
				b, ok := first.(*ast.BinaryExpr)
				if !ok || b.Op != token.ADD {
					break
				}
				first = b.X
			}
			text, fixed := "", false
			switch e := first.(type) {
			case *ast.BasicLit:
				if e.Kind == token.STRING {
					text, _ = strconv.Unquote(e.Value)
					fixed = true
				}
			case *ast.Ident:
				text, fixed = consts[e.Name]
			}
			switch {
			case rule == nil:
				t.Errorf("%s: a builtin Attribution without a Rule", at)
			case !fixed:
				t.Errorf("%s: a builtin rule's text starts with something not fixed; start it with a fixed kind and a \":\" (\"hard deny: ...\"), since trace/otlp exports only the part before the first \":\" without content", at)
			case first != rule && !strings.Contains(text, ":") && builtinRulePrefixes[text] == "":
				t.Errorf("%s: the builtin rule %q... adds to its text before any \":\"; put what varies after a \":\" (\"hard deny: ...\"), since trace/otlp exports only the part before the first \":\" without content, or, when what varies is no run's, say why in builtinRulePrefixes", at, text)
			}
			return true
		})
	}
	// hard deny, the generated file, and the presets of CheckNet and
	// CheckWeb at least: fewer, and the test is not reading them.
	if seen < 4 {
		t.Fatalf("found %d builtin attributions; the test is not reading the code", seen)
	}
}
