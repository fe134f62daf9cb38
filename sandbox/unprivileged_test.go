//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/shell"
)

// unprivilegedLines are what TestUnprivilegedRungs runs on each rung as an
// ordinary user: a plain command, a change of a mode beneath the
// workspace (the landlock rung's supervisor), one outside it, a read of
// root's files, a write outside, and a plant in .git/config.
var unprivilegedLines = []string{
	"echo hi",
	"sh -c 'touch f && chmod 600 f && stat -c %a f'",
	"chmod 600 " + "OUTSIDE",
	"cat /etc/shadow",
	"sh -c 'echo x > OUTSIDE'",
	`sh -c 'printf "[core]\n\tfsmonitor = x\n" >> .git/config'`,
}

// unprivilegedHelper, as the helper process of TestUnprivilegedRungs, runs
// unprivilegedLines on both rungs and prints each result.
func unprivilegedHelper() {
	ws := os.Getenv("REIN_TEST_UNPRIV_WS")
	if ws == "" {
		return
	}
	outside := filepath.Join(filepath.Dir(ws), "cache", "outside.txt")
	os.WriteFile(outside, []byte("mine\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	out := map[string][]map[string]string{}
	for _, rung := range []Rung{RungBwrap, RungLandlock} {
		for _, text := range unprivilegedLines {
			l, err := shell.Parse(strings.ReplaceAll(text, "OUTSIDE", outside))
			if err != nil {
				fmt.Println(err)
				os.Exit(3)
			}
			r := map[string]string{}
			res, err := Run(context.Background(), l, Profile{Workspace: ws, Rung: rung}, nil, nil)
			if err != nil {
				r["error"] = err.Error()
			} else {
				r["status"], r["stdout"], r["stderr"], r["reason"] = string(res.Status), res.Stdout.Text, res.Stderr.Text, res.Reason
			}
			data, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
			r["git_config"] = string(data)
			data, _ = os.ReadFile(outside)
			r["outside"] = string(data)
			fi, _ := os.Stat(outside)
			r["outside_mode"] = fmt.Sprintf("%o", fi.Mode().Perm())
			out[string(rung)] = append(out[string(rung)], r)
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(0)
}

// TestUnprivilegedRungs: both rungs run for an ordinary user (CI runs
// every other sandbox test as root), and hold there: the landlock rung,
// which exists for hosts where ordinary users cannot use bubblewrap, used
// to refuse everything for one (its metadata supervisor could not read
// its own probe once the init was not dumpable).
func TestUnprivilegedRungs(t *testing.T) {
	requireRung(t, RungBwrap)
	requireRung(t, RungLandlock)
	out := asNobody(t, "REIN_TEST_UNPRIV_WS=")
	var got map[string][]map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, rung := range []string{"bwrap", "landlock"} {
		rs := got[rung]
		if len(rs) != len(unprivilegedLines) {
			t.Fatalf("%s: %d results: %s", rung, len(rs), out)
		}
		for i, r := range rs {
			t.Logf("%s %d: %v", rung, i, r)
			if r["error"] != "" {
				t.Errorf("%s: %s: refused: %s", rung, unprivilegedLines[i], r["error"])
			}
			if r["outside"] != "mine\n" || r["outside_mode"] != "644" {
				t.Errorf("%s: %s: the file outside the workspace is now %q, mode %s", rung, unprivilegedLines[i], r["outside"], r["outside_mode"])
			}
			if r["git_config"] != "[core]\n" {
				t.Errorf("%s: %s: .git/config is now %q", rung, unprivilegedLines[i], r["git_config"])
			}
		}
		if rs[0]["status"] != "ok" || rs[0]["stdout"] != "hi\n" {
			t.Errorf("%s: echo: %v", rung, rs[0])
		}
		if rs[1]["status"] != "ok" || rs[1]["stdout"] != "600\n" {
			t.Errorf("%s: a mode beneath the workspace: %v", rung, rs[1])
		}
		for _, i := range []int{2, 3, 4, 5} {
			if rs[i]["status"] == "ok" {
				t.Errorf("%s: %s: succeeded: %v", rung, unprivilegedLines[i], rs[i])
			}
		}
	}
}
