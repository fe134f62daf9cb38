//go:build linux

package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// TestRefusalCause: a refusal keeps what failed as its cause, so that
// errors.As reaches it, and reads as before.
func TestRefusalCause(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(ws+"-elsewhere", "opt")
	_, _, err = ChooseRung(context.Background(), Profile{Workspace: ws, Rung: RungNone, HostReadPaths: []string{missing}})
	var se *Error
	if !errors.As(err, &se) || se.Status != NotFound {
		t.Fatalf("err = %v; want a not_found refusal", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "stat" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refusal's cause is %#v; want the *fs.PathError of the stat of %s", se.Err, missing)
	}
	if want := "sandbox: not_found: host read path " + missing + ": stat " + missing + ": no such file or directory"; err.Error() != want {
		t.Errorf("err = %q; want %q", err, want)
	}
}
