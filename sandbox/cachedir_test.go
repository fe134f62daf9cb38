//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCacheDirPrecedence: SetCacheDir, then REIN_CACHE_DIR, then the
// user's cache directory; "" undoes SetCacheDir, and a relative path is
// refused and changes nothing.
func TestCacheDirPrecedence(t *testing.T) {
	t.Cleanup(func() { SetCacheDir("") })
	env := filepath.Join(t.TempDir(), "env")
	set := filepath.Join(t.TempDir(), "set")
	t.Setenv("REIN_CACHE_DIR", env)
	if got := CacheDir(); got != env {
		t.Fatalf("with REIN_CACHE_DIR: CacheDir() = %q, want %q", got, env)
	}
	if err := SetCacheDir(set + "/"); err != nil {
		t.Fatal(err)
	}
	if got := CacheDir(); got != set {
		t.Fatalf("after SetCacheDir: CacheDir() = %q, want %q", got, set)
	}
	d, err := StateDir("results")
	if err != nil || d != filepath.Join(set, "results") {
		t.Fatalf("StateDir = %q, %v; want %q", d, err, filepath.Join(set, "results"))
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the state directory: %v %v", fi, err)
	}
	var e *Error
	if err := SetCacheDir("relative/cache"); !errors.As(err, &e) || e.Status != InvalidPath {
		t.Fatalf("SetCacheDir(relative) = %v, want an InvalidPath refusal", err)
	}
	if got := CacheDir(); got != set {
		t.Fatalf("a refused SetCacheDir changed CacheDir to %q", got)
	}
	// The chosen directory is checked as the environment's was: a
	// workspace that holds it is refused.
	if err := checkStateOutside(filepath.Dir(set)); !errors.As(err, &e) || e.Status != Denied {
		t.Fatalf("a workspace holding the cache directory: %v, want a Denied refusal", err)
	}
	if err := SetCacheDir(""); err != nil {
		t.Fatal(err)
	}
	if got := CacheDir(); got != env {
		t.Fatalf("after SetCacheDir(\"\"): CacheDir() = %q, want %q", got, env)
	}
	t.Setenv("REIN_CACHE_DIR", "relative")
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "xdg"))
	if got, want := CacheDir(), filepath.Join(home, "xdg", "rein"); got != want {
		t.Fatalf("with a relative REIN_CACHE_DIR: CacheDir() = %q, want %q", got, want)
	}
}
