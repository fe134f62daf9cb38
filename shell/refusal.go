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
	CommandSubstitution: "rein cannot know a command substitution's output before it runs: run the inner command first, then use its output",
	ParameterExpansion:  "rein fills in only $HOME, $PWD and a for loop's variable in its body ($NAME or ${NAME}, one word unquoted), and knows no other variable's value before it runs: write the value itself, or single-quote a literal $",
	Arithmetic:          "rein does not compute arithmetic: compute the value first and write it literally",
	ProcessSubstitution: "rein does not see into process substitution: write the inner command's output to a file first, then name the file",
	Subshell:            "rein does not see into subshells: run the commands directly, joined with ; && or ||",
	BraceGroup:          "rein does not see into brace groups { ...; }, or brace expansion past 1000 words: run the commands directly, or quote the braces",
	Heredoc:             "rein reads a here-document or here-string only on standard input, with a literal delimiter",
	Background:          "rein runs only a whole line of one command ended by & in the background: put the command in a line of its own (shell_start starts any line in the background), or join commands with ;",
	UnsupportedRedirect: "rein reads only the redirects >, >>, <, 2>, 2>>, 2>&1 and here-documents",
	CompoundCommand:     "rein does not see into shell control flow (if, for, while, case, functions, !, [[ ]]): run one command per stage, joined with ; && or ||",
	Glob:                "rein expands a glob itself only in a command's arguments, over the workspace, before any other command of the line: name the paths (find them with find or list_dir), or quote the character",
	Assignment:          "rein reads NAME=value only right before a program (CI=1 npm test), where the policy decides the variable; as an argument (make CC=gcc) it is fine",
	TildeUser:           "rein expands only ~ and ~/path: write the directory's path",
	Comment:             "a comment runs nothing: a line that is only a comment is not a plan, and a backslash at a comment's end is not trusted",
	Newline:             "rein reads no carriage return outside quotes: end lines with a newline alone",
	ShellBuiltin:        "an exact plan has no shell to hold this builtin's effect: pass environment through the API and run programs directly",
	ControlCharacter:    "rein reads no unquoted control character: quote the argument that holds it",
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
