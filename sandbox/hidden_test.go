//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox/confine"
	"github.com/reinhq/rein/shell"
)

// secretsIn is a Hidden for ws hiding what the builtin protected set
// hides by name (.env, *.pem) and the directory keys/ whole.
func secretsIn(ws string) func(string) bool {
	return func(p string) bool {
		base := filepath.Base(p)
		pem, _ := filepath.Match("*.pem", base)
		return base == ".env" || pem || p == filepath.Join(ws, "keys")
	}
}

// TestHiddenInWorkspace: the workspace's protected files cannot be read
// from inside, by name, through a link or by renaming them, on either rung,
// while everything else reads as before.
func TestHiddenInWorkspace(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		testenv.WriteFiles(t, ws, map[string]string{
			".env":                  "SECRET-ENV",
			"sub/deep/k.pem":        "SECRET-PEM",
			"sub/deep/ok.txt":       "visible-1",
			"sub/other/ok.txt":      "visible-2",
			"keys/a/b":              "SECRET-KEYS",
			"README":                "visible-3",
			".git/config":           "[core]\n",
			".git/refs/heads/x.pem": "0123\n",
			"sub/deep/.env.txt":     "visible-4",
		}, 0o600)
		// A link beside a hidden file, where Landlock grants entries one by
		// one, is not followed to grant what it leads to.
		outside := filepath.Join(filepath.Dir(ws), "outside")
		testenv.WriteFiles(t, outside, map[string]string{"f": "SECRET-OUTSIDE"}, 0o600)
		if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
			t.Fatal(err)
		}
		p := Profile{Rung: rung, Hidden: secretsIn(ws)}
		lines := []string{
			"sh -c 'cat out/f; echo x > out/g'",
			"cat .env",
			"cat sub/deep/k.pem",
			"cat keys/a/b",
			"sh -c 'ln -s .env l1; cat l1'",
			"sh -c 'ln -s ../../.env sub/other/l2; cat sub/other/l2'",
			"sh -c 'mv .env x; cat x'",
			"sh -c 'ln .env hard; cat hard'",
			"sh -c 'mv sub/deep/k.pem sub/other/k; cat sub/other/k'",
			"sh -c 'mv sub/deep sub/other/deep; cat sub/other/deep/k.pem'",
			"sh -c 'mv sub moved; cat moved/deep/k.pem'",
			"sh -c 'cp .env copy; cat copy'",
			"sh -c 'ls -R keys; find . -name \"*.pem\" -exec cat {} +'",
		}
		if _, err := os.Stat("/usr/bin/strings"); err == nil {
			lines = append(lines, "strings @.env")
		}
		for _, line := range lines {
			res := runLine(t, ws, line, p)
			if out := res.Stdout.Text + res.Stderr.Text; strings.Contains(out, "SECRET") {
				t.Errorf("%s printed a hidden file: %q", line, out)
			}
		}
		for _, rel := range []string{"x", "hard", "sub/other/k", "moved", "copy"} {
			if data, err := os.ReadFile(filepath.Join(ws, rel)); err == nil && strings.Contains(string(data), "SECRET") {
				t.Errorf("%s holds a hidden file's content", rel)
			}
		}
		if _, err := os.Lstat(filepath.Join(outside, "g")); err == nil {
			t.Error("a file was written outside the workspace through a link")
		}
		for rel, want := range map[string]string{".env": "SECRET-ENV", "sub/deep/k.pem": "SECRET-PEM", "keys/a/b": "SECRET-KEYS"} {
			if data, _ := os.ReadFile(filepath.Join(ws, rel)); string(data) != want {
				t.Errorf("%s on the host now holds %q", rel, data)
			}
		}
		// A hidden file keeps its mode and times: on the landlock rung the
		// supervisor that makes these changes beneath the workspace
		// leaves the hidden ones alone.
		before, err := os.Stat(filepath.Join(ws, ".env"))
		if err != nil {
			t.Fatal(err)
		}
		runLine(t, ws, "sh -c 'chmod 666 .env; chmod 777 keys; touch -d 2001-01-01 .env sub/deep/k.pem'", p)
		for rel, mode := range map[string]os.FileMode{".env": before.Mode(), "keys": os.ModeDir | 0o755} {
			after, err := os.Stat(filepath.Join(ws, rel))
			if err != nil || after.Mode() != mode || rel == ".env" && !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("%s changed in the run: %v, %v (was %v)", rel, after.Mode(), after.ModTime(), mode)
			}
		}
		// git's own files are not hidden, whatever their names.
		res := runLine(t, ws, "sh -c 'cat README sub/deep/ok.txt sub/other/ok.txt sub/deep/.env.txt .git/config .git/refs/heads/x.pem'", p)
		if res.Status != OK || res.Stdout.Text != "visible-3visible-1visible-2visible-4[core]\n0123\n" {
			t.Errorf("the files beside the hidden ones: %+v", res)
		}
		// Beneath a directory that holds nothing hidden, work goes on as
		// ever.
		res = runLine(t, ws, "sh -c 'mkdir -p sub/other/new && echo made > sub/other/new/f && cat sub/other/new/f && rm -r sub/other/new'", p)
		if res.Status != OK || res.Stdout.Text != "made\n" {
			t.Errorf("writing beside the hidden files: %+v", res)
		}
	})
}

