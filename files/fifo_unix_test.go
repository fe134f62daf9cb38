//go:build unix

package files

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestListDirOther: what is neither a file, a directory nor a link (a
// FIFO) is listed as "other", never opened. Windows has no FIFO in the
// file system, so this test is Unix's.
func TestListDirOther(t *testing.T) {
	ws := walkTree(t, map[string]string{"a.txt": "a"})
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := walkTools(t, ws, Limits{}).ListDir(context.Background(), ListDirArgs{Path: ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"a.txt", "file", 1}, {"fifo", "other", 0}}
	if got.Total != 2 || !slices.Equal(got.Entries, want) {
		t.Fatalf("got %+v, want %v", got, want)
	}
}
