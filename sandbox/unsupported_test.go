//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/reinhq/rein/shell"
)

// TestUnsupported: off Linux every way to run refuses with the typed
// refusal naming the platform, and nothing starts.
func TestUnsupported(t *testing.T) {
	Main()
	line, err := shell.Parser{}.Parse("true")
	if err != nil {
		t.Fatal(err)
	}
	p := Profile{Workspace: t.TempDir()}
	want := "sandbox: unavailable: rein's sandbox needs Linux (bubblewrap or Landlock); this is " + runtime.GOOS + "/" + runtime.GOARCH + ": run rein on a Linux host or in a Linux virtual machine"
	pool := NewPool()
	defer pool.Close()
	for name, run := range map[string]func() error{
		"Run":        func() error { _, err := Run(context.Background(), line, p, nil, nil); return err },
		"Start":      func() error { _, err := Start(context.Background(), line, p, nil, nil); return err },
		"ChooseRung": func() error { _, _, err := ChooseRung(context.Background(), p); return err },
		"Pool.Run":   func() error { _, err := pool.Run(context.Background(), line, p, nil, nil); return err },
	} {
		err := run()
		var se *Error
		if !errors.As(err, &se) || se.Status != Unavailable || !errors.Is(err, ErrUnsupported) || err.Error() != want {
			t.Errorf("%s: %v; want %q, wrapping ErrUnsupported", name, err, want)
		}
	}
	if pf := Preflight(context.Background(), RungBwrap, p.Workspace, true); pf.OK || !pf.Terminal {
		t.Errorf("Preflight = %+v; want a terminal failure", pf)
	}
}
