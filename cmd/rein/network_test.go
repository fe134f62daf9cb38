//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
)

func TestNetworkFlags(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed:", err)
	}
	_, ws := docFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	// rein sandbox: only the hosts --allow-host names.
	for _, rung := range []string{"bwrap", "landlock"} {
		code, out, errOut := rein(t, "sandbox", "--rung", rung, "--network", "proxy", "--allow-host", host, "--", "curl", "-sS", srv.URL+"/")
		if code != 0 || out != "hello" {
			t.Fatalf("%s: an allowed host: exit %d %q %s", rung, code, out, errOut)
		}
		code, out, errOut = rein(t, "sandbox", "--rung", rung, "--network", "proxy", "--", "curl", "-sS", srv.URL+"/")
		if code != 0 || !strings.Contains(out, "refused") || !strings.Contains(out, "--allow-host") || !strings.Contains(errOut, "rein: egress refused: http "+host+"/") {
			t.Fatalf("%s: a host no flag names: exit %d %q %s", rung, code, out, errOut)
		}
	}
	if code, _, errOut := rein(t, "sandbox", "--network", "wifi", "--", "true"); code != exitUsage || !strings.Contains(errOut, "wifi") {
		t.Fatalf("an unknown network mode: exit %d %s", code, errOut)
	}
	// Network off, the default: nothing.
	if code, _, _ := rein(t, "sandbox", "--", "curl", "-sS", "--max-time", "3", srv.URL+"/"); code == 0 {
		t.Fatal("curl reached a host with the network off")
	}

	// rein shell: the policy files' net rules and network mode.
	user := filepath.Join(filepath.Dir(ws), "user.toml")
	os.WriteFile(user, []byte(fmt.Sprintf("mode = \"auto\"\n[exec]\nallow = [\"curl *\"]\n[net]\nallow = [%q]\ndeny = [\"*.denied.test\"]\n[sandbox]\nnetwork = \"proxy\"\n", host)), 0o644)
	t.Setenv("REIN_USER_POLICY", user)
	code, out, errOut := rein(t, "shell", "--approve", "none", "curl -sS "+srv.URL+"/")
	if code != 0 || out != "hello" {
		t.Fatalf("shell, allowed by the user file: exit %d %q %s", code, out, errOut)
	}
	code, out, _ = rein(t, "shell", "--approve", "none", "curl -sS http://x.denied.test/")
	if !strings.Contains(out, `rule "*.denied.test", layer user, `+user) {
		t.Fatalf("shell, denied by the user file: exit %d %q", code, out)
	}
	// An unnamed host is asked, and denied with no one to answer.
	code, out, _ = rein(t, "shell", "--approve", "none", "curl -sS http://unnamed.test/")
	if !strings.Contains(out, "refused") || !strings.Contains(out, "no net rule names unnamed.test:80/") {
		t.Fatalf("shell, an unnamed host: exit %d %q", code, out)
	}
	// --network off overrides the file; --json lists the connections.
	if code, _, _ := rein(t, "shell", "--approve", "none", "--network", "off", "curl -sS --max-time 3 "+srv.URL+"/"); code == 0 {
		t.Fatal("curl reached a host with --network off")
	}
	code, out, _ = rein(t, "exec", "--approve", "none", "--json", "--", "curl", "-sS", srv.URL+"/")
	var got struct{ Result sandbox.Result }
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || len(got.Result.Egress) != 1 || got.Result.Egress[0].Verdict.Rule != host {
		t.Fatalf("exec --json: exit %d %v\n%s", code, err, out)
	}
	// Safe mode has no network, whatever the file says.
	if code, _, _ := rein(t, "shell", "--mode", "safe", "--approve", "none", "curl -sS "+srv.URL+"/"); code == 0 {
		t.Fatal("safe mode reached the network")
	}
}

// TestNetworkTrace: through the router, every connection is in the trace,
// the refused ones among the refusals.
func TestNetworkTrace(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	code, out, errOut := rein(t, "tool", "--json", "--mode", "auto", "--allow", "curl *", "--network", "proxy", "--allow-host", host, "--approve", "none",
		"shell", `{"line":"curl -sS `+srv.URL+`/ok ; curl -sS http://refused.test/"}`)
	var v struct{ Run string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Run == "" {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errOut)
	}
	code, out, _ = rein(t, "trace", "show", v.Run)
	for _, want := range []string{"net: allow rule \"" + host + "\" (flags layer)", "net: deny", "sandbox egress: {", `"addr":"` + host + `"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("trace show lacks %q: exit %d\n%s", want, code, out)
		}
	}
	code, out, _ = rein(t, "trace", "refusals")
	if code != 0 || !strings.Contains(out, "refused.test:80/") || strings.Contains(out, host+"/ok") {
		t.Fatalf("trace refusals: exit %d\n%s", code, out)
	}
}
