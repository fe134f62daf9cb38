package policy

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/shell"
)

// This file unwraps the commands a stage runs on behalf of another: exec
// wrappers (timeout, env, sudo, xargs …), shells given -c STRING, and find's
// -exec actions. Deny rules are tested against every command a stage
// exposes; allow rules and the class table see the stage with only the
// benign wrappers stripped.

// maxUnwrapDepth bounds how deep wrappers, shell strings and find actions
// are followed, so that a hostile line cannot exhaust the stack. Deeper
// commands are not exposed, and the stage is shell-complex.
const maxUnwrapDepth = 16

// innerRun is one command a stage runs on its behalf.
type innerRun struct {
	argv []string
	// redirects are those of a stage inside a shell string.
	redirects []shell.Redirect
	// dir is where a cd earlier in the same shell string moved to; relative
	// paths of the command are relative to it. Empty when there was none.
	dir string
	// perFile marks a find action, whose {} stands for each file found.
	perFile bool
}

// wrapperRun is what one exec wrapper does with its own words.
type wrapperRun struct {
	argv    []string // the command it runs; nil when it runs none
	scripts []string // command strings it hands to a shell (flock -c, watch)
	reads   []string // files the wrapper itself reads (xargs -a)
	writes  []string // files the wrapper itself writes (time -o, strace -o, flock's lock file)
	// dir is where the wrapper moves its command (env -C, sudo -D); empty
	// when it does not. chdirOf reports it.
	dir string
	// perArg marks a command that is run once per input with {} standing
	// for it (parallel), like a find action.
	perArg bool
}

// runs returns the commands the wrapper runs. A script that does not parse
// exposes nothing; the wrapper is shell-complex anyway.
func (r wrapperRun) runs(perFile bool) []innerRun {
	perFile = perFile || r.perArg
	var runs []innerRun
	if len(r.argv) > 0 {
		runs = append(runs, innerRun{argv: r.argv, perFile: perFile})
	}
	for _, s := range r.scripts {
		runs = append(runs, shellStringRuns(s, perFile)...)
	}
	return runs
}

// execWrapper is one program whose job is to run another command.
type execWrapper struct {
	// benign wrappers change how a command runs (its time limit, its
	// priority, its buffering) but not what it is, so they are stripped
	// before allow matching and classification.
	benign bool
	// runsWithout marks wrappers that still run something when given no
	// command (a shell, a debugger, a trace of another process), so they
	// keep their row's class instead of falling to unknown.
	runsWithout bool
	// opts is a benign wrapper's option allowlist: with an option it
	// does not list, the wrapper is not stripped.
	opts   *argSpec
	unwrap func(args []string) wrapperRun
}

var execWrappers = map[string]execWrapper{
	"timeout":  {benign: true, opts: &timeoutArgs, unwrap: unwrapTimeout},
	"time":     {benign: true, opts: &timeArgs, unwrap: unwrapTime},
	"nice":     {benign: true, opts: &niceArgs, unwrap: unwrapNice},
	"nohup":    {benign: true, opts: &nohupArgs, unwrap: commandAfter(&nohupArgs, 0)},
	"stdbuf":   {benign: true, opts: &stdbufArgs, unwrap: commandAfter(&stdbufArgs, 0)},
	"xargs":    {unwrap: unwrapXargs},
	"ionice":   {unwrap: unwrapIonice},
	"chrt":     {unwrap: unwrapChrt},
	"taskset":  {unwrap: unwrapTaskset},
	"env":      {unwrap: unwrapEnv},
	"command":  {unwrap: unwrapCommand},
	"builtin":  {unwrap: commandAfter(&plainArgs, 0)},
	"exec":     {unwrap: commandAfter(&execArgs, 0)},
	"sudo":     {unwrap: unwrapSudo},
	"doas":     {unwrap: unwrapDoas},
	"watch":    {unwrap: unwrapWatch},
	"setsid":   {unwrap: commandAfter(&setsidArgs, 0)},
	"flock":    {unwrap: unwrapFlock},
	"unbuffer": {unwrap: commandAfter(&plainArgs, 0)},
	"busybox":  {unwrap: unwrapBusybox},
	"strace":   {runsWithout: true, unwrap: unwrapTracer(&straceArgs)},
	"ltrace":   {runsWithout: true, unwrap: unwrapTracer(&ltraceArgs)},
	"su":       {unwrap: unwrapSu(&suArgs, &suHead)},
	"runuser":  {unwrap: unwrapSu(&suArgs, &suHead)},
	"pkexec":   {unwrap: commandAfter(&pkexecArgs, 0)},

	"prlimit":          {unwrap: unwrapPrlimit},
	"unshare":          {runsWithout: true, unwrap: commandAfter(&unshareArgs, 0)},
	"nsenter":          {runsWithout: true, unwrap: commandAfter(&nsenterArgs, 0)},
	"chroot":           {runsWithout: true, unwrap: commandAfter(&chrootArgs, 1)},
	"setpriv":          {unwrap: unwrapSetpriv},
	"fakeroot":         {runsWithout: true, unwrap: unwrapFakeroot},
	"eatmydata":        {unwrap: commandAfter(&plainArgs, 0)},
	"ssh-agent":        {unwrap: unwrapSSHAgent},
	"dbus-run-session": {unwrap: commandAfter(&dbusRunSessionArgs, 0)},
	"firejail":         {runsWithout: true, unwrap: commandAfter(&plainArgs, 0)},
	"systemd-run":      {runsWithout: true, unwrap: unwrapSystemdRun},
	"script":           {runsWithout: true, unwrap: unwrapScript},
	"catchsegv":        {unwrap: commandAfter(&plainArgs, 0)},
	"valgrind":         {unwrap: unwrapValgrind},
	"gdb":              {runsWithout: true, unwrap: unwrapGdb},
	"parallel":         {runsWithout: true, unwrap: unwrapParallel},
}

