package toolchain

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// markerFile is a file name a marker (maybe a pattern) matches.
func markerFile(m string) string { return strings.ReplaceAll(m, "*", "app") }

// TestRowsDetected: every marker of every row detects it, alone, and
// every lockfile chooses its manager.
func TestRowsDetected(t *testing.T) {
	for _, r := range Table() {
		for _, m := range r.Markers {
			t.Run(r.Name+"/"+m, func(t *testing.T) {
				ws := t.TempDir()
				touch(t, ws, markerFile(m))
				found := Detect(ws)
				if len(found) != 1 || found[0].Row.Name != r.Name || found[0].Marker != markerFile(m) {
					t.Fatalf("%s detected %+v", m, found)
				}
			})
		}
		for i, mg := range r.Managers {
			for _, lf := range mg.Lockfiles {
				t.Run(r.Name+"/"+mg.Name+"/"+lf, func(t *testing.T) {
					ws := t.TempDir()
					touch(t, ws, markerFile(r.Markers[0]), lf)
					found := Detect(ws)
					var f *Found
					for j := range found {
						if found[j].Row.Name == r.Name {
							f = &found[j]
						}
					}
					if f == nil {
						t.Fatalf("row %s not detected: %+v", r.Name, found)
					}
					// A lockfile shared with an earlier manager (a Gradle
					// build file with Maven's pom.xml as marker) chooses
					// the first manager that names it.
					want := i
					for k := range r.Managers[:i] {
						if slices.Contains(r.Managers[k].Lockfiles, lf) || (k == 0 && slices.Contains(r.Managers[0].Lockfiles, markerFile(r.Markers[0]))) {
							want = k
							break
						}
					}
					if f.Manager.Name != r.Managers[want].Name {
						t.Fatalf("lockfile %s chose %s, want %s", lf, f.Manager.Name, r.Managers[want].Name)
					}
				})
			}
		}
	}
}

func TestNothingDetected(t *testing.T) {
	ws := t.TempDir()
	touch(t, ws, "README.md", "src/main.go", "sub/package.json")
	if found := Detect(ws); len(found) != 0 {
		t.Fatalf("detected %+v in a workspace with no marker at its root", found)
	}
}

// TestNodeManagers: the lockfile decides npm, pnpm, yarn or bun.
func TestNodeManagers(t *testing.T) {
	for lock, want := range map[string]string{"": "npm", "package-lock.json": "npm", "pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "bun.lockb": "bun", "bun.lock": "bun"} {
		ws := t.TempDir()
		touch(t, ws, "package.json")
		if lock != "" {
			touch(t, ws, lock)
		}
		found := Detect(ws)
		if len(found) != 1 || found[0].Manager.Name != want || found[0].Lockfile != lock {
			t.Fatalf("%q: %+v", lock, found)
		}
	}
}

// TestLocals: a virtual environment's python and a Gradle wrapper are
// used by path when the workspace has them.
func TestLocals(t *testing.T) {
	ws := t.TempDir()
	touch(t, ws, "requirements.txt")
	if c := Detect(ws)[0].Commands; c.Test != "python3 -m unittest" {
		t.Fatalf("without a venv: %+v", c)
	}
	touch(t, ws, ".venv/bin/python")
	if c := Detect(ws)[0].Commands; c.Test != ".venv/bin/python -m unittest" || c.Install != ".venv/bin/python -m pip install -r requirements.txt" {
		t.Fatalf("with a venv: %+v", c)
	}
	ws = t.TempDir()
	touch(t, ws, "build.gradle")
	if c := Detect(ws)[0].Commands; c.Test != "gradle test" {
		t.Fatalf("without a wrapper: %+v", c)
	}
	touch(t, ws, "gradlew")
	if c := Detect(ws)[0].Commands; c.Test != "./gradlew test" {
		t.Fatalf("with a wrapper: %+v", c)
	}
}

