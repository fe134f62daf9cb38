package trace

import (
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Secret names. A JSON key names a secret when any of its words does (the
// words of "db_password", "apiKey", "X-Auth-Token"); an option, or the
// NAME of a NAME=value word, when its last word does, since an option's
// other words say what its value is instead (--password-file takes a
// path, --token-stdin none).
var (
	// secretWordSet are the words that name a secret alone.
	secretWordSet = map[string]bool{
		"password": true, "passwd": true, "passphrase": true, "pass": true, "pw": true,
		"secret": true, "token": true, "credential": true, "credentials": true,
		"apikey": true, "accesskey": true, "secretkey": true, "privatekey": true, "authtoken": true,
		"storepass": true, "keypass": true, "srcstorepass": true, "deststorepass": true, "srckeypass": true, "destkeypass": true,
	}
	// keyWordSet are the words that name a secret before "key": api key,
	// access key.
	keyWordSet = map[string]bool{
		"api": true, "access": true, "secret": true, "private": true, "session": true, "signing": true,
		"client": true, "encryption": true, "master": true, "auth": true,
	}
	// keyOnlyWordSet name a secret in a JSON key, where a header's or a
	// setting's name is the whole of it, but not as an option's last word
	// (--auth basic is a method).
	keyOnlyWordSet = map[string]bool{"auth": true, "authorization": true, "cookie": true}
)

// nameWords splits a name into lower-case words: at every character that
// is not a letter or a digit, and where the case changes (apiKey, APIKey).
func nameWords(name string) []string {
	var words []string
	rs := []rune(name)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			words = append(words, strings.ToLower(string(rs[start:end])))
			start = -1
		}
	}
	for i, c := range rs {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(c) {
			prevLower := unicode.IsLower(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return words
}

// secretName reports whether a JSON key names a secret.
func secretName(key string) bool {
	words := nameWords(key)
	for i, w := range words {
		if secretWordSet[w] || keyOnlyWordSet[w] || w == "key" && i > 0 && keyWordSet[words[i-1]] {
			return true
		}
	}
	return false
}

// secretOption reports whether an option's name (without its dashes), or
// the NAME of NAME=value, names a secret.
func secretOption(name string) bool {
	words := nameWords(name)
	n := len(words)
	if n == 0 {
		return false
	}
	return secretWordSet[words[n-1]] || words[n-1] == "key" && n > 1 && keyWordSet[words[n-2]]
}

// passwordProgram is a program some of whose short options take a
// password, which the name of the option does not say.
type passwordProgram struct {
	names []string
	opts  []passwordOption
}

// passwordOption is one such option.
type passwordOption struct {
	flag string
	// attached: the value may follow the flag in the same word (-pX; for
	// a long flag, --flag=X). separate: it may be the next word (-p X).
	attached, separate bool
	// from is where in the value the password starts (curl's -u
	// user:password), -1 when it holds none; nil is the whole value.
	from func(v string) int
}

// after is the part of a value past the first sep, where the password is.
func after(sep string) func(string) int {
	return func(v string) int {
		if i := strings.Index(v, sep); i >= 0 {
			return i + len(sep)
		}
		return -1
	}
}

// prefixed is a value that holds a password only past prefix (openssl's
// pass:X; env:VAR and file:PATH name where it is).
func prefixed(prefix string) func(string) int {
	return func(v string) int {
		if strings.HasPrefix(v, prefix) {
			return len(prefix)
		}
		return -1
	}
}

// passwordOptions are the programs whose options take a password without
// naming it. mysql's -p takes one only attached: -p X prompts, and X is the
// database. An option that names a secret (--password, -pw, --api-key) is
// redacted for every program, and is not listed here.
var passwordOptions = []passwordProgram{
	{names: []string{"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlslap", "mysqlbinlog", "mysqlpump", "mysqlsh",
		"mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import", "mariadb-show", "mariadb-check", "mariadb-slap", "mariadb-binlog"},
		opts: []passwordOption{{flag: "-p", attached: true}}},
	{names: []string{"sshpass"}, opts: []passwordOption{{flag: "-p", attached: true, separate: true}}},
	{names: []string{"redis-cli", "valkey-cli", "keydb-cli"}, opts: []passwordOption{{flag: "-a", attached: true, separate: true}}},
	{names: []string{"zip", "unzip", "zipcloak", "funzip"}, opts: []passwordOption{{flag: "-P", separate: true}}},
	{names: []string{"7z", "7za", "7zr"}, opts: []passwordOption{{flag: "-p", attached: true}}},
	{names: []string{"mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop"},
		opts: []passwordOption{{flag: "-p", attached: true, separate: true}}},
	{names: []string{"curl"}, opts: []passwordOption{
		{flag: "-u", attached: true, separate: true, from: after(":")}, {flag: "--user", attached: true, separate: true, from: after(":")},
		{flag: "-U", attached: true, separate: true, from: after(":")}, {flag: "--proxy-user", attached: true, separate: true, from: after(":")}}},
	{names: []string{"smbclient", "rpcclient", "smbcacls", "smbget"}, opts: []passwordOption{
		{flag: "-U", attached: true, separate: true, from: after("%")}, {flag: "--user", attached: true, separate: true, from: after("%")}}},
	{names: []string{"lftp"}, opts: []passwordOption{{flag: "-u", separate: true, from: after(",")}}},
	{names: []string{"ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapmodrdn", "ldapcompare", "ldapwhoami", "ldappasswd", "ldapexop"},
		opts: []passwordOption{{flag: "-w", attached: true, separate: true}}},
	{names: []string{"sqlcmd", "bcp", "isql"}, opts: []passwordOption{{flag: "-P", attached: true, separate: true}}},
	{names: []string{"openssl"}, opts: []passwordOption{
		{flag: "-passin", separate: true, from: prefixed("pass:")}, {flag: "-passout", separate: true, from: prefixed("pass:")},
		{flag: "-pass", separate: true, from: prefixed("pass:")}, {flag: "-k", separate: true}}},
}

var passwordPrograms = func() map[string]*passwordProgram {
	m := map[string]*passwordProgram{}
	for i := range passwordOptions {
		for _, n := range passwordOptions[i].names {
			m[n] = &passwordOptions[i]
		}
	}
	return m
}()

// wordLiterals are what a text holds, in lower case, when a word rule can
// apply to it: a word naming a secret, or the flag of a password option
// (which a program then has to own).
var wordLiterals = sync.OnceValue(func() []string {
	out := []string{"pass", "pw", "secret", "token", "credential", "key"}
	for _, p := range passwordOptions {
		for _, o := range p.opts {
			if f := strings.ToLower(o.flag[:2]); !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
})

// argv reads the words of one command in turn and says which hold a
// secret.
type argv struct {
	// pending is set when the last word was an option whose value is the
	// next word: where in it the secret starts.
	pending func(string) int
	// programs are the password programs named so far in the command:
	// sudo -u root mysql -pX is still mysql's.
	programs []*passwordProgram
}

func whole(string) int { return 0 }

// word takes the next word and reports whether it holds a secret, and
// then the bytes before it to keep. An empty word is something that is not
// a word (a number in a JSON array): it ends a pending option.
func (a *argv) word(w string) (keep int, secret bool) {
	if w == "" {
		a.pending = nil
		return 0, false
	}
	if p := a.pending; p != nil {
		a.pending = nil
		// --another-option is not a value; anything else, -x included,
		// may be a password.
		if !strings.HasPrefix(w, "--") {
			if k := p(w); k >= 0 {
				return k, true
			}
			return 0, false
		}
	}
	off := 0
	if w[0] == '\'' || w[0] == '"' {
		off, w = 1, w[1:]
	}
	if strings.HasPrefix(w, "-") && len(w) > 1 {
		name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
		name, val, eq := strings.Cut(name, "=")
		// The option's name as the program gets it, after the shell's
		// quote removal: --pass""word and --pass\word are --password.
		name = unquoted(name)
		for _, prog := range a.programs {
			for _, o := range prog.opts {
				from := o.from
				if from == nil {
					from = whole
				}
				attached := o.flag
				if strings.HasPrefix(o.flag, "--") {
					attached += "="
				}
				switch {
				case w == o.flag && o.separate:
					a.pending = from
					return 0, false
				case o.attached && len(w) > len(attached) && strings.HasPrefix(w, attached):
					if k := from(w[len(attached):]); k >= 0 {
						return off + len(attached) + k, true
					}
					return 0, false
				}
			}
		}
		if secretOption(name) {
			if eq {
				return off + len(w) - len(val), val != ""
			}
			a.pending = whole
		}
		return 0, false
	}
	// NAME=value and NAME: value, NAME a plain name: a URL's query is the
	// patterns', and so is quoted JSON, whose quotes are no part of a value.
	if name, val, ok := strings.Cut(w, "="); ok && plainName(unquoted(name)) && secretOption(unquoted(name)) {
		return off + len(name) + 1, val != ""
	}
	if name, ok := strings.CutSuffix(w, ":"); ok && plainName(name) && secretOption(name) {
		a.pending = whole
		return 0, false
	}
	// A program, named as the word ends: /usr/bin/mysql, or the end of
	// "line":"mysql in text quoting JSON.
	base := w[strings.LastIndexAny(w, `/"'=:\`)+1:]
	if p := passwordPrograms[base]; p != nil {
		a.programs = append(a.programs, p)
	}
	return 0, false
}

// unquoted is s with the shell's quotes and backslashes removed, as a
// program receives the word: pass""word, pass”word and pass\word are
// password.
func unquoted(s string) string {
	if !strings.ContainsAny(s, `"'\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// plainName reports whether name is letters, digits and _ . - only.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// redactWords redacts a text word by word: the commands in it are split
// at newlines, ;, |, &, ( and ), and each command's words at blanks (a
// quote at the start of a word, or after its =, holds blanks in it).
func redactWords(s string) string {
	if !containsAny(strings.ToLower(s), wordLiterals()) && !containsAny(strings.ToLower(unquoted(s)), wordLiterals()) {
		return s
	}
	var (
		b    strings.Builder
		done int
		a    argv
	)
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\n', ';', '|', '&', '(', ')', '`':
			a = argv{}
			i++
		case ' ', '\t', '\r':
			i++
		default:
			j := wordEnd(s, i)
			if keep, secret := a.word(s[i:j]); secret {
				b.WriteString(s[done : i+keep])
				b.WriteString(Redacted)
				done = j
			}
			i = j
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// wordEnd is the end of the word at s[i]: the next blank or command
// separator outside quotes. A quote opens only at the word's start, after
// an =, or after a short option (-p'...'), and closes at its match on the
// same line: elsewhere it is quoted JSON's, not the shell's.
func wordEnd(s string, i int) int {
	start := i
	eq := false
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '|' || c == '&' || c == '(' || c == ')' || c == '`':
			return i
		case (c == '\'' || c == '"') && (i == start || eq && s[i-1] == '=' || i == start+2 && s[start] == '-'):
			j := strings.IndexAny(s[i+1:], string(c)+"\n")
			if j < 0 || s[i+1+j] == '\n' {
				i++
				continue
			}
			i += j + 2
			continue
		case c == '\\' && i+1 < len(s) && s[i+1] != '\n':
			i += 2
			continue
		case c == '=':
			eq = true
		}
		i++
	}
	return i
}