// Option layouts of the wrappers. Every one of them stops reading options
// at the command it runs, so they are all posix.
var (
	timeoutArgs = argSpec{values: "sk", posix: true, long: longs("signal=", "kill-after=", "preserve-status",
		"foreground", "verbose", "help", "version"), allow: &allowlist{flags: "v"}}
	timeArgs = argSpec{values: "fo", posix: true, long: longs("format=", "portability", "output=", "append",
		"verbose", "quiet", "help", "version"), allow: &allowlist{flags: "apqvV", kinds: map[string]valKind{"o": valWrite, "output": valWrite}}}
	niceArgs   = argSpec{values: "n", posix: true, long: longs("adjustment=", "help", "version"), allow: &allowlist{numeric: true}}
	nohupArgs  = argSpec{posix: true, long: longs("help", "version"), allow: &allowlist{}}
	stdbufArgs = argSpec{values: "ioe", posix: true, long: longs("input=", "output=", "error=", "help", "version"), allow: &allowlist{}}
	xargsArgs  = argSpec{values: "aEdILnPs", optional: "eil", posix: true, long: longs("null", "arg-file=",
		"delimiter=", "eof?", "replace?", "max-lines?", "max-args=", "max-procs=", "interactive",
		"no-run-if-empty", "max-chars=", "verbose", "exit", "show-limits", "open-tty", "process-slot-var=",
		"help", "version")}
	ioniceArgs = argSpec{values: "cnpPu", posix: true, long: longs("class=", "classdata=", "pid=", "pgid=", "uid=",
		"ignore", "help", "version")}
	chrtArgs = argSpec{values: "TPD", posix: true, long: longs("all-tasks", "batch", "deadline", "fifo", "ext",
		"idle", "other", "rr", "reset-on-fork", "sched-runtime=", "sched-period=", "sched-deadline=", "max", "pid",
		"verbose", "help", "version")}
	tasksetArgs = argSpec{posix: true, long: longs("all-tasks", "cpu-list", "pid", "help", "version")}
	envArgs     = argSpec{values: "uCSa", posix: true, long: longs("ignore-environment", "null", "unset=", "chdir=",
		"split-string=", "debug", "argv0=", "block-signal?", "default-signal?", "ignore-signal?",
		"list-signal-handling", "help", "version")}
	plainArgs = argSpec{posix: true}
	execArgs  = argSpec{values: "a", posix: true}
	sudoArgs  = argSpec{values: "aCcDgpRrTtUu", optional: "h", posix: true, long: longs("askpass", "background",
		"bell", "close-from=", "chdir=", "preserve-env?", "edit", "group=", "set-home", "help", "host=", "login",
		"remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "prompt=", "chroot=",
		"role=", "stdin", "shell", "type=", "command-timeout=", "other-user=", "user=", "version", "validate",
		"login-class=", "auth-type=")}
	doasArgs  = argSpec{values: "aCu", posix: true}
	watchArgs = argSpec{values: "nq", optional: "d", posix: true, long: longs("interval=", "differences?",
		"no-title", "beep", "errexit", "chgexit", "color", "no-color", "exec", "precise", "no-wrap", "equexit=",
		"no-rerun", "shotsdir=", "help", "version")}
	setsidArgs = argSpec{posix: true, long: longs("ctty", "fork", "wait", "help", "version")}
	flockArgs  = argSpec{values: "wEc", posix: true, long: longs("shared", "exclusive", "unlock", "nonblock", "nb",
		"close", "no-fork", "wait=", "timeout=", "conflict-exit-code=", "command=", "verbose", "help", "version")}
	straceArgs = argSpec{values: "abeEIoOpPsSuUX", posix: true, long: longs("output=", "trace=", "trace-path=",
		"attach=", "user=", "env=", "summary-sort-by=", "string-limit=", "columns=", "signal=", "status=",
		"quiet?", "decode-fds?", "follow-forks", "output-separately", "summary-only", "summary", "stack-trace?",
		"seccomp-bpf", "kill-on-exit", "instruction-pointer", "syscall-times?", "absolute-timestamps?",
		"relative-timestamps?", "no-abbrev", "abbrev=", "verbose=", "raw=", "read=", "write=", "fault=",
		"inject=", "const-print-style=", "daemonize?", "argv0=", "help", "version")}
	ltraceArgs = argSpec{values: "aAeDlnopsuwxF", posix: true, long: longs("output=", "library=", "align=",
		"indent=", "config=", "demangle", "help", "version")}
)

