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

// walkTree lays out a workspace at base/ws from paths (relative to it, and
// "../outside/..." beside it) to contents: a content "-> target" makes a
// symbolic link, a path ending in "/" an empty directory. It returns the
// workspace directory.
func walkTree(t testing.TB, paths map[string]string) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range paths {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "-> "):
			err = os.Symlink(strings.TrimPrefix(content, "-> "), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// walkTools opens the workspace ws with the given limits and no guard.
func walkTools(t testing.TB, ws string, lim Limits) *Tools {
	t.Helper()
	w, err := workspace.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &Tools{WS: w, Limits: lim}
}

// errKind names an error's kind for table tests: a PathError's or an
// Error's kind, or the error itself.
func errKind(err error) string {
	var pe *workspace.PathError
	var fe *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return string(pe.Kind)
	case errors.As(err, &fe):
		return string(fe.Kind)
	}
	return err.Error()
}

func TestListDir(t *testing.T) {
	ws := walkTree(t, map[string]string{
		"b.txt":              "bb",
		"a.txt":              "a",
		".hidden":            "hhh",
		"Z-upper":            "",
		"dir/inner.txt":      "x",
		"empty/":             "",
		"link":               "-> a.txt",
		"dirlink":            "-> dir",
		"outlink":            "-> ../outside",
		"../outside/x.txt":   "x",
		"many/":              "",
		"dir/sub/deeper.txt": "d",
	})
	for i := range 25 {
		name := filepath.Join(ws, "many", string(rune('a'+i))+".txt")
		if err := os.WriteFile(name, []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		path  string
		lim   Limits
		want  *ListDirResult
		error string
	}{
		{name: "root sorted with types and sizes", path: "", want: &ListDirResult{Path: ".", Total: 10, Entries: []Entry{
			{".hidden", "file", 3}, {"Z-upper", "file", 0}, {"a.txt", "file", 1}, {"b.txt", "file", 2},
			{"dir", "dir", 0}, {"dirlink", "symlink", 0}, {"empty", "dir", 0},
			{"link", "symlink", 0}, {"many", "dir", 0}, {"outlink", "symlink", 0},
		}}},
		{name: "subdirectory", path: "dir", want: &ListDirResult{Path: "dir", Total: 2, Entries: []Entry{
			{"inner.txt", "file", 1}, {"sub", "dir", 0},
		}}},
		{name: "through a link names the directory it reaches", path: "dirlink", want: &ListDirResult{Path: "dir", Total: 2, Entries: []Entry{
			{"inner.txt", "file", 1}, {"sub", "dir", 0},
		}}},
		{name: "empty", path: "empty/", want: &ListDirResult{Path: "empty", Entries: []Entry{}}},
		{name: "capped keeps the first by name", path: "many", lim: Limits{MaxEntries: 3}, want: &ListDirResult{Path: "many", Total: 25, Truncated: true, Entries: []Entry{
			{"a.txt", "file", 0}, {"b.txt", "file", 1}, {"c.txt", "file", 2},
		}}},
		{name: "capped at exactly the total", path: "many", lim: Limits{MaxEntries: 25}, want: nil},
		{name: "missing", path: "nope", error: "not_found"},
		{name: "a file", path: "a.txt", error: "wrong_type"},
		{name: "outside by ..", path: "../outside", error: "outside"},
		{name: "outside through a link", path: "outlink", error: "outside"},
		{name: "outside absolute", path: "/etc", error: "outside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := walkTools(t, ws, tc.lim)
			got, err := tools.ListDir(context.Background(), ListDirArgs{Path: tc.path})
			if errKind(err) != tc.error {
				t.Fatalf("error = %v, want kind %q", err, tc.error)
			}
			if tc.error != "" {
				return
			}
			if tc.want == nil {
				if got.Truncated || got.Total != len(got.Entries) {
					t.Fatalf("got total %d, %d entries, truncated %v", got.Total, len(got.Entries), got.Truncated)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestListDirLarge(t *testing.T) {
	// More entries than one read batch and than twice the limit, written
	// in an order unrelated to their names.
	ws := walkTree(t, nil)
	const n = 1200
	for i := range n {
		name := filepath.Join(ws, strings.Repeat("f", 1+(i*7919)%5)+"-"+itoa5((i*7919)%n))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tools := walkTools(t, ws, Limits{MaxEntries: 250})
	got, err := tools.ListDir(context.Background(), ListDirArgs{Path: "."})
	if err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != n || !got.Truncated || len(got.Entries) != 250 {
		t.Fatalf("total %d truncated %v entries %d", got.Total, got.Truncated, len(got.Entries))
	}
	for i, e := range got.Entries {
		if e.Name != names[i].Name() {
			t.Fatalf("entry %d is %q, want %q", i, e.Name, names[i].Name())
		}
	}
}

func TestListDirCancelled(t *testing.T) {
	ws := walkTree(t, map[string]string{"a": "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := walkTools(t, ws, Limits{}).ListDir(ctx, ListDirArgs{Path: "."})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func itoa5(i int) string {
	b := []byte("00000")
	for k := 4; k >= 0; k-- {
		b[k] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}
