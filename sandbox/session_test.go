//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
)

// A session passes its caller's streams straight through, binds its home
// files read-only where nothing can rename them away, and passes signals
// on to the program.
func TestSession(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "settings.json"), []byte("{\"hooks\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, out, errf := filepath.Join(host, "in"), filepath.Join(host, "out"), filepath.Join(host, "err")
	os.WriteFile(in, []byte("from stdin\n"), 0o600)
	files := func() (*os.File, *os.File, *os.File) {
		i, _ := os.Open(in)
		o, _ := os.Create(out)
		e, _ := os.Create(errf)
		return i, o, e
	}
	run := func(line string, sigs chan os.Signal, wait func(*Handle)) (*Result, string, string) {
		t.Helper()
		i, o, e := files()
		defer i.Close()
		defer o.Close()
		defer e.Close()
		l, err := shell.Parser{Home: bwrap.SandboxHome}.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		p := Profile{Workspace: ws, Timeout: 20 * time.Minute, Env: []string{"PATH=/usr/bin:/bin"}, Session: &Session{
			Stdin: i, Stdout: o, Stderr: e, Signals: sigs,
			HomeFiles: map[string]string{".claude/settings.json": filepath.Join(host, "settings.json"), ".rein/b": host},
		}}
		h, err := Start(context.Background(), l, p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if wait != nil {
			wait(h)
		}
		res := h.Wait()
		so, _ := os.ReadFile(out)
		se, _ := os.ReadFile(errf)
		return res, string(so), string(se)
	}

	res, so, se := run(`sh -c 'cat; echo out; echo err >&2; cat ~/.claude/settings.json; ls ~/.rein/b'`, nil, nil)
	if res.Status != OK || res.Rung != RungBwrap || so != "from stdin\nout\n{\"hooks\":1}\nerr\nin\nout\nsettings.json\n" || se != "err\n" {
		t.Fatalf("session: %s %q (%s)\nstdout %q\nstderr %q", res.Status, res.Reason, res.Rung, so, se)
	}
	if res.Stdout.Text != "" || res.Stdout.Bytes != 0 {
		t.Errorf("a session's output was captured: %+v", res.Stdout)
	}

	// Neither the file nor its directory can be changed, removed or
	// renamed away and replaced.
	for _, line := range []string{
		`sh -c 'echo x > ~/.claude/settings.json'`,
		`rm -f ~/.claude/settings.json`,
		`mv ~/.claude ~/.claude-old`,
		`mv ~/.claude/settings.json ~/.claude/s2`,
		`mv ~/.rein ~/.rein-old`,
		`sh -c 'echo x > ~/.rein/b/new'`,
	} {
		res, so, se := run(line, nil, nil)
		if res.ExitCode == 0 {
			t.Errorf("%s: succeeded (%s %q %q)", line, res.Status, so, se)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(host, "settings.json")); string(data) != "{\"hooks\":1}\n" {
		t.Errorf("the home file changed: %q", data)
	}

	// A signal reaches the program, which ends as it chooses.
	sigs := make(chan os.Signal, 1)
	res, so, _ = run(`sh -c 'trap "echo got TERM; exit 7" TERM; echo ready; while :; do sleep 0.05; done'`, sigs, func(h *Handle) {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if data, _ := os.ReadFile(out); strings.Contains(string(data), "ready") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		sigs <- syscall.SIGTERM
	})
	if res.ExitCode != 7 || !strings.Contains(so, "got TERM") {
		t.Errorf("SIGTERM passed on: exit %d %s %q, stdout %q", res.ExitCode, res.Status, res.Reason, so)
	}
}

func TestSessionRefusals(t *testing.T) {
	ws := workspaceDir(t)
	for _, c := range []struct {
		p    Profile
		want string
	}{
		{Profile{Workspace: ws, Rung: RungLandlock, Session: &Session{}}, "only on the bwrap rung"},
		{Profile{Workspace: ws, Timeout: 25 * time.Hour, Session: &Session{}}, "above the 24h0m0s ceiling"},
		{Profile{Workspace: ws, Timeout: 11 * time.Minute}, "above the 10m0s ceiling"},
		{Profile{Workspace: ws, Session: &Session{HomeFiles: map[string]string{"../x": "/etc"}}}, "not a clean path inside"},
		{Profile{Workspace: ws, Session: &Session{HomeFiles: map[string]string{"x": ws}}}, "overlaps the workspace"},
		{Profile{Workspace: ws, Session: &Session{HomeFiles: map[string]string{"x": "etc"}}}, "not a clean absolute path"},
		{Profile{Workspace: ws, Session: &Session{Services: []Service{{Port: 3128, Serve: func(net.Listener) {}}}}}, "port 3128"},
		{Profile{Workspace: ws, Session: &Session{Services: []Service{{Port: 0, Serve: func(net.Listener) {}}}}}, "port 0"},
		{Profile{Workspace: ws, Session: &Session{Services: []Service{{Port: 9, Serve: func(net.Listener) {}}, {Port: 9, Serve: func(net.Listener) {}}}}}, "port 9"},
		{Profile{Workspace: ws, Session: &Session{Services: []Service{{Port: 9}}}}, "port 9"},
		{Profile{Workspace: ws, Network: NetworkFull, Session: &Session{Services: []Service{{Port: 9, Serve: func(net.Listener) {}}}}}, "not full"},
	} {
		_, err := Start(context.Background(), &shell.Line{Pipelines: []*shell.Pipeline{{}}}, c.p, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// A session's service answers on the session's own loopback, served by
// this process; no other port of that loopback is open, and when the
// session ends so does the listener.
func TestSessionService(t *testing.T) {
	requireRung(t, RungBwrap)
	ws := workspaceDir(t)
	out := filepath.Join(t.TempDir(), "out")
	var served atomic.Int32
	var ended = make(chan struct{})
	serve := func(l net.Listener) {
		defer close(ended)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			fmt.Fprintf(w, "served %s %s", r.Method, r.URL.Path)
		})}
		srv.Serve(l)
	}
	for _, network := range []Network{NetworkOff, NetworkProxy} {
		ended = make(chan struct{})
		o, _ := os.Create(out)
		l, err := shell.Parser{}.Parse(`sh -c 'curl -sS --noproxy "*" http://127.0.0.1:4100/v1/x; echo; curl -sS --noproxy "*" --max-time 5 http://127.0.0.1:4101/ || echo refused'`)
		if err != nil {
			t.Fatal(err)
		}
		p := Profile{Workspace: ws, Timeout: time.Minute, Env: []string{"PATH=/usr/bin:/bin"}, Network: network,
			Session: &Session{Stdout: o, Stderr: o, Services: []Service{{Port: 4100, Serve: serve}}}}
		if network == NetworkProxy {
			p.Egress = &testEgress{}
		}
		h, err := Start(context.Background(), l, p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := h.Wait()
		o.Close()
		got, _ := os.ReadFile(out)
		if res.Status != OK || !strings.HasPrefix(string(got), "served GET /v1/x\n") || !strings.HasSuffix(string(got), "refused\n") {
			t.Fatalf("%s: %s %q\n%s", network, res.Status, res.Reason, got)
		}
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the service's listener outlived the session", network)
		}
	}
	if served.Load() != 2 {
		t.Errorf("served %d requests, want 2", served.Load())
	}
}
