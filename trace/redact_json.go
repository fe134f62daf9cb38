package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// escapedLevels is how many times a declared value is JSON-escaped among
// the forms redacted by value: a document in a string of a document in a
// string.
const escapedLevels = 3

// encodings are the forms of a declared value redacted by value: the value
// and, escaped one to escapedLevels times, the JSON string text an encoder
// writes for it, by the three common escapings (the minimal one, Go's
// default, which also escapes <, > and &, and the ASCII-only one of
// Python's json.dumps).
func encodings(v string) []string {
	out := []string{v}
	for _, esc := range []func(string) string{escapeMinimal, escapeHTML, escapeASCII} {
		e := v
		for range escapedLevels {
			e = esc(e)
			out = append(out, e)
		}
	}
	return out
}

// escapeMinimal is s as the text of a JSON string, without its quotes.
func escapeMinimal(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return unquote(b.String())
}

func escapeHTML(s string) string {
	data, _ := json.Marshal(s)
	return unquote(string(data))
}

// escapeASCII escapes as escapeMinimal does, and every rune past ASCII as
// \uXXXX (a pair of them past the basic plane).
func escapeASCII(s string) string {
	var b strings.Builder
	for _, c := range escapeMinimal(s) {
		switch {
		case c < utf8.RuneSelf:
			b.WriteRune(c)
		case c > 0xffff:
			c -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}

func unquote(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[1 : len(s)-1]
}

// isJSON reports whether s is a JSON document of an object, an array or a
// string (a number or a word is redacted as text).
func isJSON(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" || t[0] != '{' && t[0] != '[' && t[0] != '"' {
		return false
	}
	return json.Valid([]byte(s))
}

// frame is an object or array the JSON walk is in.
type frame struct {
	array bool
	// secretKey: in an object, the key of the value that follows names a
	// secret; in an array, the key of the array did.
	secretKey bool
	// args reads an array's strings as the words of a command.
	args *argv
}

// redactJSON redacts the valid JSON document s string by string, keeping
// every other byte: a string that is the value of a key naming a secret,
// or that follows an option naming one in an array (an argv), becomes
// Redacted whole; any other string is redacted decoded, as text (or as
// JSON, when it holds a document), and written back escaped where that
// changed it.
func (r *Redactor) redactJSON(s string, depth int) string {
	var (
		b     strings.Builder
		done  int // s[:done] is in b
		stack []frame
	)
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return &stack[len(stack)-1]
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '[':
			nf := frame{array: c == '['}
			if nf.array {
				nf.args = &argv{}
				// A list under a key naming a secret is a list of them.
				if f := top(); f != nil && !f.array && f.secretKey {
					nf.secretKey = true
				}
			}
			stack = append(stack, nf)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if f := top(); f != nil && !f.array {
				f.secretKey = false
			}
		case '"':
			start, end := i, stringEnd(s, i)
			lit := s[start:end]
			i = end - 1
			f := top()
			if f != nil && !f.array && nextIsColon(s, end) {
				key := decodeString(lit)
				f.secretKey = secretName(key)
				// A key is text too: a declared value, however escaped.
				if out := r.redact(key, depth+1); out != key {
					b.WriteString(s[done:start])
					b.WriteString(quote(out))
					done = end
				}
				continue
			}
			val := decodeString(lit)
			var out string
			switch {
			case f != nil && !f.array && f.secretKey:
				f.secretKey = false
				out = Redacted
				if val == "" {
					out = ""
				}
			case f != nil && f.array && f.secretKey:
				out = Redacted
				if val == "" {
					out = ""
				}
			case f != nil && f.array:
				// The word as redacted, so that a second pass reads the
				// same words.
				out = r.redact(val, depth+1)
				if keep, secret := f.args.word(out); secret {
					out = out[:keep] + Redacted
				}
			default:
				out = r.redact(val, depth+1)
			}
			if out != val {
				b.WriteString(s[done:start])
				b.WriteString(quote(out))
				done = end
			}
		default:
			if f := top(); f != nil && c > ' ' && c != ':' {
				// A number, true, false or null: not a word of a command,
				// nor a string under a secret key.
				if f.array {
					f.args.word("")
				} else {
					f.secretKey = false
				}
			}
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// stringEnd is the index just past the JSON string literal at s[i].
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

func nextIsColon(s string, i int) bool {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return s[i] == ':'
		}
	}
	return false
}

// decodeString is the value of a JSON string literal (quotes included).
func decodeString(lit string) string {
	if !strings.Contains(lit, `\`) {
		return lit[1 : len(lit)-1]
	}
	var v string
	json.Unmarshal([]byte(lit), &v)
	return v
}

// quote is s as a JSON string literal, < > & kept as they are.
func quote(s string) string {
	return `"` + escapeMinimal(s) + `"`
}
