package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/workspace"
)

// FuzzDecide: whatever the path a Pi file tool names, from the workspace
// or a directory of it reached through a link, the adapter never panics,
// and a read or write it allows never lands, in any spelling Pi may open
// (as Pi resolves it from the directory given, and from its real path),
// in the HOME or in the directory outside the workspace its links lead
// to; a write it allows lands inside the workspace.
func FuzzDecide(f *testing.F) {
	root, _ := filepath.EvalSymlinks(f.TempDir())
	ws, home, outside := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(ws, "src"), filepath.Join(home, ".ssh"), outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "x\u2019y"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "out"))
	os.Symlink(outside, filepath.Join(ws, "l\u2019ink"))
	os.Symlink(filepath.Join(ws, "src"), filepath.Join(ws, "via"))
	p, err := policy.Load(policy.Options{Workspace: ws, Home: home, OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, OnHost: true})
	if err != nil {
		f.Fatal(err)
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"src/a.go", "../outside/x'y", "out/x'y", "l'ink/x", "@~/.ssh/id_rsa", "via/../../outside", "~", "\u00a0src", "café", "a PM.png", ""} {
		f.Add("read", s, false)
		f.Add("write", s, true)
	}
	f.Fuzz(func(t *testing.T, tool, path string, fromLink bool) {
		if tool != "read" && tool != "write" && tool != "edit" {
			tool = "read"
		}
		cwd := ws
		if fromLink {
			cwd = filepath.Join(ws, "via")
		}
		in, err := json.Marshal(map[string]any{"session_id": "s", "cwd": cwd, "tool_name": tool, "tool_call_id": "c", "input": map[string]any{"path": path}})
		if err != nil {
			return
		}
		call, err := Parse(in)
		if err != nil {
			return
		}
		e := &hook.Engine{Policy: p, Workspace: w, Cwd: cwd, Agent: "Pi"}
		d := (Adapter{}).Decide(e, call)
		if d.Answer != hook.Allow {
			return
		}
		for _, sp := range spellings(path, cwd, home, tool == "read") {
			target := filepath.Clean(sp.path)
			if real, err := filepath.EvalSymlinks(target); err == nil {
				target = real
			} else if real, err := filepath.EvalSymlinks(filepath.Dir(target)); err == nil {
				target = filepath.Join(real, filepath.Base(target))
			}
			inside := func(dir string) bool { return target == dir || strings.HasPrefix(target, dir+"/") }
			if inside(outside) || inside(home) || (tool != "read" && !inside(ws)) {
				t.Fatalf("%s %q from %s: allowed (%s), but %q leads to %s", tool, path, cwd, d.Reason, sp.path, target)
			}
		}
	})
}
