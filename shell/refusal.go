package shell

import "fmt"

// Construct names a piece of shell syntax the grammar refuses. The names are
// stable: they appear in JSON output and callers compare them.
type Construct string

// The refused constructs. Each Refusal carries exactly one of them.
const (
	CommandSubstitution Construct = "command-substitution" // $(...) `...`
	ParameterExpansion  Construct = "parameter-expansion"  // $VAR ${...} $'...' $"..." and any other $
	Arithmetic          Construct = "arithmetic"           // $((...)) ((...))
	ProcessSubstitution Construct = "process-substitution" // <(...) >(...)
	Subshell            Construct = "subshell"             // ( ... )
	BraceGroup          Construct = "brace-group"          // { ...; } and any unquoted { or }
	Heredoc             Construct = "heredoc"              // << <<- <<<
	Background          Construct = "background"           // a & b
	UnsupportedRedirect Construct = "unsupported-redirect" // &> |& >&file >&2 1> 3> 0< >| <>
	CompoundCommand     Construct = "compound-command"     // if for while case function ! [[ ]] ...
	Glob                Construct = "glob"                 // unquoted * ? [ ] and extended globs
	Assignment          Construct = "assignment"           // NAME=value in command position
	TildeUser           Construct = "tilde-user"           // ~user ~+ ~-
	Comment             Construct = "comment"              // # at the start of an unquoted word
	Newline             Construct = "newline"              // unquoted newline or carriage return
	ShellBuiltin        Construct = "shell-builtin"        // export eval source . alias set ...
	ControlCharacter    Construct = "control-character"    // an unquoted control byte other than space and tab
	Syntax              Construct = "syntax"               // empty stage, dangling operator, unterminated quote ...
)

// Refusal is the error Parse returns for a line it will not run. It names
// the construct, where it starts, and what the caller can do instead.
type Refusal struct {
	Construct Construct `json:"construct"`
	// Offset is the byte offset in the line where the construct starts.
	Offset int `json:"offset"`
	// Message is one sentence a model can act on.
	Message string `json:"message"`
	// Malformed says bash would not run the line either (it does not
	// parse), or no program could receive it (a NUL byte, invalid UTF-8,
	// past MaxLineBytes): such a line has no opaque plan.
	Malformed bool `json:"malformed,omitempty"`
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s at offset %d: %s", r.Construct, r.Offset, r.Message)
}

// hints holds the advice attached to each construct's refusal.
var hints = map[Construct]string{
	CommandSubstitution: "command substitution is not supported: run the inner command first, then use its output",
	ParameterExpansion:  "variables and $ expansions are not supported: write the value itself, or quote a literal $ with single quotes",
	Arithmetic:          "arithmetic expansion is not supported: compute the value first and write it literally",
	ProcessSubstitution: "process substitution is not supported: write the inner command's output to a file first, then name the file",
	Subshell:            "subshells are not supported: run the commands directly, joined with ; && or ||",
	BraceGroup:          "brace groups { ...; } are not supported, and brace expansion only where it makes at most 1000 words: run the commands directly, or quote the braces",
	Heredoc:             "only a here-document or here-string on standard input, with a literal delimiter, is read as data",
	Background:          "running in the background with & is not supported: use shell_start for long-running work, or join commands with ;",
	UnsupportedRedirect: "only >, >>, <, 2>, 2>> and 2>&1 are supported",
	CompoundCommand:     "shell control flow (if, for, while, case, functions, !, [[ ]]) is not supported: run one command per stage and join stages with ; && or ||",
	Glob:                "glob patterns are not expanded: name the paths explicitly (find them first with find or list_dir), or quote the character",
	Assignment:          "environment assignments are not supported on the line: pass environment through the API; as an argument (make CC=gcc) it is fine",
	TildeUser:           "only ~ and ~/path are supported: write the directory's path",
	Comment:             "a comment runs nothing: a line that is only a comment is not a plan, and a backslash at a comment's end is not trusted",
	Newline:             "a carriage return outside quotes is not read: end lines with a newline alone",
	ShellBuiltin:        "there is no shell to hold the effect of this builtin: pass environment through the API and run programs directly",
	ControlCharacter:    "unquoted control characters are not supported: quote the argument that holds it",
	Syntax:              "the line is not well formed",
}

func refuse(c Construct, offset int, detail string) *Refusal {
	msg := hints[c]
	if c == Syntax && detail != "" {
		msg = detail
	} else if detail != "" {
		msg = detail + ": " + msg
	}
	return &Refusal{Construct: c, Offset: offset, Message: msg}
}
