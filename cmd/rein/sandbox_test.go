package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
)

// The test binary serves as the sandbox's init, as rein's binary does.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func TestSandboxCommand(t *testing.T) {
	if _, err := bwrap.Find(); err != nil {
		if os.Getenv("REIN_REQUIRE_SANDBOX") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	_, ws := docFixture(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
	code, out, errOut := rein(t, "sandbox", "--", "sh", "-c", "pwd; env; echo x > f; exit 4")
	if code != 4 || !strings.Contains(out, ws+"\n") || strings.Contains(out, "hunter2") || strings.Contains(out, "AWS_") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if data, _ := os.ReadFile(ws + "/f"); string(data) != "x\n" {
		t.Fatalf("the write did not land: %q", data)
	}
	code, out, _ = rein(t, "sandbox", "--json", "--read-only", "--", "sh", "-c", "echo y > g")
	var res sandbox.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code == 0 || res.Status != sandbox.Failed {
		t.Fatalf("read-only write: exit %d %v\n%s", code, err, out)
	}
	if code, _, errOut := rein(t, "sandbox", "--timeout", "1h", "--", "true"); code != exitSandbox || !strings.Contains(errOut, "ceiling") {
		t.Fatalf("timeout above the ceiling: %d %s", code, errOut)
	}
	if code, _, _ := rein(t, "sandbox", "--", "no-such-program-rein"); code != 127 {
		t.Fatalf("missing program: exit %d", code)
	}
}
