// Package keyfile owns the reading and making of rein's key file: the
// user's secret that keys the trace's hash chain, a launch bundle's
// manifest and the sandbox's shared session state. It holds no policy
// of where the key lives and imports nothing of rein's.
package keyfile

import (
	"crypto/rand"
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

// Bytes is the size of a key.
const Bytes = 32

// Load reads the key at path, making it (and its directory, 0700)
// where it is missing: 32 random bytes, in hex, in a file of mode 0600
// that appears whole or not at all. A key that is a link, has other
// names, belongs to another user or may be read or written by others is
// refused.
func Load(path string) ([]byte, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("the key path %q is not absolute", path)
	}
	k, err := readKey(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := makeKey(path); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("making the key %s: %w", path, err)
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

func readKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("the key %s: %w (it must be a plain file, not a link)", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("the key %s: %w", path, err)
	}
	links, uid, ok := fileOwner(fi)
	switch {
	case !fi.Mode().IsRegular() || !ok:
		return nil, fmt.Errorf("the key %s is not a plain file: refused", path)
	case links != 1:
		return nil, fmt.Errorf("the key %s: %w: refused", path, errOtherNames)
	case uid != os.Geteuid():
		return nil, fmt.Errorf("the key %s belongs to another user: refused", path)
	case fi.Mode().Perm()&othersMode != 0:
		return nil, fmt.Errorf("the key %s may be read or written by others (mode %o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4*Bytes))
	if err != nil {
		return nil, fmt.Errorf("reading the key %s: %w", path, err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) != Bytes {
		return nil, fmt.Errorf("the key %s is not %d bytes in hex: refused (move it aside to make a new one; traces keyed with it can then no longer be checked)", path, Bytes)
	}
	return secret, nil
}

// makeKey writes a new key beside path and links it there: a reader never
// sees a key half written, and of two processes making one, one wins.
func makeKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret := make([]byte, Bytes)
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