// Option layouts of the wrappers outside the spec's list, which run a
// command in another namespace, root, session or under a tool.
var (
	suArgs = argSpec{values: "cgGswu", long: longs("command=", "session-command=", "fast", "group=",
		"supp-group=", "login", "preserve-environment", "pty", "shell=", "user=", "whitelist-environment=",
		"help", "version")}
	// suHead is suArgs read up to the first operand: after runuser -u USER
	// the rest is the command, whose options are its own.
	suHead     = func() argSpec { a := suArgs; a.posix = true; return a }()
	pkexecArgs = argSpec{posix: true, long: longs("user=", "disable-internal-agent", "keep-cwd", "help", "version")}
	// prlimit's resource options take an optional attached limit.
	prlimitArgs = argSpec{values: "op", optional: "cdefilmnqrstuvxy", posix: true, long: longs("pid=", "output=",
		"noheadings", "raw", "verbose", "help", "version", "core?", "data?", "nice?", "fsize?", "sigpending?",
		"memlock?", "rss?", "nofile?", "msgqueue?", "rtprio?", "stack?", "cpu?", "nproc?", "as?", "locks?",
		"rttime?")}
	unshareArgs = argSpec{values: "RwSGl", posix: true, long: longs("mount?", "uts?", "ipc?", "net?", "pid?",
		"user?", "cgroup?", "time?", "fork", "kill-child?", "mount-proc?", "map-root-user", "map-current-user",
		"map-user=", "map-group=", "map-users=", "map-groups=", "map-auto", "propagation=", "setgroups=", "root=",
		"wd=", "setuid=", "setgid=", "monotonic=", "boottime=", "keep-caps", "load-interp=", "help", "version")}
	nsenterArgs = argSpec{values: "tSGW", optional: "muinpCUTrw", posix: true, long: longs("all", "target=",
		"mount?", "uts?", "ipc?", "net?", "pid?", "cgroup?", "user?", "time?", "setgid=", "setuid=",
		"preserve-credentials", "root?", "wd?", "wdns=", "env", "no-fork", "follow-context", "user-parent",
		"join-cgroup", "keep-caps", "help", "version")}
	chrootArgs  = argSpec{posix: true, long: longs("groups=", "userspec=", "skip-chdir", "help", "version")}
	setprivArgs = argSpec{posix: true, long: longs("dump", "nnp", "no-new-privs", "inh-caps=", "ambient-caps=",
		"bounding-set=", "ruid=", "euid=", "rgid=", "egid=", "reuid=", "regid=", "clear-groups", "keep-groups",
		"init-groups", "groups=", "securebits=", "pdeathsig=", "selinux-label=", "apparmor-profile=",
		"landlock-access=", "landlock-rule=", "seccomp-filter=", "reset-env", "list-caps", "help", "version")}
	fakerootArgs = argSpec{values: "lisb", posix: true, long: longs("lib=", "faked=", "unknown-is-real",
		"fd-base=", "help", "version")}
	sshAgentArgs       = argSpec{values: "aEOPt", posix: true}
	dbusRunSessionArgs = argSpec{posix: true, long: longs("config-file=", "dbus-daemon=", "help", "version")}
	systemdRunArgs     = argSpec{values: "upEHMC", posix: true, long: longs("unit=", "property=", "description=",
		"slice=", "service-type=", "uid=", "gid=", "nice=", "working-directory=", "setenv=", "on-active=",
		"on-boot=", "on-startup=", "on-unit-active=", "on-unit-inactive=", "on-calendar=", "path-property=",
		"socket-property=", "timer-property=", "host=", "machine=", "capsule=", "expand-environment=", "json=",
		"job-mode=", "background=", "remain-after-exit", "send-sighup", "same-dir", "pty", "pipe", "shell",
		"quiet", "collect", "on-clock-change", "on-timezone-change", "no-block", "wait", "user", "system",
		"scope", "no-ask-password", "slice-inherit", "ignore-failure", "help", "version")}
	scriptArgs = argSpec{values: "cEBIOTmo", optional: "t", long: longs("append", "command=", "echo=", "return",
		"flush", "force", "log-io=", "log-in=", "log-out=", "log-timing=", "logging-format=", "output-limit=",
		"quiet", "timing?", "help", "version")}
	// valgrind takes every value attached (--log-file=F), so no option
	// consumes the next word.
	valgrindArgs = argSpec{posix: true}
	parallelArgs = argSpec{values: "aCdEIjLnNPSsW", optional: "eil", posix: true, long: longs("jobs=",
		"max-procs=", "sshlogin=", "sshloginfile=", "slf=", "arg-file=", "delimiter=", "colsep=", "max-args=",
		"max-replace-args=", "max-lines=", "max-chars=", "timeout=", "joblog=", "results=", "res=", "basefile=",
		"bf=", "return=", "transferfile=", "tf=", "workdir=", "wd=", "env=", "tmpdir=", "tempdir=",
		"tagstring=", "delay=", "memfree=", "load=", "retries=", "termseq=", "halt=", "limit=", "sshdelay=",
		"block=", "blocksize=", "recstart=", "recend=", "header=", "nice=", "template=", "rpl=", "pipe",
		"keep-order", "tag", "dry-run", "quote", "verbose", "null", "progress", "eta", "bar", "line-buffer",
		"group", "ungroup", "xargs", "onall", "nonall", "plus", "shellquote", "will-cite", "help", "version")}
)

// gdbValues are gdb's options that take the next word; gdb reads them with
// one dash or two.
var gdbValues = setOf("ex", "iex", "x", "ix", "p", "pid", "c", "core", "d", "directory", "cd", "s", "symbols",
	"e", "exec", "se", "b", "D", "data-directory", "eval-command", "init-eval-command", "command",
	"init-command", "tty", "l", "i", "interpreter")

// unwrapSu reads su and runuser: -c STRING hands STRING to the user's
// shell, and runuser -u USER runs the words after its options.
func unwrapSu(spec, head *argSpec) func([]string) wrapperRun {
	return func(args []string) wrapperRun {
		r := wrapperRun{scripts: spec.scan(args).values("c", "command", "session-command")}
		if ws, ops := head.split(args); ws.has("u", "user") && len(r.scripts) == 0 {
			r.argv = operandsFrom(ops, 0)
		}
		return r
	}
}

