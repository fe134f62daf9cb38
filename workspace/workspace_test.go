package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// escapeTree is a workspace with every kind of link an agent's repository
// can hold, an outside directory, and a HOME.
type escapeTree struct {
	root, ws, outside, home, wsLink string
}

func newEscapeTree(t testing.TB) escapeTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := escapeTree{root: root, ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside"), home: filepath.Join(root, "home"), wsLink: filepath.Join(root, "ws-link")}
	for _, d := range []string{"ws/src/deep", "ws/docs", "outside/dir", "home/.ssh"} {
		testenv.Must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	files := map[string]string{
		"ws/src/a.go":        "package a\n",
		"ws/docs/readme.md":  "hello\n",
		"outside/secret.txt": "secret\n",
		"home/.ssh/id_rsa":   "key\n",
		"ws/line\nbreak":     "x",
		"ws/bad\xffname":     "x",
	}
	for name, content := range files {
		testenv.Must(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	links := map[string]string{
		"ws/to-outside":      e.outside,
		"ws/to-outside-rel":  "../outside",
		"ws/to-root":         "/",
		"ws/to-home":         e.home,
		"ws/dangling":        "nowhere/file",
		"ws/dangling-out":    "../outside/missing",
		"ws/src/up":          "..",
		"ws/src/deep/upup":   "../../docs",
		"ws/src/deep/escape": "../../../outside",
		"ws/inside":          "src/a.go",
		"ws/inside-abs":      filepath.Join(e.ws, "docs"),
		"ws/via-ws-link":     filepath.Join(e.wsLink, "docs"),
		"ws/chain":           "inside",
		"ws/loop1":           "loop2",
		"ws/loop2":           "loop1",
		"ws/dir-dangling":    "src/missing-dir",
		"ws-link":            "ws",
	}
	for name, target := range links {
		testenv.Must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	// A hard link made before the run: the same inode as a file outside.
	testenv.Must(t, os.Link(filepath.Join(root, "outside/secret.txt"), filepath.Join(root, "ws/hard")))
	return e
}

func TestResolveEscapes(t *testing.T) {
	e := newEscapeTree(t)
	w, err := Open(e.wsLink) // the workspace itself sits behind a link
	testenv.Must(t, err)
	defer w.Close()
	cases := []struct {
		path      string
		rel       string // expected Rel when allowed
		exists    bool
		kind      Kind // expected refusal
		component string
	}{
		{path: "src/a.go", rel: "src/a.go", exists: true},
		{path: "./src//a.go", rel: "src/a.go", exists: true},
		{path: ".", rel: ".", exists: true},
		{path: "src/new/file.go", rel: "src/new/file.go"},
		{path: "src/../docs/readme.md", rel: "docs/readme.md", exists: true},
		{path: filepath.Join(e.ws, "src/a.go"), rel: "src/a.go", exists: true},
		{path: filepath.Join(e.wsLink, "src/a.go"), rel: "src/a.go", exists: true},
		{path: "inside", rel: "src/a.go", exists: true},
		{path: "chain", rel: "src/a.go", exists: true},
		{path: "inside-abs/readme.md", rel: "docs/readme.md", exists: true},
		{path: "via-ws-link/readme.md", rel: "docs/readme.md", exists: true},
		{path: "src/up/docs", rel: "docs", exists: true},
		{path: "src/deep/upup/readme.md", rel: "docs/readme.md", exists: true},
		{path: "src/up/src/up/src/a.go", rel: "src/a.go", exists: true},
		{path: "hard", rel: "hard", exists: true}, // Resolve sees a name; the tools refuse to read it
		{path: "line\nbreak", rel: "line\nbreak", exists: true},
		{path: "bad\xffname", rel: "bad\xffname", exists: true},

		{path: "..", kind: Outside, component: ".."},
		{path: "../outside/secret.txt", kind: Outside, component: ".."},
		{path: "src/../../outside", kind: Outside, component: ".."},
		{path: "/etc/passwd", kind: Outside, component: "/etc/passwd"},
		{path: filepath.Join(e.outside, "secret.txt"), kind: Outside},
		{path: e.ws + "/../outside/secret.txt", kind: Outside, component: ".."},
		{path: e.ws + "/to-outside/../ws/src/a.go", kind: Outside, component: "to-outside"}, // the link is walked, not cleaned away
		{path: e.ws + "//src/./a.go", rel: "src/a.go", exists: true},
		{path: "to-outside/secret.txt", kind: Outside, component: "to-outside"},
		{path: "to-outside", kind: Outside, component: "to-outside"},
		{path: "to-outside-rel/new-file", kind: Outside, component: "to-outside-rel"}, // the parent of a file that does not exist yet
		{path: "to-root/etc/passwd", kind: Outside, component: "to-root"},
		{path: "to-home/.ssh/id_rsa", kind: Outside, component: "to-home"},
		{path: "src/deep/escape/secret.txt", kind: Outside, component: "src/deep/escape"},
		{path: "dangling", kind: InvalidPath, component: "dangling"},
		{path: "dangling-out", kind: Outside, component: "dangling-out"},
		{path: "dir-dangling/x", kind: InvalidPath, component: "dir-dangling"},
		{path: "loop1", kind: InvalidPath},
		{path: "src/a.go/x", kind: InvalidPath, component: "src/a.go"},
		{path: "", kind: InvalidPath},
		{path: "a\x00b", kind: InvalidPath},
		{path: strings.Repeat("a/", 3000), kind: InvalidPath},
		{path: "missing/../src", kind: NotFound, component: "missing"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.path, "/", "|"), func(t *testing.T) {
			tg, err := w.Resolve(c.path)
			if c.kind != "" {
				var pe *PathError
				if !errors.As(err, &pe) || pe.Kind != c.kind || (c.component != "" && pe.Component != c.component) {
					t.Fatalf("got %v (target %+v), want %s at %q", err, tg, c.kind, c.component)
				}
				if !errors.Is(err, &PathError{Kind: c.kind}) {
					t.Fatalf("errors.Is does not see kind %s", c.kind)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tg.Rel != c.rel || tg.Exists() != c.exists || tg.Path != filepath.Join(e.ws, c.rel) || tg.Root.Real != e.ws {
				t.Fatalf("got rel=%q exists=%v path=%q, want rel=%q exists=%v", tg.Rel, tg.Exists(), tg.Path, c.rel, c.exists)
			}
		})
	}
}

func TestResolveMultipleRoots(t *testing.T) {
	e := newEscapeTree(t)
	w, err := Open(e.ws, e.outside)
	testenv.Must(t, err)
	defer w.Close()
	tg, err := w.Resolve(filepath.Join(e.outside, "secret.txt"))
	if err != nil || tg.Root.Real != e.outside || tg.Rel != "secret.txt" {
		t.Fatalf("second root: %+v %v", tg, err)
	}
	// Relative paths start at the first root; a link in one root may not
	// lead into another.
	if _, err := w.Resolve("to-outside/secret.txt"); !errors.Is(err, &PathError{Kind: Outside}) {
		t.Fatalf("a link across roots: %v", err)
	}
	if _, err := Open(); err == nil {
		t.Fatal("a workspace without roots opened")
	}
	if _, err := Open(filepath.Join(e.ws, "src/a.go")); err == nil {
		t.Fatal("a file opened as a root")
	}
}

// FuzzResolve: whatever the path, Resolve never returns a target outside
// its root, and what it returns is where the kernel would land inside the
// root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"src/a.go", "..", "to-outside/x", "src/up/../..", "inside", "dangling", "/", "src/deep/upup/../../..", "via-ws-link/../../outside", "loop1/x", "chain/.."} {
		f.Add(s)
	}
	e := newEscapeTree(f)
	w, err := Open(e.ws)
	testenv.Must(f, err)
	f.Fuzz(func(t *testing.T, p string) {
		tg, err := w.Resolve(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Resolve(%q): untyped error %v", p, err)
			}
			return
		}
		if !Within(e.ws, tg.Path) || tg.Path != filepath.Join(e.ws, tg.Rel) || tg.Rel == ".." || strings.HasPrefix(tg.Rel, "../") {
			t.Fatalf("Resolve(%q) = %q, outside the root", p, tg.Path)
		}
		// The physical path must not pass through a link: it is where the
		// kernel lands when it opens Path itself.
		if real, err := filepath.EvalSymlinks(tg.Path); err == nil && real != tg.Path {
			t.Fatalf("Resolve(%q) = %q, which is a link to %q", p, tg.Path, real)
		}
	})
}
