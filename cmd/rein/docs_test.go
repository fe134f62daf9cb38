//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/launch"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
)

// docExample is one command of a console block in docs/ with the output
// and exit status the page promises.
type docExample struct {
	page    string
	command string
	want    []string // expected stdout lines; a final "..." matches the rest
	exit    int
}

func docExamples(t *testing.T) ([]docExample, map[string][]string) {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	var out []docExample
	tomls := map[string][]string{}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		var block, kind string
		in := false
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			switch {
			case !in && strings.HasPrefix(line, "```"):
				in, kind, block = true, strings.TrimPrefix(line, "```"), ""
			case in && line == "```":
				in = false
				switch kind {
				case "console":
					out = append(out, parseConsole(t, filepath.Base(page), block)...)
				case "toml":
					tomls[filepath.Base(page)] = append(tomls[filepath.Base(page)], block)
				}
			case in:
				block += line + "\n"
			}
		}
	}
	return out, tomls
}

func parseConsole(t *testing.T, page, block string) []docExample {
	var out []docExample
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			t.Fatalf("%s: console line %q is not under a $ command", page, lines[i])
		}
		ex := docExample{page: page, command: cmd}
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
			i++
			ex.want = append(ex.want, lines[i])
		}
		if i+2 < len(lines) && lines[i+1] == "$ echo $?" {
			code, err := strconv.Atoi(lines[i+2])
			if err != nil {
				t.Fatalf("%s: exit status %q", page, lines[i+2])
			}
			ex.exit = code
			i += 2
		}
		out = append(out, ex)
	}
	return out
}

// TestDocsExamples runs every console example of docs/ and compares its
// output and exit status with the page, in a fixture workspace with an
// empty org and user policy.
func TestDocsExamples(t *testing.T) {
	examples, _ := docExamples(t)
	if len(examples) < 5 {
		t.Fatalf("found only %d examples in docs/", len(examples))
	}
	home, ws := docFixture(t)
	for _, kv := range os.Environ() {
		// rein launch refuses to start beside a credential.
		if k, _, _ := strings.Cut(kv, "="); launch.IsCredential(k) {
			t.Setenv(k, "")
		}
	}
	for _, ex := range examples {
		t.Run(ex.page+"/"+ex.command, func(t *testing.T) {
			line, err := shell.Parser{Home: home}.Parse(ex.command)
			if err != nil || len(line.Stages()) != 1 || line.Stages()[0].Argv[0] != "rein" {
				t.Fatalf("the example is not one rein command: %v", err)
			}
			var stdout, stderr bytes.Buffer
			code := run(line.Stages()[0].Argv[1:], &stdout, &stderr)
			got := strings.ReplaceAll(stdout.String(), home, "~")
			got = strings.ReplaceAll(got, ws, "/w")
			if code != ex.exit {
				t.Errorf("exit %d, the page says %d\nstdout:\n%s\nstderr:\n%s", code, ex.exit, got, stderr.String())
			}
			gotLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			for i, w := range ex.want {
				if w == "..." && i == len(ex.want)-1 {
					return
				}
				if i >= len(gotLines) || gotLines[i] != w {
					t.Fatalf("output differs from the page at line %d\npage:\n%s\ngot:\n%s", i+1, strings.Join(ex.want, "\n"), got)
				}
			}
			if len(gotLines) != len(ex.want) {
				t.Fatalf("output has %d lines, the page %d\ngot:\n%s", len(gotLines), len(ex.want), got)
			}
		})
	}
}

// TestDocsPolicyFiles loads every TOML example of docs/ as a user policy.
func TestDocsPolicyFiles(t *testing.T) {
	_, tomls := docExamples(t)
	if len(tomls["policy.md"]) == 0 {
		t.Fatal("docs/policy.md has no TOML example")
	}
	home, ws := docFixture(t)
	for page, blocks := range tomls {
		for i, b := range blocks {
			f := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := policy.Load(policy.Options{Workspace: ws, Home: home, UserFile: f}); err != nil {
				t.Errorf("%s, TOML block %d: %v", page, i, err)
			}
		}
	}
}

// docFixture makes a HOME with a key and a workspace with a Go file, points
// every scope at empty or absent files, and moves into the workspace.
func docFixture(t testing.TB) (home, ws string) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, ws = filepath.Join(root, "home"), filepath.Join(root, "w")
	for _, f := range []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(ws, "main.go"), filepath.Join(ws, "src", "main.go"), filepath.Join(root, "org.toml")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("REIN_ORG_POLICY", filepath.Join(root, "org.toml"))
	t.Setenv("REIN_USER_POLICY", "")
	t.Setenv("REIN_PROJECT_POLICY", "")
	t.Chdir(ws)
	return home, ws
}