// unwrapPrlimit returns no command when prlimit is pointed at a running
// process with --pid.
func unwrapPrlimit(args []string) wrapperRun {
	ws, ops := prlimitArgs.split(args)
	if ws.has("p", "pid") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapSetpriv returns no command for --dump and --list-caps, which only
// print.
func unwrapSetpriv(args []string) wrapperRun {
	ws, ops := setprivArgs.split(args)
	if ws.has("d", "dump", "L", "list-caps") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapFakeroot records -s, the file fakeroot saves its state to, and -i,
// the file it loads it from.
func unwrapFakeroot(args []string) wrapperRun {
	ws, ops := fakerootArgs.split(args)
	return wrapperRun{argv: operandsFrom(ops, 0), reads: ws.values("i"), writes: ws.values("s")}
}

// unwrapSSHAgent returns no command for -k, which kills a running agent.
func unwrapSSHAgent(args []string) wrapperRun {
	ws, ops := sshAgentArgs.split(args)
	if ws.has("k") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapSystemdRun returns the command systemd-run starts as a unit.
func unwrapSystemdRun(args []string) wrapperRun {
	_, ops := systemdRunArgs.split(args)
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapScript reads script -c STRING, which runs STRING with a shell, and
// records the typescript and log files it writes.
func unwrapScript(args []string) wrapperRun {
	ws := scriptArgs.scan(args)
	r := wrapperRun{scripts: ws.values("c", "command")}
	logs := ws.values("B", "log-io", "O", "log-out")
	r.writes = append(r.writes, logs...)
	r.writes = append(r.writes, ws.values("I", "log-in", "T", "log-timing", "t", "timing")...)
	switch ops := ws.operands(); {
	case len(ops) > 0:
		r.writes = append(r.writes, ops[0])
	case len(logs) == 0:
		r.writes = append(r.writes, "typescript")
	}
	return r
}

// unwrapValgrind records the log and XML files valgrind writes.
func unwrapValgrind(args []string) wrapperRun {
	ws, ops := valgrindArgs.split(args)
	return wrapperRun{argv: operandsFrom(ops, 0), writes: ws.values("log-file", "xml-file")}
}

// unwrapGdb returns the command of gdb --args, the only form in which the
// words after the program are its arguments. gdb is shell-complex in every
// form: its own commands (-ex, -x, .gdbinit) can run anything.
func unwrapGdb(args []string) wrapperRun {
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "-"):
		case name == "args":
			return wrapperRun{argv: operandsFrom(args, i+1)}
		case gdbValues[name] && !hasValue:
			i++
		}
	}
	return wrapperRun{}
}

// parallelSources are the words that end GNU parallel's command and begin
// its argument lists.
var parallelSources = setOf(":::", "::::", ":::+", "::::+")

// maxParallelArgs bounds how many ::: arguments of GNU parallel are
// pasted into its command for deny matching.
const maxParallelArgs = 64

// unwrapParallel joins the command words of GNU parallel into the shell
// string it runs for each input, {} standing for the input, and also
// pastes in each ::: argument as parallel does (appended, or over {}), so
// that parallel rm -rf ::: / exposes rm -rf /. The files of :::: and -a
// are read for arguments.
func unwrapParallel(args []string) wrapperRun {
	ws, ops := parallelArgs.split(args)
	r := wrapperRun{reads: ws.values("a", "arg-file"), perArg: true}
	end := slices.IndexFunc(ops, func(w string) bool { return parallelSources[w] })
	if end < 0 {
		end = len(ops)
	}
	cmd := strings.Join(ops[:end], " ")
	if cmd != "" {
		r.scripts = []string{cmd}
	}
	pasted := 0
	for i := end; i < len(ops); i++ {
		file := ops[i] == "::::" || ops[i] == "::::+"
		for i+1 < len(ops) && !parallelSources[ops[i+1]] {
			i++
			switch {
			case file:
				r.reads = append(r.reads, ops[i])
			case cmd != "" && pasted < maxParallelArgs:
				pasted++
				arg := quoteWord(ops[i])
				if strings.Contains(cmd, "{}") {
					r.scripts = append(r.scripts, strings.ReplaceAll(cmd, "{}", arg))
				} else {
					r.scripts = append(r.scripts, cmd+" "+arg)
				}
			}
		}
	}
	return r
}

// quoteWord quotes s as one single-quoted shell word.
func quoteWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandAfter returns an unwrapper for a wrapper whose command follows its
// options and skip operands of its own.
func commandAfter(spec *argSpec, skip int) func([]string) wrapperRun {
	return func(args []string) wrapperRun {
		_, ops := spec.split(args)
		return wrapperRun{argv: operandsFrom(ops, skip)}
	}
}

func operandsFrom(ops []string, skip int) []string {
	if len(ops) <= skip {
		return nil
	}
	return ops[skip:]
}

// unwrapTimeout skips the DURATION operand: timeout [OPTION] DURATION COMMAND.
func unwrapTimeout(args []string) wrapperRun {
	return commandAfter(&timeoutArgs, 1)(args)
}

// unwrapTime records -o: GNU time writes its report there, so a time with
// -o is not stripped as benign.
func unwrapTime(args []string) wrapperRun {
	ws, ops := timeArgs.split(args)
	return wrapperRun{argv: operandsFrom(ops, 0), writes: ws.values("o", "output")}
}

// unwrapNice also reads the old spellings of the adjustment, nice -10 and
// nice --10, which only nice's first word may use.
func unwrapNice(args []string) wrapperRun {
	if len(args) > 0 && isNiceAdjustment(args[0]) {
		args = args[1:]
	}
	return commandAfter(&niceArgs, 0)(args)
}

func isNiceAdjustment(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	a = a[1:]
	if a[0] == '-' || a[0] == '+' {
		a = a[1:]
	}
	return isDecimal(a)
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// bareXargs reports whether xargs is given no options: then it runs its
// command unchanged, once, with the input as extra arguments.
func bareXargs(args []string) bool {
	return len(args) == 0 || args[0] == "--" || len(args[0]) < 2 || args[0][0] != '-'
}

func unwrapXargs(args []string) wrapperRun {
	ws, ops := xargsArgs.split(args)
	return wrapperRun{argv: operandsFrom(ops, 0), reads: ws.values("a", "arg-file")}
}

// unwrapIonice returns no command when ionice is pointed at running
// processes instead (-p, -P, -u).
func unwrapIonice(args []string) wrapperRun {
	ws, ops := ioniceArgs.split(args)
	if ws.has("p", "pid", "P", "pgid", "u", "uid") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapChrt skips the priority operand: chrt [options] PRIORITY COMMAND.
func unwrapChrt(args []string) wrapperRun {
	ws, ops := chrtArgs.split(args)
	if ws.has("p", "pid", "m", "max") {
		return wrapperRun{}
	}
	if len(ops) > 0 && isDecimal(ops[0]) {
		ops = ops[1:]
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapTaskset skips the mask or CPU list: -c only changes how that
// operand is read, it takes no value of its own.
func unwrapTaskset(args []string) wrapperRun {
	ws, ops := tasksetArgs.split(args)
	if ws.has("p", "pid") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 1)}
}

// unwrapEnv skips env's options and NAME=VALUE words. -S STRING is split
// into words that take its place, options included, as GNU env does.
// The last -C before the command, in the words or in a split string, is
// where the command runs.
func unwrapEnv(args []string) wrapperRun {
	dir := ""
	for round := 0; ; round++ {
		ws, ops := envArgs.split(args)
		split := -1
		for k, w := range ws {
			if w.opt == "S" || w.opt == "split-string" {
				split = k
				break
			}
			if (w.opt == "C" || w.opt == "chdir") && w.hasValue {
				dir = w.value
			}
		}
		if split < 0 || round == maxUnwrapDepth {
			if len(ops) > 0 && ops[0] == "-" {
				ops = ops[1:]
			}
			for len(ops) > 0 && strings.Contains(ops[0], "=") {
				ops = ops[1:]
			}
			return wrapperRun{argv: operandsFrom(ops, 0), dir: dir}
		}
		w := ws[split]
		args = append(splitEnvString(w.value), args[w.next:]...)
	}
}

// splitEnvString splits the STRING of env -S into words as GNU env does:
// blanks separate them, quotes group them, backslash escapes, and # begins
// a comment. \_ separates words outside double quotes and is a space
// inside them. ${NAME} is left as written, since the value is not known
// here.
func splitEnvString(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r':
			flush()
		case ch == '#' && !inWord:
			return words
		case ch == '\'':
			inWord = true
			for i++; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
		case ch == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
					if e, ok := envEscapes[s[i]]; ok {
						cur.WriteByte(e)
						continue
					}
				}
				cur.WriteByte(s[i])
			}
		case ch == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case '_':
				flush()
				continue
			case 'c':
				flush()
				return words
			}
			inWord = true
			if e, ok := envEscapes[s[i]]; ok {
				cur.WriteByte(e)
			} else {
				cur.WriteByte(s[i])
			}
		default:
			inWord = true
			cur.WriteByte(ch)
		}
	}
	flush()
	return words
}

