// Package boundary owns the words every model rein fronts is told of the
// boundary it works inside: how its calls are decided, and what rein sees
// of a command line. rein's own agent (agent) and a launched agent's
// bundle (launch) say them alike, from here.
//
// boundary imports nothing of rein.
package boundary

import "fmt"

// Decided is the bullet on how every call is decided, in mode.
func Decided(mode string) string {
	return fmt.Sprintf("- Every call is decided by rein's policy (mode %s) before it runs; a refusal names the rule and the file that decided it, and asking again does not change it.\n", mode)
}

// Grammar is the bullet on what rein sees of a command line: confined,
// rein runs the plan it decided itself, in its sandbox; unconfined, the
// agent's own shell runs the line, and rein plans only what holds in a
// live shell.
func Grammar(confined bool) string {
	if confined {
		return "- rein reads a command line itself and runs each program directly: pipes, redirects, && || ; newlines, cd, comments, quoted here-documents (<<'EOF'), {a,b}, globs in arguments, NAME=value before a program, $HOME and $PWD, for loops over words, source .venv/bin/activate and one command ended by & (started in the background as a handle to poll) are seen exactly. A line with anything else (other $VAR, $(...), if, while) runs as opaque bash code, which is always asked first: write plain lines, and no bash -c.\n"
	}
	return "- rein reads each command line before your shell runs it: pipes, redirects, && || ; newlines, cd, comments, quoted here-documents (<<'EOF'), {a,b}, NAME=value before a program, $HOME and $PWD and source .venv/bin/activate are seen exactly. A line with anything else (globs, other $VAR, $(...), if, for, while) is opaque code, refused here: write plain lines, and no bash -c.\n"
}
