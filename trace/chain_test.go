package trace

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseHead(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for in, want := range map[string]string{"12:" + hash: "12:" + hash, hash: "0:" + hash, "12:" + strings.ToUpper(hash): "12:" + hash} {
		h, err := ParseHead(in)
		if err != nil || h.String() != want {
			t.Errorf("ParseHead(%q) = %v, %v", in, h, err)
		}
	}
	for _, in := range []string{"", "0:" + hash, "x:" + hash, "12:abc", hash + "00"} {
		if _, err := ParseHead(in); err == nil {
			t.Errorf("ParseHead(%q) accepted", in)
		}
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "key")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadKey(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || len(id) != 16 {
			t.Fatalf("processes making the key at once got different keys: %q", ids)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("the key's directory has mode %o", di.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "keys", ".trace-key-*")); len(left) > 0 {
		t.Fatalf("left behind: %q", left)
	}
	os.Chmod(path, 0o640)
	if _, err := LoadKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key others may read was used: %v", err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.key")
	os.Symlink(path, link)
	if _, err := LoadKey(link); err == nil {
		t.Fatal("a key that is a link was used")
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not hex\n"), 0o600)
	if _, err := LoadKey(bad); err == nil || !strings.Contains(err.Error(), "not 32 bytes") {
		t.Fatalf("%v", err)
	}
	if _, err := LoadKey("relative.key"); err == nil {
		t.Fatal("a relative key path was used")
	}
}

// TestLink pins the form of a link, which every store's chain is made
// of and which must never change: the values were computed apart from
// rein (Python's hashlib and hmac over the same bytes).
func TestLink(t *testing.T) {
	run := Run{ID: "old", StartedAt: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC), Workspace: "/w", Surface: "coding", Mode: "ask", Source: "cli", PID: 42}
	if got, want := Link(nil, "", Table(run), 1, run), "6eafd2a6ae92324a7d17ee0d3a4b522d6a910546bb3dc315f74eac9b6d629518"; got != want {
		t.Errorf("the unkeyed link = %s, want %s", got, want)
	}
	secret, _ := hex.DecodeString("7265696e2074657374206b6579202d2d206e6f742061207265616c206f6e6521")
	k := newKey(secret)
	if got, want := Link(k, "", Table(run), 1, run), "a5900590cddca8b910e75f8fec4386943b98248d1157c54bbc1fec3284fd03e1"; got != want {
		t.Errorf("the keyed link = %s, want %s", got, want)
	}
	// A store keyed with k redacts the key's text from what it keeps.
	r := NewRedactor("hunter2")
	if got, want := r.WithKey(k).Redact("key "+hex.EncodeToString(secret)+" pw hunter2"), "key [redacted] pw [redacted]"; got != want {
		t.Errorf("WithKey: %q, want %q", got, want)
	}
	if got := r.Redact(hex.EncodeToString(secret)); got != hex.EncodeToString(secret) {
		t.Errorf("WithKey changed the redactor it was called on: %q", got)
	}
}