// envEscapes are the backslash escapes of env -S that stand for another
// byte, outside quotes and inside double quotes.
var envEscapes = map[byte]byte{'_': ' ', 'n': '\n', 't': '\t', 'r': '\r', 'f': '\f', 'v': '\v'}

// unwrapCommand returns no command for command -v and -V, which only say
// what a name would run.
func unwrapCommand(args []string) wrapperRun {
	ws, ops := plainArgs.split(args)
	if ws.has("v", "V") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapSudo skips sudo's options and VAR=value words. sudo -e edits the
// operands instead of running them; -l, -v, -K and -h run nothing.
func unwrapSudo(args []string) wrapperRun {
	ws, ops := sudoArgs.split(args)
	for _, w := range ws {
		switch {
		case w.opt == "e" || w.opt == "edit":
			return wrapperRun{writes: ops}
		case w.opt == "l" || w.opt == "list" || w.opt == "v" || w.opt == "validate" || w.opt == "K" ||
			w.opt == "remove-timestamp" || w.opt == "V" || w.opt == "version" || w.opt == "help" ||
			w.opt == "h" && !w.hasValue:
			return wrapperRun{}
		}
	}
	for len(ops) > 0 && isAssignment(ops[0]) {
		ops = ops[1:]
	}
	r := wrapperRun{argv: operandsFrom(ops, 0)}
	if d := ws.values("D", "chdir"); len(d) > 0 {
		r.dir = d[len(d)-1]
	}
	return r
}

// unwrapDoas returns no command for doas -C (check a configuration) and -L.
func unwrapDoas(args []string) wrapperRun {
	ws, ops := doasArgs.split(args)
	if ws.has("C", "L") {
		return wrapperRun{}
	}
	return wrapperRun{argv: operandsFrom(ops, 0)}
}

// unwrapWatch treats the command as a shell string unless -x is given:
// watch joins its operands with spaces and hands them to sh -c.
func unwrapWatch(args []string) wrapperRun {
	ws, ops := watchArgs.split(args)
	if len(ops) == 0 {
		return wrapperRun{}
	}
	if ws.has("x", "exec") {
		return wrapperRun{argv: ops}
	}
	return wrapperRun{scripts: []string{strings.Join(ops, " ")}}
}

// unwrapFlock reads both forms: flock [options] FILE COMMAND [ARG…] and
// flock [options] FILE -c STRING, which runs STRING with a shell. The lock
// file is created if missing, so it counts as a write; a lone number is a
// file descriptor instead.
func unwrapFlock(args []string) wrapperRun {
	ws, ops := flockArgs.split(args)
	scripts := ws.values("c", "command")
	if len(ops) == 0 {
		return wrapperRun{scripts: scripts}
	}
	lock, rest := ops[0], ops[1:]
	r := wrapperRun{scripts: scripts}
	if len(rest) > 0 || len(scripts) > 0 || !isDecimal(lock) {
		r.writes = []string{lock}
	}
	switch {
	case len(rest) >= 2 && (rest[0] == "-c" || rest[0] == "--command"):
		r.scripts = append(r.scripts, rest[1])
	case len(rest) > 0 && rest[0] != "-c" && rest[0] != "--command":
		r.argv = rest
	}
	return r
}

// unwrapBusybox returns the applet busybox runs; an option (--list,
// --install) runs none.
func unwrapBusybox(args []string) wrapperRun {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return wrapperRun{}
	}
	return wrapperRun{argv: args}
}

