package policy

import "testing"

func TestPrintable(t *testing.T) {
	cases := map[string]string{
		"git status":            "git status",
		"héllo 日本":              "héllo 日本",
		"a\x1b[31mred":          `a\x1b[31mred`,
		"x\ny\tz\r":             `x\ny\tz\r`,
		"evil\u202etxt.exe":     `evil\u202etxt.exe`,
		"zero\u200bwidth":       `zero\u200bwidth`,
		"bad\xffbyte":           `bad\xffbyte`,
		"bell\a":                `bell\a`,
		"del\x7f":               `del\x7f`,
		"title\x1b]0;pwned\x07": `title\x1b]0;pwned\a`,
	}
	for in, want := range cases {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
