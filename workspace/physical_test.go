package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree builds a directory with links of every kind the resolver must see
// through, and returns its physical root.
func tree(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/src/deep", "outside/secret"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "ws/src/a.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"ws/abs":         filepath.Join(root, "outside"), // absolute link out
		"ws/rel":         "../outside",                   // relative link out
		"ws/src/up":      "..",                           // link to a parent
		"ws/dangling":    "../outside/new/file",          // dangling, final
		"ws/chain1":      "chain2",                       // chain of links
		"ws/chain2":      "src/deep",                     //
		"ws/loop1":       "loop2",                        // a loop
		"ws/loop2":       "loop1",                        //
		"ws/src/deep/dd": "../../rel/secret",             // link through a link
		"ws/self":        ".",                            // link to itself's dir
		"link-to-ws":     "ws",                           // a workspace behind a link
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestPhysical(t *testing.T) {
	root := tree(t)
	ws := filepath.Join(root, "ws")
	cases := []struct {
		dir, path, want string
	}{
		{ws, "src/a.go", "ws/src/a.go"},
		{ws, "src/../src/a.go", "ws/src/a.go"},
		{ws, "abs/secret", "outside/secret"},
		{ws, "rel/secret/x", "outside/secret/x"},
		{ws, "src/up/src/a.go", "ws/src/a.go"},
		{ws, "src/up/../outside", "outside"}, // .. after a link is physical
		{ws, "dangling", "outside/new/file"},
		{ws, "chain1/x", "ws/src/deep/x"},
		{ws, "src/deep/dd", "outside/secret"},
		{ws, "self/self/src", "ws/src"},
		{ws, "missing/../a", "ws/a"}, // lexical past the first missing component
		{ws, "/", "/"},
		{ws, "..", ""},
		{filepath.Join(root, "link-to-ws"), "src/a.go", "ws/src/a.go"},
		{root, "link-to-ws/abs", "outside"},
		{ws, "src/a.go/x", "ws/src/a.go/x"}, // through a file: lexical
	}
	for _, c := range cases {
		got, err := Physical(c.dir, c.path)
		if err != nil {
			t.Errorf("Physical(%q, %q): %v", c.dir, c.path, err)
			continue
		}
		want := filepath.Join(root, c.want)
		if c.want == "/" {
			want = "/"
		}
		if got != want {
			t.Errorf("Physical(%q, %q) = %q, want %q", strings.TrimPrefix(c.dir, root), c.path, got, want)
		}
	}
	if _, err := Physical(ws, "loop1/x"); !errors.Is(err, ErrLinkLoop) {
		t.Errorf("a link loop: got %v, want ErrLinkLoop", err)
	}
	if _, err := Physical("relative", "x"); err == nil {
		t.Error("a relative base directory was accepted")
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		root, p string
		want    bool
	}{
		{"/w", "/w", true},
		{"/w", "/w/a", true},
		{"/w", "/wa", false},
		{"/w", "/", false},
		{"/", "/x", true},
	}
	for _, c := range cases {
		if got := Within(c.root, c.p); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.root, c.p, got)
		}
	}
}

// FuzzPhysical checks, on any path, that resolution terminates, returns a
// clean absolute path, and agrees with the kernel wherever the path exists.
func FuzzPhysical(f *testing.F) {
	for _, s := range []string{"src/a.go", "abs/secret", "src/up/../outside", "loop1", "dangling", "../../..", "//x//y/.", "self/self/../ws/rel"} {
		f.Add(s)
	}
	root := tree(f)
	ws := filepath.Join(root, "ws")
	f.Fuzz(func(t *testing.T, p string) {
		if strings.IndexByte(p, 0) >= 0 || len(p) > 4096 {
			return
		}
		got, err := Physical(ws, p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("Physical(%q) = %q: not clean and absolute", p, got)
		}
		// Where the kernel can reach the path, it must reach the same file.
		if strings.HasPrefix(p, "/") {
			return
		}
		kernel, err := os.Stat(ws + "/" + p)
		if err != nil {
			return
		}
		ours, err := os.Stat(got)
		if err != nil || !os.SameFile(kernel, ours) {
			t.Fatalf("Physical(%q) = %q, which is not the file the kernel opens (%v)", p, got, err)
		}
	})
}