// TestHiddenNotUTF8: a protected file whose name, or a directory's on the
// way to it, is not UTF-8 is hidden as any other: the names reach the init
// byte for byte.
func TestHiddenNotUTF8(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		testenv.WriteFiles(t, ws, map[string]string{"d\xff/.env": "SECRET-1", "d\xff/k.pem": "SECRET-2", "x\xfe.pem": "SECRET-3", "d\xff/ok.txt": "visible"}, 0o600)
		p := Profile{Rung: rung, Hidden: secretsIn(ws)}
		res := runLine(t, ws, "sh -c 'cat d*/.env d*/k.pem x*.pem; cat d*/ok.txt'", p)
		if out := res.Stdout.Text + res.Stderr.Text; strings.Contains(out, "SECRET") || !strings.Contains(out, "visible") {
			t.Errorf("%q", out)
		}
	})
}

// TestHiddenMadeDuringRun: a protected file a run makes is hidden from
// the runs after it, whose views are listed afresh.
func TestHiddenMadeDuringRun(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		p := Profile{Rung: rung, Hidden: secretsIn(ws)}
		if res := runLine(t, ws, "sh -c 'mkdir -p d && echo SECRET-NEW > d/new.pem && cat d/new.pem'", p); res.Status != OK || res.Stdout.Text != "SECRET-NEW\n" {
			t.Fatalf("%+v", res)
		}
		res := runLine(t, ws, "cat d/new.pem", p)
		if strings.Contains(res.Stdout.Text, "SECRET") {
			t.Errorf("a protected file made by an earlier run was read: %+v", res)
		}
	})
}

// TestHiddenAroundBound: on the landlock rung, directories holding hidden
// files with more entries than it grants one by one refuse the run, with
// the cause named; the bwrap rung hides them all the same.
func TestHiddenAroundBound(t *testing.T) {
	ws := workspaceDir(t)
	dir := filepath.Join(ws, ".conf")
	testenv.WriteFiles(t, ws, map[string]string{".conf/.env": "SECRET"}, 0o600)
	for i := range confine.MaxAround {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := shell.FromArgv([]string{"cat", ".conf/.env"})
	if err != nil {
		t.Fatal(err)
	}
	eachRung(t, func(t *testing.T, rung Rung) {
		res, err := Run(t.Context(), l, Profile{Workspace: ws, Rung: rung, Hidden: secretsIn(ws)}, nil, nil)
		if rung == RungBwrap {
			if err != nil || strings.Contains(res.Stdout.Text, "SECRET") {
				t.Fatalf("%v %+v", err, res)
			}
			return
		}
		var se *Error
		if !errors.As(err, &se) || se.Status != Denied || !strings.Contains(se.Reason, fmt.Sprintf("entries, more than the %d", confine.MaxAround)) {
			t.Fatalf("Run = %v", err)
		}
	})
}

// TestHiddenBounds: past the cap on hidden paths a run is refused, with
// the cause named, rather than started with some left readable.
func TestHiddenBounds(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		for i := 0; i <= maxHidden; i++ {
			if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("k%d.pem", i)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		l, err := shell.FromArgv([]string{"true"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(t.Context(), l, Profile{Workspace: ws, Rung: rung, Hidden: secretsIn(ws)}, nil, nil)
		var se *Error
		if !errors.As(err, &se) || se.Status != Denied || !strings.Contains(se.Reason, "more than the 4096 a run can hide") {
			t.Fatalf("Run = %v", err)
		}
	})
}

// BenchmarkRunListing runs true on each rung in an empty workspace and in
// one of 10,000 files in 200 directories with a .env and a key to hide:
// the difference is what listing the workspace costs a run, before it (to
// hide the protected files and note the repository metadata) and after it
// (to compare the metadata).
func BenchmarkRunListing(b *testing.B) {
	big := filepath.Join(b.TempDir(), "ws")
	for d := range 200 {
		dir := filepath.Join(big, "src", fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	os.WriteFile(filepath.Join(big, ".env"), []byte("SECRET"), 0o600)
	os.WriteFile(filepath.Join(big, "src", "d7", "k.pem"), []byte("SECRET"), 0o600)
	empty := filepath.Join(b.TempDir(), "ws")
	os.Mkdir(empty, 0o755)
	l, err := shell.FromArgv([]string{"true"})
	if err != nil {
		b.Fatal(err)
	}
	for _, rung := range rungs {
		for _, ws := range []struct{ name, dir string }{{"empty", empty}, {"10k", big}} {
			b.Run(string(rung)+"/"+ws.name, func(b *testing.B) {
				requireRung(b, rung)
				p := Profile{Workspace: ws.dir, Rung: rung, Hidden: secretsIn(ws.dir)}
				for b.Loop() {
					if res, err := Run(b.Context(), l, p, nil, nil); err != nil || res.Status != OK {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}
