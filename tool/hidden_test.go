package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
)

// TestProtectedHiddenFromCommands: a command reads no file of the
// workspace the protected set forbids reading, however it names it (here
// from a script the policy cannot look into), and reads the rest.
func TestProtectedHiddenFromCommands(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, policy.ModeAuto, nil, policy.AllowAll{})
	for rel, data := range map[string]string{
		".env":             "TOKEN=SECRET-ENV\n",
		"certs/server.pem": "SECRET-PEM\n",
		"show.sh":          "cat .env certs/server.pem src/main.go\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(f.ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.ws, rel), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := f.call(t, "shell", obj{"line": "sh show.sh"})
	if env.Status != OK || strings.Contains(env.Preview, "SECRET") || !strings.Contains(env.Preview, "package main") {
		t.Fatalf("%+v", env)
	}
}
