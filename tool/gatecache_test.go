//go:build linux

package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
)

// TestGateGrant: a line the gate's grant names exactly is allowed where
// the policy asks, and only that line: another line is asked (and
// rejected), a deny rule still denies it, opaque code is never granted,
// and a call without the grant is asked as ever.
func TestGateGrant(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAsk, []policy.Rule{{Act: policy.ActExec, Effect: policy.Deny, Pattern: "touch denied"}}, policy.DenyAll{})
	call := func(ctx context.Context, line string) *Envelope {
		data, _ := json.Marshal(map[string]string{"line": line})
		return f.r.Call(ctx, "shell", data)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		grant, line string
		status      Status
		reason      string
	}{
		{"", "touch made", Denied, "asks"},
		{"touch made", "touch made", OK, ""},
		{"touch made", "touch other", Denied, "asks"},
		{"touch made", "touch  made", Denied, "asks"},
		{"touch denied", "touch denied", Denied, "deny rule"},
		{"touch $FOO/x", "touch $FOO/x", Denied, "opaque"},
	} {
		c := ctx
		if tc.grant != "" {
			c = GateGrant(ctx, tc.grant)
		}
		env := call(c, tc.line)
		if env.Status != tc.status || !strings.Contains(env.Reason+env.Text(), tc.reason) {
			t.Errorf("grant %q, line %q: %s %q; want %s (%s)", tc.grant, tc.line, env.Status, env.Reason, tc.status, tc.reason)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "made")); err != nil {
		t.Fatalf("the granted line did not run: %v", err)
	}
	for _, n := range []string{"other", "denied"} {
		if _, err := os.Stat(filepath.Join(f.ws, n)); err == nil {
			t.Fatalf("%s was made", n)
		}
	}
}

// TestGateCaches: the baseline's caches are made empty; an attempt's are
// fresh, over the standard library's and the baseline's Go build caches,
// with what the baseline used laid out when it says; the run's are
// removed whole, whatever modes the toolchain left.
func TestGateCaches(t *testing.T) {
	state := t.TempDir()
	t.Setenv("REIN_CACHE_DIR", state)
	ws := filepath.Join(t.TempDir(), "ws")
	g := NewGateCaches("20261206T120000-abc/../x", ws)
	if !strings.HasPrefix(g.dir, filepath.Join(state, "gate")+"/") || strings.Contains(g.dir, "..") {
		t.Fatalf("the run's gate caches are at %s", g.dir)
	}
	if err := g.EmptyBaseline(); err != nil {
		t.Fatal(err)
	}
	cs := g.Baseline(context.Background()).Value(ownCachesKey{}).(*sandbox.CacheSet)
	if cs.Dir != g.seed() || !slices.Equal(cs.GoSeeds, []string{filepath.Join(std(), "go-build")}) {
		t.Fatalf("the baseline's caches: %+v", cs)
	}
	// What the baseline built, and the standard library's.
	for _, d := range []string{filepath.Join(g.seed(), "go-build"), filepath.Join(std(), "go-build")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(g.seed(), "go-build", "x"), nil, 0o600)
	ctx, done, err := g.Attempt(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done()
	cs = ctx.Value(ownCachesKey{}).(*sandbox.CacheSet)
	if !slices.Equal(cs.GoSeeds, []string{filepath.Join(std(), "go-build"), filepath.Join(g.seed(), "go-build")}) || !cs.Fresh || cs.Dir != "" || cs.GoUsed != "" {
		t.Fatalf("an attempt's caches: %+v", cs)
	}
	// With the list of what the baseline used, the attempt lays it out.
	os.WriteFile(filepath.Join(g.seed(), "go-build", "rein-used"), nil, 0o600)
	ctx, _, _ = g.Attempt(context.Background())
	if cs = ctx.Value(ownCachesKey{}).(*sandbox.CacheSet); cs.GoUsed != filepath.Join(g.seed(), "go-build", "rein-used") {
		t.Fatalf("an attempt's caches: %+v", cs)
	}
	// A module cache's read-only directories go with the run's.
	ro := filepath.Join(g.seed(), "go-mod", "example.com", "m@v1.0.0")
	os.MkdirAll(ro, 0o700)
	os.WriteFile(filepath.Join(ro, "go.mod"), nil, 0o444)
	os.Chmod(ro, 0o555)
	os.Chmod(filepath.Dir(ro), 0o555)
	// The baseline again: made empty.
	if err := g.EmptyBaseline(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(g.seed(), "go-build", "x")); err == nil {
		t.Fatal("the baseline's caches were not made empty")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(g.dir); err == nil {
		t.Fatal("the run's gate caches outlived it")
	}
	if _, err := os.Lstat(filepath.Join(std(), "go-build")); err != nil {
		t.Fatalf("the standard library's caches went with one run's: %v", err)
	}
}
