//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestInotifyWatch: each change that can make a file private or public
// spends the watch as it is made, in the directory or below it; nothing
// else does.
func TestInotifyWatch(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	for _, f := range []string{filepath.Join(root, "a"), filepath.Join(sub, "b")} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	dirs := map[string]string{root: dirStamp(root), sub: dirStamp(sub)}
	for _, c := range []struct {
		name   string
		change func() error
		spent  bool
	}{
		{"nothing", func() error { return nil }, false},
		{"a read", func() error { _, err := os.ReadFile(filepath.Join(root, "a")); return err }, false},
		{"chmod in place", func() error { return os.Chmod(filepath.Join(root, "a"), 0o600) }, true},
		{"chmod below", func() error { return os.Chmod(filepath.Join(sub, "b"), 0o600) }, true},
		{"chown in place", func() error { return os.Chown(filepath.Join(root, "a"), 0, 0) }, true},
		{"a new file", func() error { return os.WriteFile(filepath.Join(sub, "c"), nil, 0o600) }, true},
		{"a rename", func() error { return os.Rename(filepath.Join(sub, "c"), filepath.Join(root, "c")) }, true},
		{"a removal", func() error { return os.Remove(filepath.Join(root, "c")) }, true},
	} {
		var w inotifyWatch
		w.watch(dirs)
		if !w.quiet() {
			t.Fatalf("%s: a fresh watch is not quiet", c.name)
		}
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		if got := !w.quiet(); got != c.spent {
			t.Errorf("%s: spent = %v, want %v", c.name, got, c.spent)
		}
		if c.spent && w.quiet() {
			t.Errorf("%s: a spent watch became quiet again", c.name)
		}
		w.stop()
	}
}

// TestPrivateSystemFilesWatched: the watched answer is the stamped one,
// and a spent watch reads the stamps again.
func TestPrivateSystemFilesWatched(t *testing.T) {
	defer watchEtc.Store(watchEtc.Load())
	watchEtc.Store(true)
	first, err := privateSystemFiles()
	if err != nil {
		t.Fatal(err)
	}
	if !etcWatch.on {
		t.Fatal("no watch on /etc after a listing")
	}
	again, _ := privateSystemFiles()
	privateMu.Lock()
	etcWatch.stop()
	stamped, err := privateSystemFilesStamped()
	privateMu.Unlock()
	if err != nil || !slices.Equal(first, again) || !slices.Equal(first, stamped) {
		t.Fatalf("watched %v, again %v, stamped %v (%v)", first, again, stamped, err)
	}
	if _, err := privateSystemFiles(); err != nil || !etcWatch.on {
		t.Fatalf("the watch was not set again: %v", err)
	}
}

// TestNoWatchWithoutPool: a process that runs no sandbox through a pool
// (the CLI's one run) sets no watch on /etc, whose closing at its exit
// would cost it a wait for the kernel's release of the marks.
func TestNoWatchWithoutPool(t *testing.T) {
	was := watchEtc.Load()
	defer watchEtc.Store(was)
	watchEtc.Store(false)
	privateMu.Lock()
	etcWatch.stop()
	privateMemo = nil
	privateMu.Unlock()
	if _, err := privateSystemFiles(); err != nil {
		t.Fatal(err)
	}
	if etcWatch.on {
		t.Fatal("a watch on /etc was set in a process with no pool")
	}
}
