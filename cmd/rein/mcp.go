package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/reinhq/rein/mcpserver"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
)

func newMCPCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf                     commonFlags
		tf                     traceFlag
		lf                     limitFlags
		nf                     netFlags
		surface, approve, rung string
		httpAddr, tokenFile    string
		noToken                bool
		tlsCert, tlsKey        string
	)
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve a surface of rein's tools to MCP clients, over stdio or streamable HTTP",
		Long: `Serve the tools of a surface (default coding) over MCP: on stdin and
stdout, or with --http ADDR over streamable HTTP. Each session is a run in
the trace and its background handles die with it. An ask goes to the client
through elicitation; a client that cannot answer gets a denial naming
--approve (all or none decides asks without the client).

Over HTTP every request needs a bearer token: REIN_MCP_TOKEN, else the
one in --token-file (default ~/.config/rein/mcp-token), made with a fresh
token (mode 0600) when it does not exist; its path is printed for the
client's configuration. --no-token serves loopback without one. A request
whose Origin is another site's is refused. --tls-cert and --tls-key serve
HTTPS.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.extraRules, cf.networkFlag = nf.rules(), nf.network
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			var approver policy.Approver
			switch approve {
			case "":
			case "all":
				approver = policy.AllowAll{}
			case "none":
				approver = policy.DenyAll{}
			default:
				return &exitError{exitUsage, fmt.Sprintf("--approve %q: use all or none", approve)}
			}
			limits, err := lf.limits(p.Limits, p.Settings)
			if err != nil {
				return err
			}
			token := ""
			if httpAddr != "" {
				if token, err = mcpToken(tokenFile, noToken, httpAddr, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			// The token is a secret like the environment's: never printed
			// or stored.
			store, red, err := tf.openFor(p, token)
			if err != nil {
				return err
			}
			defer store.Close()
			runs, flush := exportOnEnd(cmd.ErrOrStderr(), p, store, red)
			defer flush()
			reg, err := tool.Builtin()
			if err != nil {
				return err
			}
			if p.Run.Web {
				// [run] web = true: the surface with the web tools.
				if surface, err = tool.WebSurface(reg, surface, p.WebSearchURL != ""); err != nil {
					return &exitError{exitUsage, err.Error()}
				}
			}
			srv, err := mcpserver.New(mcpserver.Config{Registry: reg, Surface: surface, Approver: approver, Run: func() (tool.Config, error) {
				return tool.Config{Policy: p, Store: runs, Redactor: red, WebSearchURL: p.WebSearchURL, Profile: sandbox.Profile{Rung: sandbox.Rung(rung), Limits: limits}}, nil
			}})
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
			defer stop()
			if httpAddr == "" {
				return srv.Run(ctx, &mcp.StdioTransport{})
			}
			if (tlsCert == "") != (tlsKey == "") {
				return &exitError{exitUsage, "--tls-cert and --tls-key go together"}
			}
			hs := &http.Server{Addr: httpAddr, Handler: mcpHandler(srv.MCP(), token, httpAddr)}
			go func() {
				<-ctx.Done()
				hs.Close()
			}()
			fmt.Fprintf(cmd.ErrOrStderr(), "rein mcp: serving the %s surface on %s\n", surface, httpAddr)
			if tlsCert != "" {
				err = hs.ListenAndServeTLS(tlsCert, tlsKey)
			} else {
				err = hs.ListenAndServe()
			}
			if err == http.ErrServerClosed {
				return nil
			}
			return err
		},
	}
	cf.register(cmd)
	tf.register(cmd)
	f := cmd.Flags()
	lf.register(f)
	nf.register(f, "")
	f.StringVar(&surface, "surface", tool.SurfaceCoding, "the tool set served: "+tool.SurfaceCoding+" or "+tool.SurfaceReadOnly)
	f.StringVar(&approve, "approve", "", "answer asks without the client: all or none (default: ask the client through elicitation)")
	f.StringVar(&rung, "rung", "", "the sandbox rung for commands (default: the policy's sandbox.rung)")
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address (such as 127.0.0.1:8765) instead of stdio")
	f.StringVar(&tokenFile, "token-file", "", "the file holding the bearer token HTTP clients must send, made when it does not exist (default ~/.config/rein/mcp-token; REIN_MCP_TOKEN overrides it)")
	f.BoolVar(&noToken, "no-token", false, "serve HTTP on loopback without a token (every local user and web page that reaches the port can call the tools as you)")
	f.StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate")
	f.StringVar(&tlsKey, "tls-key", "", "and this key")
	return cmd
}

// mcpToken is the bearer token HTTP clients must send: REIN_MCP_TOKEN,
// else the token file's (made with a fresh token when it does not exist),
// or none with --no-token, on loopback only.
func mcpToken(file string, none bool, addr string, stderr io.Writer) (string, error) {
	if none {
		if !loopback(addr) {
			return "", &exitError{exitUsage, fmt.Sprintf("--no-token: --http %s is not a loopback address, and off loopback a token is required", addr)}
		}
		fmt.Fprintf(stderr, "rein mcp: warning: serving %s without a token: every user of this machine, and a web page that reaches the port, can call the tools as you\n", addr)
		return "", nil
	}
	if t := os.Getenv("REIN_MCP_TOKEN"); t != "" {
		return t, nil
	}
	if file == "" {
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", &exitError{exitUsage, "no place for the token file: set HOME, or give --token-file or REIN_MCP_TOKEN"}
			}
			cfg = filepath.Join(home, ".config")
		}
		file = filepath.Join(cfg, "rein", "mcp-token")
	}
	token, made, err := readOrMakeToken(file)
	if err != nil {
		return "", &exitError{exitUsage, "--token-file: " + err.Error()}
	}
	what := "reads the token in"
	if made {
		what = "made a token in"
	}
	fmt.Fprintf(stderr, "rein mcp: %s %s; clients send it as Authorization: Bearer <token>\n", what, file)
	return token, nil
}

// readOrMakeToken reads the token in file, or makes the file (0600) with a
// fresh one when there is none. A file others may read, or that is not a
// regular file, is refused.
func readOrMakeToken(file string) (string, bool, error) {
	if fi, err := os.Lstat(file); err == nil && !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file (%s)", file, fi.Mode().Type())
	}
	f, err := os.OpenFile(file, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		var b [32]byte
		rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", false, err
		}
		nf, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, err
		}
		_, err = nf.WriteString(token + "\n")
		if cerr := nf.Close(); err == nil {
			err = cerr
		}
		return token, true, err
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", file)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("%s may be read by others (mode %04o): chmod 600 it", file, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", false, err
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", false, fmt.Errorf("%s holds a token of %d characters; at least 16 are needed", file, len(token))
	}
	return token, false, nil
}

// mcpHandler is the streamable HTTP handler, behind the bearer token when
// there is one, and refusing a request whose Origin names another site
// than the server's own address (a web page in a local browser, or one
// whose name was rebound to loopback).
func mcpHandler(s *mcp.Server, token, addr string) http.Handler {
	// An idle session ends, and with it its run and its handles.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !ownOrigin(o, addr) {
			http.Error(w, "rein: a request from another origin ("+o+") is refused", http.StatusForbidden)
			return
		}
		if token != "" {
			if got := []byte(r.Header.Get("Authorization")); subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
				http.Error(w, "rein: a bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// ownOrigin reports whether an Origin header names the server listening on
// addr: its host (or, on loopback, any loopback name) and its port.
func ownOrigin(origin, addr string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	oport := u.Port()
	if oport == "" {
		oport = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if oport != port {
		return false
	}
	oh := u.Hostname()
	if oh == host {
		return true
	}
	isLoop := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "localhost" || ip != nil && ip.IsLoopback()
	}
	return loopback(addr) && isLoop(oh)
}

// loopback reports whether addr listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
