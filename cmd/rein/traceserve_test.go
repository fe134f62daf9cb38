//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// chromium is the headless browser the view is tested in: Debian's
// chromium, which .ci/run installs.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no chromium to open rein trace serve's pages in (apt-get install chromium)")
	return ""
}

// browse opens u in a fresh headless Chromium and returns the page's DOM
// as the browser built it, with a screenshot written to shot when given.
func browse(t *testing.T, browser, u, shot string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	if shot != "" {
		args = append(args, "--window-size=1280,2200", "--hide-scrollbars", "--screenshot="+shot)
	} else {
		args = append(args, "--dump-dom")
	}
	cmd := exec.CommandContext(ctx, browser, append(args, u)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", u, err, errOut.String())
	}
	return out.String()
}

// TestTraceServeChromium: a run recorded by rein run (an edit, a command a
// rule refuses, a command that prints a script tag, a gate that runs the
// tests' outcome) is shown by rein trace serve in a real browser: its model calls
// and tool calls in order, the refusal naming its rule, layer and file,
// the diff, the script tag as text, the gate's verdict; and a
// screenshot of the page is kept in the test's artifact directory.
func TestTraceServeChromium(t *testing.T) {
	requireBwrap(t)
	browser := chromium(t)
	home, _ := calcFixture(t)
	userPolicy := filepath.Join(home, ".config", "rein", "policy.toml")
	testenv.WriteFiles(t, home, map[string]string{".config/rein/policy.toml": "[exec]\ndeny = [\"git push*\"]\n"}, 0o644)
	srv, _ := scriptedModel(t,
		`edit_file {"path":"calc.go","old":"a - b","new":"a + b"}`,
		`shell {"line":"git push origin main"}`,
		`shell {"line":"echo '<script>alert(1)</script>'"}`,
		"Fixed.",
	)
	code, out, errOut := rein(t, "run", "--provider", "ollama", "--base-url", srv.URL+"/v1", "--model", "m", "--approve", "all",
		"--verify", "grep -q 'a + b' calc.go", "--protect", "*_test.go", "make the tests pass")
	if code != 0 {
		t.Fatalf("rein run: exit %d\n%s\n%s", code, out, errOut)
	}
	runID := regexp.MustCompile(`  run ([^,\s]+),`).FindStringSubmatch(out)
	if runID == nil {
		t.Fatalf("no run id in:\n%s", out)
	}

	base, token := traceServe(t)
	page := base + "/run/" + runID[1] + "?token=" + token

	dom := browse(t, browser, page, "")
	t.Logf("the run's page as Chromium built it:\n%s", dom)
	// What a person sees, in the order they see it.
	order := []string{
		"Run <span class=\"id\">" + runID[1] + "</span>",
		"Tokens and cost by step", "<svg class=\"chart\"",
		"model</span> step 1", "<strong class=\"tool-name\">edit_file</strong>",
		"<span class=\"del\">-func Add(a, b int) int { return a - b }</span>",
		"<span class=\"add\">+func Add(a, b int) int { return a + b }</span>",
		"model</span> step 2", "git push origin main",
		`<span class="badge">refusal</span> deny by rule <code class="rule">git push*</code> (user layer, ` + userPolicy + `)`,
		"model</span> step 3", "&lt;script&gt;alert(1)&lt;/script&gt;",
		"model</span> step 4", "Fixed.",
		"<code>grep -q 'a + b' calc.go</code> <span class=\"status\">passed</span>, exit 0",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(dom[at:], want)
		if i < 0 {
			t.Fatalf("the page lacks %q after byte %d (or has it out of order)", want, at)
		}
		at += i + len(want)
	}
	if strings.Contains(dom, "<script>alert") || strings.Contains(dom, "?token=") {
		t.Errorf("the page runs the step's script tag, or shows the token")
	}
	// A browser that never had the token sees nothing of the trace.
	if other := browse(t, browser, base+"/run/"+runID[1], ""); strings.Contains(other, "edit_file") || !strings.Contains(other, "open the URL rein trace serve printed") {
		t.Errorf("without the token:\n%s", other)
	}
	// The URL is good once: the screenshot is taken by a server of its
	// own.
	if again := browse(t, browser, page, ""); strings.Contains(again, "edit_file") || !strings.Contains(again, "used already") {
		t.Errorf("the URL opened a second time:\n%s", again)
	}
	base, token = traceServe(t)
	shot := filepath.Join(t.ArtifactDir(), "run.png")
	browse(t, browser, base+"/run/"+runID[1]+"?token="+token, shot)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("the screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}

// traceServe starts rein trace serve in the test's workspace and returns
// the root of its pages and its token, as the URL it prints has them.
func traceServe(t *testing.T) (base, token string) {
	t.Helper()
	serve := exec.Command(os.Args[0], "trace", "serve", "--addr", "127.0.0.1:0")
	serve.Env = append(os.Environ(), "REIN_TEST_MAIN=1")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "http://127.0.0.1:") {
				urls <- sc.Text()
			}
		}
		close(urls)
	}()
	var u string
	select {
	case u = <-urls:
	case <-time.After(30 * time.Second):
	}
	m := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/[0-9a-f]{32})/\?token=([0-9a-f]{64})$`).FindStringSubmatch(u)
	if m == nil {
		t.Fatalf("rein trace serve printed no URL with a token (%q)\n%s", u, serveErr.String())
	}
	return m[1], m[2]
}
