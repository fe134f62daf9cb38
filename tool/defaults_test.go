package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
)

// TestDefaultsFromPolicy: a router given only a policy takes its redactor
// from the policy's declared secrets and the environment, and its limits
// from the policy's [limits] (a profile may lower one, never raise it).
func TestDefaultsFromPolicy(t *testing.T) {
	requireSandbox(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	user := filepath.Join(root, "user.toml")
	os.WriteFile(user, []byte("[env]\nsecrets = [\"DEPLOY_PASSPHRASE\"]\n\n[limits]\nmemory = \"64MiB\"\nprocesses = 7\n"), 0o644)
	empty := filepath.Join(root, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	t.Setenv("DEPLOY_PASSPHRASE", "correct-horse-battery-42")
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(root, "home"), OrgFile: empty, UserFile: user, ProjectFile: empty, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the passphrase is correct-horse-battery-42\n"), 0o644)
	reg, _ := Builtin()
	for _, c := range []struct {
		name    string
		profile sandbox.Profile
		memory  int64
		procs   int64
	}{
		{"the policy's", sandbox.Profile{}, 64 << 20, 7},
		{"a profile above them", sandbox.Profile{Limits: sandbox.Limits{MemoryBytes: 1 << 30, Processes: 4096}}, 64 << 20, 7},
		{"a profile below them", sandbox.Profile{Limits: sandbox.Limits{MemoryBytes: 32 << 20}}, 32 << 20, 7},
	} {
		r, err := NewRouter(reg, Config{Policy: p, Profile: c.profile})
		if err != nil {
			t.Fatal(err)
		}
		env := r.Call(context.Background(), "shell", json.RawMessage(`{"line":"cat notes.txt"}`))
		if env.Status != OK || strings.Contains(env.Text(), "correct-horse") || !strings.Contains(env.Text(), "[redacted]") {
			t.Errorf("%s: the declared secret reached the model: %s", c.name, env.Text())
		}
		got := map[string]int64{}
		for _, l := range env.Result().Limits {
			got[l.Limit] = l.Value
		}
		if got[sandbox.LimitMemory] != c.memory || got[sandbox.LimitProcesses] != c.procs {
			t.Errorf("%s: limits %v, want memory %d and processes %d", c.name, got, c.memory, c.procs)
		}
		r.Close("done")
	}
}
