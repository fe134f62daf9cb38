package sandbox

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
)

// configEntry is one variable of a git config file: its section and name
// lower-cased, its subsection as written ("" when none), its value.
type configEntry struct {
	Section, Subsection, Name, Value string
}

// Key is the variable as git names it: section[.subsection].name.
func (e configEntry) Key() string {
	if e.Subsection == "" {
		return e.Section + "." + e.Name
	}
	return e.Section + "." + e.Subsection + "." + e.Name
}

var errConfigSyntax = errors.New("not git config syntax")

// parseGitConfig reads git's config format: [section], [section
// "subsection"] and the old [section.subsection] headers, a variable after
// a header on the same line, "name = value" and bare boolean names,
// comments, quotes, escapes and continued lines. What it cannot read is an
// error, never skipped: git may read it otherwise.
func parseGitConfig(data []byte) ([]configEntry, error) {
	var out []configEntry
	var section, sub string
	s := string(data)
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
			i++
		}
	}
	for i < len(s) {
		skipSpace()
		if i >= len(s) {
			break
		}
		switch c := s[i]; {
		case c == '\n':
			i++
			continue
		case c == '#' || c == ';':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, errConfigSyntax
			}
			var err error
			if section, sub, err = configHeader(s[i+1 : i+j]); err != nil {
				return nil, err
			}
			i += j + 1
			continue
		case isAlpha(c):
		default:
			return nil, errConfigSyntax
		}
		if section == "" {
			return nil, errConfigSyntax
		}
		j := i
		for j < len(s) && (isAlpha(s[j]) || isDigit(s[j]) || s[j] == '-') {
			j++
		}
		name := strings.ToLower(s[i:j])
		i = j
		skipSpace()
		value := "true"
		if i < len(s) && s[i] == '=' {
			i++
			var err error
			if value, i, err = configValue(s, i); err != nil {
				return nil, err
			}
		} else if i < len(s) && s[i] != '\n' && s[i] != '#' && s[i] != ';' {
			return nil, errConfigSyntax
		}
		out = append(out, configEntry{Section: section, Subsection: sub, Name: name, Value: value})
	}
	return out, nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// configHeader reads what is between a header's brackets.
func configHeader(h string) (section, sub string, err error) {
	name, rest, quoted := strings.Cut(h, "\"")
	name = strings.TrimRight(name, " \t")
	if !quoted {
		// [section] or the old [section.subsection], lower-cased whole.
		name = strings.ToLower(strings.TrimSpace(name))
		section, sub, _ = strings.Cut(name, ".")
	} else {
		if !strings.HasSuffix(rest, "\"") || strings.ContainsAny(name, ". \t") {
			return "", "", errConfigSyntax
		}
		rest = rest[:len(rest)-1]
		var b strings.Builder
		for k := 0; k < len(rest); k++ {
			switch {
			case rest[k] == '\\' && k+1 < len(rest):
				k++
				b.WriteByte(rest[k])
			case rest[k] == '"' || rest[k] == '\n' || rest[k] == 0:
				return "", "", errConfigSyntax
			default:
				b.WriteByte(rest[k])
			}
		}
		section, sub = strings.ToLower(name), b.String()
	}
	if section == "" || strings.IndexFunc(section, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}) >= 0 {
		return "", "", errConfigSyntax
	}
	return section, sub, nil
}

// configValue reads a value from s[i:] to the end of its line, as git
// does, and returns it with the offset after it.
func configValue(s string, i int) (string, int, error) {
	var b bytes.Buffer
	quoted := false
	pending := 0 // whitespace held back: kept only if more follows
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			if quoted {
				return "", i, errConfigSyntax
			}
			return b.String(), i, nil
		case !quoted && (c == '#' || c == ';'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			return b.String(), i, nil
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if b.Len() > 0 {
				pending++
			}
			continue
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			if i+1 >= len(s) {
				return "", i, errConfigSyntax
			}
			i++
			switch s[i] {
			case '\n':
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", i, errConfigSyntax
			}
		default:
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", i, errConfigSyntax
	}
	return b.String(), i, nil
}

