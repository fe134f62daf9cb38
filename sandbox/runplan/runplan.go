// Package runplan runs a plan of the command-line grammar the way the
// sandbox's init does: it opens the redirect targets, creates the pipes,
// spawns each stage with its argv, moves the working directory on cd, and
// honours ; && || on exit statuses. There is no shell anywhere: the argv
// the policy checked is the argv that is spawned.
//
// runplan imports shell (the plan type) and nothing else of rein; in
// particular it never imports policy: it does not know why a plan was
// allowed.
package runplan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/reinhq/rein/shell"
)

// Status says how a stage, a run or a tool call ended: one type for the
// three, which sandbox (sandbox.Status) and tool (tool.Status) name as
// aliases, so that the strings, which MCP and the trace carry as they are,
// are written once.
type Status string

// The statuses of a run and of a tool call; OK, Failed, Unavailable and
// Cancelled end a stage too.
const (
	// Timeout: the run reached its time limit and its tree was killed.
	Timeout Status = "timeout"
	// Denied: the call or run was refused: by the policy, or for a profile
	// the sandbox does not accept.
	Denied Status = "denied"
	// InvalidPath: a path is not one the call may name (outside the
	// workspace, not clean, through a link).
	InvalidPath Status = "invalid_path"
	// NotFound: what the call names does not exist.
	NotFound Status = "not_found"
)

// The stage statuses.
const (
	// OK: the stage ran and exited 0.
	OK Status = "ok"
	// Failed: the stage ran and exited non-zero or was killed by a signal.
	Failed Status = "failed"
	// Unavailable: the program does not exist or cannot be executed (127
	// or 126, as a shell would say).
	Unavailable Status = "unavailable"
	// RedirectFailed: a redirect target could not be opened; the stage did
	// not run (status 1, as in a shell).
	RedirectFailed Status = "redirect_failed"
	// CdFailed: a cd stage's directory is missing or not a directory; the
	// rest of the line does not run.
	CdFailed Status = "cd_failed"
	// NotRun: && or || skipped the stage, or an earlier cd failed.
	NotRun Status = "not_run"
	// Cancelled: the context ended before or while the stage ran.
	Cancelled Status = "cancelled"
)

// StageResult is how one stage ended.
type StageResult struct {
	Index  int      `json:"index"`
	Argv   []string `json:"argv"`
	Status Status   `json:"status"`
	// ExitCode is the stage's status as a shell reports it: the exit code,
	// or 128+signal when a signal killed it.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// CPUMS is the CPU time, user and system, the stage and the children
	// it waited for used, in milliseconds.
	CPUMS int64 `json:"cpu_ms"`
	// Error says why a stage did not run or could not start.
	Error string `json:"error,omitempty"`
}

// Result is how the whole line ended. ExitCode is the last pipeline's last
// stage's, as in a shell.
type Result struct {
	Stages   []StageResult `json:"stages"`
	ExitCode int           `json:"exit_code"`
}

// Options are where the plan runs and what it is given.
type Options struct {
	// Dir is the starting working directory (absolute).
	Dir string
	// Home is where a bare cd goes.
	Home string
	// Env is the stages' whole environment; its PATH is where programs
	// named without a slash are looked up.
	Env []string
	// Stdin feeds the first stage of each pipeline that does not redirect
	// its input; nil is the null device.
	Stdin *os.File
	// Stdout and Stderr receive the stages' output.
	Stdout, Stderr *os.File
	// NotFound holds, by a stage's index among all the line's stages, why
	// its program could not be found before the run (a resolver's
	// message, which can name where the host has it); the stage fails
	// with it when it runs.
	NotFound map[int]string
	// SysProcAttr, when set, is given to every stage (the sandbox sets
	// process groups and the parent-death signal there).
	SysProcAttr func() *syscall.SysProcAttr
}

// Run runs the plan to its end and reports every stage.
func Run(ctx context.Context, line *shell.Line, o Options) (*Result, error) {
	if !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("runplan: the working directory %q is not absolute", o.Dir)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	if o.Stdin == nil {
		o.Stdin = null
	}
	if o.Stdout == nil || o.Stderr == nil {
		return nil, errors.New("runplan: stdout and stderr are required")
	}
	r := &runner{o: o, cwd: o.Dir, path: lookPathList(o.Env)}
	res := &Result{}
	status, stopped := 0, false
	idx := 0
	for i, pl := range line.Pipelines {
		skip := stopped
		if i > 0 && !skip {
			switch line.Connectors[i-1] {
			case shell.And:
				skip = status != 0
			case shell.Or:
				skip = status == 0
			}
		}
		if ctx.Err() != nil && !skip {
			for _, st := range pl.Stages {
				res.Stages = append(res.Stages, StageResult{Index: idx, Argv: argvOf(st), Status: Cancelled, ExitCode: 130})
				idx++
			}
			stopped, status = true, 130
			continue
		}
		if skip {
			for _, st := range pl.Stages {
				res.Stages = append(res.Stages, StageResult{Index: idx, Argv: argvOf(st), Status: NotRun})
				idx++
			}
			continue
		}
		stages := r.pipeline(ctx, pl, idx)
		for k := range stages {
			stages[k].Index = idx
			idx++
		}
		res.Stages = append(res.Stages, stages...)
		last := stages[len(stages)-1]
		status = last.ExitCode
		if last.Status == CdFailed {
			stopped = true
		}
	}
	res.ExitCode = status
	return res, nil
}

