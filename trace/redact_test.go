package trace

import (
	"encoding/json"
	"fmt"
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

// TestRedactDecoded: a secret in JSON is found in the value it decodes to,
// however it is escaped, and the document stays the same byte for byte
// elsewhere.
func TestRedactDecoded(t *testing.T) {
	r := NewRedactor("declared-s3cret")
	for _, c := range []struct{ in, want string }{
		// write_file's content, and the hook's Write input.
		{`{"path":"a.json","content":"{\"password\": \"hunter2\"}"}`, `{"path":"a.json","content":"{\"password\": \"[redacted]\"}"}`},
		{`{"tool_name":"Write","tool_input":{"file_path":"/w/c.json","content":"{\n  \"db\": {\"passwd\": \"hunter2\"}\n}"}}`,
			`{"tool_name":"Write","tool_input":{"file_path":"/w/c.json","content":"{\n  \"db\": {\"passwd\": \"[redacted]\"}\n}"}}`},
		// Two levels of JSON in a string.
		{`{"a":"{\"b\":\"{\\\"token\\\":\\\"t0ps3cret\\\"}\"}"}`, `{"a":"{\"b\":\"{\\\"token\\\":\\\"[redacted]\\\"}\"}"}`},
		// A key naming a secret, by any of its words; its list; not a count.
		{`{"apiKey":"abc","X-Auth-Token":"def","client_secret":"ghi","max_tokens":1024,"author":"me"}`,
			`{"apiKey":"[redacted]","X-Auth-Token":"[redacted]","client_secret":"[redacted]","max_tokens":1024,"author":"me"}`},
		{`{"passwords":["a"],"tokens":["b"],"pw":["c1","c2"]}`, `{"passwords":["a"],"tokens":["b"],"pw":["[redacted]","[redacted]"]}`},
		{`{"password":"","n":{"secret":12}}`, `{"password":"","n":{"secret":12}}`},
		// A key is redacted as text.
		{`{"\u0064eclared-s3cret":1}`, `{"[redacted]":1}`},
		// Escapes a decoder undoes: \u0068 is h, \/ is /.
		{`{"v":"\u0068unter declared-\u00733cret \/x"}`, `{"v":"hunter [redacted] /x"}`},
		// An argv: the value after an option naming a secret.
		{`["mysql","-uroot","-phunter2","db"]`, `["mysql","-uroot","-p[redacted]","db"]`},
		{`{"argv":["tool","--password","hunter2","--api-key=k3y","--verbose"]}`, `{"argv":["tool","--password","[redacted]","--api-key=[redacted]","--verbose"]}`},
		// A JSON string document.
		{`"--token abcdef"`, `"--token [redacted]"`},
		// Formatting kept where nothing changed.
		{"{ \"a\" : [1, 2.50, true, null] ,\n \"b\": \"<&>\" }", "{ \"a\" : [1, 2.50, true, null] ,\n \"b\": \"<&>\" }"},
		// Escaped JSON in text that is not a document.
		{`log: {\"password\": \"hunter2\", \"user\": \"bob\"} and more`, `log: {\"password\": \"[redacted]\", \"user\": \"bob\"} and more`},
		{`{\\\"secret_key\\\": \\\"abc\\\"}`, `{\\\"secret_key\\\": \\\"[redacted]\\\"}`},
	} {
		if got := r.Redact(c.in); got != c.want {
			t.Errorf("Redact(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestRedactWords: a command line is redacted word by word.
func TestRedactWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"psql --password hunter2 -h db", "psql --password [redacted] -h db"},
		{"tool --password=hunter2 x", "tool --password=[redacted] x"},
		// The name as the program gets it, after quote removal.
		{`echo --pass""word=S3cretPwQQ1 --pass''word X2 --pass\word X3 --api\-key=k4`, `echo --pass""word=[redacted] --pass''word [redacted] --pass\word [redacted] --api\-key=[redacted]`},
		{`env DB_PA""SS=x1 tool`, `env DB_PA""SS=[redacted] tool`},
		{`tool --password "hunter 2" x`, "tool --password [redacted] x"},
		{`tool --password="hunter 2" x`, "tool --password=[redacted] x"},
		{"tool --db-passwd s3 --api-key k3 --client-secret c --auth-token a --access_key b", "tool --db-passwd [redacted] --api-key [redacted] --client-secret [redacted] --auth-token [redacted] --access_key [redacted]"},
		{"keytool -storepass changeit -keypass changeit2", "keytool -storepass [redacted] -keypass [redacted]"},
		{"plink -pw hunter2 host", "plink -pw [redacted] host"},
		{"login pw=hunter2 pass=x DB_PASS=y", "login pw=[redacted] pass=[redacted] DB_PASS=[redacted]"},
		{"pw: hunter2", "pw: [redacted]"},
		{"curl 'https://x.example/?token=abc&b=2'", "curl 'https://x.example/?token=[redacted]&b=2'"},
		{"curl https://x.example/?a=1&pw=abc&key=AIz#f", "curl https://x.example/?a=1&pw=[redacted]&key=[redacted]#f"},
		// Options whose value is no secret.
		{"tool --password-file /run/pw --token-stdin --max-tokens 100 --bypass x", "tool --password-file /run/pw --token-stdin --max-tokens 100 --bypass x"},
		{"echo $PWD; cd /x PWD=/x", "echo $PWD; cd /x PWD=/x"},
		// The programs whose short options take a password.
		{"mysql -uroot -phunter2 shop", "mysql -uroot -p[redacted] shop"},
		{"mysql -u root -p shop", "mysql -u root -p shop"},
		{"sudo -u db /usr/bin/mysqldump -p'hunter 2' shop | gzip", "sudo -u db /usr/bin/mysqldump -p[redacted] shop | gzip"},
		{"grep -phunter2 x; mysql -pabc", "grep -phunter2 x; mysql -p[redacted]"},
		{"sshpass -p hunter2 ssh host", "sshpass -p [redacted] ssh host"},
		{"redis-cli -a hunter2 ping", "redis-cli -a [redacted] ping"},
		{"zip -P hunter2 out.zip a", "zip -P [redacted] out.zip a"},
		{"7z a -phunter2 out.7z a", "7z a -p[redacted] out.7z a"},
		{"curl -u bob:hunter2 https://x", "curl -u bob:[redacted] https://x"},
		{"curl -u bob https://x --user=al:pw2", "curl -u bob https://x --user=al:[redacted]"},
		{"smbclient -U bob%hunter2 //h/s", "smbclient -U bob%[redacted] //h/s"},
		{"ldapsearch -x -w hunter2 -b dc=x", "ldapsearch -x -w [redacted] -b dc=x"},
		{"openssl enc -pass pass:hunter2 -in a", "openssl enc -pass pass:[redacted] -in a"},
		{"openssl enc -pass env:PW -in a", "openssl enc -pass env:PW -in a"},
		{"mongosh -u admin -p hunter2", "mongosh -u admin -p [redacted]"},
		{"lftp -u bob,hunter2 ftp.x", "lftp -u bob,[redacted] ftp.x"},
		{"sqlcmd -S db -U sa -P hunter2", "sqlcmd -S db -U sa -P [redacted]"},
	} {
		if got := NewRedactor().Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"password": true, "db_password": true, "apiKey": true, "APIKey": true, "X-Auth-Token": true, "authorization": true,
		"private_key": true, "client-secret": true, "credentials": true, "pw": true,
		"max_tokens": false, "author": false, "key": false, "keyboard": false, "tokenizer": false, "pwd": false, "monkey": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v", name, got)
		}
	}
}

// FuzzRedactEncoded: a declared value never survives, whatever text is
// around it and however it is given: raw, JSON-escaped (by each common
// escaping), in a JSON document, in a JSON string that is a document.
func FuzzRedactEncoded(f *testing.F) {
	f.Add("hunter2-secret", "prefix ", " suffix")
	f.Add(`p"a\ss<&>`, `{"password": "`, `"}`)
	f.Add("päss wörd 🔑", "", "")
	f.Add("\x00\x1f\u2028value", "a\\", `\"`)
	f.Add("aaaaaa", "aaa", "aaa")
	f.Add("d]abcd", "[redacte", "")
	// A value that is not UTF-8 is found only escaped, in the text of the
	// document, where replacing it changes what the words read or ends
	// the document.
	f.Add("--password\\mysql,[\xff", "", "ätoken")
	f.Add("\xff[redacted]=0", "-p--password[\\:--password \\", "\\<0,\\u00🔑0--password=ä\n")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		r := NewRedactor(secret)
		if len(r.values) == 0 {
			// Declined only for the reasons NewRedactor states: too short
			// to redact by value, or a part of the marker itself.
			if len(secret) >= minSecretLen && !strings.Contains(Redacted, secret) {
				t.Fatalf("the value %q was declined", secret)
			}
			return
		}
		text := before + secret + after
		doc := func(v any) string {
			data, _ := json.Marshal(v)
			return string(data)
		}
		given := []string{
			text,
			escapeMinimal(text), escapeHTML(text), escapeASCII(text),
			escapeMinimal(escapeMinimal(text)), escapeASCII(escapeHTML(text)),
			doc(text),
			doc(map[string]any{"content": text, "n": 1}),
			doc(map[string]any{"content": doc(map[string]string{"inner": text})}),
			doc([]string{"--token", text}),
			doc(map[string]int{text: 1}),
			escapeASCII(doc(map[string]int{text: 1})),
			"log " + doc(map[string]string{"v": text}) + " end",
		}
		for _, in := range given {
			out := r.Redact(in)
			if where := survives(out, secret, 0); where != "" {
				t.Fatalf("the value survived %s\n in: %q\nout: %q", where, in, out)
			}
			if r.Redact(out) != out {
				t.Fatalf("not idempotent: %q -> %q -> %q", in, out, r.Redact(out))
			}
		}
	})
}

// survives says where in out the secret is found: raw, in one of its
// escaped forms, or in a string of out (or of a document one holds),
// decoded.
func survives(out, secret string, depth int) string {
	for _, e := range encodings(secret) {
		if strings.Contains(out, e) {
			return fmt.Sprintf("as %q", e)
		}
	}
	if depth > 4 || !json.Valid([]byte(out)) {
		return ""
	}
	var v any
	json.Unmarshal([]byte(out), &v)
	var walk func(any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case string:
			if w := survives(v, secret, depth+1); w != "" {
				return "decoded, " + w
			}
		case []any:
			for _, e := range v {
				if w := walk(e); w != "" {
					return w
				}
			}
		case map[string]any:
			for k, e := range v {
				if w := walk(k); w != "" {
					return "in a key, " + w
				}
				if w := walk(e); w != "" {
					return w
				}
			}
		}
		return ""
	}
	return walk(v)
}
