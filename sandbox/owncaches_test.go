//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
)

// TestOwnCaches: a run with caches of its own (CacheSet) sees none of the
// workspace's, whatever its environment names; its Go seeds and module
// caches are read-only and served through GOCACHEPROG and GOPROXY, on
// both rungs; what it builds lands in its own directory; a cache set that
// is not clean directories outside the workspace is refused.
func TestOwnCaches(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws, root := cacheWorkspace(t)
		own, seedA, seedB, mods := filepath.Join(root, "own"), filepath.Join(root, "seed a"), filepath.Join(root, "seedb"), filepath.Join(root, "mods")
		for _, d := range []string{own, seedA, seedB, mods} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(seedA, "kept"), []byte("seed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The workspace's own cache, as a run of the model left it.
		p := Profile{Rung: rung}
		runLine(t, ws, `sh -c 'echo planted > "$GOCACHE/mark"'`, p)

		// The environment names caches of its own: the run's are the
		// sandbox's all the same.
		p.Env = []string{"GOCACHE=/tmp/planted", "GOCACHEPROG=/tmp/evil", "GOMODCACHE=/tmp/planted-mod"}
		p.Caches = &CacheSet{Dir: own, GoSeeds: []string{seedA, seedB}, GoModules: []string{mods}}
		init, base, seeds := bwrap.SandboxInit, sandboxCaches, []string{sandboxSeeds + "/go-build-0", sandboxSeeds + "/go-build-1"}
		modsAt := sandboxSeeds + "/go-mod-download-0"
		if rung != RungBwrap {
			exe, err := initExe()
			if err != nil {
				t.Fatal(err)
			}
			init, base, seeds, modsAt = exe, own, []string{seedA, seedB}, mods
		}
		wantProg, err := goCacheProg(init, base+"/go-build", seeds...)
		if err != nil {
			t.Fatal(err)
		}
		res := runLine(t, ws, `sh -c 'printf "%s\n" "$GOCACHE" "$GOMODCACHE" "$GOCACHEPROG" "$GOPROXY"; cat "$GOCACHE/mark" 2>/dev/null || echo no mark; `+
			`mkdir -p "$GOCACHE"; echo built > "$GOCACHE/out"; cat "$1/kept"; touch "$1/new" || echo refused; rm -f "$1/kept" || echo refused; touch "$2/new" || echo refused; touch "$3/new" || echo refused' sh `+
			shell.Quote(seeds[0])+" "+shell.Quote(seeds[1])+" "+shell.Quote(modsAt), p)
		want := strings.Join([]string{base + "/go-build", base + "/go-mod", wantProg, "file://" + modsAt, "no mark", "seed", "refused", "refused", "refused", "refused", ""}, "\n")
		if res.Stdout.Text != want {
			t.Fatalf("inside:\n%s\nwant:\n%s\n%+v", res.Stdout.Text, want, res)
		}
		if data, err := os.ReadFile(filepath.Join(own, "go-build", "out")); err != nil || string(data) != "built\n" {
			t.Fatalf("what the run built: %q %v", data, err)
		}
		for _, d := range []string{seedA, seedB, mods} {
			if _, err := os.Stat(filepath.Join(d, "new")); err == nil {
				t.Fatalf("a file was made in the read-only cache %s", d)
			}
		}
		if data, err := os.ReadFile(filepath.Join(seedA, "kept")); err != nil || string(data) != "seed\n" {
			t.Fatalf("the seed changed: %q %v", data, err)
		}
		// The workspace's own cache is untouched, and its again without
		// a cache set.
		if res := runLine(t, ws, `sh -c 'cat "$GOCACHE/mark"'`, Profile{Rung: rung}); res.Stdout.Text != "planted\n" {
			t.Fatalf("the workspace's cache: %+v", res)
		}

		// With the list of what an earlier run used, the entries its
		// seeds hold are laid out by the init in the command's own TMPDIR
		// (in memory on the bwrap rung) before it starts, and the go
		// command is pointed at that cache, with no program between.
		action := hashOf("laid out")
		index, _ := writeGoCacheEntry(t, seedB, action, "object")
		absent := hashOf("no seed has it")
		used := filepath.Join(root, "rein-used")
		if err := os.WriteFile(used, fmt.Appendf(nil, "%x\nnot an action\n%x\n", absent, action), 0o644); err != nil {
			t.Fatal(err)
		}
		p.Caches = &CacheSet{Dir: own, GoSeeds: []string{seedA, seedB}, GoUsed: used}
		rel := strings.TrimPrefix(index, seedB+"/")
		out := goCacheFile("", [32]byte(hashOf("object")), "d")
		res = runLine(t, ws, `sh -c 'echo "$GOCACHE" "${GOCACHEPROG:-no program}"; cat "$GOCACHE/$1"; readlink "$GOCACHE/$2"; cat "$GOCACHE/$2"; echo; ls "$GOCACHE" | grep -c .' sh `+
			shell.Quote(rel)+" "+shell.Quote(out), p)
		entry, _ := os.ReadFile(index)
		want = "/tmp/go-build no program\n" + string(entry) + seeds[1] + "/" + out + "\nobject\n3\n"
		if rung != RungBwrap {
			// On the host's disk, making the files would cost more than
			// the program's round trips: the program serves the seeds.
			want = base + "/go-build " + wantProg + "\n"
		}
		if !strings.HasPrefix(res.Stdout.Text, want) {
			t.Fatalf("laid out:\n%q\nwant:\n%q\n%+v", res.Stdout.Text, want, res)
		}

		l, _ := shell.Parse("true")
		for _, bad := range []*CacheSet{
			{Dir: "relative"},
			{Dir: ws + "/cache"},
			{Dir: filepath.Join(root, "absent")},
			{Dir: own, GoSeeds: []string{filepath.Join(root, "absent")}},
			{Dir: own, GoSeeds: []string{ws}},
			{Dir: own, GoModules: []string{root}},
			{Dir: own + "/"},
		} {
			q := Profile{Rung: rung, Workspace: ws, Caches: bad}
			var e *Error
			if _, err := Run(t.Context(), l, q, nil, nil); !errors.As(err, &e) || e.Status != InvalidPath && e.Status != NotFound {
				t.Errorf("the cache set %+v: %v; want a refusal", bad, err)
			}
		}
	})
}

