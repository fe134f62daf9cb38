package trace

import (
	"encoding/hex"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// lazyRegexp compiles expr the first time it is used: a program that
// links rein but never redacts (the sandbox's init is rein's binary) does
// not pay for it at start-up.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Redacted is what a secret becomes.
const Redacted = "[redacted]"

// Redactor is the one chokepoint secrets pass before anything is
// persisted or printed. These become "[redacted]": the values of the
// secret environment variables it was given, also in their JSON-escaped
// forms; the value of every KEY=value (or KEY: value) pair whose key looks
// secret; the common token formats (cloud keys, GitHub, Slack and API
// tokens, private key blocks, JWTs, bearer credentials); and, word by word
// in a command line, the value of an option named like a secret
// (--password X, --api-key=X, pw=X) and of the password options of the
// programs in passwordOptions (mysql's -pX). A text that is a JSON
// document is redacted value by value, decoded: each string as text (or
// as JSON again, when it holds a document), the value of a key that names
// a secret whole. The zero Redactor redacts all but the declared values.
type Redactor struct {
	// values are the declared values and their escaped forms, longest
	// first.
	values []string
}

// minSecretLen is the shortest secret value redacted by value: a shorter
// one ("1", "true") would blank out ordinary text.
const minSecretLen = 6

// NewRedactor returns a redactor that also redacts each of values, the
// values of secret environment variables, raw and JSON-escaped (up to
// escapedLevels deep). Values shorter than six bytes are left to the
// patterns, and so is a value that "[redacted]" holds, which redacting
// would only make again.
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) < minSecretLen || strings.Contains(Redacted, v) {
			continue
		}
		for _, f := range encodings(v) {
			if !seen[f] {
				seen[f] = true
				r.values = append(r.values, f)
			}
		}
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.SliceStable(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// WithKey is a redactor that also redacts k's secret, in hex, r left as
// it is: a store keyed with k redacts with it, because a command that
// could read the key (on the none rung) and printed it would hand it to
// whoever reads the trace.
func (r *Redactor) WithKey(k *Key) *Redactor { return r.with(hex.EncodeToString(k.secret)) }

// with is a redactor that also redacts values, r left as it is.
func (r *Redactor) with(values ...string) *Redactor {
	n := NewRedactor(values...)
	if r != nil {
		n.values = append(slices.Clone(r.values), n.values...)
		sort.SliceStable(n.values, func(i, j int) bool { return len(n.values[i]) > len(n.values[j]) })
	}
	return n
}

// SecretValues picks, from an environment in KEY=value form, the values of
// the variables whose names look secret, plus those named in extra.
func SecretValues(env []string, extra ...string) []string {
	var out []string
	for _, e := range env {
		k, v, ok := strings.Cut(e, "=")
		if ok && v != "" && (secretKey().MatchString(k) || slices.Contains(extra, k)) {
			out = append(out, v)
		}
	}
	return out
}

// SecretName reports whether a variable's name looks like it holds a
// credential (a token, a password, a key), as SecretValues decides.
func SecretName(name string) bool { return secretKey().MatchString(name) }

// secretKey matches names that look like they hold a credential.
var secretKey = lazyRegexp(`(?i)(secret|token|passw(or)?d|passphrase|api_?key|access_?key|private_?key|credential|session_?key|signing_?key|client_?key|(^|_)auth(_|$))`)

// pattern is a regular expression and the literals one of which any match
// contains: the expression runs only where one is found, which keeps the
// common case (no secret at all) to a few substring searches. lower
// matches the literals against the text in lower case.
type pattern struct {
	re       func() *regexp.Regexp
	literals []string
	lower    bool
	// repl is the replacement, with ${n} for kept groups.
	repl string
}

// patterns are the token formats redacted wherever they appear (the rules
// of secrets.toml, data with their own examples), then the KEY=value,
// KEY: value and "key": "value" pairs with a secret-looking key (the value
// is redacted, the key kept), bearer credentials and passwords in URLs.
var patterns = sync.OnceValue(func() []pattern {
	return append(dataPatterns(), shapePatterns...)
})

// shapePatterns are the rules kept in code: shapes rather than formats.
var shapePatterns = []pattern{
	{re: lazyRegexp(`(?i)("[A-Za-z0-9_.\-]*(secret|token|passw(or)?d|passphrase|api_?key|access_?key|private_?key|credential)[A-Za-z0-9_.\-]*"\s*:\s*")(?:[^"\\]|\\.)+(")`),
		literals: secretWords, lower: true, repl: "${1}" + Redacted + "${4}"},
	// The same pair inside a JSON string, its quotes escaped (once or more)
	// in text that is not a document of its own: a log line quoting JSON.
	{re: lazyRegexp(`(?i)(\\+"[A-Za-z0-9_.\-]*(?:secret|token|passw(?:or)?d|passphrase|api_?key|access_?key|private_?key|credential)[A-Za-z0-9_.\-]*\\+"\s*:\s*\\+")(?:[^"\\]|\\\\)+?(\\+")`),
		literals: secretWords, lower: true, repl: "${1}" + Redacted + "${2}"},
	{re: lazyRegexp(`(?i)\b([A-Za-z0-9_.\-]*(?:secret|token|passw(?:or)?d|passphrase|api_?key|access_?key|private_?key|credential)[A-Za-z0-9_.\-]*\s*[=:]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s"',;&]+)[^\s"',;&]*`),
		literals: secretWords, lower: true, repl: "${1}" + Redacted},
	// The short names of a URL's query parameters that hold a secret (the
	// long ones are the pair pattern's).
	{re: lazyRegexp(`(?i)([?&](?:pw|pwd|pass|sig|key|auth)=)[^&#\s'"]+`), literals: []string{"pw=", "pwd=", "pass=", "sig=", "key=", "auth="}, lower: true, repl: "${1}" + Redacted},
	// Authorization headers and bearer credentials ([ and ] in the
	// credential: one redacted already is replaced whole again, not its
	// scheme).
	{re: lazyRegexp(`(?i)\b(authorization\s*[=:]\s*(?:bearer|basic|token)?\s*)[A-Za-z0-9._~+/\-\[\]]+=*`), literals: []string{"authorization"}, lower: true, repl: "${1}" + Redacted},
	{re: lazyRegexp(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*`), literals: []string{"bearer"}, lower: true, repl: "${1}" + Redacted},
	// Credentials in URLs: scheme://user:password@host.
	{re: lazyRegexp(`\b([a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^@\s/]+(@)`), literals: []string{"://"}, repl: "${1}" + Redacted + "${2}"},
}

// secretWords are the literals of the pair patterns, in lower case.
var secretWords = []string{"secret", "token", "passw", "passphrase", "apikey", "api_key", "accesskey", "access_key", "privatekey", "private_key", "credential"}

// wordsBit is the digram mask's bit of the word rules (redactWords).
const wordsBit = 1 << 63

// digrams maps each pair of bytes, lowered, to the patterns one of whose
// literals starts with it: one pass over the text tells which patterns
// can match at all, so ordinary output costs a table lookup per byte.
var digrams = sync.OnceValue(func() *[1 << 16]uint64 {
	var t [1 << 16]uint64
	if len(patterns()) > 63 {
		panic("trace: more patterns than the digram mask holds")
	}
	for i, p := range patterns() {
		for _, l := range p.literals {
			t[uint16(lowerByte(l[0]))<<8|uint16(lowerByte(l[1]))] |= 1 << i
		}
	}
	for _, l := range wordLiterals() {
		t[uint16(lowerByte(l[0]))<<8|uint16(lowerByte(l[1]))] |= wordsBit
	}
	return &t
})

func lowerByte(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// candidates are the patterns whose literals' first two bytes occur in s.
func candidates(s string) uint64 {
	t := digrams()
	var mask uint64
	for i := 0; i+1 < len(s); i++ {
		mask |= t[uint16(lowerByte(s[i]))<<8|uint16(lowerByte(s[i+1]))]
	}
	return mask
}

// maxDepth bounds how deep JSON held in a JSON string is decoded.
const maxDepth = 8

// maxPasses bounds the passes of Redact.
const maxPasses = 4

// Redact returns s with every secret replaced. It redacts again what it
// changed until nothing changes (a value replaced in a document's escaped
// text can leave a word after an option, or a text no longer JSON), so
// that redacting its result changes nothing.
func (r *Redactor) Redact(s string) string {
	for range maxPasses {
		out := r.redact(s, 0)
		if out == s {
			break
		}
		s = out
	}
	return s
}

func (r *Redactor) redact(s string, depth int) string {
	if s == "" {
		return s
	}
	if depth < maxDepth && isJSON(s) {
		// Every string of the document is redacted decoded, so no escaping
		// hides a secret; outside its strings there are only numbers and
		// punctuation, which the patterns and words are not run over (they
		// would take a closing quote for part of a value).
		return r.replaceValues(r.redactJSON(s, depth))
	}
	s = r.replaceValues(s)
	mask := candidates(s)
	if mask == 0 {
		return s
	}
	lower := ""
	seen := map[*string]bool{}
	for i, p := range patterns() {
		if mask&(1<<i) == 0 {
			continue
		}
		text := s
		if p.lower {
			if lower == "" {
				lower = strings.ToLower(s)
			}
			text = lower
		}
		// The pair patterns share their literals: looked for once.
		key := &p.literals[0]
		found, ok := seen[key]
		if !ok {
			found = containsAny(text, p.literals)
			seen[key] = found
		}
		if !found {
			continue
		}
		repl := p.repl
		if repl == "" {
			repl = Redacted
		}
		if out := p.re().ReplaceAllString(s, repl); out != s {
			s, lower = out, ""
			clear(seen)
		}
	}
	if mask&wordsBit != 0 {
		s = redactWords(s)
	}
	// What a pattern removed may have joined two pieces into a value.
	return r.replaceValues(s)
}

func containsAny(s string, literals []string) bool {
	for _, l := range literals {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// replaceValues replaces every declared value and escaped form in s, again
// until none is left: a replacement can join what surrounds it into
// another (bounded, since the values never occur in Redacted).
func (r *Redactor) replaceValues(s string) string {
	if r == nil {
		return s
	}
	for range 8 {
		changed := false
		for _, v := range r.values {
			if strings.Contains(s, v) {
				s, changed = strings.ReplaceAll(s, v, Redacted), true
			}
		}
		if !changed {
			break
		}
	}
	return s
}
