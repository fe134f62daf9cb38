package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		line    int
		key     string
		msg     string
	}{
		{"unknown top key", "mode = \"ask\"\ncolour = \"red\"\n", 2, "colour", "unknown key"},
		{"unknown nested key", "[exec]\nallow = []\nalow = [\"x\"]\n", 3, "exec.alow", "unknown key"},
		{"bad mode", "\n\nmode = \"yolo\"\n", 3, "mode", `unknown mode "yolo"`},
		{"wrong type", "[limits]\nprocesses = \"many\"\n", 2, "limits.processes", "cannot decode"},
		{"bad size", "[limits]\nmemory = \"lots\"\n", 2, "limits.memory", "not a size"},
		{"bad duration", "[sandbox]\ntimeout = \"soon\"\n", 2, "sandbox.timeout", "not a positive duration"},
		{"bad rung", "[sandbox]\nrung = \"docker\"\n", 2, "sandbox.rung", "unknown rung"},
		{"bad network", "[sandbox]\nnetwork = \"some\"\n", 2, "sandbox.network", "unknown network mode"},
		{"bad preset", "[net]\npresets = [\"go\", \"cpan\"]\n", 2, "net.presets", `unknown preset "cpan"`},
		{"bad act", "[[rule]]\nact = \"run\"\neffect = \"allow\"\npattern = \"x\"\n", 2, "rule[0].act", `unknown act "run"`},
		{"bad effect", "[[rule]]\nact = \"exec\"\neffect = \"maybe\"\npattern = \"x\"\n", 3, "rule[0].effect", "unknown effect"},
		{"example must match", "[[rule]]\nact = \"exec\"\neffect = \"allow\"\npattern = \"npm run *\"\nmatch = [\"npm test\"]\n", 1, "rule[0]", `does not match its example "npm test"`},
		{"example must not match", "\n[[rule]]\nact = \"exec\"\neffect = \"allow\"\npattern = \"npm *\"\nnot_match = [\"npm install\"]\n", 2, "rule[0]", `matches "npm install"`},
		{"second rule's example", "[[rule]]\nact = \"exec\"\neffect = \"deny\"\npattern = \"a *\"\n[[rule]]\nact = \"read\"\neffect = \"deny\"\npattern = \"secrets/**\"\nmatch = [\"src/x\"]\n", 5, "rule[1]", "does not match"},
		{"bad glob", "[read]\ndeny = [\"ok/**\", \"bad[\"]\n", 2, "read.deny[1]", "invalid path pattern"},
		{"empty pattern", "[exec]\ndeny = [\n  \"x\",\n  \"\",\n]\n", 4, "exec.deny[1]", "empty pattern"},
		{"negative", "[limits]\nopen_files = -1\n", 2, "limits.open_files", "positive"},
		{"duplicate key", "mode = \"ask\"\nmode = \"auto\"\n", 2, "mode", "already defined"},
		{"not toml", "mode = \n", 1, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(f.user, c.content)
			_, err := Load(f.options())
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if ce.File != f.user || ce.Line != c.line || (c.key != "" && ce.Key != c.key) || !strings.Contains(ce.Error(), c.msg) {
				t.Fatalf("got file=%s line=%d key=%q err=%q; want line %d key %q containing %q", ce.File, ce.Line, ce.Key, ce.Error(), c.line, c.key, c.msg)
			}
		})
	}
}

