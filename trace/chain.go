package trace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Head is a link of the chain, kept to check later that the chain still
// extends it: whoever removes the newest records with their links leaves
// a chain that verifies, but not one that reaches a head kept elsewhere.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// String is the head as ParseHead reads it: SEQ:HASH.
func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Seq, h.Hash) }

// ParseHead reads a head as String writes it, or a hash alone (then any
// link of the chain may be it).
func ParseHead(s string) (Head, error) {
	var h Head
	hash := s
	if seq, rest, ok := strings.Cut(s, ":"); ok {
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n < 1 {
			return h, fmt.Errorf("trace: the head %q is not SEQ:HASH (SEQ a link's number, from 1)", s)
		}
		h.Seq, hash = n, rest
	}
	if b, err := hex.DecodeString(hash); err != nil || len(b) != 32 {
		return h, fmt.Errorf("trace: the head %q does not end in a hash of 64 hex digits", s)
	}
	h.Hash = strings.ToLower(hash)
	return h, nil
}

// Chain is the hash chain as VerifyChain found it.
type Chain struct {
	// Links counts the links checked, up to the first that failed.
	Links int64 `json:"links"`
	// Unkeyed are links of SHA-256 alone, written before the store had a
	// key; anyone who can write the file can make them again. They can
	// only precede the keyed ones, which then seal them.
	Unkeyed int64 `json:"unkeyed"`
	// Keyed are links of HMAC-SHA256 with the key given (KeyID).
	Keyed int64 `json:"keyed"`
	// OtherKey are links keyed with another key, which cannot be checked.
	OtherKey int64 `json:"other_key"`
	// FirstKeyed is the first keyed link, 0 when there is none.
	FirstKeyed int64  `json:"first_keyed,omitempty"`
	KeyID      string `json:"key_id,omitempty"`
	// Head is the last link checked: the chain's head, when it verified.
	Head Head `json:"head"`
	// Extends says the chain reaches the kept head it was given.
	Extends bool `json:"extends_kept_head,omitempty"`
}

// Form says how the chain's links are made, in words.
func (c *Chain) Form() string {
	keyed := func() string {
		if c.OtherKey > 0 {
			return "keyed (HMAC-SHA256) with a key other than the one given, which cannot check it"
		}
		return "keyed (HMAC-SHA256, key id " + c.KeyID + ")"
	}
	switch {
	case c.Links == 0:
		return "empty"
	case c.Unkeyed == 0:
		return keyed()
	case c.Keyed+c.OtherKey == 0:
		return "unkeyed (SHA-256 alone: whoever can write the file can link it again)"
	default:
		return fmt.Sprintf("unkeyed (SHA-256) before link %d, made before the store had a key and sealed by the keyed links; %s from link %d", c.FirstKeyed, keyed(), c.FirstKeyed)
	}
}

// Link is the link of one record in a store's hash chain: the previous
// link, where the record is (its Table and its row there), and its
// canonical JSON, hashed with SHA-256 (k nil, the chain of a store made
// before keys) or HMAC-SHA256 with k. A store writes it beside the record
// and recomputes it to verify; the form never changes, so that traces
// written before stay verifiable.
func Link(k *Key, prev, table string, row int64, rec Record) string {
	data, _ := json.Marshal(rec)
	h := sha256.New()
	if k != nil {
		h = hmac.New(sha256.New, k.secret)
	}
	fmt.Fprintf(h, "%s\n%s\n%d\n", prev, table, row)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyError is a record that does not match the chain.
type VerifyError struct {
	Seq    int64
	Table  string
	Row    int64
	Reason string
}

func (e *VerifyError) Error() string {
	switch {
	case e.Table == "":
		return "trace: the chain: " + e.Reason
	case e.Seq == 0:
		return fmt.Sprintf("trace: %s: %s", e.Table, e.Reason)
	}
	return fmt.Sprintf("trace: chain link %d (%s row %d): %s", e.Seq, e.Table, e.Row, e.Reason)
}
