// Package shell owns rein's command-line grammar: it turns one line of text
// into a Plan (pipelines of argv stages joined by ; && ||) or into a Refusal
// that names the construct it will not run.
//
// Its contract is that the argv a caller checks is byte for byte the argv
// that runs: nothing is expanded, globbed or looked up after Parse. There is
// no shell anywhere in rein; a plan is executed stage by stage by rein's own
// init.
//
// shell is the bottom of the decision layer. It must not import any other
// rein package (policy, workspace, sandbox, tool, trace).
package shell

// Line is a parsed command line: pipelines joined by connectors, run left to
// right. Connectors[i] joins Pipelines[i] and Pipelines[i+1], so
// len(Connectors) == len(Pipelines)-1.
//
//	go build ./... && go test ./... ; git status
type Line struct {
	Pipelines  []*Pipeline
	Connectors []Connector

	// Opaque, when set, says the line is outside the grammar: its plan is
	// one stage, bash -c with the line as written, and Opaque names the
	// first construct that kept rein from making an exact plan of it. Only
	// Parser.Plan makes such a line; Parse refuses it instead.
	//
	//	cat > f <<EOF ⏎ $HOME ⏎ EOF  =>  bash -c 'cat > f <<EOF ⏎ $HOME ⏎ EOF'
	Opaque *Refusal `json:",omitempty"`

	// Background says the line is one command ended by &: it starts in
	// the background and the line's caller gets a handle to poll (the
	// shell tool), or hands it to the agent's own background runner
	// (Claude Code's run_in_background). BackgroundAt is the byte offset
	// of the &.
	//
	//	npm run dev &  =>  Background, BackgroundAt 12
	Background   bool `json:",omitempty"`
	BackgroundAt int  `json:",omitempty"`

	// Notes say what in the line runs nothing: each comment, by where it
	// starts.
	//
	//	git checkout a.py  # revert  =>  ["the text from byte 19 on (# revert) is a comment and does not run"]
	Notes []string `json:",omitempty"`
}

// Connector joins two pipelines.
type Connector int

const (
	// Seq runs the next pipeline whatever the previous one returned: a ; b
	Seq Connector = iota
	// And runs the next pipeline only if the previous one succeeded: a && b
	And
	// Or runs the next pipeline only if the previous one failed: a || b
	Or
)

// String returns the connector as written in a line.
func (c Connector) String() string {
	switch c {
	case Seq:
		return ";"
	case And:
		return "&&"
	case Or:
		return "||"
	}
	return "?"
}

// Pipeline is one or more stages whose stdout feeds the next stage's stdin:
//
//	grep -n TODO main.go | sort | head -5
type Pipeline struct {
	Stages []*Stage
}

// StageKind says whether a stage spawns a program or is the cd builtin.
type StageKind int

const (
	// Command spawns Argv.
	Command StageKind = iota
	// Cd changes the working directory for the rest of the line: cd src
	Cd

	// activate is a workspace virtual environment's activation while the
	// plan is built; it never stays in a plan.
	activate StageKind = 100
)

