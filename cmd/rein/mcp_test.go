//go:build linux

package main

import (
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
	hs := httptest.NewServer(mcpHandler(srv.MCP(), "s3cret-token"))
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
	if code, _, errOut := rein(t, "mcp", "--http", "0.0.0.0:0"); code != exitUsage || !strings.Contains(errOut, "bearer token") {
		t.Fatalf("off loopback without a token: %d %s", code, errOut)
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
