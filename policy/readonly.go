package policy

// The option allowlists of the read-only programs: for each, the short
// flags it knows, the long options its layout does not list yet (--help,
// --version), and what each option's value is when it is more than a
// word. The drift test (readonly_test.go) runs each installed program's
// own --help and fails on an option listed there and not here, so a new
// release's new option is asked about, never read-only by default.

// Layouts of the programs that have no path operands.
var (
	// wordsOnly is the layout of programs whose words are printed or
	// ignored, never options that open anything (echo, printf, true,
	// false): there is nothing to allow or refuse.
	wordsOnly = argSpec{}
	pwdArgs   = argSpec{long: longs("logical", "physical", "help", "version"), allow: &allowlist{flags: "LP"}}
	whichArgs = argSpec{allow: &allowlist{flags: "as"}}
	trArgs    = argSpec{long: longs("complement", "delete", "squeeze-repeats", "truncate-set1", "help", "version"),
		allow: &allowlist{flags: "cCdst"}}
	lsArgs = argSpec{values: "ITw", long: longs("all", "almost-all", "author", "block-size=", "classify?", "color?",
		"context", "dereference", "dereference-command-line", "dereference-command-line-symlink-to-dir",
		"directory", "dired", "escape", "file-type", "format=", "full-time", "group-directories-first", "help",
		"hide-control-chars", "hide=", "human-readable", "hyperlink?", "ignore-backups", "ignore=",
		"indicator-style=", "inode", "kibibytes", "literal", "no-group", "numeric-uid-gid", "quote-name",
		"quoting-style=", "recursive", "reverse", "show-control-chars", "si", "size", "sort=", "tabsize=",
		"time-style=", "time=", "version", "width=", "zero"),
		allow: &allowlist{flags: "1ABCDFGHLNQRSUXZabcdfghiklmnopqrstuvx"}}
)

func init() {
	allowOptions(&catArgs, "AbeEnstTuv", nil, "help", "version")
	allowOptions(&headArgs, "qvz", nil, "help", "version")
	headArgs.allow.numeric = true
	allowOptions(&tailArgs, "fFqvz", nil, "help", "version")
	tailArgs.allow.numeric = true
	allowOptions(&wcArgs, "clmwL", map[string]valKind{"files0-from": valArgs}, "help", "version")
	allowOptions(&statArgs, "fLt", nil, "help", "version")
	allowOptions(&fileArgs, "0bcCdhiklLnNprsSvzZ", map[string]valKind{
		"m": valRead, "magic-file": valRead, "f": valArgs, "files-from": valArgs,
		// -p puts each file's access time back: it changes the file.
		"p": valNever, "preserve-date": valNever,
	}, "apple", "debug", "no-sandbox", "help", "version")
	allowOptions(&stringsArgs, "adfhowvV", nil, "help", "version")
	stringsArgs.allow.atFiles = true
	allowOptions(&odArgs, "abcdfilosvx", nil, "help", "version")
	allowOptions(&base64Args, "di", nil, "help", "version")
	// -c reads the files its list names, which rein does not see.
	allowOptions(&sumArgs, "bctwz", map[string]valKind{"c": valNever, "check": valNever}, "help", "version")
	allowOptions(&cutArgs, "nsz", nil, "help", "version")
	allowOptions(&uniqArgs, "cdDiuz", nil, "help", "version")
	allowOptions(&lessArgs, "?aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~", map[string]valKind{
		// A lesskey file sets commands and variables (LESSOPEN among
		// them), so it can make less run a program.
		"k": valProgram, "lesskey-file": valProgram, "lesskey-src": valProgram, "lesskey-content": valProgram,
		"o": valWrite, "O": valWrite, "log-file": valWrite, "LOG-FILE": valWrite,
		"T": valRead, "tag-file": valRead,
	}, "HILITE-SEARCH", "HILITE-UNREAD", "LONG-PROMPT", "QUIET", "QUIT-AT-EOF", "SEARCH-SKIP-SCREEN", "SILENT",
		"UNDERLINE-SPECIAL", "auto-buffers", "clear-screen", "dumb", "force", "help", "hilite-search",
		"hilite-unread", "long-prompt", "no-lessopen", "quit-at-eof", "quit-on-intr", "quotes=",
		"search-skip-screen", "tilde", "underline-special", "version", "lesskey-content=")
	allowOptions(&moreArgs, "cdefhlpsuV", nil, "help", "version")
	allowOptions(&grepArgs, "EFGHILPRTUVZabchilnoqrsuvwxyz", map[string]valKind{
		"f": valRead, "file": valRead, "exclude-from": valRead,
	}, "group-separator=", "no-group-separator")
	grepArgs.allow.numeric = true
	allowOptions(&rgArgs, "0abcFhHiIlLnNopPqsSuUvVwxz.", map[string]valKind{
		"f": valRead, "file": valRead, "ignore-file": valRead,
		// --pre and --hostname-bin name programs rg runs; -z runs the
		// decompressors.
		"pre": valNever, "hostname-bin": valNever, "search-zip": valNever, "z": valNever,
	}, "auto-hybrid-regex", "binary", "block-buffered", "byte-offset", "column", "crlf", "debug", "glob-case-insensitive",
		"ignore-file-case-insensitive", "include-zero", "line-buffered", "max-columns-preview", "mmap",
		"multiline-dotall", "no-config", "no-context-separator", "no-ignore-dot", "no-ignore-exclude",
		"no-ignore-files", "no-ignore-global", "no-ignore-messages", "no-ignore-parent", "no-ignore-vcs",
		"no-line-number", "no-messages", "no-mmap", "no-pcre2-unicode", "no-require-git", "no-unicode",
		"null-data", "one-file-system", "pcre2-unicode", "pretty", "unicode")
	allowOptions(&sortArgs, "bcCdfghiMmnRrsuVz", map[string]valKind{
		"o": valWrite, "output": valWrite, "T": valWrite, "temporary-directory": valWrite,
		"compress-program": valNever, "files0-from": valArgs, "random-source": valRead,
	}, "help", "version")
	allowOptions(&diffArgs, "abBcdeEilNnpqrstTuvwyZ", map[string]valKind{
		"X": valRead, "exclude-from": valRead, "from-file": valRead, "to-file": valRead,
	})
	allowOptions(&cmpArgs, "blsv", nil, "help", "version")
	allowOptions(&sedArgs, "nrsuzE", map[string]valKind{
		"e": valCode, "expression": valCode, "f": valProgram, "file": valProgram,
	})
	allowOptions(&awkArgs, "bcCghIMnNOPrsStVL", map[string]valKind{
		"e": valCode, "source": valCode,
		"f": valProgram, "file": valProgram, "E": valProgram, "exec": valProgram, "i": valProgram, "include": valProgram,
		"l": valNever, "load": valNever,
	}, "no-optimize", "lint-old", "trace")
}

// allowOptions makes spec an allowlist with the short flags given, the
// kinds of values given, and more long options (a name ending in = takes
// a value, in ? an optional one).
func allowOptions(spec *argSpec, flags string, kinds map[string]valKind, long ...string) {
	if spec.long == nil {
		spec.long = map[string]optKind{}
	}
	for n, k := range longs(long...) {
		spec.long[n] = k
	}
	spec.allow = &allowlist{flags: flags, kinds: kinds}
}
