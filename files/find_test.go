package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/workspace"
)

// ignoreTree has .gitignore files at two levels, negation, anchored and
// directory-only patterns, a .git directory and links out of the tree.
var ignoreTree = map[string]string{
	".gitignore":             "# comment\n*.log\n!keep.log\nbuild/\n/anchored.txt\nnested/deep/*.gen\n",
	"a.go":                   "package a\n",
	"a.log":                  "ignored\n",
	"keep.log":               "negated, so kept\n",
	"anchored.txt":           "ignored at the root only\n",
	"build/out.go":           "ignored directory\n",
	"src/build":              "a file named build: kept\n",
	"src/anchored.txt":       "anchored pattern does not reach here\n",
	"src/x.log":              "ignored everywhere\n",
	"src/main.go":            "package main\n",
	"nested/.gitignore":      "*.tmp\n!important.log\n/local/\n",
	"nested/a.tmp":           "ignored by nested\n",
	"nested/important.log":   "re-included by the nested file\n",
	"nested/b.go":            "package nested\n",
	"nested/local/x.go":      "ignored by nested anchored dir\n",
	"nested/deep/x.gen":      "ignored by the root's path pattern\n",
	"nested/deep/y.go":       "package deep\n",
	"nested/deep/local/z.go": "kept: the anchored /local/ is nested/local only\n",
	"other/a.tmp":            "not ignored: the nested rule stays in nested\n",
	".git/config":            "[core]\n",
	".git/objects/x.go":      "package x\n",
	"sub/.git":               "gitdir: elsewhere\n",
	"sub/s.go":               "package sub\n",
	"a-b.go":                 "package ab\n",
	"link.go":                "-> a.go",
	"linkdir":                "-> src",
	"outdir":                 "-> ../outside",
	"../outside/secret.go":   "package secret\n",
}

func TestFindFiles(t *testing.T) {
	ws := walkTree(t, ignoreTree)
	tests := []struct {
		name    string
		args    FindFilesArgs
		lim     Limits
		want    []string
		trunc   bool
		errKind string
	}{
		{name: "all files, gitignore applied, walk order", args: FindFilesArgs{Pattern: "**"}, want: []string{
			".gitignore", "a-b.go", "a.go", "keep.log",
			"nested/.gitignore", "nested/b.go", "nested/deep/local/z.go", "nested/deep/y.go", "nested/important.log",
			"other/a.tmp", "src/anchored.txt", "src/build", "src/main.go", "sub/s.go",
		}},
		{name: "go files anywhere, no links, no .git", args: FindFilesArgs{Pattern: "**/*.go"}, want: []string{
			"a-b.go", "a.go", "nested/b.go", "nested/deep/local/z.go", "nested/deep/y.go", "src/main.go", "sub/s.go",
		}},
		{name: "top level only", args: FindFilesArgs{Pattern: "*.go"}, want: []string{"a-b.go", "a.go"}},
		{name: "leading ./ is the same", args: FindFilesArgs{Pattern: "./*.go"}, want: []string{"a-b.go", "a.go"}},
		{name: "relative to path", args: FindFilesArgs{Pattern: "*.go", Path: "nested"}, want: []string{"nested/b.go"}},
		{name: "path under ignore rules of its parents", args: FindFilesArgs{Pattern: "**", Path: "nested/deep"}, want: []string{
			"nested/deep/local/z.go", "nested/deep/y.go",
		}},
		{name: "path given through a link", args: FindFilesArgs{Pattern: "*", Path: "linkdir"}, want: []string{
			"src/anchored.txt", "src/build", "src/main.go",
		}},
		{name: "middle components", args: FindFilesArgs{Pattern: "nested/*/*.go"}, want: []string{"nested/deep/y.go"}},
		{name: "alternatives", args: FindFilesArgs{Pattern: "{src,sub}/*.go"}, want: []string{"src/main.go", "sub/s.go"}},
		{name: "ignored dir named outright stays ignored inside the walk", args: FindFilesArgs{Pattern: "build/*"}, want: []string{}},
		{name: "an ignored directory named as path is walked", args: FindFilesArgs{Pattern: "*", Path: "build"}, want: []string{"build/out.go"}},
		{name: "no match", args: FindFilesArgs{Pattern: "**/*.rs"}, want: []string{}},
		{name: "capped", args: FindFilesArgs{Pattern: "**/*.go"}, lim: Limits{MaxEntries: 3}, trunc: true, want: []string{
			"a-b.go", "a.go", "nested/b.go",
		}},
		{name: "cap equal to the matches", args: FindFilesArgs{Pattern: "*.go"}, lim: Limits{MaxEntries: 2}, want: []string{"a-b.go", "a.go"}},
		{name: "bad glob", args: FindFilesArgs{Pattern: "src/[a"}, errKind: "bad_argument"},
		{name: "empty glob", args: FindFilesArgs{Pattern: ""}, errKind: "bad_argument"},
		{name: "absolute glob", args: FindFilesArgs{Pattern: "/etc/*"}, errKind: "bad_argument"},
		{name: "path outside", args: FindFilesArgs{Pattern: "**", Path: "../outside"}, errKind: "outside"},
		{name: "path outside through a link", args: FindFilesArgs{Pattern: "**", Path: "outdir"}, errKind: "outside"},
		{name: "path missing", args: FindFilesArgs{Pattern: "**", Path: "nope"}, errKind: "not_found"},
		{name: "path is a file", args: FindFilesArgs{Pattern: "**", Path: "a.go"}, errKind: "wrong_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := walkTools(t, ws, tc.lim).FindFiles(context.Background(), tc.args)
			if errKind(err) != tc.errKind {
				t.Fatalf("error = %v, want kind %q", err, tc.errKind)
			}
			if tc.errKind != "" {
				return
			}
			if !reflect.DeepEqual(got.Paths, tc.want) || got.Truncated != tc.trunc {
				t.Errorf("got %q truncated %v\nwant %q truncated %v", got.Paths, got.Truncated, tc.want, tc.trunc)
			}
		})
	}
}