// unwrapTracer reads strace and ltrace. Their -o file is written; strace
// also takes -o '|cmd' and -o '!cmd', which pipe the trace to a shell
// command.
func unwrapTracer(spec *argSpec) func([]string) wrapperRun {
	return func(args []string) wrapperRun {
		ws, ops := spec.split(args)
		r := wrapperRun{argv: operandsFrom(ops, 0)}
		for _, out := range ws.values("o", "output") {
			if spec == &straceArgs && (strings.HasPrefix(out, "|") || strings.HasPrefix(out, "!")) {
				r.scripts = append(r.scripts, out[1:])
				continue
			}
			r.writes = append(r.writes, out)
		}
		return r
	}
}

// stripBenign removes the benign wrappers (timeout time nice nohup stdbuf,
// with their options) and a bare xargs from the front of argv, as often as
// they occur, and returns the command that runs; it is empty when a wrapper
// runs none. A time with -o is kept, so that its report file is checked.
// At most maxUnwrapDepth wrappers are removed: each step rescans the rest
// of argv, and a deeper stack is shell-complex in any case.
func stripBenign(argv []string) []string {
	rest, _ := stripBenignXargs(argv)
	return rest
}

// stdinArgs reports whether a bare xargs is among the benign wrappers
// stripBenign removes from argv. The command then takes its last arguments
// from its input, so the paths it reads or writes are not all in argv:
// echo ~/.ssh/id_rsa | xargs cat reads a file cat's words never name.
func stdinArgs(argv []string) bool {
	_, xargs := stripBenignXargs(argv)
	return xargs
}

// stripBenignXargs is stripBenign, also reporting whether it removed a
// bare xargs.
func stripBenignXargs(argv []string) (rest []string, xargs bool) {
	rest, xargs, _, _ = stripBenignChain(argv)
	return rest, xargs
}

// stripBenignChain is stripBenignXargs, also giving the argv of each
// program it passed through: each wrapper's, then the command's. Each is
// a program that runs, found by a wrapper on PATH when it has no slash.
// deep reports that it stopped at maxUnwrapDepth with a wrapper still in
// front: what that wrapper runs was not looked at.
func stripBenignChain(argv []string) (rest []string, xargs bool, chain [][]string, deep bool) {
	for range maxUnwrapDepth {
		if len(argv) == 0 {
			return argv, xargs, chain, false
		}
		chain = append(chain, argv)
		name := path.Base(argv[0])
		w, ok := execWrappers[name]
		switch {
		case name == "xargs":
			if !bareXargs(argv[1:]) {
				return argv, xargs, chain, false
			}
			xargs = true
			argv = argv[1:]
			if len(argv) > 0 && argv[0] == "--" {
				argv = argv[1:]
			}
		case ok && w.benign:
			r := w.unwrap(argv[1:])
			own := argv[1:]
			if name == "nice" && len(own) > 0 && isNiceAdjustment(own[0]) {
				own = own[1:]
			}
			if len(r.writes) > 0 || unknownOption(w.opts, own) {
				return argv, xargs, chain, false
			}
			argv = r.argv
		default:
			return argv, xargs, chain, false
		}
	}
	if len(argv) > 0 {
		chain = append(chain, argv)
		name := path.Base(argv[0])
		_, wrapper := execWrappers[name]
		deep = wrapper || name == "xargs"
	}
	return argv, xargs, chain, deep
}

// chdirOf returns the directory a command moves to before it runs
// anything, relative to where it starts: env -C, sudo -D, go -C and make
// -C (each -C of make relative to the one before), followed through the
// exec wrappers around the command, so that sudo env -C /srv cat f reads
// /srv/f. The command's paths are resolved from there. It reports false
// when nothing moves.
func chdirOf(argv []string) (string, bool) {
	dir, moved := "", false
	move := func(d string) {
		if d != "" {
			dir, moved = underDir(dir, d), true
		}
	}
	for range maxUnwrapDepth {
		if len(argv) == 0 {
			break
		}
		name := path.Base(argv[0])
		switch name {
		case "go":
			move(goChdir(argv[1:]))
		case "make", "gmake":
			for _, d := range makeArgs.scan(argv[1:]).values("C", "directory") {
				move(d)
			}
		}
		w, ok := execWrappers[name]
		if !ok {
			break
		}
		r := w.unwrap(argv[1:])
		move(r.dir)
		argv = r.argv
	}
	return dir, moved
}

// goChdir returns the directory of go -C, which must be the go command's
// first flag.
func goChdir(args []string) string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return ""
	}
	name, value, hasValue := strings.Cut(strings.TrimPrefix(args[0], "-"), "=")
	if name != "-C" && name != "C" {
		return ""
	}
	if !hasValue && len(args) > 1 {
		value = args[1]
	}
	return value
}

// makeArgs is GNU make's option layout, as far as telling -C's directory
// from other words needs.
var makeArgs = argSpec{values: "CfIoWE", optional: "jlO", long: longs("directory=", "file=", "makefile=",
	"include-dir=", "old-file=", "assume-old=", "new-file=", "assume-new=", "what-if=", "eval=", "jobs?",
	"load-average?", "max-load?", "output-sync?", "debug?", "jobserver-style=", "shuffle?", "always-make",
	"environment-overrides", "ignore-errors", "keep-going", "just-print", "dry-run", "recon", "question",
	"no-builtin-rules", "no-builtin-variables", "silent", "quiet", "stop", "touch", "trace", "version",
	"print-directory", "no-print-directory", "warn-undefined-variables", "check-symlink-times", "help",
	"print-data-base", "no-keep-going")}

// exposed returns, for deny matching, argv itself and then every command it
// exposes, outer first: the command of each exec wrapper, each stage of a
// shell's -c STRING, and each command of find's -exec, -execdir, -ok and
// -okdir, each followed by what it exposes in turn. Nothing is deduplicated.
func exposed(argv []string) [][]string {
	var out [][]string
	for _, r := range exposedRuns(argv) {
		out = append(out, r.argv)
	}
	return out
}

