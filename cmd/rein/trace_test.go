//go:build linux

package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/reinhq/rein/sandbox"
)

// TestTraceVerifyKeyed: the trace's chain is keyed with a key rein makes
// in its state directory; verify prints the form and the head, and
// --head finds a trace cut at its end, which verifies on its own.
func TestTraceVerifyKeyed(t *testing.T) {
	home, ws := docFixture(t)
	if code, out, errOut := rein(t, "tool", "read_file", `{"path":"main.go"}`); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	key := filepath.Join(sandbox.CacheDir(), "keys", "trace.key")
	if !strings.HasPrefix(key, home+"/") {
		t.Fatalf("the key %s is not under the test's HOME", key)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key: %v %v", fi, err)
	}
	code, out, errOut := rein(t, "trace", "verify")
	heads := regexp.MustCompile(`(?m)^head: (\d+:[0-9a-f]{64})$`).FindStringSubmatch(out)
	if code != 0 || !strings.HasPrefix(out, "ok:") || !strings.Contains(out, "chain: keyed (HMAC-SHA256, key id ") || heads == nil {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	first := heads[1]
	if code, out, _ := rein(t, "tool", "list_dir", `{"path":"."}`); code != 0 {
		t.Fatalf("list_dir: %s", out)
	}
	code, out, _ = rein(t, "trace", "verify", "--head", first)
	if code != 0 || !strings.Contains(out, "extends the kept head "+first) || strings.Contains(out, "head: "+first+"\n") {
		t.Fatalf("verify --head: exit %d\n%s", code, out)
	}
	code, out, _ = rein(t, "trace", "verify", "--json")
	var v struct {
		OK    bool
		Form  string
		Chain struct {
			Links, Keyed int64
			Head         struct {
				Seq  int64
				Hash string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || !v.OK || v.Chain.Links == 0 || v.Chain.Keyed != v.Chain.Links || !strings.HasPrefix(v.Form, "keyed") {
		t.Fatalf("verify --json: exit %d %v\n%s", code, err, out)
	}
	last := v.Chain.Head
	// The newest records removed with their links, as anyone with the file
	// can: the chain verifies, but not from the head kept.
	db, err := sql.Open("sqlite", filepath.Join(sandbox.CacheDir(), "trace", sandbox.WorkspaceKey(ws)+".db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TRIGGER chain_no_delete`, `DROP TRIGGER audit_no_delete`, `DROP TRIGGER run_ends_no_delete`,
		`DELETE FROM audit WHERE rowid = (SELECT row FROM chain WHERE seq = ` + itoa(last.Seq) + ` AND tbl = 'audit')`,
		`DELETE FROM run_ends WHERE rowid = (SELECT row FROM chain WHERE seq = ` + itoa(last.Seq) + ` AND tbl = 'run_ends')`,
		`DELETE FROM chain WHERE seq = ` + itoa(last.Seq)} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if code, out, errOut := rein(t, "trace", "verify"); code != 0 {
		t.Fatalf("a trace cut at its end: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = rein(t, "trace", "verify", "--head", itoa(last.Seq)+":"+last.Hash)
	if code != 1 || !strings.Contains(errOut, "records were removed from its end") {
		t.Fatalf("the cut was not found: exit %d %s", code, errOut)
	}
	// An edited record.
	if _, err := db.Exec(`DROP TRIGGER steps_no_update`); err != nil {
		t.Fatal(err)
	}
	db.Exec(`UPDATE steps SET status = 'denied'`)
	db.Close()
	code, out, errOut = rein(t, "trace", "verify")
	if code != 1 || !strings.Contains(errOut, "the record was changed") || !strings.Contains(out, "chain: keyed") {
		t.Fatalf("an edit: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := rein(t, "trace", "verify", "--head", "nonsense"); code != exitUsage || !strings.Contains(errOut, "64 hex digits") {
		t.Fatalf("a malformed head: %d %s", code, errOut)
	}
}

// TestTraceKeyPlace: REIN_TRACE_KEY names the key; one in the workspace,
// or beside the trace, is refused.
func TestTraceKeyPlace(t *testing.T) {
	_, ws := docFixture(t)
	dir := t.TempDir()
	t.Setenv("REIN_TRACE_KEY", filepath.Join(dir, "k"))
	if code, out, errOut := rein(t, "trace", "verify"); code != 0 || !strings.Contains(out, "chain: empty") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "k")); err != nil {
		t.Fatal("REIN_TRACE_KEY was not used")
	}
	t.Setenv("REIN_TRACE_KEY", filepath.Join(ws, "trace.key"))
	if code, _, errOut := rein(t, "trace", "verify"); code != exitUsage || !strings.Contains(errOut, "inside the workspace") {
		t.Fatalf("a key in the workspace: %d %s", code, errOut)
	}
	t.Setenv("REIN_TRACE_KEY", filepath.Join(dir, "k"))
	t.Setenv("REIN_TRACE", filepath.Join(dir, "t.db"))
	if code, _, errOut := rein(t, "trace", "verify"); code != exitUsage || !strings.Contains(errOut, "beside the trace") {
		t.Fatalf("a key beside the trace: %d %s", code, errOut)
	}
}

// TestHookWriteRedacted: the hook's Write input holding JSON with a
// password is stored with the password redacted.
func TestHookWriteRedacted(t *testing.T) {
	_, ws := docFixture(t)
	input := `{"session_id":"red","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + ws +
		`/c.json","content":"{\"password\": \"hunter2\", \"db\": {\"api_key\": \"k3y-value\"}}"}}`
	var out, errOut strings.Builder
	if code := runIn([]string{"hook", "claude-code"}, strings.NewReader(input), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	code, shown, _ := rein(t, "trace", "show", "--json", "claude-code-red")
	if code != 0 || strings.Contains(shown, "hunter2") || strings.Contains(shown, "k3y-value") || !strings.Contains(shown, `[redacted]`) {
		t.Fatalf("exit %d\n%s", code, shown)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestTraceKeyHidden: no sandboxed command reads the trace key, on either
// rung, nor can a read path expose it.
func TestTraceKeyHidden(t *testing.T) {
	requireBwrap(t)
	docFixture(t)
	if code, out, errOut := rein(t, "trace", "verify"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	key := filepath.Join(sandbox.CacheDir(), "keys", "trace.key")
	secret, err := os.ReadFile(key)
	if err != nil || len(secret) != 65 {
		t.Fatalf("the key: %q %v", secret, err)
	}
	for _, rung := range []string{"bwrap", "landlock"} {
		code, out, errOut := rein(t, "sandbox", "--rung", rung, "--", "sh", "-c", "cat "+key+"; ls -la "+filepath.Dir(key))
		if code == 0 || strings.Contains(out+errOut, strings.TrimSpace(string(secret))) || strings.Contains(out, "trace.key") {
			t.Fatalf("%s: the key was read: exit %d\n%s%s", rung, code, out, errOut)
		}
	}
	// The policy denies reading it before any sandbox is asked: its name
	// is in the protected set.
	if code, out, _ := rein(t, "policy", "check", "--", "cat "+key); code != exitDeny || !strings.Contains(out, `protected by deny rule "**/*.key"`) {
		t.Fatalf("policy check of reading the key: exit %d\n%s", code, out)
	}
	// (Refused by the policy here, the test's HOME being under /tmp; the
	// sandbox refuses any read path overlapping its state directory too.)
	if code, out, errOut := rein(t, "sandbox", "--read-path", filepath.Dir(key), "--", "cat", key); code == 0 || strings.Contains(out+errOut, strings.TrimSpace(string(secret))) {
		t.Fatalf("a read path of the key's directory: exit %d %s", code, errOut)
	}
}
