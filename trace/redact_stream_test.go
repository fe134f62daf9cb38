package trace

import (
	"strings"
	"testing"
)

// TestRedactingWriterSplits: a secret written in two pieces, cut at every
// byte, is redacted whole on the stream, as Redact redacts the whole text.
func TestRedactingWriterSplits(t *testing.T) {
	r := NewRedactor("s3cr3t-value-from-env")
	gh := "ghp_" + strings.Repeat("A1b2", 9)
	for _, text := range []string{
		"the value s3cr3t-value-from-env leaked\nnext line\n",
		"token " + gh + " here\n",
		"PASSWORD=hunter22 and on\n",
		"before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter\n",
		"no newline at the end s3cr3t-value-from-env",
	} {
		want := r.Redact(text)
		for cut := 0; cut <= len(text); cut++ {
			var out strings.Builder
			w := r.Writer(&out)
			w.Write([]byte(text[:cut]))
			w.Write([]byte(text[cut:]))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("%q cut at %d:\n got %q\nwant %q", text, cut, out.String(), want)
			}
		}
	}
}

// TestRedactingWriterLines: each line goes on as soon as it ends; an
// unfinished line, and a private key block before its END line, are held.
func TestRedactingWriterLines(t *testing.T) {
	r := NewRedactor("s3cr3t-value-from-env")
	var out strings.Builder
	w := r.Writer(&out)
	for _, c := range []struct{ write, shown string }{
		{"first line\n", "first line\n"},
		{"progress 10%\r", "first line\nprogress 10%\r"},
		{"half a li", "first line\nprogress 10%\r"},
		{"ne s3cr3t-val", "first line\nprogress 10%\r"},
		{"ue-from-env\n", "first line\nprogress 10%\rhalf a line [redacted]\n"},
		{"-----BEGIN PRIVATE KEY-----\nMIIE\n", "first line\nprogress 10%\rhalf a line [redacted]\n"},
		{"-----END PRIVATE KEY-----\n", "first line\nprogress 10%\rhalf a line [redacted]\n[redacted]\n"},
	} {
		if _, err := w.Write([]byte(c.write)); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.shown {
			t.Fatalf("after %q:\n got %q\nwant %q", c.write, out.String(), c.shown)
		}
	}
}

// TestRedactingWriterLongLine: a line past the bound goes on in pieces,
// and a declared value across a piece's end is still redacted whole.
func TestRedactingWriterLongLine(t *testing.T) {
	secret := "s3cr3t-value-from-env"
	r := NewRedactor(secret)
	var out strings.Builder
	w := r.Writer(&out)
	fill := strings.Repeat("x", streamPending-streamHeld/2)
	w.Write([]byte(fill + secret[:5]))
	w.Write([]byte(secret[5:] + strings.Repeat("y", streamHeld)))
	if out.Len() == 0 {
		t.Fatal("nothing of a line past the bound went on before the stream ended")
	}
	w.Flush()
	if want := fill + Redacted + strings.Repeat("y", streamHeld); out.String() != want {
		t.Fatalf("got %d bytes, secret present %v; want %d bytes", out.Len(), strings.Contains(out.String(), secret[5:]), len(want))
	}
}
