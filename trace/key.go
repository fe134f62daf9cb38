package trace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/reinhq/rein/internal/keyfile"
)

// Key is the secret the hash chain is keyed with (HMAC-SHA256): whoever
// can write a trace but not read its key cannot link an edited record
// again. It is the user's, one for all their traces, and kept outside
// them.
type Key struct {
	secret []byte
	id     string
}

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
	secret, err := keyfile.Load(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return newKey(secret), nil
}
