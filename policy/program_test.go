package policy

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/shell"
)

// TestResolvedProgram: a bare name decided by the program the sandbox's
// PATH found for it. A system program keeps its class; one outside the
// system directories is whatever file that is (unknown, asked in ask
// mode), and an allow rule for the name does not reach it.
func TestResolvedProgram(t *testing.T) {
	f := newFixture(t)
	tools := filepath.Join(filepath.Dir(f.ws), "tools")
	f.write(filepath.Join(tools, "cat"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(tools, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/cat", filepath.Join(tools, "syscat")); err != nil {
		t.Fatal(err)
	}
	p := f.load(ModeAsk, exec(Allow, "cat *"))
	for _, tc := range []struct {
		program string
		want    Decision
		class   Class
	}{
		{"", Allow, ReadOnly},
		{"/usr/bin/cat", Allow, ReadOnly},
		{filepath.Join(tools, "cat"), Ask, Unknown},
		// A link in a tool directory is that directory's program, even
		// where it leads into the system directories.
		{filepath.Join(tools, "syscat"), Ask, Unknown},
		{filepath.Join(tools, "missing"), Ask, Unknown},
	} {
		l, err := shell.Parse("cat main.go")
		if err != nil {
			t.Fatal(err)
		}
		l.Pipelines[0].Stages[0].Program = tc.program
		v := p.Check(l)
		if v.Decision != tc.want || v.Stages[0].Class != tc.class {
			t.Errorf("program %q: %s %s (%s)", tc.program, v.Decision, v.Stages[0].Class, v.Reason)
		}
	}
	// A rule naming the program's path reaches it.
	p = f.load(ModeAsk, exec(Allow, filepath.Join(tools, "cat")+" *"))
	l, _ := shell.Parse("cat main.go")
	l.Pipelines[0].Stages[0].Program = filepath.Join(tools, "cat")
	if v := p.Check(l); v.Decision != Allow {
		t.Fatalf("a rule for the path: %s (%s)", v.Decision, v.Reason)
	}
}

// outsideTmp makes a directory outside /tmp and /var/tmp, which read
// paths may not name; it fails where CI must have one and skips elsewhere.
func outsideTmp(t *testing.T) string {
	t.Helper()
	for _, base := range []string{"/srv", "/opt", "/var/lib"} {
		d, err := os.MkdirTemp(base, "rein-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return real
		}
	}
	testenv.Missing(t, "no directory outside /tmp could be made for a read path (/srv, /opt, /var/lib)")
	return ""
}

// TestReadPaths: [sandbox] read_paths and --read-path take absolute,
// existing paths outside the workspace that nothing protected lies in,
// and no directory where the host keeps sockets.
func TestReadPaths(t *testing.T) {
	f := newFixture(t)
	tools := outsideTmp(t)
	f.write(filepath.Join(tools, "bin", "x"), "")
	o := f.options()
	o.ReadPaths = []string{tools, tools + "/bin/../bin"}
	p, err := Load(o)
	if err != nil || len(p.Sandbox.ReadPaths) != 2 || p.Sandbox.ReadPaths[0] != tools || p.Sandbox.ReadPaths[1] != tools+"/bin" {
		t.Fatalf("%v %v", p.Sandbox.ReadPaths, err)
	}
	sock := filepath.Join(tools, "agent.sock")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
	} else {
		t.Fatal(err)
	}
	for _, bad := range []string{"relative/dir", f.home, "~/.ssh", f.ws, f.ws + "/src", "/", filepath.Join(tools, "nope"),
		"/run", "/proc", "/dev", "/tmp", "/var/tmp", filepath.Dir(f.ws), "/dev/shm", sock} {
		o := f.options()
		o.ReadPaths = []string{bad}
		if _, err := Load(o); err == nil {
			t.Errorf("read path %q was accepted", bad)
		}
	}
	// From a file: the user's applies; an untrusted project file's does
	// not widen what commands read.
	f.write(f.user, "[sandbox]\nread_paths = [\""+tools+"\"]\n")
	o = f.options()
	o.UserFile = f.user
	if p, err := Load(o); err != nil || len(p.Sandbox.ReadPaths) != 1 {
		t.Fatalf("user file: %v %v", p, err)
	}
	f.write(f.user, "")
	f.write(f.proj, "[sandbox]\nread_paths = [\""+tools+"\"]\n")
	o = f.options()
	o.UserFile, o.ProjectFile = f.user, f.proj
	if p, err := Load(o); err != nil || len(p.Sandbox.ReadPaths) != 0 {
		t.Fatalf("untrusted project file: %v %v", p.Sandbox.ReadPaths, err)
	}
	f.write(f.user, "[sandbox]\nread_paths = [\"~/.ssh\"]\n")
	o = f.options()
	o.UserFile = f.user
	if _, err := Load(o); err == nil {
		t.Fatal("a protected read path in a file was accepted")
	}
}

// TestWrapperChain: every program a stage runs through benign wrappers is
// decided as the file it is: a wrapper that is a workspace file, or any
// program of the chain found outside the system directories, makes the
// stage unknown, whatever the class of the last one.
func TestWrapperChain(t *testing.T) {
	f := newFixture(t)
	f.write(filepath.Join(f.ws, "timeout"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(f.ws, "timeout"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(filepath.Dir(f.ws), "tools")
	f.write(filepath.Join(tools, "ls"), "#!/bin/sh\n")
	p := f.load(ModeAsk)
	for _, tc := range []struct {
		line     string
		program  string
		programs map[string]string
		want     Class
	}{
		{"timeout 5 ls", "", nil, ReadOnly},
		{"./timeout 5 ls", "", nil, Unknown},
		{"nice ./timeout 5 ls", "", nil, Unknown},
		{"timeout 5 ls", "/usr/bin/timeout", map[string]string{"timeout": "/usr/bin/timeout", "5": "", "ls": "/usr/bin/ls"}, ReadOnly},
		{"timeout 5 ls", "/usr/bin/timeout", map[string]string{"timeout": "/usr/bin/timeout", "5": "", "ls": filepath.Join(tools, "ls")}, Unknown},
		{"timeout 5 ls", filepath.Join(tools, "ls"), map[string]string{"timeout": filepath.Join(tools, "ls"), "ls": "/usr/bin/ls"}, Unknown},
		// A word the resolver did not look up is not assumed to be the
		// system's.
		{"timeout 5 ls", "/usr/bin/timeout", map[string]string{"timeout": "/usr/bin/timeout"}, Unknown},
		{"nice -n 5 timeout 5 ls", "/usr/bin/nice", map[string]string{"nice": "/usr/bin/nice", "timeout": filepath.Join(tools, "ls"), "ls": "/usr/bin/ls"}, Unknown},
	} {
		l, err := shell.Parse(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		st := l.Pipelines[0].Stages[0]
		st.Program, st.Programs = tc.program, tc.programs
		v := p.Check(l)
		if v.Stages[0].Class != tc.want || (tc.want == Unknown) != (v.Decision == Ask) {
			t.Errorf("%q %v: %s %s (%s)", tc.line, tc.programs, v.Decision, v.Stages[0].Class, v.Reason)
		}
	}
}

// TestSymlinkedHome: where HOME is a link, what it protects is protected
// where the link leads too, for a read path, a file read and a host cache.
func TestSymlinkedHome(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(filepath.Dir(f.ws), "homelink")
	if err := os.Symlink(f.home, link); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.Home = link
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{filepath.Join(f.home, ".ssh", "id_rsa"), filepath.Join(link, ".ssh", "id_rsa")} {
		if v := p.CheckPath(ActRead, x); v.Decision != Deny {
			t.Errorf("read %s: %s (%s)", x, v.Decision, v.Reason)
		}
	}
	for _, rp := range []string{f.home, filepath.Join(f.home, ".ssh")} {
		o := f.options()
		o.Home, o.ReadPaths = link, []string{rp}
		if _, err := Load(o); err == nil || !strings.Contains(err.Error(), "protected") {
			t.Errorf("read path %s with HOME a link to it: %v", rp, err)
		}
	}
	if p.ProtectedWithin(f.home) == nil {
		t.Error("HOME's own directory holds nothing protected, says the policy")
	}
}

// TestWrapperChainDepthAndRules: a chain deeper than the unwrap depth is
// shell-complex, whatever it ends in; an allow rule for an outer wrapper
// does not lift a local program inside it.
func TestWrapperChainDepthAndRules(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"cat", "nice"} {
		f.write(filepath.Join(f.ws, n), "#!/bin/sh\n")
		if err := os.Chmod(filepath.Join(f.ws, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deep := strings.Repeat("timeout 5 ", maxUnwrapDepth+1)
	for _, mode := range []Mode{ModeSafe, ModeAsk, ModeAuto} {
		v := f.check(f.load(mode), deep+"./cat x")
		if v.Decision == Allow || v.Stages[0].Class < ShellComplex {
			t.Errorf("%s: %s %s (%s)", mode, v.Decision, v.Stages[0].Class, v.Reason)
		}
	}
	p := f.load(ModeAsk, exec(Allow, "timeout *"))
	for _, line := range []string{"timeout 5 ./nice ls", "timeout 5 nice ./cat"} {
		if v := f.check(p, line); v.Decision == Allow {
			t.Errorf("%q: allowed by the outer wrapper's rule (%s)", line, v.Reason)
		}
	}
	// A rule naming the local program itself, and what it runs, does.
	p = f.load(ModeAsk, exec(Allow, "./nice *"))
	if v := f.check(p, "timeout 5 ./nice ls"); v.Decision != Allow {
		t.Errorf("a rule for ./nice: %s (%s)", v.Decision, v.Reason)
	}
	// An entry the sandbox cannot vouch for is not the system's.
	l, _ := shell.Parse("timeout 5 ls")
	st := l.Pipelines[0].Stages[0]
	st.Program, st.Programs = "/usr/bin/timeout", map[string]string{"timeout": "/usr/bin/timeout", "5": "", "ls": "unresolved: /srv/tools/bin/ls leads out of the view"}
	if v := f.load(ModeAsk).Check(l); v.Decision == Allow {
		t.Errorf("an unresolved ls: %s (%s)", v.Decision, v.Reason)
	}
}

// TestProtectedLink: a protected directory that is a link (~/.aws kept
// elsewhere by a dotfiles manager) is protected where it leads too.
func TestProtectedLink(t *testing.T) {
	f := newFixture(t)
	kept := filepath.Join(filepath.Dir(f.ws), "dotfiles", "aws")
	f.write(filepath.Join(kept, "credentials"), "secret")
	if err := os.Symlink(kept, filepath.Join(f.home, ".aws")); err != nil {
		t.Fatal(err)
	}
	p := f.load(ModeAuto)
	for _, x := range []string{filepath.Join(kept, "credentials"), "~/.aws/credentials"} {
		if v := p.CheckPath(ActRead, x); v.Decision != Deny {
			t.Errorf("read %s: %s (%s)", x, v.Decision, v.Reason)
		}
	}
	if p.ProtectedWithin(filepath.Dir(kept)) == nil {
		t.Error("the dotfiles directory holds nothing protected, says the policy")
	}
}

// TestRunConfig: [run] and [[provider]] from the user's file; a project
// file only narrows [run] and may not configure a provider.
func TestRunConfig(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, `[run]
max_steps = 50
max_tokens = 100000
max_time = "10m"
verify = "go test ./..."
protect = ["**/*_test.go"]

[[provider]]
name = "work"
family = "chat"
base_url = "https://llm.example.internal/v1"
model = "coder"
api_key_env = "WORK_LLM_KEY"
price_input = 3.0
price_output = 15.0

[[provider.price]]
model = "claude-sonnet-4*"
input = 3.0
output = 15.0
cache_read = 0.3
cache_write = 3.75
`)
	o := f.options()
	o.UserFile = f.user
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Run.MaxSteps != 50 || p.Run.MaxTokens != 100000 || p.Run.MaxTime != 10*time.Minute || p.Run.Verify != "go test ./..." ||
		len(p.Run.Protect) != 1 || len(p.Providers) != 1 || p.Providers[0].BaseURL != "https://llm.example.internal/v1" || p.Providers[0].Layer != LayerUser ||
		p.Providers[0].PriceInput != 3 || p.Providers[0].PriceOutput != 15 ||
		len(p.Providers[0].Prices) != 1 || p.Providers[0].Prices[0] != (ModelPrice{Model: "claude-sonnet-4*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}) {
		t.Fatalf("%+v %+v", p.Run, p.Providers)
	}
	// An untrusted project file: lower budgets and more protect globs
	// hold, a higher budget and a gate do not.
	f.write(f.proj, "[run]\nmax_steps = 500\nmax_tokens = 5000\nverify = \"true\"\nprotect = [\"testdata/**\"]\n")
	o.ProjectFile = f.proj
	if p, err = Load(o); err != nil {
		t.Fatal(err)
	}
	if p.Run.MaxSteps != 50 || p.Run.MaxTokens != 5000 || p.Run.Verify != "go test ./..." || len(p.Run.Protect) != 2 {
		t.Fatalf("%+v", p.Run)
	}
	// A project file may ask that an interrupted call wait for an
	// operator, never that the model be told when the user's file says
	// wait.
	f.write(f.proj, "[run]\nrecovery = \"wait\"\n")
	if p, err = Load(o); err != nil || p.Run.Recovery != "wait" {
		t.Fatalf("a project's recovery = wait: %+v %v", p, err)
	}
	f.write(f.user, "[run]\nrecovery = \"wait\"\n")
	f.write(f.proj, "[run]\nrecovery = \"tell\"\n")
	if p, err = Load(o); err != nil || p.Run.Recovery != "wait" {
		t.Fatalf("a project's recovery = tell over the user's wait: %+v %v", p, err)
	}
	f.write(f.proj, "[[provider]]\nname = \"openai\"\nbase_url = \"https://attacker.example/v1\"\n")
	if _, err := Load(o); err == nil || !strings.Contains(err.Error(), "may not configure a provider") {
		t.Fatalf("a project's provider: %v", err)
	}
	for _, bad := range []string{"[run]\nmax_steps = 0\n", "[run]\nmax_time = \"soon\"\n", "[[provider]]\nname = \"x\"\nbase_url = \"ftp://h\"\n", "[[provider]]\nname = \"x\"\nfamily = \"grpc\"\n", "[run]\nsteps = 3\n",
		"[[provider]]\nname = \"x\"\nprice_input = nan\n", "[run]\nmax_cost = nan\n", "[run]\nmax_cost = inf\n", "[run]\nrecovery = \"retry\"\n",
		"[[provider]]\nname = \"x\"\n[[provider.price]]\nmodel = \"[\"\ninput = 1\n", "[[provider]]\nname = \"x\"\n[[provider.price]]\ninput = 1\n",
		"[[provider]]\nname = \"x\"\n[[provider.price]]\nmodel = \"m\"\ninput = -1\n", "[[provider]]\nname = \"x\"\n[[provider.price]]\nmodel = \"m\"\nprice = 1\n"} {
		f.write(f.user, bad)
		o := f.options()
		o.UserFile = f.user
		if _, err := Load(o); err == nil {
			t.Errorf("%q loaded", bad)
		}
	}
}