// Stage is one element of a pipeline.
type Stage struct {
	Kind StageKind

	// Argv is the program and its arguments after quote removal, exactly as
	// they will be spawned (Command only).
	//
	//	grep -n 'a b' "c\"d"  =>  ["grep", "-n", "a b", `c"d`]
	Argv []string

	// Env is the environment the line's assignments before the program
	// add to the stage's own (NAME=value, in the order written, after
	// quote removal and the tilde expansion bash makes in an assignment):
	// the program runs with them, and the policy decides it knowing them
	// (Command only).
	//
	//	CI=1 NO_COLOR=1 npm test  =>  ["CI=1", "NO_COLOR=1"]
	Env []string `json:",omitempty"`

	// Program, when set, is the absolute path of the program Argv[0]
	// names without a slash, as the sandbox's PATH finds it: set by a
	// resolver (sandbox.ResolvePrograms) before the policy decides the
	// stage, so that the policy decides the program the runner executes
	// and no second lookup can pick another. Parse never sets it; the
	// runner looks up a stage without one (Command only).
	//
	//	go test ./...  =>  "/usr/local/go/bin/go"
	Program string `json:",omitempty"`

	// Programs, when set, maps each of the first words of Argv that has
	// no slash to the program the sandbox's PATH finds for it, "" where
	// it finds none, and a text that is not an absolute path where the
	// way there passes an entry the sandbox cannot vouch for: a wrapper's
	// inner program (timeout 5 ls) is looked up on the same PATH when the
	// wrapper runs, and the policy decides the file found. A word the map
	// lacks was not looked up (Command only).
	//
	//	timeout 5 ls  =>  {"timeout": "/usr/bin/timeout", "5": "", "ls": "/usr/bin/ls"}
	Programs map[string]string `json:",omitempty"`

	// Venv is the workspace virtual environment an earlier stage of the
	// line activated (source .venv/bin/activate), as an absolute path: a
	// program is looked up in its bin first, which is put first on PATH,
	// and VIRTUAL_ENV names it, as the activation script does (Command
	// only). A program found there is the workspace's, never the system
	// program of the same name.
	//
	//	source .venv/bin/activate && pytest  =>  pytest with Venv "/w/.venv"
	Venv string `json:",omitempty"`

	// Dir is the target of a cd stage after quote removal and tilde
	// expansion; empty means a bare cd, which goes to HOME (Cd only).
	Dir string

	// Redirects in the order they were written; they apply left to right,
	// so "> f 2>&1" and "2>&1 > f" differ as they do in a shell.
	Redirects []Redirect

	// Offset is the byte offset of the stage's first word in the line.
	Offset int

	// Source is the stage as the line writes it, from its first word to
	// the end of its last word or redirect (a here-document's body not
	// included): what a decision shows, so that ~ reads as ~ and not only
	// as the HOME it became.
	//
	//	rm -rf ~  =>  "rm -rf ~" (Argv ["rm", "-rf", "/run/rein/home"])
	Source string `json:",omitempty"`
}

// RedirectOp is what a redirect does with its file descriptor.
type RedirectOp int

const (
	// Read opens Path for reading onto fd 0: < f
	Read RedirectOp = iota
	// Truncate opens Path for writing, truncating it, onto Fd: > f, 2> f
	Truncate
	// Append opens Path for appending onto Fd: >> f, 2>> f
	Append
	// DupStdout makes fd 2 a copy of the current fd 1: 2>&1
	DupStdout
	// Input feeds Data to fd 0: a here-document (<<, <<-) or a
	// here-string (<<<), its bytes known before anything runs.
	Input
)

// String returns the operator as written in a line for fd 1 (or 0).
func (o RedirectOp) String() string {
	switch o {
	case Read:
		return "<"
	case Truncate:
		return ">"
	case Append:
		return ">>"
	case DupStdout:
		return ">&1"
	case Input:
		return "<<"
	}
	return "?"
}

// Redirect is one redirection of a stage.
type Redirect struct {
	// Fd is 0 for Read, 1 or 2 for Truncate and Append, 2 for DupStdout.
	Fd int
	Op RedirectOp
	// Path is the target after quote removal and tilde expansion; empty
	// for DupStdout and Input.
	Path string
	// Data is what Input feeds to fd 0, byte for byte: a here-document's
	// body after bash's own processing (tabs stripped for <<-, escapes
	// removed where the delimiter is unquoted), or a here-string's word
	// and a newline.
	//
	//	cat <<'EOF' ⏎ a $b ⏎ EOF  =>  "a $b\n"
	Data string `json:",omitempty"`
}

// IsWrite reports whether the redirect opens its path for writing.
func (r Redirect) IsWrite() bool { return r.Op == Truncate || r.Op == Append }