func TestConfigExampleFromSpec(t *testing.T) {
	f := newFixture(t)
	data, err := os.ReadFile(filepath.Join("testdata", "spec-example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	f.write(f.user, string(data))
	p, err := Load(f.options())
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeAsk || p.Sandbox.Timeout != 180*time.Second || p.Sandbox.MaxTimeout != 600*time.Second ||
		p.Limits.MemoryBytes != 2<<30 || p.Limits.Processes != 512 || p.Limits.FileSizeBytes != 4<<30 ||
		p.Limits.CPUSeconds != 600 || p.Limits.OpenFiles != 1024 || len(p.EnvPass) != 1 || len(p.NetPresets) != 1 {
		t.Fatalf("settings: %+v %+v %+v", p.Sandbox, p.Limits, p)
	}
	if v := f.check(p, "npm run lint"); v.Decision != Allow {
		t.Errorf("long-form rule: %s", v.Reason)
	}
	if v := f.check(p, "git push"); v.Decision != Deny {
		t.Errorf("deny rule: %s", v.Reason)
	}
	if v := f.check(p, "git commit -m x"); v.Decision != Ask {
		t.Errorf("ask rule: %s", v.Reason)
	}
	if v := f.check(p, "echo x > generated/a.go"); v.Decision != Deny {
		t.Errorf("workspace.protected: %s", v.Reason)
	}
	if v := f.check(p, "rm main.go"); v.Decision != Ask {
		t.Errorf("delete ask **: %s", v.Reason)
	}
}

func TestConfigScopes(t *testing.T) {
	f := newFixture(t)
	// A named file that does not exist is an error; a default one is not.
	o := f.options()
	o.OrgFile = filepath.Join(f.ws, "nope.toml")
	if _, err := Load(o); err == nil || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("missing named org policy: %v", err)
	}
	// Environment names a scope when the flag does not.
	f.write(filepath.Join(f.ws, "env.toml"), "mode = \"safe\"\n")
	o = f.options()
	o.UserFile = ""
	o.Getenv = func(k string) string {
		switch k {
		case "REIN_USER_POLICY":
			return filepath.Join(f.ws, "env.toml")
		case "HOME":
			return f.home
		}
		return ""
	}
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeSafe {
		t.Errorf("REIN_USER_POLICY not read: mode %s", p.Mode)
	}
	// XDG_CONFIG_HOME moves the default user file.
	xdg := filepath.Join(f.ws, "xdg")
	f.write(filepath.Join(xdg, "rein", "policy.toml"), "mode = \"auto\"\n")
	o.Getenv = func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return xdg
		}
		return ""
	}
	if p, err = Load(o); err != nil || p.Mode != ModeAuto {
		t.Errorf("XDG_CONFIG_HOME: %v %v", p, err)
	}
	// Timeout above the ceiling is refused naming both.
	f.write(f.user, "[sandbox]\ntimeout = \"20m\"\n")
	if _, err := Load(f.options()); err == nil || !strings.Contains(err.Error(), "max_timeout") {
		t.Errorf("timeout above ceiling: %v", err)
	}
}

