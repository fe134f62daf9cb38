package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/workspace"
)

// TestSwappedLinks: while one goroutine flips a link (and a directory)
// between a target inside the workspace and one outside, another reads and
// writes through it 10,000 times. Nothing outside is ever read or written;
// every call either works on the inside file or is refused.
func TestSwappedLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(ws, "inside-dir"), filepath.Join(ws, "d"), outside} {
		testenv.Must(t, os.MkdirAll(d, 0o755))
	}
	secret := []byte("outside secret\n")
	testenv.Must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), secret, 0o600))
	testenv.Must(t, os.WriteFile(filepath.Join(outside, "f.txt"), secret, 0o600))
	testenv.Must(t, os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside\n"), 0o644))
	testenv.Must(t, os.Symlink("inside.txt", filepath.Join(ws, "flip")))
	before := snapshot(t, outside)

	w, err := workspace.Open(ws)
	testenv.Must(t, err)
	defer w.Close()
	tools := &Tools{WS: w}

	const n = 10_000
	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Flip the file link with an atomic rename, and the directory d
		// between a real directory and a link out.
		defer wg.Done()
		link, tmp := filepath.Join(ws, "flip"), filepath.Join(ws, "flip.tmp")
		d, dReal := filepath.Join(ws, "d"), filepath.Join(ws, "d.real")
		targets := []string{filepath.Join(outside, "secret.txt"), "inside.txt"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(tmp)
			if os.Symlink(targets[i%2], tmp) == nil {
				os.Rename(tmp, link)
			}
			if i%2 == 0 {
				if os.Rename(d, dReal) == nil {
					os.Symlink(outside, d)
				}
			} else {
				os.Remove(d)
				os.Rename(dReal, d)
			}
			flips.Add(1)
			// A short pause leaves the other core to the calls under test;
			// without it the flips starve them and the test takes minutes.
			time.Sleep(20 * time.Microsecond)
		}
	}()

	ctx := context.Background()
	var reads, writes, refused int
	for i := 0; i < n; i++ {
		if r, err := tools.ReadFile(ctx, ReadFileArgs{Path: "flip"}); err == nil {
			reads++
			if r.Content == string(secret) {
				t.Fatalf("read %d returned the outside file", i)
			}
		} else if !refusal(err) {
			t.Fatalf("read %d: unexpected error %v", i, err)
		} else {
			refused++
		}
		if _, err := tools.WriteFile(ctx, WriteFileArgs{Path: "flip", Content: "written\n"}); err == nil {
			writes++
		} else if !refusal(err) {
			t.Fatalf("write %d: unexpected error %v", i, err)
		} else {
			refused++
		}
		if _, err := tools.WriteFile(ctx, WriteFileArgs{Path: "d/f.txt", Content: "written\n"}); err == nil {
			writes++
		} else if !refusal(err) {
			t.Fatalf("write into d %d: unexpected error %v", i, err)
		} else {
			refused++
		}
	}
	close(stop)
	wg.Wait()
	if after := snapshot(t, outside); !equalSnapshots(before, after) {
		t.Fatalf("the outside directory changed:\nbefore %v\nafter  %v", before, after)
	}
	t.Logf("%d flips; %d reads and %d writes went through, %d refused", flips.Load(), reads, writes, refused)
	if flips.Load() < 100 || reads == 0 || writes == 0 || refused == 0 {
		t.Fatalf("the race did not happen: %d flips, %d reads, %d writes, %d refused", flips.Load(), reads, writes, refused)
	}
}

// refusal reports whether err is an outcome the race may legitimately
// produce: a typed refusal, or the kernel reporting that a name changed
// under an operation (which then did nothing).
func refusal(err error) bool {
	var pe *workspace.PathError
	var fe *Error
	if errors.As(err, &pe) || errors.As(err, &fe) {
		return true
	}
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.ENOTDIR, syscall.ELOOP, syscall.EEXIST, syscall.ENOTEMPTY, syscall.EISDIR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

type fileState struct {
	size    int64
	mode    os.FileMode
	modTime time.Time
	content string
}

func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	entries, err := os.ReadDir(dir)
	testenv.Must(t, err)
	for _, e := range entries {
		fi, err := e.Info()
		testenv.Must(t, err)
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = fileState{fi.Size(), fi.Mode(), fi.ModTime(), string(data)}
	}
	return out
}

func equalSnapshots(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