// innerRuns returns the commands argv runs on its behalf. perFile says
// that argv is, or runs inside, a find action.
func innerRuns(argv []string, perFile bool) []innerRun {
	if len(argv) == 0 {
		return nil
	}
	name := path.Base(argv[0])
	var runs []innerRun
	switch w, ok := execWrappers[name]; {
	case ok:
		runs = w.unwrap(argv[1:]).runs(perFile)
	case name == "find":
		for _, cmd := range scanFind(argv[1:]).execs {
			runs = append(runs, innerRun{argv: cmd, perFile: true})
		}
	case isShellProgram(name):
		if inv := parseShellArgs(argv[1:]); inv.hasCommand {
			runs = shellStringRuns(inv.command, perFile)
		}
	}
	return runs
}

func isShellProgram(name string) bool { return slices.Contains(shellPrograms, name) }

// shellInvocation is how a shell was asked to run.
type shellInvocation struct {
	command    string // the -c STRING
	hasCommand bool
	flagC      bool   // -c was given, with or without a STRING
	stdin      bool   // commands come from standard input: -s, -i, or no script
	info       bool   // --version or --help
	script     string // the script file operand, when there is one
}

// parseShellArgs reads a shell's options the way sh, bash, zsh and their
// kin do: flags cluster (-lc, -ec), -o and -O take the next word, and with
// -c the first operand is the command string.
func parseShellArgs(args []string) shellInvocation {
	var inv shellInvocation
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
			break options
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			switch name {
			case "rcfile", "init-file", "emulate", "init-command":
				if !hasValue {
					i++
				}
			case "command":
				inv.flagC = true
				if !hasValue && i+1 < len(args) {
					i++
					value, hasValue = args[i], true
				}
				if hasValue {
					inv.command, inv.hasCommand = value, true
				}
			case "version", "help":
				inv.info = true
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'c':
					inv.flagC = inv.flagC || a[0] == '-'
				case 's', 'i':
					inv.stdin = inv.stdin || a[0] == '-'
				case 'o', 'O':
					i++
				}
			}
		default:
			break options
		}
	}
	var ops []string
	if i < len(args) {
		ops = args[i:]
	}
	switch {
	case inv.hasCommand:
	case inv.flagC:
		if len(ops) > 0 {
			inv.command, inv.hasCommand = ops[0], true
		}
	case len(ops) == 0 && !inv.info:
		inv.stdin = true
	case len(ops) > 0 && !inv.stdin:
		inv.script = ops[0]
		inv.stdin = isStdinPath(inv.script)
	}
	return inv
}

// isStdinPath reports whether a script operand names standard input or
// another open file descriptor (/dev/stdin, /dev/fd/0, /proc/self/fd/0):
// the program then runs whatever its input holds, as with no script.
func isStdinPath(p string) bool {
	p = path.Clean(p)
	if p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/") {
		return true
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	_, fd, ok := strings.Cut(rest, "/")
	return ok && strings.HasPrefix(fd, "fd/")
}

// findPathStandIn takes the place of {} while a shell string inside a find
// action is parsed. find pastes each path over {} before the shell sees
// the string, so sh -c 'rm -rf {}' runs rm on every file, although the
// grammar refuses a bare {}. The stand-in is a plain word in every quoting
// context and is turned back into {} after parsing.
const findPathStandIn = "reinFindPathStandIn"

// shellStringRuns parses a command string with rein's own grammar and
// returns its command stages, with the directory a cd before them moved
// to. A string that does not parse runs nothing rein can see. perFile
// says the string comes from a find action.
func shellStringRuns(s string, perFile bool) []innerRun {
	unstand := func(w string) string { return w }
	if perFile {
		s = strings.ReplaceAll(s, "{}", findPathStandIn)
		unstand = func(w string) string { return strings.ReplaceAll(w, findPathStandIn, "{}") }
	}
	// ~ is kept as written: the policy expands it with its own HOME, which
	// need not be the HOME of the process deciding.
	stages := stringStages(s)
	var runs []innerRun
	dir := ""
	for _, st := range stages {
		switch st.Kind {
		case shell.Cd:
			target := unstand(st.Dir)
			if target == "" {
				target = "~"
			}
			dir = underDir(dir, target)
		case shell.Command:
			r := innerRun{dir: dir, perFile: perFile}
			for _, w := range st.Argv {
				r.argv = append(r.argv, unstand(w))
			}
			for _, rd := range st.Redirects {
				rd.Path = unstand(rd.Path)
				r.redirects = append(r.redirects, rd)
			}
			runs = append(runs, r)
		}
	}
	return runs
}

// stringStages returns the stages of a shell string: its plan's, or, for
// opaque code, what rein can still read of it, so that its deny rules,
// hard denies and protected paths hold. ~ is kept as written. The last
// strings read are remembered: one decision reads each of its strings
// more than once (for its class, for its exposed commands), and a parse
// costs more than the rest of the decision. The stages are read, never
// changed.
func stringStages(s string) []*shell.Stage {
	stringMemo.Lock()
	stages, ok := stringMemo.m[s]
	stringMemo.Unlock()
	if ok {
		return stages
	}
	p := shell.Parser{Home: "~"}
	if line, err := p.Parse(s); err == nil {
		stages = line.Stages()
	} else {
		stages = p.SimpleCommands(s)
	}
	stringMemo.Lock()
	if len(stringMemo.m) >= maxStringMemo {
		clear(stringMemo.m)
	}
	stringMemo.m[s] = stages
	stringMemo.Unlock()
	return stages
}

// maxStringMemo bounds the shell strings stringStages remembers.
const maxStringMemo = 64

