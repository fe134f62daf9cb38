package pi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/hooktest"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/workspace"
)

// TestConformance runs the hook adapters' suite against Pi's: each
// neutral action written as the tool Pi would use for it.
func TestConformance(t *testing.T) {
	hooktest.Run(t, hooktest.Subject{
		Adapter: Adapter{},
		Call: func(a hook.Action, cwd string) ([]byte, bool) {
			var tool string
			input := map[string]any{}
			switch a.Kind {
			case hook.Run:
				tool, input["command"] = "bash", a.Command
			case hook.Read, hook.Write:
				if strings.HasPrefix(a.Path, "~") && !strings.HasPrefix(a.Path, "~/") {
					// Pi reads ~user as a name in its directory.
					return nil, false
				}
				tool, input["path"] = string(a.Kind), a.Path
				if a.Kind == hook.Write {
					input["content"] = "x"
				}
			case hook.Search:
				switch {
				case a.Contents:
					tool, input["path"] = "grep", a.Path
					if len(a.Patterns) > 0 {
						input["pattern"] = a.Patterns[0]
					}
					a.Patterns = nil
				case len(a.Patterns) > 0:
					tool, input["path"], input["pattern"] = "find", a.Path, a.Patterns[0]
				default:
					tool, input["path"] = "ls", a.Path
				}
			case hook.CallTool:
				tool = a.Tool
			default:
				// Pi has no fetch and no web search of its own.
				return nil, false
			}
			data, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": cwd, "tool_name": tool, "tool_call_id": "c1", "input": input, "ui": false})
			return data, true
		},
		Answer: func(out []byte) (hook.Answer, string, error) {
			var o Output
			if err := json.Unmarshal(out, &o); err != nil {
				return "", "", err
			}
			return hook.Answer(o.Decision), strings.TrimPrefix(o.Reason, "rein: "), nil
		},
		Garbage: [][]byte{[]byte(`{"tool_name":""}`), []byte(`{"tool_name":"bash","cwd":"relative"}`), []byte(`{"tool_name":"bash","cwd":"/w","extra":1}`)},
	})
}

