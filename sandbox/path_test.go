//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/toolchain"
)

// script writes an executable shell script at dir/name.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSearchPath: the caller's PATH, in its order, kept to the
// directories the view exposes read-only; relative, missing, writable and
// outside entries dropped, duplicates once.
func TestSearchPath(t *testing.T) {
	ws := workspaceDir(t)
	root := filepath.Dir(ws)
	exposed, hidden := filepath.Join(root, "exposed"), filepath.Join(root, "hidden")
	for _, d := range []string{exposed, hidden, filepath.Join(ws, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link from an exposed directory to a hidden one leads out of the
	// view, and is dropped; so is a link the command could change that
	// leads into the view (in the workspace, or outside the view, where
	// the sandbox's own /tmp could hold another).
	if err := os.Symlink(hidden, filepath.Join(exposed, "out")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{filepath.Join(ws, "usrbin"), filepath.Join(root, "usrbin")} {
		if err := os.Symlink("/usr/bin", l); err != nil {
			t.Fatal(err)
		}
	}
	caller := strings.Join([]string{"/usr/bin", "bin", "", hidden, filepath.Join(ws, "bin"), exposed, "/no/such/dir", "/bin", "/usr/bin/", filepath.Join(exposed, "out"), filepath.Join(ws, "usrbin"), filepath.Join(root, "usrbin"), "/usr/local/bin"}, ":")
	p := Profile{Workspace: ws, Env: []string{"PATH=" + caller}, HostReadPaths: []string{exposed}}
	want := []string{"/usr/bin", exposed, "/bin", "/usr/local/bin"}
	if _, err := os.Stat("/bin"); err != nil {
		want = slices.DeleteFunc(want, func(s string) bool { return s == "/bin" })
	}
	if got := SearchPath(p); !slices.Equal(got, want) {
		t.Fatalf("SearchPath = %v, want %v", got, want)
	}
	// No PATH at all: the fixed system PATH, kept the same way.
	if got := SearchPath(Profile{Workspace: ws}); len(got) == 0 || !slices.Contains(got, "/usr/bin") {
		t.Fatalf("without a PATH: %v", got)
	}
}

// TestLookPath: the first executable file whose target the view holds; a
// program only a hidden directory has is reported with that directory,
// and so is one an exposed link leads out of the view to.
func TestLookPath(t *testing.T) {
	ws := workspaceDir(t)
	root := filepath.Dir(ws)
	exposed, hidden := filepath.Join(root, "exposed"), filepath.Join(root, "hidden")
	script(t, hidden, "only-hidden", "echo hidden")
	script(t, hidden, "linked", "echo linked")
	script(t, exposed, "tool", "echo exposed")
	script(t, filepath.Join(ws, "bin"), "tool", "echo workspace")
	if err := os.WriteFile(filepath.Join(exposed, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(hidden, "linked"), filepath.Join(exposed, "linked")); err != nil {
		t.Fatal(err)
	}
	p := Profile{Workspace: ws, Env: []string{"PATH=" + strings.Join([]string{filepath.Join(ws, "bin"), exposed, hidden, "/usr/bin"}, ":")}, HostReadPaths: []string{exposed}}
	if got, err := LookPath(p, "tool"); err != nil || got != filepath.Join(exposed, "tool") {
		t.Fatalf("tool: %q %v (the workspace's bin is never searched)", got, err)
	}
	if got, err := LookPath(p, "sh"); err != nil || !strings.HasSuffix(got, "/sh") {
		t.Fatalf("sh: %q %v", got, err)
	}
	for name, wantHost := range map[string][2]string{
		"only-hidden":          {filepath.Join(hidden, "only-hidden"), hidden},
		"linked":               {filepath.Join(exposed, "linked"), hidden},
		"plain":                {"", ""},
		"no-such-rein-program": {"", ""},
	} {
		_, err := LookPath(p, name)
		var pe *ProgramError
		if !errors.As(err, &pe) || pe.Host != wantHost[0] || pe.HostDir != wantHost[1] || !slices.Equal(pe.Searched, SearchPath(p)) {
			t.Fatalf("%s: %#v", name, err)
		}
		if wantHost[1] != "" && !strings.Contains(err.Error(), `read_paths = ["`+wantHost[1]+`"]`) {
			t.Fatalf("%s: the error does not say how to expose it: %v", name, err)
		}
	}
	// Found through a link to a hidden directory, it is that directory
	// that must be exposed.
	if err := os.Symlink(hidden, filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	q := Profile{Workspace: ws, Env: []string{"PATH=" + filepath.Join(root, "alias") + ":/usr/bin"}}
	var pe *ProgramError
	if _, err := LookPath(q, "only-hidden"); !errors.As(err, &pe) || pe.Host != filepath.Join(root, "alias", "only-hidden") || pe.HostDir != hidden {
		t.Fatalf("through a link: %#v", err)
	}
	if _, err := LookPath(p, "./tool"); err == nil {
		t.Fatal("a name with a slash was looked up")
	}
}

// TestResolvePrograms: bare names get the program that will run; names
// with a slash, cd stages and stages already resolved are left alone;
// what is not found is returned by stage index.
func TestResolvePrograms(t *testing.T) {
	ws := workspaceDir(t)
	line, err := shell.Parse("cd . && ls | no-such-rein-program ; ./x || sh -c true")
	if err != nil {
		t.Fatal(err)
	}
	p := Profile{Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"}}
	missing := ResolvePrograms(line, p)
	var progs []string
	for _, pl := range line.Pipelines {
		for _, st := range pl.Stages {
			progs = append(progs, st.Program)
		}
	}
	ls, _ := LookPath(p, "ls")
	sh, _ := LookPath(p, "sh")
	if !slices.Equal(progs, []string{"", ls, "", "", sh}) || len(missing) != 1 || missing[2] == nil {
		t.Fatalf("programs %q, missing %v", progs, missing)
	}
}

// TestProgramsInTheSandbox: a program in a read path runs on both rungs;
// one outside the view fails with 127 naming the host directory, and a
// line goes on past it as a shell's would.
func TestProgramsInTheSandbox(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		root := filepath.Dir(ws)
		exposed, hidden := filepath.Join(root, "exposed"), filepath.Join(root, "hidden")
		script(t, exposed, "rein-hello", "echo hello from $0")
		script(t, hidden, "rein-hidden", "echo escaped")
		p := Profile{Rung: rung, Env: []string{"PATH=" + exposed + ":" + hidden + ":/usr/bin:/bin"}, HostReadPaths: []string{exposed}}
		res := runLine(t, ws, "rein-hello", p)
		if res.Status != OK || res.Stdout.Text != "hello from "+filepath.Join(exposed, "rein-hello")+"\n" {
			t.Fatalf("%+v", res)
		}
		res = runLine(t, ws, "rein-hidden || echo fallback", p)
		if res.ExitCode != 0 || res.Stdout.Text != "fallback\n" || res.Stages[0].ExitCode != 127 ||
			!strings.Contains(res.Stages[0].Error, "the host has it at "+filepath.Join(hidden, "rein-hidden")) ||
			!strings.Contains(res.Stderr.Text, "rein: rein-hidden: command not found in the sandbox's PATH ("+exposed+":/usr/bin") {
			t.Fatalf("%+v\n%s", res, res.Stderr.Text)
		}
		res = runLine(t, ws, "rein-hidden", p)
		if res.Status != Unavailable || res.ExitCode != 127 || !strings.Contains(res.Reason, hidden) {
			t.Fatalf("%+v", res)
		}
		// The PATH the command sees is the one the programs were found on.
		res = runLine(t, ws, `sh -c 'echo "$PATH"'`, p)
		if res.Stdout.Text != strings.Join(SearchPath(Profile{Workspace: ws, Env: p.Env, HostReadPaths: p.HostReadPaths}), ":")+"\n" {
			t.Fatalf("PATH inside: %q", res.Stdout.Text)
		}
	})
}

// TestHostCachesReadOnly: a host cache is readable and named by its
// variable inside, and nothing can be written to it, on both rungs; the
// per-workspace caches are writable and kept between runs.
func TestHostCachesReadOnly(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		t.Setenv("REIN_CACHE_DIR", filepath.Join(filepath.Dir(ws), "state"))
		host := filepath.Join(filepath.Dir(ws), "hostcache")
		if err := os.MkdirAll(filepath.Join(host, "mod", "@v"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, "mod", "@v", "list"), []byte("v1.0.0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		hc := toolchain.HostCache{Name: "go-mod-download", Path: host, Env: "GOPROXY", Value: "file://{dir}", Online: "file://{dir},https://proxy.golang.org,direct"}
		p := Profile{Rung: rung, HostCaches: []toolchain.HostCache{hc}}
		// Landlock does not mediate a change of mode or times: only the
		// bwrap rung's read-only mount refuses those (docs/sandbox.md).
		meta, wantMeta := `chmod 777 "$d" || echo refused;`, "refused\n"
		wantAt := "/var/cache/rein-host/go-mod-download"
		if rung != RungBwrap {
			meta, wantMeta, wantAt = "", "", host
		}
		res := runLine(t, ws, `sh -c 'd=${GOPROXY#file://}; cat "$d/mod/@v/list"; echo x > "$d/mod/@v/list" || echo refused; touch "$d/new" || echo refused; rm -f "$d/mod/@v/list" || echo refused; `+meta+` echo $GOPROXY'`, p)
		if !strings.HasPrefix(res.Stdout.Text, "v1.0.0\nrefused\nrefused\nrefused\n"+wantMeta+"file://"+wantAt+"\n") {
			t.Fatalf("%+v\n%s", res, res.Stdout.Text)
		}
		if data, err := os.ReadFile(filepath.Join(host, "mod", "@v", "list")); err != nil || string(data) != "v1.0.0\n" {
			t.Fatalf("the host cache changed: %q %v", data, err)
		}
		if _, err := os.Stat(filepath.Join(host, "new")); err == nil {
			t.Fatal("a file was created in the host cache")
		}
		// The per-workspace caches persist between runs.
		runLine(t, ws, `sh -c 'echo kept > "$GOCACHE/mark"'`, p)
		if res := runLine(t, ws, `sh -c 'cat "$GOCACHE/mark"'`, p); res.Stdout.Text != "kept\n" {
			t.Fatalf("the workspace cache was not kept: %+v", res)
		}
		// An invalid host cache is refused before anything runs.
		bad := p
		bad.HostCaches = []toolchain.HostCache{{Name: "../x", Path: host, Env: "GOPROXY"}}
		l, _ := shell.Parse("true")
		bad.Workspace = ws
		if _, err := Run(t.Context(), l, bad, nil, nil); err == nil {
			t.Fatal("a host cache named ../x was accepted")
		}
		bad.HostCaches = []toolchain.HostCache{{Name: "ws", Path: ws, Env: "X"}}
		if _, err := Run(t.Context(), l, bad, nil, nil); err == nil {
			t.Fatal("the workspace as a host cache was accepted")
		}
	})
}

// TestStableHomeAndTmp: HOME and TMPDIR are the same paths from one run
// to the next, so toolchains that key caches on them (go test) find them
// again, but empty at each start; runs side by side get their own.
func TestStableHomeAndTmp(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		t.Setenv("REIN_CACHE_DIR", filepath.Join(filepath.Dir(ws), "state"))
		p := Profile{Rung: rung}
		line := `sh -c 'echo "$HOME $TMPDIR"; ls -A "$HOME" "$TMPDIR"; touch "$HOME/left" "$TMPDIR/left"'`
		first := runLine(t, ws, line, p)
		second := runLine(t, ws, line, p)
		if first.Status != OK || first.Stdout.Text != second.Stdout.Text || strings.Contains(second.Stdout.Text, "left") {
			t.Fatalf("first %q\nsecond %q", first.Stdout.Text, second.Stdout.Text)
		}
		l, _ := shell.Parse("sleep 5")
		bg := p
		bg.Workspace = ws
		h, err := Start(t.Context(), l, bg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Wait()
		defer h.Kill()
		beside := runLine(t, ws, `sh -c 'echo "$HOME $TMPDIR"'`, p)
		same := strings.SplitN(first.Stdout.Text, "\n", 2)[0] + "\n"
		if rung == RungBwrap && beside.Stdout.Text != same {
			t.Fatalf("bwrap mounts HOME and /tmp at fixed paths: %q, %q", beside.Stdout.Text, same)
		}
		if rung != RungBwrap && beside.Stdout.Text == same {
			t.Fatalf("a run beside another shares its HOME and TMPDIR: %q", beside.Stdout.Text)
		}
		h.Kill()
		h.Wait()
		if rung == RungBwrap {
			return
		}
		// A slot marked as lost to a process that may live on is never
		// taken again, by this process or another.
		home := strings.Fields(same)[0]
		if err := os.WriteFile(filepath.Dir(home)+".poisoned", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if after := runLine(t, ws, `sh -c 'echo "$HOME $TMPDIR"'`, p); after.Stdout.Text == same || !strings.Contains(after.Stdout.Text, "-1/home") {
			t.Fatalf("a poisoned slot was taken: %q", after.Stdout.Text)
		}
	})
}

// FuzzSearchPath: whatever the caller's PATH holds, the sandbox's is only
// clean absolute directories, each once, that lead into what the view
// exposes and never into the workspace.
func FuzzSearchPath(f *testing.F) {
	for _, s := range []string{"/usr/bin:/bin", "", ":", "bin:/usr/bin/:.:..", "/usr/bin/../../tmp:/proc/self/cwd", "/usr/local/go/bin:/root/go/bin", "/\x00/usr/bin", "/usr//bin:/usr/./bin"} {
		f.Add(s)
	}
	ws := f.TempDir()
	roots, lexical := exposedRoots(Profile{Workspace: ws}), exposedLexical(Profile{Workspace: ws})
	f.Fuzz(func(t *testing.T, path string) {
		p := Profile{Workspace: ws, Env: []string{"PATH=" + path}}
		seen := map[string]bool{}
		for _, d := range SearchPath(p) {
			real, err := filepath.EvalSymlinks(d)
			if !filepath.IsAbs(d) || filepath.Clean(d) != d || seen[d] || err != nil || !inRoots(real, roots) || !inRoots(d, lexical) || within(real, ws) {
				t.Fatalf("PATH %q kept %q (%q, %v)", path, d, real, err)
			}
			seen[d] = true
		}
	})
}

// TestRemoveTree: what a run leaves in its HOME goes, directories it made
// unreadable included, and no link is followed to open up its target.
func TestRemoveTree(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	dir := filepath.Join(root, "slot")
	for _, d := range []string{outside, filepath.Join(dir, "home", "locked", "deeper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(outside, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "home", "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, "home", "locked", "deeper"), filepath.Join(dir, "home", "locked")} {
		if err := os.Chmod(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the slot is still there: %v", err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o500 {
		t.Fatalf("the link's target changed: %v %v", fi.Mode(), err)
	}
	os.Chmod(outside, 0o755)
}

// TestResolveShadowed: a link on the way that the view cannot follow
// (dangling, or out of the view) is passed by for the stage's own program,
// which runs by its path, but leaves a wrapper's inner program unresolved:
// the wrapper's own search inside would find the link, once a command
// made its target exist there.
func TestResolveShadowed(t *testing.T) {
	ws := workspaceDir(t)
	root := filepath.Dir(ws)
	tools := filepath.Join(root, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "plant", "ls"), filepath.Join(tools, "ls")); err != nil {
		t.Fatal(err)
	}
	p := Profile{Workspace: ws, Env: []string{"PATH=" + tools + ":/usr/bin:/bin"}, HostReadPaths: []string{tools}}
	line, err := shell.Parse("ls ; timeout 5 ls")
	if err != nil {
		t.Fatal(err)
	}
	if missing := ResolvePrograms(line, p); len(missing) != 0 {
		t.Fatalf("missing %v", missing)
	}
	first, second := line.Pipelines[0].Stages[0], line.Pipelines[1].Stages[0]
	if !strings.HasSuffix(first.Program, "/ls") || strings.HasPrefix(first.Program, tools) {
		t.Fatalf("the stage's own ls: %q", first.Program)
	}
	if v := second.Programs["ls"]; v == "" || filepath.IsAbs(v) {
		t.Fatalf("the wrapper's ls: %q", v)
	}
}

// TestHostWritePaths: a host write path inside a host read path is
// writable, the rest of the read path read-only, on both rungs; a
// read-only plan writes neither.
func TestHostWritePaths(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		repo := filepath.Join(filepath.Dir(ws), "repo")
		open := filepath.Join(repo, "objects")
		if err := os.MkdirAll(open, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "config"), []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := Profile{Rung: rung, HostReadPaths: []string{repo}, HostWritePaths: []string{open}}
		line := `sh -c 'echo new > ` + open + `/o && echo wrote; echo evil > ` + repo + `/config || echo refused; cat ` + repo + `/config'`
		res := runLine(t, ws, line, p)
		if res.Stdout.Text != "wrote\nrefused\nkept\n" {
			t.Fatalf("%+v\n%s", res, res.Stderr.Text)
		}
		if data, _ := os.ReadFile(filepath.Join(open, "o")); string(data) != "new\n" {
			t.Fatalf("the write path's file: %q", data)
		}
		p.ReadOnly = true
		res = runLine(t, ws, `sh -c 'echo again > `+open+`/o || echo refused'`, p)
		if res.Stdout.Text != "refused\n" {
			t.Fatalf("a read-only plan: %+v", res)
		}
	})
}
