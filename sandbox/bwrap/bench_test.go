//go:build linux

package bwrap

import (
	"os/exec"
	"testing"
)

// BenchmarkBwrapTrue runs /bin/true in the full view rein uses (protected
// and masked paths, private /etc secrets, every namespace), building the
// argv each time. Compare with BenchmarkBareBwrapTrue for the view's cost.
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap := bwrapPath(b)
	f := newSandbox(b)
	for b.Loop() {
		cmd, err := Command(bwrap, f.view, []string{"/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		err = cmd.Start()
		CloseFiles(cmd)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareBwrapTrue runs /bin/true under the least bubblewrap can do
// with a user namespace: the host's root bound read-only.
func BenchmarkBareBwrapTrue(b *testing.B) {
	bwrap := bwrapPath(b)
	for b.Loop() {
		if err := exec.Command(bwrap, "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
