//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPWeb: with [run] web = true in the user's policy, rein mcp
// offers fetch_url, and search_internet with [web] search_url; a fetch
// of a host the user's allow rule names comes back framed as untrusted
// data. Without it, neither is offered.
func TestMCPWeb(t *testing.T) {
	requireBwrap(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "the port is 8417")
	}))
	defer srv.Close()
	_, ws := docFixture(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	user := filepath.Join(t.TempDir(), "user.toml")
	os.WriteFile(user, []byte(fmt.Sprintf("[net]\nallow = [%q]\n\n[run]\nweb = true\n\n[web]\nsearch_url = %q\n", host, srv.URL+"/search")), 0o644)
	for _, web := range []bool{true, false} {
		cmd := exec.Command(os.Args[0], "mcp", "--approve", "none")
		cmd.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
		if web {
			cmd.Env = append(cmd.Env, "REIN_USER_POLICY="+user)
		}
		cmd.Dir = ws
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		offered := strings.Contains(strings.Join(names, " "), "fetch_url") && strings.Contains(strings.Join(names, " "), "search_internet")
		if offered != web {
			t.Fatalf("web %v: the tools offered: %v", web, names)
		}
		if web {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch_url", Arguments: map[string]any{"url": srv.URL + "/port"}})
			if err != nil || r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "[rein: untrusted data from the web") ||
				!strings.Contains(r.Content[0].(*mcp.TextContent).Text, "the port is 8417") {
				t.Fatalf("%v %+v", err, r)
			}
		}
		cs.Close()
	}
}