func argvOf(st *shell.Stage) []string {
	if st.Kind == shell.Cd {
		if st.Dir == "" {
			return []string{"cd"}
		}
		return []string{"cd", st.Dir}
	}
	return st.Argv
}

type runner struct {
	o    Options
	cwd  string
	path []string
}

// pipeline runs one pipeline, whose first stage is the line's stage base:
// its stages start together, joined by pipes, and are all waited for.
func (r *runner) pipeline(ctx context.Context, pl *shell.Pipeline, base int) []StageResult {
	if len(pl.Stages) == 1 && pl.Stages[0].Kind == shell.Cd {
		return []StageResult{r.cd(pl.Stages[0])}
	}
	n := len(pl.Stages)
	out := make([]StageResult, n)
	cmds := make([]*exec.Cmd, n)
	var toClose []*os.File
	defer func() {
		for _, f := range toClose {
			f.Close()
		}
	}()
	prevOut := r.o.Stdin
	for i, st := range pl.Stages {
		out[i].Argv = argvOf(st)
		stdin, stdout, stderr := prevOut, r.o.Stdout, r.o.Stderr
		if i < n-1 {
			pr, pw, err := os.Pipe()
			if err != nil {
				out[i] = StageResult{Argv: st.Argv, Status: Failed, ExitCode: 1, Error: err.Error()}
				prevOut = r.o.Stdin
				continue
			}
			toClose = append(toClose, pr, pw)
			stdout, prevOut = pw, pr
		}
		var err error
		stdin, stdout, stderr, err = r.redirects(st, stdin, stdout, stderr, &toClose)
		if err != nil {
			out[i] = StageResult{Argv: st.Argv, Status: RedirectFailed, ExitCode: 1, Error: err.Error()}
			fmt.Fprintf(r.o.Stderr, "rein: %v\n", err)
			continue
		}
		if msg, ok := r.o.NotFound[base+i]; ok {
			out[i] = StageResult{Argv: st.Argv, Status: Unavailable, ExitCode: 127, Error: msg}
			fmt.Fprintf(r.o.Stderr, "rein: %s: %s\n", st.Argv[0], msg)
			continue
		}
		prog, err := r.program(st)
		if err != nil {
			code := 127
			if errors.Is(err, fs.ErrPermission) {
				code = 126
			}
			out[i] = StageResult{Argv: st.Argv, Status: Unavailable, ExitCode: code, Error: err.Error()}
			fmt.Fprintf(r.o.Stderr, "rein: %s: %v\n", st.Argv[0], err)
			continue
		}
		cmd := &exec.Cmd{Path: prog, Args: st.Argv, Env: stageEnv(r.o.Env, st), Dir: r.cwd, Stdin: stdin, Stdout: stdout, Stderr: stderr}
		if r.o.SysProcAttr != nil {
			cmd.SysProcAttr = r.o.SysProcAttr()
		}
		if err := cmd.Start(); err != nil {
			code, status := 126, Unavailable
			if errors.Is(err, fs.ErrNotExist) {
				code = 127
			}
			out[i] = StageResult{Argv: st.Argv, Status: status, ExitCode: code, Error: err.Error()}
			fmt.Fprintf(r.o.Stderr, "rein: %s: %v\n", st.Argv[0], err)
			continue
		}
		cmds[i] = cmd
	}
	// The parent's copies of the pipe ends must be closed before waiting,
	// or a reader never sees end of file.
	for _, f := range toClose {
		f.Close()
	}
	toClose = nil
	stop := context.AfterFunc(ctx, func() {
		for _, c := range cmds {
			if c != nil && c.Process != nil {
				c.Process.Kill()
			}
		}
	})
	defer stop()
	for i, c := range cmds {
		if c == nil {
			continue
		}
		err := c.Wait()
		out[i].Status, out[i].ExitCode = OK, 0
		if ps := c.ProcessState; ps != nil {
			out[i].CPUMS = (ps.UserTime() + ps.SystemTime()).Milliseconds()
		}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			ws := ee.Sys().(syscall.WaitStatus)
			out[i].Status = Failed
			if ws.Signaled() {
				out[i].ExitCode, out[i].Signal = 128+int(ws.Signal()), ws.Signal().String()
				if ctx.Err() != nil {
					out[i].Status = Cancelled
				}
			} else {
				out[i].ExitCode = ws.ExitStatus()
			}
		case err != nil:
			out[i].Status, out[i].ExitCode, out[i].Error = Failed, 1, err.Error()
		}
	}
	return out
}

