package trace

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := NewRedactor("s3cr3t-value-from-env", "short")
	gh := "ghp_" + strings.Repeat("A1b2", 9)
	for in, want := range map[string]string{
		"the value s3cr3t-value-from-env leaked": "the value [redacted] leaked",
		"short stays":                            "short stays",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "AWS_SECRET_ACCESS_KEY=[redacted]",
		"export GITHUB_TOKEN='abc def'":                                  "export GITHUB_TOKEN=[redacted]",
		"password: hunter2 and more":                                     "password: [redacted] and more",
		`{"api_key": "k-123", "name": "x"}`:                              `{"api_key": "[redacted]", "name": "x"}`,
		"key AKIAIOSFODNN7EXAMPLE here":                                  "key [redacted] here",
		"google AIzaSyA-1234567890abcdefghijklmnopqrstu":                 "google [redacted]",
		"token " + gh: "token [redacted]",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz":                                        "[redacted]",
		"slack xoxb-1234567890-abcdefghij":                                                                 "slack [redacted]",
		"hook https://hooks.slack.com/services/T000/B000/XXXX":                                             "hook [redacted]",
		"openai sk-proj-abcdefghijklmnopqrstuvwxyz0123":                                                    "openai [redacted]",
		"anthropic sk-ant-api03-abcdefghijklmnopqrstuvwxyz":                                                "anthropic [redacted]",
		"stripe sk_live_abcdefghijklmnop1234":                                                              "stripe [redacted]",
		"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U": "jwt [redacted]",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter":               "[redacted]\nafter",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----":                     "[redacted]",
		"curl -H 'Authorization: Bearer abc.def.ghi123'":                                                   "curl -H 'Authorization: Bearer [redacted]'",
		"git clone https://user:pa55word@example.com/r.git":                                                "git clone https://user:[redacted]@example.com/r.git",
		"nothing secret in GIT_AUTHOR_NAME=Jane":                                                           "nothing secret in GIT_AUTHOR_NAME=Jane",
		"ordinary output\nline two":                                                                        "ordinary output\nline two",
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	// Redacting twice changes nothing more.
	once := r.Redact("TOKEN=abc " + gh)
	if twice := r.Redact(once); twice != once {
		t.Errorf("not idempotent: %q then %q", once, twice)
	}
}

func TestSecretValues(t *testing.T) {
	got := SecretValues([]string{"HOME=/root", "GITHUB_TOKEN=abc", "MY_SECRET=x", "NPM_AUTH=y", "AUTHOR=z", "DB_URL=postgres://u:p@h/db", "EMPTY_TOKEN="}, "DB_URL")
	want := []string{"abc", "x", "y", "postgres://u:p@h/db"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%q, want %q", got, want)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"TOKEN=abc", "ghp_" + strings.Repeat("a", 36), "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----", "a://b:c@d"} {
		f.Add(s)
	}
	r := NewRedactor("fuzz-secret-value")
	f.Fuzz(func(t *testing.T, s string) {
		out := r.Redact(s)
		if strings.Contains(out, "fuzz-secret-value") {
			t.Fatalf("a secret value survived: %q", out)
		}
		if r.Redact(out) != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, r.Redact(out))
		}
	})
}
