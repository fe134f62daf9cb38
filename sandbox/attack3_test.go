//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAttack3LostTrackKeepsSlot: a run whose groups were found not empty
// after its early result (confirm, through a pool on the landlock rung)
// keeps its HOME and TMPDIR slot, marked and never taken again, as a
// poisoned run does: a process it lost track of may still write there,
// and the next run, or the next warm sandbox, would be given that HOME.
func TestAttack3LostTrackKeepsSlot(t *testing.T) {
	ws := workspaceDir(t)
	s := slotsOf(ws)
	n, home, _, err := s.takeSlot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(filepath.Dir(home))
		os.Remove(filepath.Dir(home) + ".poisoned")
		os.Remove(filepath.Dir(home) + ".lock")
	})
	left := filepath.Join(home, "left")
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// As finish and confirm leave it: a result that was not poisoned,
	// then a group that did not empty.
	r := &run{rung: RungLandlock, slot: n, slotOf: s, res: &Result{}, lostTrack: true}
	r.cleanup()
	m, next, _, err := s.takeSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.releaseSlot(m, false)
	if m == n || next == home {
		t.Fatalf("the slot of a run that lost track of a process was given again: %d, %s", m, next)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the lost run's HOME was emptied, as a live process of it may still use it: %v", err)
	}
}
