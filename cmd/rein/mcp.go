package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
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

Off loopback, HTTP requires a bearer token: --token-file FILE or the
REIN_MCP_TOKEN environment variable. --tls-cert and --tls-key serve HTTPS.`,
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
			token := os.Getenv("REIN_MCP_TOKEN")
			if tokenFile != "" {
				data, err := os.ReadFile(tokenFile)
				if err != nil {
					return &exitError{exitUsage, "--token-file: " + err.Error()}
				}
				token = strings.TrimSpace(string(data))
			}
			// The token is a secret like the environment's: never printed
			// or stored.
			store, red, err := tf.openFor(p, token)
			if err != nil {
				return err
			}
			defer store.Close()
			reg, err := tool.Builtin()
			if err != nil {
				return err
			}
			srv, err := mcpserver.New(mcpserver.Config{Registry: reg, Surface: surface, Approver: approver, Run: func() (tool.Config, error) {
				return tool.Config{Policy: p, Store: store, Redactor: red, Profile: sandbox.Profile{Rung: sandbox.Rung(rung), Limits: limits}}, nil
			}})
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if httpAddr == "" {
				return srv.Run(ctx, &mcp.StdioTransport{})
			}
			if token == "" && !loopback(httpAddr) {
				return &exitError{exitUsage, fmt.Sprintf("--http %s is not a loopback address: give a bearer token (--token-file or REIN_MCP_TOKEN)", httpAddr)}
			}
			if (tlsCert == "") != (tlsKey == "") {
				return &exitError{exitUsage, "--tls-cert and --tls-key go together"}
			}
			hs := &http.Server{Addr: httpAddr, Handler: mcpHandler(srv.MCP(), token)}
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
	f.StringVar(&tokenFile, "token-file", "", "a file holding the bearer token HTTP clients must send (or REIN_MCP_TOKEN)")
	f.StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate")
	f.StringVar(&tlsKey, "tls-key", "", "and this key")
	return cmd
}

// mcpHandler is the streamable HTTP handler, behind the bearer token when
// there is one.
func mcpHandler(s *mcp.Server, token string) http.Handler {
	// An idle session ends, and with it its run and its handles.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := []byte(r.Header.Get("Authorization")); subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
			http.Error(w, "rein: a bearer token is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
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