// inertKeys are the config variables known to make git run nothing, read
// no file it would obey and reach no host: an allowlist, so that a key
// this list does not know (core.fsmonitor, core.hooksPath,
// core.sshCommand, diff.external, filter.*.process, alias.*, include.path,
// credential.helper, gpg.program, uploadpack, and whatever git adds next)
// counts as one that may. A "*" stands for any subsection; a nil check
// takes any value.
var inertKeys = map[string]func(v, gitdir, ws string) bool{
	"core.repositoryformatversion": nil, "core.filemode": nil, "core.bare": nil,
	"core.logallrefupdates": nil, "core.ignorecase": nil, "core.precomposeunicode": nil,
	"core.symlinks": nil, "core.autocrlf": nil, "core.eol": nil, "core.safecrlf": nil,
	"core.quotepath": nil, "core.abbrev": nil, "core.compression": nil,
	"core.loosecompression": nil, "core.bigfilethreshold": nil, "core.sparsecheckout": nil,
	"core.sparsecheckoutcone": nil, "core.splitindex": nil, "core.untrackedcache": nil,
	"core.checkstat": nil, "core.trustctime": nil, "core.commentchar": nil,
	"core.whitespace": nil, "core.multipackindex": nil, "core.preloadindex": nil,
	"core.fsync": nil, "core.fsyncmethod": nil, "core.protecthfs": nil, "core.protectntfs": nil,
	"core.warnambiguousrefs":  nil,
	"core.worktree":           worktreeInside,
	"extensions.objectformat": nil, "extensions.worktreeconfig": nil, "extensions.refstorage": nil,
	"remote.*.url": plainURL, "remote.*.pushurl": plainURL, "remote.*.fetch": nil, "remote.*.push": nil,
	"remote.*.tagopt": nil, "remote.*.prune": nil, "remote.*.prunetags": nil, "remote.*.mirror": nil,
	"remote.*.skipdefaultupdate": nil, "remote.*.skipfetchall": nil,
	"branch.*.remote": nil, "branch.*.pushremote": nil, "branch.*.merge": nil,
	"branch.*.rebase": nil, "branch.*.description": nil,
	"user.name": nil, "user.email": nil, "author.name": nil, "author.email": nil,
	"committer.name": nil, "committer.email": nil, "init.defaultbranch": nil,
	"submodule.*.url": plainURL, "submodule.*.path": nil, "submodule.*.active": nil,
	"submodule.*.branch": nil, "submodule.*.update": submoduleUpdate, "submodule.*.ignore": nil,
	"submodule.*.shallow": nil, "submodule.*.fetchrecursesubmodules": nil,
	"submodule.active": nil, "submodule.recurse": nil,
	"gc.auto": nil, "gc.autodetach": nil, "gc.autopacklimit": nil, "gc.reflogexpire": nil,
	"gc.reflogexpireunreachable": nil, "gc.pruneexpire": nil,
	"pull.rebase": nil, "pull.ff": nil, "push.default": nil, "push.autosetupremote": nil,
	"push.followtags": nil, "fetch.prune": nil, "fetch.prunetags": nil,
	"fetch.recursesubmodules": nil, "fetch.writecommitgraph": nil,
	"merge.ff": nil, "merge.conflictstyle": nil, "rebase.autosquash": nil,
	"rebase.autostash": nil, "rebase.updaterefs": nil,
	"color.ui": nil, "color.diff": nil, "color.status": nil, "color.branch": nil,
	"diff.renames": nil, "diff.algorithm": nil, "diff.mnemonicprefix": nil, "diff.noprefix": nil,
	"diff.submodule": nil, "diff.colormoved": nil, "diff.indentheuristic": nil, "diff.context": nil,
	"diff.renamelimit": nil, "diff.ignoresubmodules": nil,
	"status.showuntrackedfiles": nil, "status.submodulesummary": nil, "status.short": nil,
	"status.branch": nil, "status.relativepaths": nil, "status.aheadbehind": nil,
	"status.renames": nil, "status.showstash": nil,
	"log.date": nil, "log.decorate": nil, "log.follow": nil, "log.abbrevcommit": nil,
	"index.version": nil, "index.skiphash": nil, "index.threads": nil, "index.sparse": nil,
	"feature.manyfiles": nil, "feature.experimental": nil, "lfs.repositoryformatversion": nil,
	"receive.denycurrentbranch": nil, "receive.denynonfastforwards": nil, "protocol.version": nil,
	"worktree.guessremote": nil,
}

// unreadableConfig stands for a file that cannot be read as git config.
var unreadableConfig = configEntry{Section: "(unreadable as git config)"}

// executingEntries are the variables of a git config file that are not
// known to be inert, in order; one that cannot be read as git config is
// the one entry unreadableConfig.
func executingEntries(data []byte, gitdir, ws string) []configEntry {
	entries, err := parseGitConfig(data)
	if err != nil {
		return []configEntry{unreadableConfig}
	}
	var out []configEntry
	for _, e := range entries {
		key := e.Section + "." + e.Name
		if e.Subsection != "" {
			key = e.Section + ".*." + e.Name
		}
		check, ok := inertKeys[key]
		if !ok || (check != nil && !check(e.Value, gitdir, ws)) {
			out = append(out, e)
		}
	}
	return out
}

// plainURL refuses the URLs that run a program: a transport helper
// ("ext::sh -c ...", any "<helper>::") and one read as an option.
func plainURL(v, _, _ string) bool {
	return !strings.Contains(v, "::") && !strings.HasPrefix(strings.TrimSpace(v), "-")
}

// submoduleUpdate refuses "!command" and anything but git's own modes.
func submoduleUpdate(v, _, _ string) bool {
	return slices.Contains([]string{"checkout", "rebase", "merge", "none"}, v)
}

// worktreeInside takes a work tree inside the workspace only: one
// elsewhere would have the host's git check files out there.
func worktreeInside(v, gitdir, ws string) bool {
	if v == "" {
		return false
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(ws, gitdir, v)
	}
	return within(filepath.Clean(v), ws)
}
