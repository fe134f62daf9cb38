package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/toolchain"
)

// TestToolchainPresets: every preset a row fetches through is one the
// policy knows.
func TestToolchainPresets(t *testing.T) {
	for _, r := range toolchain.Table() {
		for _, m := range r.Managers {
			for _, name := range m.Presets {
				if len(policy.PresetHosts(name)) == 0 {
					t.Errorf("%s/%s fetches through preset %q, which the policy does not have", r.Name, m.Name, name)
				}
			}
		}
	}
}

// TestHostCachesVetted: a host cache that is protected, holds a protected
// path, or overlaps the workspace is never exposed.
func TestHostCachesVetted(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// HOME is where a Gradle home's caches would be: exposing those
	// would expose ~/.ssh.
	home, ws := filepath.Join(root, "g", "caches"), filepath.Join(root, "ws")
	for _, d := range []string{filepath.Join(home, ".ssh", "cache", "download"), filepath.Join(home, "go", "pkg", "mod", "cache", "download"), filepath.Join(ws, "mod", "cache", "download")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{Workspace: ws, Home: home, NoFiles: true, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	names := func(env ...string) []string {
		var out []string
		for _, h := range HostCaches(append([]string{"HOME=" + home}, env...), p) {
			out = append(out, h.Name+"="+h.Path)
		}
		return out
	}
	if got := names(); len(got) != 1 || got[0] != "go-mod-download="+filepath.Join(home, "go/pkg/mod/cache/download") {
		t.Fatalf("the default: %v", got)
	}
	goDefault := "go-mod-download=" + filepath.Join(home, "go/pkg/mod/cache/download")
	for env, want := range map[string]string{
		"GOMODCACHE=" + filepath.Join(home, ".ssh"):    "",
		"GOMODCACHE=" + filepath.Join(ws, "mod"):       "",
		"GRADLE_USER_HOME=" + filepath.Join(root, "g"): goDefault,
	} {
		got := names(env)
		if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("%s: exposed %v", env, got)
		}
	}
}

// TestNetworkOffContext: calls made with NetworkOff run their commands
// with the network off whatever the run's profile says; the router's
// Sandbox says what the preflight found.
func TestNetworkOffContext(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, nil)
	f.r.cfg.Profile.Network = sandbox.NetworkFull
	network := func(ctx context.Context) any {
		env := f.r.Call(ctx, "shell", json.RawMessage(`{"line":"true"}`))
		data, _ := env.Result().Data.(map[string]any)
		return data["network"]
	}
	if got := network(NetworkOff(context.Background())); got != "off" {
		t.Fatalf("with NetworkOff: network %v", got)
	}
	rung, net, err := f.r.Sandbox(context.Background())
	if err != nil || rung != sandbox.RungBwrap || net != sandbox.NetworkFull {
		t.Fatalf("Sandbox: %q %q %v", rung, net, err)
	}
}