func TestUntrustedProjectOnlyNarrows(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, "mode = \"auto\"\n[limits]\nprocesses = 100\n[sandbox]\nnetwork = \"proxy\"\n")
	f.write(f.proj, "mode = \"safe\"\n[limits]\nprocesses = 5000\nmemory = \"1GiB\"\n[sandbox]\nnetwork = \"full\"\nrung = \"none\"\n[workspace]\nread_only = true\n")
	o := f.options()
	o.ProjectFile = f.proj
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeSafe || p.Limits.Processes != 100 || p.Limits.MemoryBytes != 1<<30 || p.Sandbox.Network != "proxy" || p.Sandbox.Rung != "auto" || !p.ReadOnly {
		t.Fatalf("untrusted project: mode=%s limits=%+v sandbox=%+v ro=%v", p.Mode, p.Limits, p.Sandbox, p.ReadOnly)
	}
	for _, s := range p.Settings {
		if s.Key == "mode" && (s.Layer != LayerProject || s.File != f.proj) {
			t.Errorf("mode setting attributed to %s %s", s.Layer, s.File)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"1": 1, "512MiB": 512 << 20, "2GiB": 2 << 30, "4 GiB": 4 << 30, "10KB": 10000, "7B": 7}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1GiB", "1.5GiB", "GiB", "9999999999TiB", "1 PB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// TestTraceOTLP: [trace] otlp_endpoint and otlp_content come from the org
// or user policy alone, since a project file could otherwise send a run's
// record wherever the repository likes; the user's file, read after the
// org's, wins, and each is shown with the file that set it.
func TestTraceOTLP(t *testing.T) {
	f := newFixture(t)
	f.write(f.org, "[trace]\notlp_endpoint = \"https://collector.example:4318/v1/traces\"\notlp_content = true\n")
	f.write(f.user, "[trace]\notlp_endpoint = \"http://127.0.0.1:4318/v1/traces\"\n")
	p := f.load(ModeAsk)
	if p.OTLPEndpoint != "http://127.0.0.1:4318/v1/traces" || !p.OTLPContent {
		t.Fatalf("endpoint %q content %v", p.OTLPEndpoint, p.OTLPContent)
	}
	want := map[string]Setting{
		"trace.otlp_endpoint": {"trace.otlp_endpoint", "http://127.0.0.1:4318/v1/traces", LayerUser, f.user},
		"trace.otlp_content":  {"trace.otlp_content", "true", LayerOrg, f.org},
	}
	for _, s := range p.Settings {
		if w, ok := want[s.Key]; ok {
			if s != w {
				t.Errorf("setting %+v, want %+v", s, w)
			}
			delete(want, s.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("settings missing: %v", want)
	}

	for _, c := range []struct{ name, content, key, msg string }{
		{"project endpoint", "[trace]\notlp_endpoint = \"http://127.0.0.1:4318\"\n", "trace.otlp_endpoint", "a project file may not choose where runs are exported"},
		{"project content", "[trace]\notlp_content = false\n", "trace.otlp_content", "a project file may not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(f.user, "[trace]\notlp_endpoint = \"http://127.0.0.1:4318\"\n")
			f.write(f.proj, c.content)
			_, err := Load(f.options())
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != f.proj || ce.Key != c.key || !strings.Contains(ce.Error(), c.msg) {
				t.Fatalf("got %v, want %s refused in %s", err, c.key, f.proj)
			}
		})
	}

	for _, u := range []string{
		"127.0.0.1:4318",
		"grpc://127.0.0.1:4317",
		"http://",
		"https://user:pw@collector.example/v1/traces",
		"https://collector.example/v1/traces?token=x",
		"/v1/traces",
	} {
		t.Run("bad "+u, func(t *testing.T) {
			f := newFixture(t)
			f.write(f.user, "[trace]\notlp_endpoint = \""+u+"\"\n")
			_, err := Load(f.options())
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "trace.otlp_endpoint" || ce.Line != 2 || !strings.Contains(ce.Error(), "is not an http(s) URL") {
				t.Fatalf("got %v, want trace.otlp_endpoint refused", err)
			}
			if strings.Contains(ce.Err.Error(), "pw@") || strings.Contains(ce.Err.Error(), "token=") {
				t.Errorf("the message shows the password: %v", ce)
			}
		})
	}
}

// TestRepositoryFileRefused: the keys only the person running rein may
// set (where runs are exported and what of them, the trace key, the
// search backend, a provider, the variables a line sets unasked) are
// refused in a policy file inside the workspace, whatever layer names
// it: the variables that find the org and user files can be set by the
// repository (an agent's settings), and a file in the workspace is the
// repository's. The same file outside the workspace is taken.
func TestRepositoryFileRefused(t *testing.T) {
	keys := []struct{ key, content string }{
		{"trace.otlp_endpoint", "[trace]\notlp_endpoint = \"http://127.0.0.1:4318\"\n"},
		{"trace.otlp_content", "[trace]\notlp_content = true\n"},
		{"trace.key_file", "[trace]\nkey_file = \"/tmp/mine.key\"\n"},
		{"web.search_url", "[web]\nsearch_url = \"https://search.example/search\"\n"},
		{"provider[0]", "[[provider]]\nname = \"openai\"\nbase_url = \"https://attacker.example/v1\"\n"},
		{"env.set[0]", "[env]\nset = [\"GIT_SSH_COMMAND\"]\n"},
	}
	// load loads the policy with the environment env, as a repository
	// can set it.
	load := func(f *fixture, env map[string]string) error {
		o := f.options()
		o.Getenv = func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			if k == "HOME" {
				return f.home
			}
			return ""
		}
		_, err := Load(o)
		return err
	}
	for _, k := range keys {
		for _, c := range []struct {
			name, variable, layer string
			// place is the file's path in the fixture, and the value
			// of the variable that names it.
			place func(t *testing.T, f *fixture) (file, value string)
		}{
			{"REIN_USER_POLICY", "REIN_USER_POLICY", "user", func(t *testing.T, f *fixture) (string, string) {
				p := filepath.Join(f.ws, "user.toml")
				return p, p
			}},
			{"REIN_ORG_POLICY", "REIN_ORG_POLICY", "org", func(t *testing.T, f *fixture) (string, string) {
				p := filepath.Join(f.ws, "src", "org.toml")
				return p, p
			}},
			{"XDG_CONFIG_HOME", "XDG_CONFIG_HOME", "user", func(t *testing.T, f *fixture) (string, string) {
				return filepath.Join(f.ws, "xdg", "rein", "policy.toml"), filepath.Join(f.ws, "xdg")
			}},
			{"relative", "REIN_USER_POLICY", "user", func(t *testing.T, f *fixture) (string, string) {
				// Read from the workspace, as rein runs there.
				t.Chdir(f.ws)
				return filepath.Join(f.ws, "u.toml"), "u.toml"
			}},
		} {
			t.Run(k.key+" by "+c.name, func(t *testing.T) {
				f := newFixture(t)
				file, value := c.place(t, f)
				f.write(file, k.content)
				err := load(f, map[string]string{c.variable: value})
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != k.key || !strings.Contains(ce.Error(), "a policy file inside the workspace ("+f.ws+") is the repository's, whatever layer names it (here the "+c.layer+" layer)") {
					t.Fatalf("got %v, want %s refused in %s", err, k.key, file)
				}
			})
		}
		t.Run(k.key+" outside", func(t *testing.T) {
			f := newFixture(t)
			file := filepath.Join(filepath.Dir(f.ws), "elsewhere", "user.toml")
			f.write(file, k.content)
			if err := load(f, map[string]string{"REIN_USER_POLICY": file}); err != nil {
				t.Fatalf("a user file outside the workspace: %v", err)
			}
		})
	}

	// Links: a user file outside that is a link to a file inside, and a
	// link inside to a file outside (the repository chose where it
	// points), are both the repository's.
	for _, c := range []struct {
		name  string
		place func(t *testing.T, f *fixture) (file, named string)
	}{
		{"a link to the workspace", func(t *testing.T, f *fixture) (string, string) {
			file, link := filepath.Join(f.ws, "src", "planted.toml"), filepath.Join(f.home, "linked.toml")
			if err := os.Symlink(file, link); err != nil {
				t.Fatal(err)
			}
			return file, link
		}},
		{"a directory link to the workspace", func(t *testing.T, f *fixture) (string, string) {
			if err := os.Symlink(filepath.Join(f.ws, "src"), filepath.Join(f.home, "cfg")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f.ws, "src", "planted.toml"), filepath.Join(f.home, "cfg", "planted.toml")
		}},
		{"a link in the workspace", func(t *testing.T, f *fixture) (string, string) {
			file, link := filepath.Join(f.home, "real.toml"), filepath.Join(f.ws, "link.toml")
			if err := os.Symlink(file, link); err != nil {
				t.Fatal(err)
			}
			return file, link
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			file, named := c.place(t, f)
			f.write(file, keys[0].content)
			err := load(f, map[string]string{"REIN_USER_POLICY": named})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != "trace.otlp_endpoint" || !strings.Contains(ce.Error(), "is the repository's") {
				t.Fatalf("got %v, want trace.otlp_endpoint refused", err)
			}
		})
	}

	// The project file keeps its own message.
	f := newFixture(t)
	f.write(f.proj, keys[0].content)
	var ce *ConfigError
	if err := load(f, nil); !errors.As(err, &ce) || ce.File != f.proj || !strings.Contains(ce.Error(), "a project file may not choose where runs are exported") {
		t.Fatalf("the project file: %v", err)
	}
}
