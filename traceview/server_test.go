package traceview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
	"github.com/reinhq/rein/trace/sqlstore"
)

// fixture records an agent-like run of n steps: each a model call and a
// tool call, every tenth call refused by a rule, every seventh an edit.
func fixture(t testing.TB, n int) (*sqlstore.Store, string) {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	run := "run-view"
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	if _, err := store.Append(ctx, trace.Run{ID: run, StartedAt: start, Workspace: "/w", Surface: "coding", Mode: "ask", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	var batch []trace.Record
	flush := func() {
		if len(batch) > 0 {
			if _, err := store.AppendAll(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for i := 1; i <= n; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		batch = append(batch, trace.ProviderCall{RunID: run, Step: i, Attempt: 1, Provider: "openai", Model: "m", Input: int64(100 * i), Output: 20, Finish: "tool_calls",
			Response: fmt.Sprintf(`{"text":"thinking about step %d","tool_calls":[{"name":"shell"}]}`, i), Request: `{"huge":"transcript"}`, LatencyMS: 12, At: at})
		st := trace.Step{RunID: run, Index: i - 1, Tool: "shell", Args: fmt.Sprintf(`{"line":"echo %d"}`, i), Status: "ok",
			Observation: fmt.Sprintf("exit 0\nline of step %d", i), StartedAt: at.Add(100 * time.Millisecond), DurationMS: 3}
		batch = append(batch, st)
		if i%10 == 0 {
			batch[len(batch)-1] = trace.Step{RunID: run, Index: i - 1, Tool: "shell", Args: `{"line":"git push"}`, Status: "denied", Reason: "denied by rule",
				Observation: "denied", StartedAt: st.StartedAt}
			batch = append(batch, trace.PolicyEvent{RunID: run, Kind: "refusal", Decision: "deny", Rule: "git push*", Layer: "user", File: "/home/u/.config/rein/policy.toml", Reason: "pushing is denied", At: at})
		}
		if i%7 == 0 {
			batch = append(batch, trace.Edit{RunID: run, Path: "calc.go", Diff: "--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-return a - b\n+return a + b\n", At: at})
		}
		if len(batch) > 2000 {
			flush()
		}
	}
	flush()
	return store, run
}

func serve(t testing.TB, store *sqlstore.Store) (*Server, *http.Client) {
	t.Helper()
	s, err := Listen(store, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s, c
}

// login exchanges the token for the cookie, as the first visit does.
func login(t testing.TB, s *Server, c *http.Client) *http.Cookie {
	t.Helper()
	resp, err := c.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != s.root+"/" || len(resp.Cookies()) != 1 {
		t.Fatalf("the first visit: %d, Location %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	return resp.Cookies()[0]
}

func get(t testing.TB, c *http.Client, u string, cookie *http.Cookie, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func TestListenLoopbackOnly(t *testing.T) {
	store, _ := fixture(t, 0)
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0", ":0", "[fe80::1%lo]:0", "127.0.0.1"} {
		if s, err := Listen(store, addr); err == nil {
			s.ln.Close()
			t.Errorf("Listen(%q) listened on %s", addr, s.host)
		} else if addr != "127.0.0.1" && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		s, err := Listen(store, addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if !strings.HasPrefix(s.URL(), "http://127.0.0.") || !strings.Contains(s.URL(), "/?token=") || len(s.token) != 64 {
			t.Errorf("Listen(%q): URL %s", addr, s.URL())
		}
		s.ln.Close()
	}
}

// TestGuard: only the browser that showed the token, naming the server
// by its own address, from its own pages, reading.
func TestGuard(t *testing.T) {
	store, run := fixture(t, 3)
	s, c := serve(t, store)
	base := "http://" + s.host + s.root
	if code, _, body := get(t, c, base+"/", nil, nil); code != http.StatusUnauthorized || !strings.Contains(body, "open the URL rein trace serve printed") {
		t.Errorf("no cookie: %d %s", code, body)
	}
	if code, _, _ := get(t, c, base+"/?token="+strings.Repeat("0", 64), nil, nil); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	// The token, on a deep link: the cookie, and the same page without it.
	resp, err := c.Get(base + "/run/" + run + "?after=0-0-0-0-0&token=" + s.token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != s.root+"/run/"+run+"?after=0-0-0-0-0" || len(ck) != 1 ||
		!ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != s.root+"/" || ck[0].Value == s.token {
		t.Fatalf("token exchange: %d %q %+v", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	cookie := ck[0]
	// The token is good once: another browser is told to start again.
	if code, _, body := get(t, c, base+"/?token="+s.token, nil, nil); code != http.StatusUnauthorized || !strings.Contains(body, "used already") {
		t.Errorf("the token again: %d %s", code, body)
	}
	// Outside the server's root there is nothing, cookie or not.
	for _, p := range []string{"/", "/run/" + run, "/static/style.css", s.root, s.root[:len(s.root)-1] + "/"} {
		if code, _, _ := get(t, c, "http://"+s.host+p, cookie, nil); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	// The exchange sends the browser to a page under this server's root
	// only.
	for _, p := range []string{"//evil.example/", "/\\evil.example/", "///evil.example", "/..//evil.example"} {
		s2, c2 := serve(t, store)
		req, _ := http.NewRequest(http.MethodGet, "http://"+s2.host+"/?token="+s2.token, nil)
		req.URL.Path = s2.root + p
		resp, err := c2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, s2.root+"/") || strings.Contains(loc, "//") {
			t.Errorf("the exchange on %q: %d, sends the browser to %q", p, resp.StatusCode, loc)
		}
	}
	code, hdr, body := get(t, c, base+"/", cookie, nil)
	if code != http.StatusOK || hdr.Get("Content-Security-Policy") != CSP || hdr.Get("X-Content-Type-Options") != "nosniff" ||
		hdr.Get("X-Frame-Options") != "DENY" || hdr.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(body, "/run/"+run) {
		t.Fatalf("with the cookie: %d %v\n%s", code, hdr, body)
	}
	for _, want := range []string{"default-src 'self'", "connect-src 'self'", "script-src 'self'"} {
		if !strings.Contains(CSP, want) || strings.Contains(CSP, "unsafe") {
			t.Errorf("CSP %q lacks %q or allows unsafe", CSP, want)
		}
	}
	port := s.host[strings.LastIndexByte(s.host, ':')+1:]
	for _, c2 := range []struct {
		hdr  map[string]string
		code int
	}{
		{map[string]string{"Host": "localhost:" + port}, http.StatusOK},
		{map[string]string{"Host": "rebound.example:" + port}, http.StatusMisdirectedRequest},
		{map[string]string{"Host": "127.0.0.1"}, http.StatusMisdirectedRequest},
		{map[string]string{"Host": "localhost:1"}, http.StatusMisdirectedRequest},
		{map[string]string{"Origin": "http://" + s.host}, http.StatusOK},
		{map[string]string{"Origin": "http://rebound.example:" + port}, http.StatusForbidden},
		{map[string]string{"Origin": "https://" + s.host}, http.StatusForbidden},
		{map[string]string{"Origin": "null"}, http.StatusForbidden},
	} {
		if code, _, body := get(t, c, base+"/", cookie, c2.hdr); code != c2.code {
			t.Errorf("%v: %d, want %d\n%s", c2.hdr, code, c2.code, body)
		}
	}
	// A rebound name with the right token still gets nothing, not even
	// the cookie.
	if code, hdr, _ := get(t, c, base+"/?token="+s.token, nil, map[string]string{"Host": "rebound.example:" + port}); code != http.StatusMisdirectedRequest || hdr.Get("Set-Cookie") != "" {
		t.Errorf("rebound with the token: %d %v", code, hdr)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader("x"))
	req.AddCookie(cookie)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}
	if code, _, _ := get(t, c, base+"/run/nope", cookie, nil); code != http.StatusNotFound {
		t.Errorf("an unknown run: %d", code)
	}
	if code, _, _ := get(t, c, base+"/run/"+run+"/step/999999", cookie, nil); code != http.StatusNotFound {
		t.Errorf("an unknown step: %d", code)
	}
	if code, hdr, css := get(t, c, base+"/static/style.css", cookie, nil); code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/css") || !strings.Contains(css, "timeline") {
		t.Errorf("the style sheet: %d %v", code, hdr)
	}
}

// TestEscaped: a step whose output, arguments, rule, diff and model text
// are markup shows them as text.
func TestEscaped(t *testing.T) {
	store, _ := fixture(t, 0)
	ctx := context.Background()
	run := "run-<b>x</b>"
	at := time.Now()
	bad := `<script>alert("rein")</script><img src=x onerror=alert(1)>`
	recs := []trace.Record{
		trace.Run{ID: run, StartedAt: at, Workspace: "/w/" + bad, Source: "mcp"},
		trace.ProviderCall{RunID: run, Step: 1, Attempt: 1, Provider: "p", Model: bad, Response: `{"text":` + fmt.Sprintf("%q", bad) + `}`, At: at},
		trace.Step{RunID: run, Tool: "shell", Args: `{"line":"echo ` + bad + `"}`, Status: "ok", Observation: "exit 0\n" + bad, StartedAt: at.Add(time.Millisecond)},
		trace.PolicyEvent{RunID: run, Kind: "refusal", Decision: "deny", Rule: bad, Layer: "user", Reason: bad, At: at},
		trace.Edit{RunID: run, Path: bad, Diff: "+" + bad + "\n", At: at},
		trace.GateAttempt{RunID: run, Step: 1, Line: bad, Status: "failed", At: at.Add(time.Second)},
	}
	if _, err := store.AppendAll(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	s, c := serve(t, store)
	cookie := login(t, s, c)
	pages := []string{"/", "/run/" + url.PathEscape(run)}
	_, _, body := get(t, c, "http://"+s.host+s.root+pages[1], cookie, nil)
	m := regexp.MustCompile(`/run/[^"]+/step/(\d+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no step link on the run's page:\n%s", body)
	}
	pages = append(pages, strings.TrimPrefix(m[0], s.root))
	for _, p := range pages {
		code, _, body := get(t, c, "http://"+s.host+s.root+p, cookie, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", p, code, body)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") || strings.Contains(body, "<b>x") {
			t.Errorf("%s renders markup from the trace:\n%s", p, body)
		}
		if p == "/" && !strings.Contains(body, "run-&lt;b&gt;x&lt;/b&gt;") || p != "/" && !strings.Contains(body, "&lt;script&gt;alert(&#34;rein&#34;)&lt;/script&gt;") {
			t.Errorf("%s does not show the script tag as text:\n%s", p, body)
		}
	}
}

// TestTimelinePaged: a run of 10,000 steps is read a page at a time, and
// walking the pages shows every model call and tool call once, in order.
func TestTimelinePaged(t *testing.T) {
	const n = 10_000
	store, run := fixture(t, n)
	// Two calls that ran side by side: the later-started one was recorded
	// first, and the timeline keeps the order they were recorded in.
	ctx := context.Background()
	at := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	store.AppendAll(ctx, trace.Step{RunID: run, Index: n + 1, Tool: "read_file", Args: `{"path":"b"}`, Status: "ok", StartedAt: at.Add(time.Second)},
		trace.Step{RunID: run, Index: n, Tool: "read_file", Args: `{"path":"a"}`, Status: "ok", StartedAt: at})
	s, c := serve(t, store)
	cookie := login(t, s, c)
	next := regexp.MustCompile(`href="` + s.root + `/run/` + run + `\?after=([0-9-]+)">later`)
	calls := regexp.MustCompile(`tool</span> call (\d+):`)
	models := regexp.MustCompile(`model</span> step (\d+)`)
	refusals := regexp.MustCompile(`deny by rule <code class="rule">git push\*</code> \(user layer`)
	u := "http://" + s.host + s.root + "/run/" + run
	wantCall, wantModel, pagesSeen, refused, edits := 0, 1, 0, 0, 0
	var extra []int
	for u != "" {
		code, _, body := get(t, c, u, cookie, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", u, code)
		}
		pagesSeen++
		if e := strings.Count(body, `<li class="entry`); e > EntriesPerPage {
			t.Fatalf("page %d has %d entries", pagesSeen, e)
		}
		if pagesSeen == 1 && !strings.Contains(body, `<svg class="chart"`) {
			t.Errorf("the first page has no chart")
		}
		for _, m := range calls.FindAllStringSubmatch(body, -1) {
			var i int
			fmt.Sscan(m[1], &i)
			if i >= n {
				extra = append(extra, i)
				continue
			}
			if i != wantCall {
				t.Fatalf("page %d: tool call %d, want %d", pagesSeen, i, wantCall)
			}
			wantCall++
		}
		for _, m := range models.FindAllStringSubmatch(body, -1) {
			var i int
			fmt.Sscan(m[1], &i)
			if i != wantModel {
				t.Fatalf("page %d: model step %d, want %d", pagesSeen, i, wantModel)
			}
			wantModel++
		}
		refused += len(refusals.FindAllString(body, -1))
		edits += strings.Count(body, `<span class="add">+return a + b</span>`)
		u = ""
		if m := next.FindStringSubmatch(body); m != nil {
			u = "http://" + s.host + s.root + "/run/" + run + "?after=" + m[1]
		}
	}
	if wantCall != n || wantModel != n+1 || refused != n/10 || edits != n/7 || fmt.Sprint(extra) != fmt.Sprint([]int{n + 1, n}) {
		t.Fatalf("walked %d pages: %d tool calls, %d model calls, %d refusals, %d edits, then %v", pagesSeen, wantCall, wantModel-1, refused, edits, extra)
	}
	if min := 2 * n / EntriesPerPage; pagesSeen < min {
		t.Errorf("%d pages for %d entries", pagesSeen, 2*n)
	}
}

// BenchmarkRunPage serves a page of a run of 10,000 steps: its first page
// and its last, against the bare read of the whole run's steps that rein
// trace show makes. A page costs the same wherever it is, and a fraction
// of the whole.
func BenchmarkRunPage(b *testing.B) {
	store, run := fixture(b, 10_000)
	s, c := serve(b, store)
	cookie := login(b, s, c)
	ctx := context.Background()
	var last string
	steps, _ := store.Steps(ctx, run)
	calls, _ := store.ProviderCalls(ctx, run)
	last = fmt.Sprintf("%d-%d-0-0-0", steps[len(steps)-60].ID, calls[len(calls)-60].ID)
	for _, c2 := range []struct{ name, u string }{
		{"first", "/run/" + run},
		{"last", "/run/" + run + "?after=" + last},
	} {
		b.Run(c2.name, func(b *testing.B) {
			for b.Loop() {
				if code, _, _ := get(b, c, "http://"+s.host+s.root+c2.u, cookie, nil); code != http.StatusOK {
					b.Fatal(code)
				}
			}
		})
	}
	b.Run("bare-whole-run", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.Steps(ctx, run); err != nil {
				b.Fatal(err)
			}
			if _, err := store.ProviderCalls(ctx, run); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// checkpoint commits an agent run's checkpoint holding state.
func checkpoint(t testing.TB, store *sqlstore.Store, run, status, state string) {
	t.Helper()
	ctx := context.Background()
	l, err := store.AcquireLease(ctx, run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, l, time.Minute, trace.Checkpoint{RunID: run, Seq: 1, Format: 1, Status: status, State: state, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	store.ReleaseLease(ctx, l)
}

// TestRunPage: an agent run's page shows its outcome, tokens and cost by
// its prices, the chart, a gate attempt's test counts, a summary, a
// request with its answer, and its child run; the child's page names its
// parent.
func TestRunPage(t *testing.T) {
	store, _ := fixture(t, 0)
	ctx := context.Background()
	run, child := "run-agent", "run-agent.2.0"
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	recs := []trace.Record{
		trace.Run{ID: run, StartedAt: at, Workspace: "/w", Surface: "coding", Mode: "ask", Source: "cli"},
		trace.GateAttempt{RunID: run, Step: 0, Line: "go test ./...", Status: "failed", ExitCode: 1, Evidence: "go test -json",
			Tests: `{"run":3,"passed":1,"failed":2,"skipped":0,"not_run":["TestZ"]}`, At: at.Add(time.Second)},
		trace.ProviderCall{RunID: run, Step: 1, Attempt: 1, Provider: "anthropic", Model: "claude", Input: 1_000_000, Output: 100_000, Finish: "tool_calls", At: at.Add(2 * time.Second)},
		trace.ApprovalRequest{RunID: run, Request: "q1", Kind: "approval", CallID: "call_1_0", Tool: "shell", Args: `{"line":"make"}`, Shown: "shell make", At: at.Add(3 * time.Second)},
		trace.ApprovalDecision{RunID: run, Request: "q1", Answer: "yes", By: "ana", Note: "fine", At: at.Add(4 * time.Second)},
		trace.Summary{RunID: run, Step: 2, FirstStep: 1, LastStep: 1, Messages: 3, Chars: 42, Text: "the tests were read", At: at.Add(5 * time.Second)},
		trace.ProviderCall{RunID: run, Step: 2, Attempt: 1, Provider: "anthropic", Model: "claude", Input: 2_000_000, Output: 0, Finish: "stop", Response: `{"text":"Done."}`, At: at.Add(6 * time.Second)},
		trace.GateAttempt{RunID: run, Step: 2, Line: "go test ./...", Status: "passed", Evidence: "go test -json", Tests: `{"run":3,"passed":3,"failed":0,"skipped":0}`, At: at.Add(7 * time.Second)},
		trace.RunEnd{RunID: run, EndedAt: at.Add(8 * time.Second), Status: "succeeded"},
		trace.Run{ID: child, StartedAt: at.Add(3 * time.Second), Workspace: "/w", Source: "cli"},
	}
	for _, r := range recs {
		if _, err := store.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint(t, store, run, "succeeded", `{"contract":{"goal":"fix the tests","prices":{"input":3,"output":15}},"steps":2,"tokens":{"input":3000000,"output":100000},"done":{"outcome":"succeeded","reason":"the gate passed"},"transcript":[]}`)
	checkpoint(t, store, child, "succeeded", `{"contract":{"goal":"read","child":{"parent":"run-agent","root":"run-agent","step":2}},"steps":1,"tokens":{"input":10,"output":1},"transcript":[]}`)
	s, c := serve(t, store)
	cookie := login(t, s, c)
	_, _, list := get(t, c, "http://"+s.host+s.root+"/", cookie, nil)
	for _, want := range []string{`<a href="` + s.root + `/run/run-agent">run-agent</a></td>
<td>agent run</td>`, `<td class="state">succeeded</td>`, `<td class="num">3000000 / 100000</td>`, `<td class="num">$10.5000</td>`, `<td class="num">8.00 s</td>`, `<td>child run</td>`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	_, _, page := get(t, c, "http://"+s.host+s.root+"/run/"+run, cookie, nil)
	order := []string{
		`<dd class="text">fix the tests</dd>`, `<dd class="outcome">succeeded: the gate passed</dd>`,
		`2 model calls over 2 steps`, `<svg class="chart"`, `step 1: 1000000 input, 100000 output tokens, $4.5000`, `$10.5000`,
		`<a href="` + s.root + `/run/run-agent.2.0">run-agent.2.0</a>`,
		`baseline, before the first model call`, `tests: 3 run, 1 passed, 2 failed, 0 skipped; not run: TestZ (go test -json)`,
		`model</span> step 1: anthropic claude`, `$4.5000`,
		`request q1 (shell, call call_1_0)`, `shell make`, `answered <span class="status">yes</span> by ana: fine`,
		`summary</span> before step 2: steps 1 to 1 (3 messages) folded into 42 characters`, `the tests were read`,
		`model</span> step 2`, `$6.0000`, `Done.`,
		`after step 2: <code>go test ./...</code> <span class="status">passed</span>`, `tests: 3 run, 3 passed`,
	}
	at2 := 0
	for _, want := range order {
		i := strings.Index(page[at2:], want)
		if i < 0 {
			t.Fatalf("the run's page lacks %q after byte %d:\n%s", want, at2, page)
		}
		at2 += i + len(want)
	}
	_, _, kid := get(t, c, "http://"+s.host+s.root+"/run/"+child, cookie, nil)
	if !strings.Contains(kid, `<dt>parent</dt><dd><a href="`+s.root+`/run/run-agent">run-agent</a></dd>`) {
		t.Errorf("the child's page does not name its parent:\n%s", kid)
	}
}
