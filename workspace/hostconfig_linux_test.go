package workspace

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestMain serves as the helper of TestChangedConfigUnreadable: the walk
// as an ordinary user, printed as JSON.
func TestMain(m *testing.M) {
	if ws := os.Getenv("REIN_TEST_CC_WS"); ws != "" {
		since, _ := time.Parse(time.RFC3339Nano, os.Getenv("REIN_TEST_CC_SINCE"))
		json.NewEncoder(os.Stdout).Encode(ChangedConfig(ws, since))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestChangedConfigUnreadable: a directory a command made unreadable
// (chmod 311: a tool that opens a path inside still reads it) is named
// itself, not skipped. Root lists any directory, so the walk runs as the
// user nobody, from a copy of this test binary.
func TestChangedConfigUnreadable(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	ws := filepath.Join(dir, "ws")
	since := time.Now()
	os.MkdirAll(filepath.Join(ws, ".qwen"), 0o755)
	os.WriteFile(filepath.Join(ws, ".qwen", "settings.json"), []byte("{}"), 0o644)
	os.Chmod(filepath.Join(ws, ".qwen"), 0o311)
	defer os.Chmod(filepath.Join(ws, ".qwen"), 0o755)
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"REIN_TEST_CC_WS=" + ws, "REIN_TEST_CC_SINCE=" + since.Format(time.RFC3339Nano)}
	if os.Getuid() == 0 {
		bin := filepath.Join(dir, "workspace.test")
		data, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(bin, data, 0o755) != nil {
			t.Fatal(err)
		}
		for _, p := range []string{ws, filepath.Join(ws, ".qwen"), filepath.Join(ws, ".qwen", "settings.json")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		cmd = exec.Command(bin)
		cmd.Env = []string{"REIN_TEST_CC_WS=" + ws, "REIN_TEST_CC_SINCE=" + since.Format(time.RFC3339Nano)}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var r ConfigReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Count != 1 || r.Paths[0] != ".qwen/ (rein could not look inside)" {
		t.Fatalf("%+v", r)
	}
}
