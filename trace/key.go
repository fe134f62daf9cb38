package trace

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Key is the secret the hash chain is keyed with (HMAC-SHA256): whoever
// can write a trace but not read its key cannot link an edited record
// again. It is the user's, one for all their traces, and kept outside
// them.
type Key struct {
	secret []byte
	id     string
}

// keyBytes is the size of a key.
const keyBytes = 32

// ID names the key without telling it: the first 8 bytes, in hex, of the
// HMAC of a fixed text. Each keyed link records it, so that a trace
// keyed with another key is told apart from an edited one.
func (k *Key) ID() string { return k.id }

// Sum is the HMAC-SHA256, in hex, of data under the key, for the purpose
// label names (a launch bundle's manifest, say): what carries it was
// written by someone holding the key, and a sum for one purpose is never
// valid for another.
func (k *Key) Sum(label string, data []byte) string {
	m := hmac.New(sha256.New, k.secret)
	io.WriteString(m, "rein "+label+"\x00")
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

func newKey(secret []byte) *Key {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, "rein trace key id")
	return &Key{secret: secret, id: hex.EncodeToString(m.Sum(nil)[:8])}
}

// LoadKey reads the key at path, making it (and its directory, 0700)
// where it is missing: 32 random bytes, in hex, in a file of mode 0600
// that appears whole or not at all. A key that is a link, has other
// names, belongs to another user or may be read or written by others is
// refused.
func LoadKey(path string) (*Key, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("trace: the key path %q is not absolute", path)
	}
	k, err := readKey(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := makeKey(path); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("trace: making the key %s: %w", path, err)
		}
		k, err = readKey(path)
	}
	// A key another process is making has two names until it removes the
	// first.
	for i := 0; errors.Is(err, errOtherNames) && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
		k, err = readKey(path)
	}
	return k, err
}

// errOtherNames is a key file with more than one name.
var errOtherNames = errors.New("it has other names")

func readKey(path string) (*Key, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("trace: the key %s: %w (it must be a plain file, not a link)", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trace: the key %s: %w", path, err)
	}
	links, uid, ok := fileOwner(fi)
	switch {
	case !fi.Mode().IsRegular() || !ok:
		return nil, fmt.Errorf("trace: the key %s is not a plain file: refused", path)
	case links != 1:
		return nil, fmt.Errorf("trace: the key %s: %w: refused", path, errOtherNames)
	case uid != os.Geteuid():
		return nil, fmt.Errorf("trace: the key %s belongs to another user: refused", path)
	case fi.Mode().Perm()&othersMode != 0:
		return nil, fmt.Errorf("trace: the key %s may be read or written by others (mode %o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4*keyBytes))
	if err != nil {
		return nil, fmt.Errorf("trace: reading the key %s: %w", path, err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) != keyBytes {
		return nil, fmt.Errorf("trace: the key %s is not %d bytes in hex: refused (move it aside to make a new one; traces keyed with it can then no longer be checked)", path, keyBytes)
	}
	return newKey(secret), nil
}

// makeKey writes a new key beside path and links it there: a reader never
// sees a key half written, and of two processes making one, one wins.
func makeKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret := make([]byte, keyBytes)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".trace-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(secret) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
