//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/mcpserver"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

// TestMCPStdio: the Go SDK's client drives rein mcp over stdio, as an MCP
// client configured to run it does.
func TestMCPStdio(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	cmd := exec.Command(os.Args[0], "mcp", "--approve", "all", "--deny", "git push*")
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
	cmd.Dir = ws
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("%v %+v", err, tools)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"line": "echo hello"}})
	if err != nil || r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "hello") {
		t.Fatalf("%v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"line": "git push origin main"}})
	if err != nil || !r.IsError || r.StructuredContent.(map[string]any)["rule"] != "git push*" {
		t.Fatalf("%v %+v", err, r)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPHTTP: streamable HTTP behind a bearer token; a client without it
// is refused; off loopback a token is required to start.
func TestMCPHTTP(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := tool.Builtin()
	srv, err := mcpserver.New(mcpserver.Config{Registry: reg, Surface: tool.SurfaceReadOnly, Approver: policy.DenyAll{}, Run: func() (tool.Config, error) {
		return tool.Config{Policy: p, Profile: sandbox.Profile{}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(mcpHandler(srv.MCP(), "s3cret-token", "127.0.0.1:0"))
	defer hs.Close()
	ctx := context.Background()
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil); err == nil {
		t.Fatal("a client without the token connected")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL,
		HTTPClient: &http.Client{Transport: bearer{"s3cret-token"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 5 {
		t.Fatalf("the read-only surface: %v %+v", err, tools)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "main.go"}})
	if err != nil || r.IsError {
		t.Fatalf("%v %+v", err, r)
	}
	if code, _, errOut := rein(t, "mcp", "--http", "0.0.0.0:0", "--no-token"); code != exitUsage || !strings.Contains(errOut, "off loopback a token is required") {
		t.Fatalf("off loopback without a token: %d %s", code, errOut)
	}
}

// TestMCPHTTPToken: over HTTP a token is the default: rein mcp makes the
// token file (0600) when there is none and says where, reads it when there
// is one, refuses a file others can read; a request without the token is
// refused with 401, one from another origin with 403 (token or not); and
// --no-token serves loopback without one, with a warning.
func TestMCPHTTPToken(t *testing.T) {
	requireBwrap(t)
	home, ws := docFixture(t)
	start := func(env []string, args ...string) (string, *bytes.Buffer, func()) {
		t.Helper()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(os.Args[0], append([]string{"mcp", "--surface", "read-only", "--http", addr}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"REIN_TEST_MAIN=1", "HOME=" + home, "XDG_CONFIG_HOME="}, env...)...)
		cmd.Dir = ws
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		return addr, &errOut, func() { cmd.Process.Kill(); cmd.Wait() }
	}
	post := func(addr, token, origin string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	file := filepath.Join(home, ".config", "rein", "mcp-token")
	addr, errOut, stop := start(nil)
	data, err := os.ReadFile(file)
	fi, _ := os.Stat(file)
	token := strings.TrimSpace(string(data))
	if err != nil || len(token) != 64 || fi.Mode().Perm() != 0o600 || !strings.Contains(errOut.String(), "made a token in "+file) {
		t.Fatalf("the token file: %v %q %v\n%s", err, token, fi, errOut)
	}
	if got := post(addr, "", ""); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := post(addr, token, ""); got != http.StatusOK {
		t.Errorf("the token: %d", got)
	}
	_, port, _ := net.SplitHostPort(addr)
	for origin, want := range map[string]int{"http://evil.example:" + port: 403, "http://127.0.0.1.nip.io:" + port: 403, "http://localhost:1": 403,
		"null": 403, "http://localhost:" + port: 200, "http://" + addr: 200} {
		if got := post(addr, token, origin); got != want {
			t.Errorf("Origin %s: %d, want %d", origin, got, want)
		}
	}
	stop()
	// Read again, not remade; a file others can read is refused.
	_, errOut, stop = start(nil)
	stop()
	if again, _ := os.ReadFile(file); string(again) != string(data) || !strings.Contains(errOut.String(), "reads the token in "+file) {
		t.Errorf("the token file was remade: %s", errOut)
	}
	os.Chmod(file, 0o644)
	if code, _, errOut := rein(t, "mcp", "--http", "127.0.0.1:0", "--token-file", file); code != exitUsage || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a token file others can read: %d %s", code, errOut)
	}
	// --no-token on loopback: served, with the warning; Origin still checked.
	addr, errOut, stop = start(nil, "--no-token")
	defer stop()
	if got := post(addr, "", ""); got != http.StatusOK || !strings.Contains(errOut.String(), "without a token") {
		t.Errorf("--no-token: %d %s", got, errOut)
	}
	if got := post(addr, "", "http://evil.example:"+strings.Split(addr, ":")[1]); got != http.StatusForbidden {
		t.Errorf("--no-token, another origin: %d", got)
	}
}

// TestMCPTypeScriptClient: the official TypeScript SDK's client drives
// rein mcp over stdio (.ci/run installs it with npm ci).
func TestMCPTypeScriptClient(t *testing.T) {
	requireBwrap(t)
	dir, _ := filepath.Abs("testdata/tsclient")
	missing := func(why string) {
		testenv.Missing(t, "%v", why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		missing("the TypeScript SDK is not installed: npm ci --prefix " + dir)
	}
	_, ws := docFixture(t)
	// A file longer than the observation cap, whose last line only a
	// read_result page shows.
	var long strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&long, "line %d of a long file\n", i)
	}
	long.WriteString("the very last line\n")
	if err := os.WriteFile(filepath.Join(ws, "long.txt"), []byte(long.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"), os.Args[0], "mcp", "--approve", "all", "--deny", "git push*")
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
	cmd.Dir = ws
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools   []string
		Schemas int
		OK      struct {
			IsError                      bool
			Text, Status, StructuredText string
		}
		Denied struct {
			IsError                     bool
			Rule, Layer, StructuredText string
		}
		Handle, Polled, Page string
		Long                 struct {
			Elided int
			Text   string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tools) < 10 || got.Schemas != len(got.Tools) || got.OK.IsError || got.OK.Status != "ok" ||
		!strings.Contains(got.OK.Text, "hello from ts") || got.OK.StructuredText != got.OK.Text ||
		!got.Denied.IsError || got.Denied.Rule != "git push*" || got.Denied.Layer != "flags" ||
		!strings.Contains(got.Denied.StructuredText, `denied by deny rule "git push*"`) {
		t.Fatalf("%+v", got)
	}
	// What a model reads in the structured content alone: the handle to
	// poll and what it printed, the head of a long result and the id to
	// page through, and the page with the end of it.
	if got.Handle == "" || !strings.Contains(got.Polled, "from the background") {
		t.Fatalf("the background line through its handle: %q, %q", got.Handle, got.Polled)
	}
	if got.Long.Elided == 0 || !strings.Contains(got.Long.Text, "line 0 of a long file") || !strings.Contains(got.Long.Text, "read_result") ||
		!strings.Contains(got.Page, "the very last line") {
		t.Fatalf("a long result and its page: %+v, %q", got.Long, got.Page)
	}
}

// TestMCPHTTPSProcess: rein mcp as a process serves HTTPS from the
// certificate flags, behind the token from the environment, off loopback.
func TestMCPHTTPSProcess(t *testing.T) {
	requireBwrap(t)
	_, ws := docFixture(t)
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, certPEM, 0o600)
	os.WriteFile(key, keyPEM, 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(os.Args[0], "mcp", "--surface", "read-only", "--http", "0.0.0.0:"+strings.Split(addr, ":")[1], "--tls-cert", cert, "--tls-key", key)
	cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1", "REIN_MCP_TOKEN=tls-token-1")
	cmd.Dir = ws
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	client := &http.Client{Transport: bearerOver{"tls-token-1", tr}}
	var cs *mcp.ClientSession
	for i := 0; i < 100; i++ {
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: "https://" + addr, HTTPClient: client, MaxRetries: -1}, nil)
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_dir", Arguments: map[string]any{"path": "."}})
	if err != nil || r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "main.go") {
		t.Fatalf("%v %+v", err, r)
	}
}

type bearerOver struct {
	token string
	rt    http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// selfSigned makes a certificate for 127.0.0.1.
func selfSigned(t *testing.T) ([]byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rein test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}
