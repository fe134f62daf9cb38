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
}

// envNames is the reviewed table. A name it judges harmless is set without
// a question; a name it judges otherwise, and a name it does not know, is
// asked (denied in safe mode) unless the org or user policy names it in
// [env] set. TestEnvNamesJudged fails on a name of the corpus of real
// agents' lines that the table does not judge.
var envNames = []envName{
	// Output and terminals.
	{"CI", true, "says the run is unattended: tools print less and ask nothing"},
	{"NO_COLOR", true, "turns colour off"},
	{"FORCE_COLOR", true, "turns colour on"},
	{"CLICOLOR", true, "turns colour on or off"},
	{"CLICOLOR_FORCE", true, "turns colour on"},
	{"TERM", true, "names the terminal's capabilities"},
	{"COLUMNS", true, "the terminal's width"},
	{"LINES", true, "the terminal's height"},
	{"COLORTERM", true, "says the terminal shows true colour"},
	{"NONINTERACTIVE", true, "says no one answers prompts"},
	{"DEBIAN_FRONTEND", true, "says how apt and dpkg ask questions"},
	{"TZ", true, "the time zone times are shown in (it can name a zone file to read: data, never code)"},
	{"LANG", true, "the locale messages and sorting follow"},
	{"LANGUAGE", true, "the languages messages are shown in"},
	{"LC_*", true, "a part of the locale"},
	// Languages' run-time switches that change output, not code.
	{"PYTHONUNBUFFERED", true, "makes Python write its output at once"},
	{"PYTHONIOENCODING", true, "the encoding of Python's standard streams"},
	{"PYTHONDONTWRITEBYTECODE", true, "keeps Python from writing .pyc files"},
	{"PYTHONHASHSEED", true, "fixes Python's hash seed"},
	{"PYTHONUTF8", true, "turns on Python's UTF-8 mode"},
	{"PYTHONFAULTHANDLER", true, "makes Python print a traceback on a crash"},
	{"PYTHONDEVMODE", true, "turns on Python's development mode checks"},
	{"PYTHONWARNINGS", true, "filters Python's warnings"},
	{"PYTHONTRACEMALLOC", true, "traces Python's allocations"},
	{"PIP_DISABLE_PIP_VERSION_CHECK", true, "keeps pip from checking for a newer pip"},
	{"PIP_NO_INPUT", true, "keeps pip from asking"},
	{"NODE_ENV", true, "names the environment a Node program configures itself for"},
	{"DEBUG", true, "turns a program's own debug output on"},
	{"DEBUG_*", true, "turns a program's own debug output on"},
	{"VERBOSE", true, "turns a program's own verbose output on"},
	{"RUST_BACKTRACE", true, "makes a Rust program print a backtrace on a panic"},
	{"RUST_LOG", true, "sets a Rust program's log level"},
	{"CARGO_TERM_COLOR", true, "turns Cargo's colour on or off"},
	{"CARGO_TERM_VERBOSE", true, "makes Cargo verbose"},
	{"GOTRACEBACK", true, "how much a Go crash prints"},
	{"GOMAXPROCS", true, "how many threads run Go code"},
	{"GOCOVERDIR", false, "names where a Go program writes coverage files"},
	{"OMP_NUM_THREADS", true, "how many threads OpenMP starts"},
	{"MKL_NUM_THREADS", true, "how many threads MKL starts"},
	{"OPENBLAS_NUM_THREADS", true, "how many threads OpenBLAS starts"},
	{"NUMEXPR_NUM_THREADS", true, "how many threads numexpr starts"},
	{"TF_CPP_MIN_LOG_LEVEL", true, "quiets TensorFlow's logs"},
	{"JEST_WORKER_ID", true, "names a Jest worker"},
	{"NEXT_TELEMETRY_DISABLED", true, "turns Next.js's telemetry off"},
	{"DO_NOT_TRACK", true, "turns telemetry off"},
	{"HYPOTHESIS_PROFILE", true, "picks a Hypothesis settings profile"},
	{"PYTEST_ADDOPTS", false, "adds options to pytest, -p loads a plugin (code) by name"},
	{"PYTEST_PLUGINS", false, "loads plugins (code) into pytest"},
	{"PYTEST_DISABLE_PLUGIN_AUTOLOAD", true, "keeps pytest from loading installed plugins"},
	{"DJANGO_SETTINGS_MODULE", false, "names a module Django imports (code)"},

	// What a program runs or reads: never harmless.
	{"PATH", false, "where programs are found: another PATH runs other programs"},
	{"HOME", false, "where programs read their configuration, which can name programs to run"},
	{"SHELL", false, "the shell programs start"},
	{"TMPDIR", false, "where programs put temporary files"},
	{"XDG_*", false, "where programs read configuration and data"},
	{"PYTHONPATH", false, "where Python imports code from"},
	{"PYTHONSTARTUP", false, "a file Python runs"},
	{"PYTHONHOME", false, "where Python finds its standard library"},
	{"PYTHONUSERBASE", false, "where Python finds user packages"},
	{"PYTHONINSPECT", false, "leaves Python in an interactive prompt"},
	{"PYTHONBREAKPOINT", false, "names a function breakpoint() calls"},
	{"PYTHONSAFEPATH", true, "keeps the working directory off Python's import path"},
	{"VIRTUAL_ENV", false, "names the virtual environment tools use"},
	{"NODE_OPTIONS", false, "options for node, --require loads code"},
	{"NODE_PATH", false, "where node finds modules"},
	{"NPM_CONFIG_*", false, "npm's configuration, which names scripts and registries"},
	{"npm_config_*", false, "npm's configuration, which names scripts and registries"},
	{"LD_*", false, "the dynamic loader's switches: LD_PRELOAD loads code into every program"},
	{"DYLD_*", false, "the macOS loader's switches"},
	{"GIT_*", false, "git's switches: GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF and GIT_CONFIG_* run programs"},
	{"PAGER", false, "the program a tool pipes its output through"},
	{"GIT_PAGER", false, "the program git pipes its output through"},
	{"MANPAGER", false, "the program man pipes its output through"},
	{"LESS", false, "less's options, which can name files"},
	{"LESSOPEN", false, "a program less runs on every file"},
	{"LESSCLOSE", false, "a program less runs on every file"},
	{"EDITOR", false, "the program tools start to edit"},
	{"VISUAL", false, "the program tools start to edit"},
	{"BROWSER", false, "the program tools start to open a page"},
	{"RIPGREP_CONFIG_PATH", false, "a file of options ripgrep reads (--pre runs a program)"},
	{"GREP_OPTIONS", false, "options old greps read"},
	{"BASH_ENV", false, "a file bash runs first"},
	{"ENV", false, "a file sh runs first"},
	{"PROMPT_COMMAND", false, "a command bash runs"},
	{"PS4", false, "bash expands it, with command substitution, while tracing"},
	{"IFS", false, "how shells split words"},
	{"CDPATH", false, "where cd looks"},
	{"PERL5LIB", false, "where Perl loads modules from"},
	{"PERL5OPT", false, "options Perl reads, -M loads a module"},
	{"PERLLIB", false, "where Perl loads modules from"},
	{"RUBYLIB", false, "where Ruby loads code from"},
	{"RUBYOPT", false, "options Ruby reads, -r loads code"},
	{"GEM_HOME", false, "where Ruby finds gems"},
	{"GEM_PATH", false, "where Ruby finds gems"},
	{"BUNDLE_GEMFILE", false, "the Gemfile bundler reads"},
	{"CLASSPATH", false, "where Java loads classes from"},
	{"JAVA_TOOL_OPTIONS", false, "options every JVM reads, -javaagent loads code"},
	{"_JAVA_OPTIONS", false, "options every JVM reads"},
	{"JDK_JAVA_OPTIONS", false, "options the java launcher reads"},
	{"GOFLAGS", false, "flags every go command takes, -toolexec runs a program"},
	{"GOPATH", false, "where go keeps modules and installs programs"},
	{"GOBIN", false, "where go install writes programs"},
	{"GOROOT", false, "the Go toolchain that runs"},
	{"GOTOOLCHAIN", false, "names a Go toolchain to download and run"},
	{"GOPROXY", false, "where go downloads modules from"},
	{"GONOSUMDB", false, "modules go does not check against the checksum database"},
	{"GONOSUMCHECK", false, "turns go's checksum checks off"},
	{"GOPRIVATE", false, "modules go fetches directly, unchecked"},
	{"GOINSECURE", false, "modules go fetches without TLS"},
	{"GOENV", false, "a file of go's settings"},
	{"GOCACHE", false, "where go keeps its build cache"},
	{"GOOS", true, "the system go builds for"},
	{"GOARCH", true, "the processor go builds for"},
	{"CGO_ENABLED", true, "turns cgo on or off"},
	{"CC", false, "the C compiler build tools run"},
	{"CXX", false, "the C++ compiler build tools run"},
	{"CFLAGS", false, "flags for the C compiler, which can load plugins"},
	{"CXXFLAGS", false, "flags for the C++ compiler"},
	{"LDFLAGS", false, "flags for the linker"},
	{"CPPFLAGS", false, "flags for the C preprocessor"},
	{"MAKEFLAGS", false, "flags every make takes, which can set variables"},
	{"RUSTFLAGS", false, "flags for rustc, which can load plugins"},
	{"RUSTC_WRAPPER", false, "a program Cargo runs rustc through"},
	{"RUSTC", false, "the compiler Cargo runs"},
	{"CARGO_*", false, "Cargo's configuration, which names programs to run"},
	{"SSH_ASKPASS", false, "a program ssh runs for a password"},
	{"SSH_AUTH_SOCK", false, "the agent ssh asks for keys"},
	{"GNUPGHOME", false, "where gpg reads its keys and configuration"},
	{"DOCKER_HOST", false, "the Docker daemon docker talks to"},
	{"KUBECONFIG", false, "the clusters kubectl reaches"},
	{"HTTP_PROXY", false, "the proxy requests go through"},
	{"HTTPS_PROXY", false, "the proxy requests go through"},
	{"http_proxy", false, "the proxy requests go through"},
	{"https_proxy", false, "the proxy requests go through"},
	{"ALL_PROXY", false, "the proxy requests go through"},
	{"NO_PROXY", false, "hosts reached without the proxy"},
	{"no_proxy", false, "hosts reached without the proxy"},
	{"SSL_CERT_FILE", false, "the certificates TLS trusts"},
	{"SSL_CERT_DIR", false, "the certificates TLS trusts"},
	{"REQUESTS_CA_BUNDLE", false, "the certificates Python requests trusts"},
	{"CURL_CA_BUNDLE", false, "the certificates curl trusts"},
	{"NODE_EXTRA_CA_CERTS", false, "certificates node trusts"},
	{"NODE_TLS_REJECT_UNAUTHORIZED", false, "turns node's certificate checks off"},
	{"OPENAI_API_KEY", false, "a key a program sends to a model's provider"},
	{"ANTHROPIC_API_KEY", false, "a key a program sends to a model's provider"},
	{"*_API_KEY", false, "a key a program sends to a service"},
	{"*_TOKEN", false, "a credential a program sends to a service"},
	{"*_SECRET", false, "a credential a program sends to a service"},
	{"AWS_*", false, "AWS's credentials and configuration"},
	{"DATABASE_URL", false, "the database a program connects to"},
	{"REIN_*", false, "rein's own settings"},
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
		switch {
		case ok && j.Safe:
			continue
		case ok:
			return n, fmt.Sprintf("it sets %s (%s)", n, j.Reason)
		}
		return n, fmt.Sprintf("it sets %s, which rein's table of harmless variables does not name", n)
	}
	return "", ""
}

// envWrapped splits env NAME=value... cmd into the assignments and the
// command: env with no option, only assignments before a program. Any
// other form of env is decided as the wrapper it is.
func envWrapped(argv []string) (env, rest []string, ok bool) {
	if len(argv) < 3 || path.Base(argv[0]) != "env" {
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
func withEnvUnwrapped(st *shell.Stage) (*shell.Stage, bool) {
	env, rest, ok := envWrapped(st.Argv)
	if !ok {
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