// TestCommandsParse: every command of the table is a line rein's grammar
// runs, with its placeholders filled either way.
func TestCommandsParse(t *testing.T) {
	for _, r := range Table() {
		for _, m := range r.Managers {
			for _, withLocals := range []bool{false, true} {
				ws := t.TempDir()
				for _, l := range m.Locals {
					if withLocals {
						touch(t, ws, l.Paths[0])
					}
				}
				c := m.commandsIn(ws)
				for _, line := range []string{c.Install, c.Build, c.Test, c.Lint, c.Format} {
					if line == "" {
						continue
					}
					if strings.Contains(line, "{") {
						t.Errorf("%s/%s: placeholder left in %q", r.Name, m.Name, line)
					}
					if _, err := shell.Parse(line); err != nil {
						t.Errorf("%s/%s: %q: %v", r.Name, m.Name, line, err)
					}
				}
				if c.Test == "" {
					t.Errorf("%s/%s has no test command", r.Name, m.Name)
				}
			}
		}
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// TestCachesWellFormed: names are single path elements, each variable is
// set by one cache only, host caches have candidates, values hold {dir}.
func TestCachesWellFormed(t *testing.T) {
	vars := map[string]string{}
	names := map[string]Cache{}
	for _, r := range Table() {
		if len(r.Markers) == 0 || len(r.Managers) == 0 {
			t.Errorf("row %s has no marker or no manager", r.Name)
		}
		for _, m := range r.Managers {
			if len(m.Programs) == 0 {
				t.Errorf("%s/%s needs no program", r.Name, m.Name)
			}
			for _, c := range m.Caches {
				if c.Name == "" || strings.ContainsAny(c.Name, "/. ") || !envName.MatchString(c.Env) {
					t.Errorf("%s: bad cache %+v", r.Name, c)
				}
				if prev, ok := names[c.Name]; ok && !slicesEqualCache(prev, c) {
					t.Errorf("cache name %s used for two caches", c.Name)
				}
				names[c.Name] = c
				if owner, ok := vars[c.Env]; ok && owner != c.Name {
					t.Errorf("%s is set by caches %s and %s", c.Env, owner, c.Name)
				}
				vars[c.Env] = c.Name
				for _, v := range []string{c.Value, c.Online} {
					if v != "" && !strings.Contains(v, "{dir}") {
						t.Errorf("%s: value %q does not name the directory", c.Name, v)
					}
				}
				if c.Online != "" && c.Host == nil {
					t.Errorf("%s: only host caches differ online", c.Name)
				}
			}
			for _, e := range append(slices.Clone(m.Env), m.OfflineEnv...) {
				k, _, ok := strings.Cut(e, "=")
				if !ok || !envName.MatchString(k) {
					t.Errorf("%s/%s: bad variable %q", r.Name, m.Name, e)
				}
				if owner, ok := vars[k]; ok {
					t.Errorf("%s is both a fixed variable and cache %s's", k, owner)
				}
			}
		}
	}
}

func slicesEqualCache(a, b Cache) bool {
	return a.Name == b.Name && a.Env == b.Env && a.Value == b.Value && a.Online == b.Online && slices.Equal(a.Host, b.Host)
}

// TestWorkspaceCachesOnce: the shared ccache is listed once, and no host
// cache is among the workspace's.
func TestWorkspaceCachesOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range WorkspaceCaches() {
		if seen[c.Name] || c.Host != nil {
			t.Fatalf("cache %s listed twice or a host cache: %+v", c.Name, c)
		}
		seen[c.Name] = true
	}
	for _, n := range []string{"go-build", "go-mod", "npm", "pip", "cargo", "ccache", "gradle", "nuget"} {
		if !seen[n] {
			t.Errorf("%s is not among the workspace caches", n)
		}
	}
}

// TestEnvOffline: the offline variables only with the network off, each
// variable once.
func TestEnvOffline(t *testing.T) {
	on, off := Env(false), Env(true)
	if slices.Contains(on, "CARGO_NET_OFFLINE=true") || !slices.Contains(off, "CARGO_NET_OFFLINE=true") || !slices.Contains(off, "npm_config_offline=true") {
		t.Fatalf("online %v\noffline %v", on, off)
	}
	seen := map[string]bool{}
	for _, e := range off {
		k, _, _ := strings.Cut(e, "=")
		if seen[k] {
			t.Fatalf("%s set twice", k)
		}
		seen[k] = true
	}
}

// TestHostCaches: where the Go row finds the host's module download
// cache, from GOMODCACHE, then GOPATH's first entry, then HOME; absent
// directories are left out.
func TestHostCaches(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		d := filepath.Join(root, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := mk("a/cache/download")
	b := mk("b/pkg/mod/cache/download")
	mk("c,https:/cache/download")
	h := mk("home/go/pkg/mod/cache/download")
	mk("home/.gradle/caches")
	find := func(env []string, name string) string {
		for _, c := range HostCaches(env) {
			if c.Name == name {
				return c.Path
			}
		}
		return ""
	}
	home := "HOME=" + filepath.Join(root, "home")
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{home, "GOMODCACHE=" + filepath.Join(root, "a")}, a},
		{[]string{home, "GOPATH=" + filepath.Join(root, "b") + ":/elsewhere"}, b},
		{[]string{home}, h},
		{[]string{home, "GOMODCACHE=" + filepath.Join(root, "missing")}, ""},
		{[]string{"HOME="}, ""},
		// A comma would split GOPROXY's list: such a path is not served.
		{[]string{home, "GOMODCACHE=" + filepath.Join(root, "c,https:")}, ""},
	} {
		if got := find(tc.env, "go-mod-download"); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
	}
	if got := find([]string{home}, "gradle-ro-cache"); got != filepath.Join(root, "home/.gradle/caches") {
		t.Errorf("gradle: %q", got)
	}
	if got := find([]string{home}, "nuget-fallback"); got != "" {
		t.Errorf("an absent NuGet cache: %q", got)
	}
	c := HostCaches([]string{home})[0]
	if c.Setting("/x", false) != "file:///x" || c.Setting("/x", true) != "file:///x,"+goProxy {
		t.Fatalf("GOPROXY settings: %q %q", c.Setting("/x", false), c.Setting("/x", true))
	}
}