var stringMemo = struct {
	sync.Mutex
	m map[string][]*shell.Stage
}{m: map[string][]*shell.Stage{}}

// underDir returns p as seen from dir: unchanged when absolute, under HOME
// or when there is no dir.
func underDir(dir, p string) string {
	if dir == "" || path.IsAbs(p) || strings.HasPrefix(p, "~") {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + p
}

// refineWrapper classifies an exec wrapper by the command it runs: the
// stage is at least the wrapper's own class and at least the inner
// command's, and it carries the inner command's paths, so that env cat
// ~/.ssh/id_rsa is checked like cat ~/.ssh/id_rsa.
func refineWrapper(c *classCall) {
	w := execWrappers[c.name]
	r := w.unwrap(c.args)
	bare := c.name == "xargs" && bareXargs(c.args)
	if bare {
		c.set(ReadOnly, "xargs without options runs its command unchanged")
	}
	c.reads(r.reads...)
	if len(r.argv) == 0 && len(r.scripts) == 0 && c.f.Class < Dangerous && !w.runsWithout {
		c.set(Unknown, c.name+" runs no command")
	}
	if len(r.writes) > 0 {
		c.writes(r.writes...)
		c.raise(WorkspaceMutating, c.name+" writes a file of its own")
	}
	c.absorb(r.runs(c.perFile))
	if bare {
		c.raise(Unknown, "xargs gives its command arguments from its input, which rein cannot see")
	}
}

// absorb classifies the commands a stage runs on its behalf and merges them
// into the stage: the stronger class, every path, inline program, network
// use and hard deny.
func (c *classCall) absorb(runs []innerRun) {
	if len(runs) == 0 {
		return
	}
	if c.depth >= maxUnwrapDepth {
		c.raise(ShellComplex, "commands are nested too deeply to inspect")
		return
	}
	for _, r := range runs {
		perFile := r.perFile || c.perFile
		g := analyzeAt(r.argv, c.depth+1, perFile)
		for _, rd := range r.redirects {
			switch {
			case rd.IsWrite():
				g.Writes = append(g.Writes, rd.Path)
				if g.Class < WorkspaceMutating {
					g.Class, g.Reason = WorkspaceMutating, "writes to a redirect target"
				}
			case rd.Op == shell.Read:
				g.Reads = append(g.Reads, rd.Path)
			}
		}
		keep := func(paths []string) []string {
			var out []string
			for _, p := range paths {
				// {} is each file find finds: not a path anyone wrote.
				if perFile && strings.Contains(p, "{}") {
					continue
				}
				out = append(out, underDir(r.dir, p))
			}
			return out
		}
		c.f.Reads = append(c.f.Reads, keep(g.Reads)...)
		c.f.Writes = append(c.f.Writes, keep(g.Writes)...)
		c.f.Deletes = append(c.f.Deletes, keep(g.Deletes)...)
		c.f.OutsideDangerous = append(c.f.OutsideDangerous, keep(g.OutsideDangerous)...)
		c.inline(g.Inline...)
		c.f.ProgramFromStdin = c.f.ProgramFromStdin || g.ProgramFromStdin
		if data, ok := hereOf(r.redirects); ok && g.ProgramFromStdin {
			// A here-document the inner command reads its program
			// from: program text, and a shell's commands absorbed.
			c.inline(data)
			for _, sh := range hereShells(wrapped(r.argv), data) {
				c.absorb([]innerRun{{argv: sh.argv, dir: joinDirs(r.dir, sh.dir), perFile: perFile}})
			}
		}
		c.f.Network = c.f.Network || g.Network
		if c.f.HardDeny == "" {
			c.f.HardDeny = g.HardDeny
		}
		c.raise(g.Class, g.Reason)
	}
}

// exposedRun is one command a stage exposes, with the directory it runs in
// relative to the stage's own: a cd earlier in a shell string moves it
// ("" when nothing moved it; it may start with ~).
type exposedRun struct {
	argv []string
	dir  string
}

// exposedRuns is exposed with each command's directory, so that the paths
// of bash -c 'cd / && rm -rf usr' are resolved where they would land.
func exposedRuns(argv []string) []exposedRun {
	if len(argv) == 0 {
		return nil
	}
	var out []exposedRun
	var walk func(argv []string, dir string, depth int, perFile bool)
	walk = func(argv []string, dir string, depth int, perFile bool) {
		out = append(out, exposedRun{argv: argv, dir: dir})
		if depth >= maxUnwrapDepth {
			return
		}
		// A wrapper that moves its command (env -C, sudo -D) moves every
		// command below it.
		below := dir
		if w, ok := execWrappers[path.Base(argv[0])]; ok && len(argv) > 0 {
			below = joinDirs(dir, w.unwrap(argv[1:]).dir)
		}
		for _, r := range innerRuns(argv, perFile) {
			walk(r.argv, joinDirs(below, r.dir), depth+1, r.perFile)
			if data, ok := hereOf(r.redirects); ok {
				// A shell fed its commands by a here-document, behind
				// any wrapper: bash <<'EOF' is bash -c with the body.
				for _, sh := range hereShells(wrapped(r.argv), data) {
					walk(sh.argv, joinDirs(below, joinDirs(r.dir, sh.dir)), depth+1, r.perFile)
				}
			}
		}
	}
	walk(argv, "", 0, false)
	return out
}

// joinDirs applies the inner directory change to the outer one.
func joinDirs(outer, inner string) string {
	if inner == "" {
		return outer
	}
	return underDir(outer, inner)
}

// unknownOption reports whether args hold an option spec's allowlist does
// not list (before the first operand, for a posix layout).
func unknownOption(spec *argSpec, args []string) bool {
	if spec == nil || spec.allow == nil {
		return false
	}
	for _, w := range spec.scan(args) {
		if w.unknown {
			return true
		}
		if w.opt == "" && spec.posix {
			return false
		}
	}
	return false
}
