package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestSandboxHomeIsBwrapHome: the policy's default sandbox HOME is where
// the bwrap rung mounts it, and where the other rungs move it from.
func TestSandboxHomeIsBwrapHome(t *testing.T) {
	if policy.DefaultSandboxHome != bwrap.SandboxHome {
		t.Fatalf("policy.DefaultSandboxHome = %q, bwrap.SandboxHome = %q", policy.DefaultSandboxHome, bwrap.SandboxHome)
	}
}

// TestRouterRefusesOtherHome: a policy that decides ~ as another directory
// (or as the user's, for lines run on the host) would decide paths the
// plan does not touch, so no router is made with it.
func TestRouterRefusesOtherHome(t *testing.T) {
	ws := t.TempDir()
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []policy.Options{{SandboxHome: "/sb/home"}, {OnHost: true}} {
		o.Workspace, o.NoFiles = ws, true
		p, err := policy.Load(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewRouter(reg, Config{Policy: p, Approver: policy.DenyAll{}, Source: "test"})
		if err == nil || !strings.Contains(err.Error(), "but the sandbox's HOME is \"/run/rein/home\"") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestRouterTildeIsHome: through the router, in ask mode with nobody to
// approve, ~ is the run's private HOME on both rungs: read, listed and
// cd'd into without asking, written where the mode writes, and never the
// user's HOME nor a way out of it.
func TestRouterTildeIsHome(t *testing.T) {
	requireSandbox(t)
	for _, rung := range []sandbox.Rung{sandbox.RungBwrap, sandbox.RungLandlock} {
		t.Run(string(rung), func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
			for _, d := range []string{ws, home} {
				os.MkdirAll(d, 0o755)
			}
			os.WriteFile(filepath.Join(home, "x"), []byte("the user's\n"), 0o644)
			for _, c := range []struct {
				mode   policy.Mode
				line   string
				status Status
				want   string // the output, or in the reason
			}{
				{policy.ModeAsk, "cat ~/x", Failed, "No such file or directory"},
				{policy.ModeAsk, "ls -a ~ && cd ~ && ls -a", OK, ".\n..\n.\n..\n"},
				{policy.ModeAuto, "cd ~ && touch made && ls ~", OK, "made\n"},
				{policy.ModeAsk, "cd && ls", OK, ""},
				{policy.ModeAuto, "echo hi > ~/f && cat ~/f", OK, "hi\n"},
				{policy.ModeAsk, "echo hi > ~/f", Denied, "workspace-mutating (it redirects output into a file): ask mode asks"},
				{policy.ModeAsk, "cat ~/../../../etc/shadow", Denied, `protected by deny rule "/etc/shadow"`},
				{policy.ModeAsk, "ls ~/../../etc/shadow", Denied, "outside the workspace"},
				{policy.ModeAsk, "cd ~ && cat ../x", Denied, "climbs out of the sandbox's private HOME"},
			} {
				p, err := policy.Load(policy.Options{Workspace: ws, Home: home, NoFiles: true, Mode: &c.mode})
				if err != nil {
					t.Fatal(err)
				}
				reg, err := Builtin()
				if err != nil {
					t.Fatal(err)
				}
				store, err := sqlite.Open(filepath.Join(root, "trace.db"), nil)
				if err != nil {
					t.Fatal(err)
				}
				r, err := NewRouter(reg, Config{Policy: p, Approver: policy.DenyAll{}, Surface: SurfaceCoding, Store: store,
					Profile: sandbox.Profile{Rung: rung}, Source: "test"})
				if err != nil {
					t.Fatal(err)
				}
				f := &fixture{ws: ws, store: store, r: r}
				env := f.call(t, "shell", obj{"line": c.line})
				res := env.Result()
				r.Close("ok")
				store.Close()
				if env.Status != c.status {
					t.Errorf("%s: %s: %s (%s), want %s\n%s", c.mode, c.line, env.Status, env.Reason, c.status, env.Text())
					continue
				}
				got := env.Reason
				if c.status == OK {
					got = res.Output
				}
				if c.status == OK && got != c.want || c.status != OK && !strings.Contains(env.Text(), c.want) {
					t.Errorf("%s: %s: got %q\n%s\nwant %q", c.mode, c.line, got, env.Text(), c.want)
				}
			}
			if data, err := os.ReadFile(filepath.Join(home, "x")); err != nil || string(data) != "the user's\n" {
				t.Errorf("the user's HOME changed: %q %v", data, err)
			}
			if _, err := os.Stat(filepath.Join(home, "f")); err == nil {
				t.Errorf("~/f landed in the user's HOME")
			}
		})
	}
}
