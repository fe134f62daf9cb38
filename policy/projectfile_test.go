package policy

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/workspace"
)

// TestProjectFileNoLink: the project policy is read beneath the workspace
// as the user named it, no link followed, and trust is keyed by that name.
// A trusted project A and a project B whose agent links B/.rein to A's:
// B must never load A's policy as its own, trusted.
func TestProjectFileNoLink(t *testing.T) {
	f := newFixture(t)
	projA := filepath.Join(filepath.Dir(f.ws), "projA")
	aFile := filepath.Join(projA, ".rein", "policy.toml")
	f.write(aFile, "mode = \"auto\"\n[exec]\nallow = [\"frob *\"]\n")
	oA := f.options()
	oA.Workspace = projA
	if _, _, _, err := Trust(oA); err != nil {
		t.Fatal(err)
	}
	if p, err := Load(oA); err != nil || p.Mode != ModeAuto {
		t.Fatalf("A itself: %v %v", p, err)
	}

	reset := func() {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(f.ws, ".rein")); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(name, want string) {
		t.Helper()
		done := make(chan struct{})
		var err error
		go func() { _, err = Load(f.options()); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: loading the policy hangs", name)
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ".rein") {
			t.Errorf("%s: got %v, want an error saying %q", name, err, want)
		}
	}

	// .rein as a link to A's .rein, the attack of the round.
	reset()
	if err := os.Symlink("../projA/.rein", filepath.Join(f.ws, ".rein")); err != nil {
		t.Fatal(err)
	}
	refused(".rein link", "symbolic link")
	// policy.toml itself a link, as a repository may commit it.
	reset()
	f.write(filepath.Join(f.ws, ".rein", "x"), "")
	if err := os.Symlink(aFile, f.proj); err != nil {
		t.Fatal(err)
	}
	refused("policy.toml link", "symbolic link")
	// A link that stays inside the workspace is refused too.
	reset()
	f.write(filepath.Join(f.ws, "src", "pol.toml"), "mode = \"auto\"\n")
	if err := os.MkdirAll(filepath.Join(f.ws, ".rein"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../src/pol.toml", f.proj); err != nil {
		t.Fatal(err)
	}
	refused("inner link", "symbolic link")
	// A directory, and (on Unix) a FIFO with no writer: refused, at once.
	reset()
	if err := os.MkdirAll(f.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	refused("directory", "a directory, not a regular file")
	if runtime.GOOS != "windows" {
		reset()
		if err := os.MkdirAll(filepath.Join(f.ws, ".rein"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := mkfifo(f.proj); err != nil {
			t.Fatal(err)
		}
		refused("fifo", "a FIFO, not a regular file")
	}

	// A copy of A's bytes in B is B's file: untrusted, narrowing only.
	reset()
	data, err := os.ReadFile(aFile)
	if err != nil {
		t.Fatal(err)
	}
	f.write(f.proj, string(data))
	p, err := Load(f.options())
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeAsk || p.Sources[len(p.Sources)-1].State != "untrusted" {
		t.Errorf("a copy of a trusted file was trusted in another project: mode %s, %+v", p.Mode, p.Sources[len(p.Sources)-1])
	}

	// The workspace as the user names it is the key: A reached through a
	// link is another name, so untrusted until trusted under it; A under
	// its own name stays trusted.
	alias := filepath.Join(filepath.Dir(f.ws), "alias")
	if err := os.Symlink(projA, alias); err != nil {
		t.Fatal(err)
	}
	oAlias := f.options()
	oAlias.Workspace = alias
	p, err = Load(oAlias)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Sources[len(p.Sources)-1]; got.State != "untrusted" || got.Path != filepath.Join(alias, ".rein", "policy.toml") {
		t.Errorf("A through a link: %+v", got)
	}
	if p, err := Load(oA); err != nil || p.Mode != ModeAuto {
		t.Errorf("A lost its trust: %v", err)
	}
	// rein trust refuses what Load refuses.
	reset()
	if err := os.Symlink("../projA/.rein", filepath.Join(f.ws, ".rein")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Trust(f.options()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("trust followed a link: %v", err)
	}
}

// TestPolicyFileBounded: a policy file larger than any policy is refused
// rather than read whole.
func TestPolicyFileBounded(t *testing.T) {
	f := newFixture(t)
	f.write(f.proj, "# "+strings.Repeat("x", maxPolicyFile)+"\n")
	if _, err := Load(f.options()); err == nil || !strings.Contains(err.Error(), "more than 4 MiB") {
		t.Errorf("got %v", err)
	}
}

// TestHostConfigProtected: every name of the host configuration table is
// write-protected at the top and below it, as a file and (where it may be
// one) as a directory, in auto mode, for the file tools and a redirect.
func TestHostConfigProtected(t *testing.T) {
	f := newFixture(t)
	p := f.load(ModeAuto)
	for _, h := range workspace.HostConfig {
		for _, rel := range []string{h.Name, "pkg/" + h.Name, h.Name + "/x.json"} {
			if rel == h.Name+"/x.json" && strings.Contains(h.Name[1:], ".") {
				continue // a file's name
			}
			abs := filepath.Join(f.ws, rel)
			for _, act := range []Act{ActWrite, ActDelete} {
				if v := p.CheckPath(act, abs); v.Decision != Deny {
					t.Errorf("%s %s: %s (%s)", act, rel, v.Decision, v.Reason)
				}
			}
			if v := f.check(p, "echo x > "+rel); v.Decision != Deny {
				t.Errorf("echo x > %s: %s (%s)", rel, v.Decision, v.Reason)
			}
			if v := p.CheckPath(ActRead, abs); v.Decision != Allow {
				t.Errorf("read %s: %s (%s)", rel, v.Decision, v.Reason)
			}
		}
	}
}

// TestResultsPerRunSetting: [limits] results_per_run is read as a size;
// an untrusted project file can lower it, never raise it.
func TestResultsPerRunSetting(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, "[limits]\nresults_per_run = \"256MiB\"\n")
	f.write(f.proj, "[limits]\nresults_per_run = \"1GiB\"\n")
	p, err := Load(f.options())
	if err != nil || p.ResultsPerRun != 256<<20 {
		t.Fatalf("%v %d", err, p.ResultsPerRun)
	}
	f.write(f.proj, "[limits]\nresults_per_run = \"64MiB\"\n")
	if p, err := Load(f.options()); err != nil || p.ResultsPerRun != 64<<20 {
		t.Fatalf("%v %d", err, p.ResultsPerRun)
	}
	f.write(f.proj, "[limits]\nresults_per_run = \"0\"\n")
	if _, err := Load(f.options()); err == nil || !strings.Contains(err.Error(), "results_per_run") {
		t.Fatalf("a zero size: %v", err)
	}
}

// TestNetExamplesAsDecided: a net rule's examples are matched as the rule
// decides targets: a deny's path in any letters, an allow's byte for byte.
func TestNetExamplesAsDecided(t *testing.T) {
	f := newFixture(t)
	f.write(f.user, `[[rule]]
act = "net"
effect = "deny"
pattern = "api.example.com:80/admin*"
match = ["api.example.com:80/ADMIN/x"]
`)
	if _, err := Load(f.options()); err != nil {
		t.Errorf("a deny's example in other letters: %v", err)
	}
	f.write(f.user, `[[rule]]
act = "net"
effect = "allow"
pattern = "files.example.com:80/pub/*"
not_match = ["files.example.com:80/PUB/x"]
`)
	if _, err := Load(f.options()); err != nil {
		t.Errorf("an allow's not_match in other letters: %v", err)
	}
}
