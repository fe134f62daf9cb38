package shell

import "strings"

// String prints the plan back as a line that Parse turns into the same plan
// (byte offsets aside). Every word that holds a byte outside a small safe
// set is single-quoted, so nothing in the printed line is expanded.
func (l *Line) String() string {
	var sb strings.Builder
	var bodies []string
	venv := ""
	for i, p := range l.Pipelines {
		if i > 0 {
			sb.WriteString(" " + l.Connectors[i-1].String() + " ")
		}
		for _, s := range p.Stages {
			if s.Kind == Command && s.Venv != venv {
				// The activation that gave the stages after it their
				// venv, by its absolute path.
				venv = s.Venv
				sb.WriteString(". " + Quote(venv+"/bin/activate") + " && ")
				break
			}
		}
		for j, s := range p.Stages {
			if j > 0 {
				sb.WriteString(" | ")
			}
			bodies = s.print(&sb, bodies)
		}
	}
	if l.Background {
		sb.WriteString(" &")
	}
	writeBodies(&sb, bodies)
	return sb.String()
}

// String prints one stage as it would appear in a line.
func (s *Stage) String() string {
	var sb strings.Builder
	writeBodies(&sb, s.print(&sb, nil))
	return sb.String()
}

// heredocDelimiter ends the here-documents a printed line carries: it is
// never a line of their bodies, which are empty or do not end with a
// newline (the rest print as here-strings).
const heredocDelimiter = "REIN_EOF"

// writeBodies appends the bodies of the here-documents a printed line
// holds, each closed by its delimiter, after the line.
func writeBodies(sb *strings.Builder, bodies []string) {
	for _, b := range bodies {
		sb.WriteString("\n" + b + heredocDelimiter)
	}
}

// print writes the stage and returns bodies with the bodies of its
// here-documents added.
func (s *Stage) print(sb *strings.Builder, bodies []string) []string {
	if s.Kind == Cd {
		sb.WriteString("cd")
		if s.Dir != "" {
			sb.WriteString(" " + Quote(s.Dir))
		}
		return bodies
	}
	for _, e := range s.Env {
		name, value, _ := strings.Cut(e, "=")
		sb.WriteString(name + "=" + quoteValue(value) + " ")
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
		switch {
		case r.Op == DupStdout:
			sb.WriteString("2>&1")
			continue
		case r.Op == Input && strings.HasSuffix(r.Data, "\n"):
			// A here-string adds the newline the data ends with.
			sb.WriteString("<<< " + Quote(strings.TrimSuffix(r.Data, "\n")))
			continue
		case r.Op == Input:
			sb.WriteString("<<'" + heredocDelimiter + "'")
			bodies = append(bodies, r.Data)
			continue
		}
		if r.Fd == 2 {
			sb.WriteByte('2')
		}
		sb.WriteString(r.Op.String() + " " + Quote(r.Path))
	}
	return bodies
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

// quoteValue is Quote for an assignment's value, where an empty value
// needs no quotes.
func quoteValue(v string) string {
	if v == "" {
		return ""
	}
	return Quote(v)
}
