package shell

import "strings"

// String prints the plan back as a line that Parse turns into the same plan
// (byte offsets aside). Every word that holds a byte outside a small safe
// set is single-quoted, so nothing in the printed line is expanded.
func (l *Line) String() string {
	var sb strings.Builder
	for i, p := range l.Pipelines {
		if i > 0 {
			sb.WriteString(" " + l.Connectors[i-1].String() + " ")
		}
		for j, s := range p.Stages {
			if j > 0 {
				sb.WriteString(" | ")
			}
			s.print(&sb)
		}
	}
	return sb.String()
}

// String prints one stage as it would appear in a line.
func (s *Stage) String() string {
	var sb strings.Builder
	s.print(&sb)
	return sb.String()
}

func (s *Stage) print(sb *strings.Builder) {
	if s.Kind == Cd {
		sb.WriteString("cd")
		if s.Dir != "" {
			sb.WriteString(" " + Quote(s.Dir))
		}
		return
	}
	for i, a := range s.Argv {
		switch {
		case i > 0:
			sb.WriteByte(' ')
			sb.WriteString(Quote(a))
		case a == "time":
			// Unquoted, time is bash's keyword and would read the next
			// words as a command of their own; quoted, it is the program.
			sb.WriteString("'time'")
		default:
			sb.WriteString(Quote(a))
		}
	}
	for _, r := range s.Redirects {
		sb.WriteByte(' ')
		if r.Op == DupStdout {
			sb.WriteString("2>&1")
			continue
		}
		if r.Fd == 2 {
			sb.WriteByte('2')
		}
		sb.WriteString(r.Op.String() + " " + Quote(r.Path))
	}
}

// Quote returns s as one word of a line: unchanged when every byte is in
// the safe set, otherwise single-quoted, each quote inside closed, escaped
// and reopened. A string that is not valid UTF-8 prints, but the grammar
// refuses to parse it back: such arguments go through FromArgv.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	// A CR right before an LF is split from it by an empty quote: the
	// grammar refuses the bare pair, which tokenisers fold into LF.
	s = strings.ReplaceAll(s, "'", `'\''`)
	s = strings.ReplaceAll(s, "\r\n", "\r''\n")
	return "'" + s + "'"
}

func unsafeRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("_-./,:+@%", r)
}