func TestFindFilesSecondRoot(t *testing.T) {
	first := walkTree(t, map[string]string{"a.go": ""})
	second := walkTree(t, map[string]string{"b/c.go": ""})
	w, err := workspace.Open(first, second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tools := &Tools{WS: w}
	got, err := tools.FindFiles(context.Background(), FindFilesArgs{Pattern: "**/*.go", Path: second})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{second + "/b/c.go"}; !reflect.DeepEqual(got.Paths, want) {
		t.Fatalf("got %q, want %q", got.Paths, want)
	}
}

func TestFindFilesCancelled(t *testing.T) {
	ws := walkTree(t, ignoreTree)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := walkTools(t, ws, Limits{}).FindFiles(ctx, FindFilesArgs{Pattern: "**"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestGlobPruner(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"cmd/*/main.go", "cmd", true},
		{"cmd/*/main.go", "cmd/x", true},
		{"cmd/*/main.go", "cmd/x/y", false},
		{"cmd/*/main.go", "pkg", false},
		{"*.go", "a", false},
		{"src/**/*.go", "src/a/b/c", true},
		{"src/**/*.go", "lib", false},
		{"**", "a/b", true},
		{"{a,b/c}/*.go", "b/c", true},
	}
	for _, tc := range tests {
		if got := newGlobPruner(tc.pattern).mayHold(tc.dir); got != tc.want {
			t.Errorf("mayHold(%q, %q) = %v, want %v", tc.pattern, tc.dir, got, tc.want)
		}
	}
}

// TestFindFilesDepthBound: a tree deeper than the walk goes is reported,
// not silently cut: the directory where it stopped is in Unlisted.
func TestFindFilesDepthBound(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	deep := root
	for range maxWalkDepth + 10 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "leaf.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "top.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	res, err := (&Tools{WS: w}).FindFiles(context.Background(), FindFilesArgs{Pattern: "**/*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Paths) != 1 || res.Paths[0] != "top.txt" || len(res.Unlisted) != 1 || strings.Count(res.Unlisted[0], "/") != maxWalkDepth {
		t.Fatalf("paths %v, unlisted %v", res.Paths, res.Unlisted)
	}
}