// TestReadSpellings: every spelling Pi's read falls back to (0.73.1's
// path-utils.js) is decided when it exists: a fallback that is a link out
// of the workspace, into the protected set, or to nowhere refuses the
// read, though the name asked for does not exist.
func TestReadSpellings(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, filepath.Join(home, ".ssh")} {
		os.MkdirAll(d, 0o755)
	}
	key := filepath.Join(home, ".ssh", "id_rsa")
	os.WriteFile(key, []byte("KEY"), 0o600)
	outside := filepath.Join(root, "outside.txt")
	os.WriteFile(outside, []byte("x"), 0o644)
	p, err := policy.Load(policy.Options{Workspace: ws, Home: home, OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, OnHost: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	nfd := norm.NFD.String("café")
	for _, c := range []struct {
		name, asked, onDisk, target string
	}{
		{"narrow no-break space before PM.", "Shot 1.02.03 PM.png", "Shot 1.02.03\u202FPM.png", key},
		{"NFD", "café.txt", nfd + ".txt", outside},
		{"curly apostrophe", "l'image.png", "l\u2019image.png", key},
		{"NFD and curly apostrophe", "d'écran.png", norm.NFD.String("d\u2019écran.png"), outside},
		{"dangling link", "Shot 4.05.06 AM.png", "Shot 4.05.06\u202FAM.png", filepath.Join(root, "gone")},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(ws, strings.ReplaceAll(c.name, " ", "-"))
			os.MkdirAll(dir, 0o755)
			if err := os.Symlink(c.target, filepath.Join(dir, c.onDisk)); err != nil {
				t.Fatal(err)
			}
			e := &hook.Engine{Policy: p, Workspace: w, Cwd: dir, Agent: "Pi"}
			in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": dir, "tool_name": "read", "tool_call_id": "c", "input": map[string]any{"path": c.asked}})
			call, err := Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			if d := (Adapter{}).Decide(e, call); d.Answer != hook.Deny {
				t.Errorf("read %q, with %q on disk leading to %s: %s (%s)", c.asked, c.onDisk, c.target, d.Answer, d.Reason)
			}
			// The same name, plainly inside, is read.
			plain := filepath.Join(dir, "plain-"+c.onDisk)
			os.WriteFile(plain, []byte("ok"), 0o644)
			in, _ = json.Marshal(map[string]any{"session_id": "s", "cwd": dir, "tool_name": "read", "tool_call_id": "c", "input": map[string]any{"path": "plain-" + c.asked}})
			call, _ = Parse(in)
			if d := (Adapter{}).Decide(e, call); d.Answer != hook.Allow {
				t.Errorf("read %q, with %q a plain file: %s (%s)", "plain-"+c.asked, "plain-"+c.onDisk, d.Answer, d.Reason)
			}
		})
	}
	// @ and Unicode spaces, as Pi's expandPath reads them.
	e := &hook.Engine{Policy: p, Workspace: w, Cwd: ws, Agent: "Pi"}
	for _, path := range []string{"@~/.ssh/id_rsa", "@" + key, "~/.ssh/id_rsa", "\u00A0../home/.ssh/id_rsa"} {
		in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "tool_name": "read", "tool_call_id": "c", "input": map[string]any{"path": path}})
		call, _ := Parse(in)
		if d := (Adapter{}).Decide(e, call); d.Answer == hook.Allow {
			t.Errorf("read %q: %s (%s)", path, d.Answer, d.Reason)
		}
	}
	// A relative path from a directory reached through a link is decided
	// from the link and from its real path.
	os.MkdirAll(filepath.Join(root, "real", "sub"), 0o755)
	os.Symlink(filepath.Join(root, "real", "sub"), filepath.Join(ws, "via"))
	via := filepath.Join(ws, "via")
	if got := spellings("../x", via, home, false); fmt.Sprint(got) != fmt.Sprint([]spelling{{via + "/../x", false}, {filepath.Join(root, "real", "sub") + "/../x", false}}) {
		t.Errorf("spellings from a linked directory: %v", got)
	}
	// So is a search: ".." from the link is the workspace, from its real
	// path a directory outside it.
	os.MkdirAll(filepath.Join(root, "real", "secrets"), 0o755)
	e = &hook.Engine{Policy: p, Workspace: w, Cwd: via, Agent: "Pi"}
	for _, tool := range []string{"ls", "find", "grep"} {
		in, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": via, "tool_name": tool, "tool_call_id": "c", "input": map[string]any{"path": "..", "pattern": "x"}})
		call, _ := Parse(in)
		if d := (Adapter{}).Decide(e, call); d.Answer == hook.Allow {
			t.Errorf("%s of .. from a directory reached through a link: %s (%s)", tool, d.Answer, d.Reason)
		}
	}
}

// TestPiPathUtils pins the path rules above to the Pi this adapter was
// written against: a Pi upgrade that changes them fails here, and the
// adapter is read again against the new code.
func TestPiPathUtils(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "cmd", "rein", "testdata", "pi", "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core", "tools", "path-utils.js"))
	if err != nil {
		t.Fatalf("Pi's path-utils.js (npm ci --prefix cmd/rein/testdata/pi): %v", err)
	}
	for _, want := range []string{
		`const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;`,
		`return filePath.replace(/ (AM|PM)\./gi, ` + "`${NARROW_NO_BREAK_SPACE}$1.`" + `);`,
		`return filePath.normalize("NFD");`,
		`return filePath.replace(/'/g, "\u2019");`,
		`return filePath.startsWith("@") ? filePath.slice(1) : filePath;`,
		`const nfdCurlyVariant = tryCurlyQuoteVariant(nfdVariant);`,
		`return resolvePath(cwd, expanded);`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Pi's path-utils.js no longer holds %q: read it again and update the adapter", want)
		}
	}
}
