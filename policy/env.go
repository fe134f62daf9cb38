package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// envName is one entry of the table of environment variables a line may
// set before a command (NAME=value cmd, env NAME=value cmd): a name, or a
// prefix ending in *, judged harmless (it changes how a program shows or
// paces what it does, never what it runs or reads) or not, with the reason.
type envName struct {
	Name   string
	Safe   bool
	Reason string
	// Value, when set, is the shape a harmless variable's value must
	// have; another value is asked like an unknown name's.
	Value func(string) bool
}

// localeValue is a locale's or a language list's shape: names, never a
// path (gettext and setlocale read files named by the value: LANGUAGE=../x
// reads message catalogues, printf formats, from anywhere).
func localeValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c == '_' || c == '.' || c == '-' || c == '@' || c == ':' || c == '+' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return !strings.Contains(v, "..")
}

// zoneValue is a time zone's shape: a zone name (Europe/Paris) or a POSIX
// rule, never an absolute path or one that climbs.
func zoneValue(v string) bool {
	v = strings.TrimPrefix(v, ":")
	if strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c == '_' || c == '-' || c == '+' || c == '/' || c == ',' || c == '.' || c == '<' || c == '>' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// envNames is the reviewed table. A name it judges harmless is set without
// a question; a name it judges otherwise, and a name it does not know, is
// asked (denied in safe mode) unless the org or user policy names it in
// [env] set. TestEnvNamesJudged fails on a name of the corpus of real
// agents' lines that the table does not judge.
var envNames = []envName{
	// Output and terminals.
	{"CI", true, "says the run is unattended: tools print less and ask nothing", nil},
	{"NO_COLOR", true, "turns colour off", nil},
	{"FORCE_COLOR", true, "turns colour on", nil},
	{"CLICOLOR", true, "turns colour on or off", nil},
	{"CLICOLOR_FORCE", true, "turns colour on", nil},
	{"TERM", true, "names the terminal's capabilities (a name, never a path)", localeValue},
	{"COLUMNS", true, "the terminal's width", nil},
	{"LINES", true, "the terminal's height", nil},
	{"COLORTERM", true, "says the terminal shows true colour", nil},
	{"NONINTERACTIVE", true, "says no one answers prompts", nil},
	{"DEBIAN_FRONTEND", true, "says how apt and dpkg ask questions", nil},
	{"TZ", true, "the time zone times are shown in (a zone's name, never a path)", zoneValue},
	{"LANG", true, "the locale messages and sorting follow (a locale's name, never a path)", localeValue},
	{"LANGUAGE", true, "the languages messages are shown in (names, never a path: a catalogue's messages are printf formats)", localeValue},
	{"LC_*", true, "a part of the locale (a locale's name, never a path)", localeValue},
	// Languages' run-time switches that change output, not code.
	{"PYTHONUNBUFFERED", true, "makes Python write its output at once", nil},
	{"PYTHONIOENCODING", true, "the encoding of Python's standard streams", nil},
	{"PYTHONDONTWRITEBYTECODE", true, "keeps Python from writing .pyc files", nil},
	{"PYTHONHASHSEED", true, "fixes Python's hash seed", nil},
	{"PYTHONUTF8", true, "turns on Python's UTF-8 mode", nil},
	{"PYTHONFAULTHANDLER", true, "makes Python print a traceback on a crash", nil},
	{"PYTHONDEVMODE", true, "turns on Python's development mode checks", nil},
	{"PYTHONWARNINGS", false, "filters Python's warnings, importing the module a filter's category names (ignore::pkg.mod.X runs pkg.mod)", nil},
	{"PYTHONTRACEMALLOC", true, "traces Python's allocations", nil},
	{"PIP_DISABLE_PIP_VERSION_CHECK", true, "keeps pip from checking for a newer pip", nil},
	{"PIP_NO_INPUT", true, "keeps pip from asking", nil},
	{"NODE_ENV", true, "names the environment a Node program configures itself for", nil},
	{"DEBUG", true, "turns a program's own debug output on", nil},
	{"DEBUG_*", true, "turns a program's own debug output on", nil},
	{"VERBOSE", true, "turns a program's own verbose output on", nil},
	{"RUST_BACKTRACE", true, "makes a Rust program print a backtrace on a panic", nil},
	{"RUST_LOG", true, "sets a Rust program's log level", nil},
	{"CARGO_TERM_COLOR", true, "turns Cargo's colour on or off", nil},
	{"CARGO_TERM_VERBOSE", true, "makes Cargo verbose", nil},
	{"GOTRACEBACK", true, "how much a Go crash prints", nil},
	{"GOMAXPROCS", true, "how many threads run Go code", nil},
	{"GOCOVERDIR", false, "names where a Go program writes coverage files", nil},
	{"OMP_NUM_THREADS", true, "how many threads OpenMP starts", nil},
	{"MKL_NUM_THREADS", true, "how many threads MKL starts", nil},
	{"OPENBLAS_NUM_THREADS", true, "how many threads OpenBLAS starts", nil},
	{"NUMEXPR_NUM_THREADS", true, "how many threads numexpr starts", nil},
	{"TF_CPP_MIN_LOG_LEVEL", true, "quiets TensorFlow's logs", nil},
	{"JEST_WORKER_ID", true, "names a Jest worker", nil},
	{"NEXT_TELEMETRY_DISABLED", true, "turns Next.js's telemetry off", nil},
	{"DO_NOT_TRACK", true, "turns telemetry off", nil},
	{"HYPOTHESIS_PROFILE", true, "picks a Hypothesis settings profile", nil},
	{"PYTEST_ADDOPTS", false, "adds options to pytest, -p loads a plugin (code) by name", nil},
	{"PYTEST_PLUGINS", false, "loads plugins (code) into pytest", nil},
	{"PYTEST_DISABLE_PLUGIN_AUTOLOAD", true, "keeps pytest from loading installed plugins", nil},
	{"DJANGO_SETTINGS_MODULE", false, "names a module Django imports (code)", nil},

	// What a program runs or reads: never harmless.
	{"PATH", false, "where programs are found: another PATH runs other programs", nil},
	{"HOME", false, "where programs read their configuration, which can name programs to run", nil},
	{"SHELL", false, "the shell programs start", nil},
	{"TMPDIR", false, "where programs put temporary files", nil},
	{"XDG_*", false, "where programs read configuration and data", nil},
	{"PYTHONPATH", false, "where Python imports code from", nil},
	{"PYTHONSTARTUP", false, "a file Python runs", nil},
	{"PYTHONHOME", false, "where Python finds its standard library", nil},
	{"PYTHONUSERBASE", false, "where Python finds user packages", nil},
	{"PYTHONINSPECT", false, "leaves Python in an interactive prompt", nil},
	{"PYTHONBREAKPOINT", false, "names a function breakpoint() calls", nil},
	{"PYTHONSAFEPATH", true, "keeps the working directory off Python's import path", nil},
	{"VIRTUAL_ENV", false, "names the virtual environment tools use", nil},
	{"NODE_OPTIONS", false, "options for node, --require loads code", nil},
	{"NODE_PATH", false, "where node finds modules", nil},
	{"NPM_CONFIG_*", false, "npm's configuration, which names scripts and registries", nil},
	{"npm_config_*", false, "npm's configuration, which names scripts and registries", nil},
	{"LD_*", false, "the dynamic loader's switches: LD_PRELOAD loads code into every program", nil},
	{"DYLD_*", false, "the macOS loader's switches", nil},
	{"GIT_*", false, "git's switches: GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF and GIT_CONFIG_* run programs", nil},
	{"PAGER", false, "the program a tool pipes its output through", nil},
	{"GIT_PAGER", false, "the program git pipes its output through", nil},
	{"MANPAGER", false, "the program man pipes its output through", nil},
	{"LESS", false, "less's options, which can name files", nil},
	{"LESSOPEN", false, "a program less runs on every file", nil},
	{"LESSCLOSE", false, "a program less runs on every file", nil},
	{"EDITOR", false, "the program tools start to edit", nil},
	{"VISUAL", false, "the program tools start to edit", nil},
	{"BROWSER", false, "the program tools start to open a page", nil},
	{"RIPGREP_CONFIG_PATH", false, "a file of options ripgrep reads (--pre runs a program)", nil},
	{"GREP_OPTIONS", false, "options old greps read", nil},
	{"BASH_ENV", false, "a file bash runs first", nil},
	{"ENV", false, "a file sh runs first", nil},
	{"PROMPT_COMMAND", false, "a command bash runs", nil},
	{"PS4", false, "bash expands it, with command substitution, while tracing", nil},
	{"IFS", false, "how shells split words", nil},
	{"CDPATH", false, "where cd looks", nil},
	{"PERL5LIB", false, "where Perl loads modules from", nil},
	{"PERL5OPT", false, "options Perl reads, -M loads a module", nil},
	{"PERLLIB", false, "where Perl loads modules from", nil},
	{"RUBYLIB", false, "where Ruby loads code from", nil},
	{"RUBYOPT", false, "options Ruby reads, -r loads code", nil},
	{"GEM_HOME", false, "where Ruby finds gems", nil},
	{"GEM_PATH", false, "where Ruby finds gems", nil},
	{"BUNDLE_GEMFILE", false, "the Gemfile bundler reads", nil},
	{"CLASSPATH", false, "where Java loads classes from", nil},
	{"JAVA_TOOL_OPTIONS", false, "options every JVM reads, -javaagent loads code", nil},
	{"_JAVA_OPTIONS", false, "options every JVM reads", nil},
	{"JDK_JAVA_OPTIONS", false, "options the java launcher reads", nil},
	{"GOFLAGS", false, "flags every go command takes, -toolexec runs a program", nil},
	{"GOPATH", false, "where go keeps modules and installs programs", nil},
	{"GOBIN", false, "where go install writes programs", nil},
	{"GOROOT", false, "the Go toolchain that runs", nil},
	{"GOTOOLCHAIN", false, "names a Go toolchain to download and run", nil},
	{"GOPROXY", false, "where go downloads modules from", nil},
	{"GONOSUMDB", false, "modules go does not check against the checksum database", nil},
	{"GONOSUMCHECK", false, "turns go's checksum checks off", nil},
	{"GOPRIVATE", false, "modules go fetches directly, unchecked", nil},
	{"GOINSECURE", false, "modules go fetches without TLS", nil},
	{"GOENV", false, "a file of go's settings", nil},
	{"GOCACHE", false, "where go keeps its build cache", nil},
	{"GOOS", true, "the system go builds for", nil},
	{"GOARCH", true, "the processor go builds for", nil},
	{"CGO_ENABLED", true, "turns cgo on or off", nil},
	{"CC", false, "the C compiler build tools run", nil},
	{"CXX", false, "the C++ compiler build tools run", nil},
	{"CFLAGS", false, "flags for the C compiler, which can load plugins", nil},
	{"CXXFLAGS", false, "flags for the C++ compiler", nil},
	{"LDFLAGS", false, "flags for the linker", nil},
	{"CPPFLAGS", false, "flags for the C preprocessor", nil},
	{"MAKEFLAGS", false, "flags every make takes, which can set variables", nil},
	{"RUSTFLAGS", false, "flags for rustc, which can load plugins", nil},
	{"RUSTC_WRAPPER", false, "a program Cargo runs rustc through", nil},
	{"RUSTC", false, "the compiler Cargo runs", nil},
	{"CARGO_*", false, "Cargo's configuration, which names programs to run", nil},
	{"SSH_ASKPASS", false, "a program ssh runs for a password", nil},
	{"SSH_AUTH_SOCK", false, "the agent ssh asks for keys", nil},
	{"GNUPGHOME", false, "where gpg reads its keys and configuration", nil},
	{"DOCKER_HOST", false, "the Docker daemon docker talks to", nil},
	{"KUBECONFIG", false, "the clusters kubectl reaches", nil},
	{"HTTP_PROXY", false, "the proxy requests go through", nil},
	{"HTTPS_PROXY", false, "the proxy requests go through", nil},
	{"http_proxy", false, "the proxy requests go through", nil},
	{"https_proxy", false, "the proxy requests go through", nil},
	{"ALL_PROXY", false, "the proxy requests go through", nil},
	{"NO_PROXY", false, "hosts reached without the proxy", nil},
	{"no_proxy", false, "hosts reached without the proxy", nil},
	{"SSL_CERT_FILE", false, "the certificates TLS trusts", nil},
	{"SSL_CERT_DIR", false, "the certificates TLS trusts", nil},
	{"REQUESTS_CA_BUNDLE", false, "the certificates Python requests trusts", nil},
	{"CURL_CA_BUNDLE", false, "the certificates curl trusts", nil},
	{"NODE_EXTRA_CA_CERTS", false, "certificates node trusts", nil},
	{"NODE_TLS_REJECT_UNAUTHORIZED", false, "turns node's certificate checks off", nil},
	{"OPENAI_API_KEY", false, "a key a program sends to a model's provider", nil},
	{"ANTHROPIC_API_KEY", false, "a key a program sends to a model's provider", nil},
	{"*_API_KEY", false, "a key a program sends to a service", nil},
	{"*_TOKEN", false, "a credential a program sends to a service", nil},
	{"*_SECRET", false, "a credential a program sends to a service", nil},
	{"AWS_*", false, "AWS's credentials and configuration", nil},
	{"DATABASE_URL", false, "the database a program connects to", nil},
	{"REIN_*", false, "rein's own settings", nil},
}

// envJudgement returns the table's entry for name, the exact name before
// a prefix, a longer prefix before a shorter one; false when the table does
// not judge it.
func envJudgement(name string) (envName, bool) {
	var best envName
	found := false
	for _, e := range envNames {
		switch {
		case e.Name == name:
			return e, true
		case envMatch(e.Name, name) && (!found || len(e.Name) > len(best.Name)):
			best, found = e, true
		}
	}
	return best, found
}

// envMatch reports whether name matches a pattern of the table or of
// [env] set: a name, or one with * standing for any run of bytes.
func envMatch(pat, name string) bool {
	if !strings.Contains(pat, "*") {
		return pat == name
	}
	ok, err := path.Match(pat, name)
	return err == nil && ok
}

// stageEnv judges the assignments a stage runs with: it returns, for the
// first one that is neither harmless by the table nor named by an org or
// user [env] set, why it is asked.
func (p *Policy) stageEnv(env []string) (name, why string) {
	for _, e := range env {
		n, _, _ := strings.Cut(e, "=")
		if n == "PATH" {
			// The policy decides the programs the sandbox's PATH finds;
			// another PATH would have a wrapper run another.
			return n, "it sets PATH, which decides which programs run"
		}
		if slices.ContainsFunc(p.EnvSet, func(pat string) bool { return envMatch(pat, n) }) {
			continue
		}
		j, ok := envJudgement(n)
		_, v, _ := strings.Cut(e, "=")
		switch {
		case ok && j.Safe && (j.Value == nil || j.Value(v)):
			continue
		case ok && j.Safe:
			return n, fmt.Sprintf("it sets %s to %q, which is not the shape of a harmless value (%s)", n, v, j.Reason)
		case ok:
			return n, fmt.Sprintf("it sets %s (%s)", n, j.Reason)
		}
		return n, fmt.Sprintf("it sets %s, which rein's table of harmless variables does not name", n)
	}
	return "", ""
}

// envWrapped splits env NAME=value... cmd into the assignments and the
// command: env named bare (looked up on PATH, never a path that could be
// the workspace's), with no option, only assignments before a program.
// Any other form of env is decided as the wrapper it is.
func envWrapped(argv []string) (env, rest []string, ok bool) {
	if len(argv) < 3 || argv[0] != "env" {
		return nil, nil, false
	}
	i := 1
	for ; i < len(argv); i++ {
		n, _, isAssign := strings.Cut(argv[i], "=")
		if !isAssign || !validEnvName(n) {
			break
		}
	}
	if i == 1 || i == len(argv) || strings.HasPrefix(argv[i], "-") || strings.Contains(argv[i], "=") {
		return nil, nil, false
	}
	return argv[1:i], argv[i:], true
}

// validEnvName reports whether n is a shell variable's name.
func validEnvName(n string) bool {
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// withEnvUnwrapped is the stage decided in env's place when it is env
// NAME=value cmd: cmd with the assignments added to the stage's own, its
// program as env's PATH finds it.
func (p *Policy) withEnvUnwrapped(st *shell.Stage) (*shell.Stage, bool) {
	env, rest, ok := envWrapped(st.Argv)
	if !ok {
		return nil, false
	}
	if st.Program != "" {
		// The env the sandbox's PATH finds must be the system's.
		if local, _ := p.foundOutside(st.Program); local {
			return nil, false
		}
	}
	if st.Venv != "" && fileExists(filepath.Join(st.Venv, "bin", "env")) {
		return nil, false
	}
	in := *st
	in.Env = append(slices.Clone(st.Env), env...)
	in.Argv = rest
	in.Program = ""
	if !strings.Contains(rest[0], "/") {
		if found, looked := st.Programs[rest[0]]; looked {
			in.Program = found
		}
	}
	return &in, true
}

// LineParser is the parser of lines that start in dir (absolute, inside
// the workspace) and run in the sandbox: ~ and $HOME are the sandbox's
// HOME (Policy.Home), $PWD is dir, and an unquoted glob in a command's
// arguments is expanded against the workspace as the sandbox shows it.
// A glob that reads a directory outside the workspace (through a link,
// or by its path) stays opaque, naming why: the sandbox's view of the
// rest is not the host's.
func (p *Policy) LineParser(dir string) shell.Parser {
	return shell.Parser{Home: p.home(), Dir: dir, Files: workspaceFiles{p.Workspace}}
}

// workspaceFiles lists directories of the workspace.
type workspaceFiles struct{ root string }

func (w workspaceFiles) ReadDir(dir string) ([]fs.DirEntry, error) {
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if !workspace.Within(w.root, r) {
		return nil, fmt.Errorf("the glob reads %s, outside the workspace, which the sandbox shows otherwise or not at all", dir)
	}
	return os.ReadDir(r)
}