// TestFreshCaches: fresh caches are made empty in each run's own scratch
// directory, so no run sees what another wrote to them, and they go with
// the run; a sandbox is made ready for them ahead like any other, and
// the one taken holds nothing another run wrote either.
func TestFreshCaches(t *testing.T) {
	eachRungWarm(t, func(t *testing.T, rung Rung) {
		ws, root := cacheWorkspace(t)
		seed := filepath.Join(root, "seed")
		if err := os.MkdirAll(seed, 0o755); err != nil {
			t.Fatal(err)
		}
		p := Profile{Rung: rung, Caches: &CacheSet{Fresh: true, GoSeeds: []string{seed}}}
		line := `sh -c 'ls -A "$GOMODCACHE" 2>/dev/null | grep -c . ; mkdir -p "$GOMODCACHE" && touch "$GOMODCACHE/planted" && echo "$GOMODCACHE"'`
		var seen []string
		for range 3 {
			res := runLine(t, ws, line, p)
			f := strings.Fields(res.Stdout.Text)
			if len(f) != 2 || f[0] != "0" {
				t.Fatalf("a fresh run's module cache held something: %+v", res)
			}
			seen = append(seen, f[1])
		}
		if rung == RungBwrap || rung == rungWarm {
			return
		}
		// On the host's view, each run's caches are its own, and gone.
		for _, d := range seen {
			if !strings.HasPrefix(d, filepath.Join(root, "state")+"/") {
				t.Fatalf("fresh caches at %s, outside rein's state directory", d)
			}
			// A warm run's teardown follows its result.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Lstat(d); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the fresh caches %s outlived their run", d)
				}
			}
		}
		if seen[0] == seen[1] {
			t.Fatalf("two runs had the same fresh caches %s", seen[0])
		}
	})
}

// TestCachesRepaired: a command that leaves a link (dangling, or to a
// directory outside), a file or a FIFO where one of the workspace's
// toolchain caches was cannot stop the workspace's later runs, nor point
// the cache elsewhere: the next run finds rein's directory there again,
// and what a link led to is untouched.
func TestCachesRepaired(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws, root := cacheWorkspace(t)
		outside := filepath.Join(root, "outside")
		if err := os.MkdirAll(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		p := Profile{Rung: rung}
		for _, plant := range []string{
			`ln -s /nonexistent/rein "$d"`,
			`ln -s ` + shell.Quote(outside) + ` "$d"`,
			`echo x > "$d"`,
			`mkfifo "$d"`,
		} {
			res := runLine(t, ws, `sh -c 'd=$CCACHE_DIR; rm -rf "$d" && `+plant+` && echo planted'`, p)
			if res.Stdout.Text != "planted\n" {
				t.Fatalf("%s: %+v", plant, res)
			}
			res = runLine(t, ws, `sh -c 'test -d "$CCACHE_DIR" && test ! -L "$CCACHE_DIR" && touch "$CCACHE_DIR/mine" && echo repaired'`, p)
			if res.ExitCode != 0 || res.Stdout.Text != "repaired\n" {
				t.Fatalf("after %s: %+v", plant, res)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("after %s, the directory a link led to holds %v", plant, entries)
			}
		}
	})
}

// cacheWorkspace is a workspace, and the directory beside it that holds
// rein's state directory (set for the test) and whatever else the test
// makes.
func cacheWorkspace(t *testing.T) (ws, root string) {
	ws = workspaceDir(t)
	root = filepath.Dir(ws)
	t.Setenv("REIN_CACHE_DIR", filepath.Join(root, "state"))
	return ws, root
}