// redirects applies a stage's redirects left to right, as a shell does:
// 2>&1 copies whatever fd 1 is at that point.
func (r *runner) redirects(st *shell.Stage, stdin, stdout, stderr *os.File, toClose *[]*os.File) (*os.File, *os.File, *os.File, error) {
	for _, rd := range st.Redirects {
		if rd.Op == shell.DupStdout {
			stderr = stdout
			continue
		}
		if rd.Op == shell.Input {
			f, err := feed(rd.Data)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("here-document: %w", err)
			}
			*toClose = append(*toClose, f)
			stdin = f
			continue
		}
		p := rd.Path
		if !filepath.IsAbs(p) {
			p = r.cwd + "/" + p
		}
		var f *os.File
		var err error
		switch rd.Op {
		case shell.Read:
			f, err = os.Open(p)
		case shell.Truncate:
			f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		case shell.Append:
			f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", rd.Path, errors.Unwrap(err))
		}
		*toClose = append(*toClose, f)
		switch {
		case rd.Op == shell.Read:
			stdin = f
		case rd.Fd == 2:
			stderr = f
		default:
			stdout = f
		}
	}
	return stdin, stdout, stderr, nil
}

// feed returns the read end of a pipe that yields data, then end of file:
// a here-document's bytes on standard input, as bash gives them. A writer
// goroutine fills the pipe and closes its end; once the reader is gone (the
// stage ended, or never started and its end was closed) the write fails
// with EPIPE and the goroutine ends too.
func feed(data string) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		pw.WriteString(data)
		pw.Close()
	}()
	return pr, nil
}

// cd moves the working directory for the rest of the line. A missing
// directory fails the line rather than letting later stages run somewhere
// the policy did not check.
func (r *runner) cd(st *shell.Stage) StageResult {
	res := StageResult{Argv: argvOf(st), Status: OK}
	dir := st.Dir
	if dir == "" {
		dir = r.o.Home
	}
	if dir == "" {
		res.Status, res.ExitCode, res.Error = CdFailed, 1, "HOME is not set"
		return res
	}
	if !filepath.IsAbs(dir) {
		// Not filepath.Join: it would clean sub/.. away lexically, where
		// the kernel needs sub to exist.
		dir = r.cwd + "/" + dir
	}
	fi, err := os.Stat(dir)
	if err == nil && fi.IsDir() {
		// The working directory is kept physical, so later relative paths
		// mean what the kernel makes of them.
		dir, err = filepath.EvalSymlinks(dir)
	}
	switch {
	case err != nil:
		res.Status, res.ExitCode, res.Error = CdFailed, 1, err.Error()
	case !fi.IsDir():
		res.Status, res.ExitCode, res.Error = CdFailed, 1, dir+": not a directory"
	default:
		r.cwd = dir
		return res
	}
	fmt.Fprintf(r.o.Stderr, "rein: cd: %s\n", res.Error)
	return res
}

// program is the program a stage runs: the one a resolver found before
// the policy decided the stage, or else the one lookup finds.
func (r *runner) program(st *shell.Stage) (string, error) {
	if st.Program != "" {
		if !filepath.IsAbs(st.Program) {
			return "", fmt.Errorf("the resolved program %q is not an absolute path", st.Program)
		}
		return st.Program, executable(st.Program)
	}
	if st.Venv != "" && !strings.Contains(st.Argv[0], "/") {
		// The venv's bin is first on the stage's PATH.
		if p := st.Venv + "/bin/" + st.Argv[0]; executable(p) == nil {
			return p, nil
		}
	}
	return r.lookup(st.Argv[0])
}

// lookup finds a program: a name with a slash is taken relative to the
// working directory, any other name is searched on the plan's PATH (never
// the caller's).
func (r *runner) lookup(name string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = r.cwd + "/" + p
		}
		return p, executable(p)
	}
	var firstErr error
	for _, dir := range r.path {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // an empty or relative PATH entry would search the working directory
		}
		p := filepath.Join(dir, name)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && errors.Is(err, fs.ErrPermission) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", errors.New("command not found")
}

func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s: is a directory: %w", p, fs.ErrPermission)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s: %w", p, fs.ErrPermission)
	}
	return nil
}

func lookPathList(env []string) []string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return filepath.SplitList(v)
		}
	}
	return nil
}

// stageEnv is env as a stage runs with it: its venv's variables as the
// activation script sets them (VIRTUAL_ENV, the venv's bin first on PATH,
// no PYTHONHOME), then its own assignments.
func stageEnv(env []string, st *shell.Stage) []string {
	if st.Venv != "" {
		var out []string
		path := ""
		for _, e := range env {
			switch n, v, _ := strings.Cut(e, "="); n {
			case "PATH":
				path = v
			case "PYTHONHOME", "VIRTUAL_ENV":
			default:
				out = append(out, e)
			}
		}
		bin := st.Venv + "/bin"
		if path != "" {
			bin += ":" + path
		}
		env = append(out, "VIRTUAL_ENV="+st.Venv, "PATH="+bin)
	}
	return withStageEnv(env, st.Env)
}

// withStageEnv is env with a stage's own assignments (NAME=value cmd)
// after it, each replacing the variable of its name.
func withStageEnv(env, stage []string) []string {
	if len(stage) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(stage))
	for _, e := range env {
		n, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(stage, func(s string) bool { return strings.HasPrefix(s, n+"=") }) {
			out = append(out, e)
		}
	}
	return append(out, stage...)
}
