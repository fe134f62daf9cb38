package policy

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s safe to show on a terminal: control characters,
// invisible and direction-changing characters, and bytes that are not
// UTF-8 are written as Go escapes. An argv or a path comes from the agent
// (or from a repository it read); printed raw, it could move the cursor,
// recolour or rewrite the lines a person reads before approving.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if !shown(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case shown(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func shown(r rune) bool {
	return r != utf8.RuneError && (r == ' ' || unicode.IsPrint(r)) && !unicode.Is(unicode.Cf, r)
}
