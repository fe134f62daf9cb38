package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codeberg.org/go-pdf/fpdf"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// manualPDF is a PDF of n pages whose page k holds fact.
func manualPDF(t *testing.T, n, k int, fact string) []byte {
	t.Helper()
	pdf := fpdf.New("P", "mm", "A4", "")
	for i := 1; i <= n; i++ {
		pdf.AddPage()
		pdf.SetFont("Helvetica", "", 12)
		pdf.Cell(0, 10, fmt.Sprintf("Widget manual, page %d.", i))
		pdf.Ln(12)
		for l := range 25 {
			pdf.Cell(0, 6, fmt.Sprintf("Line %d: widgets are configured in widget.toml.", l+1))
			pdf.Ln(6)
		}
		if i == k {
			pdf.Cell(0, 10, fact)
		}
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWebRun: a scripted run that must find two facts on the web
// searches first (a SearxNG-compatible backend on 127.0.0.1), reads a
// documentation page and a 40-page PDF through fetch_url (the PDF's
// first slice naming the pages that continue it, the model reading on
// from there), and its final answer is made only from what it was sent:
// each turn's request is checked for the fact the next turn uses. The
// host is named by an allow rule; the tools are on the surface because
// the contract says Web, and not otherwise.
func TestWebRun(t *testing.T) {
	ws := fixture(t, nil)
	pdfData := manualPDF(t, 40, 33, "The widget's admin port is 31337.")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/search":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{
				{"title": "Widget ports", "url": "http://" + r.Host + "/docs/ports", "content": "Which port a widget listens on."},
				{"title": "Widget manual (PDF)", "url": "http://" + r.Host + "/manual.pdf", "content": "The full manual."}}})
		case "/docs/ports":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>Ports</title></head><body><nav>Home | Blog</nav><main><h1>Ports</h1><p>A widget listens on port 8417 unless widget.toml says otherwise. `+
				strings.Repeat("Widgets are small servers that answer on one port. ", 20)+`</p><p>The admin port is in the <a href="/manual.pdf">manual</a>.</p></main></body></html>`)
		case "/manual.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(pdfData)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	has := func(what string) func(t *testing.T, req map[string]any) {
		return func(t *testing.T, req map[string]any) {
			data, _ := json.Marshal(req["messages"])
			if !strings.Contains(string(data), what) {
				t.Errorf("the request does not hold %q", what)
			}
		}
	}
	cs := newChatServer(t,
		turn{calls: []ToolCall{call("c1", tool.SearchTool, `{"query":"widget port"}`)},
			check: func(t *testing.T, req map[string]any) {
				tools, _ := json.Marshal(req["tools"])
				if !strings.Contains(string(tools), `"fetch_url"`) || !strings.Contains(string(tools), `"search_internet"`) {
					t.Errorf("the web tools are not offered: %s", tools)
				}
			}},
		turn{calls: []ToolCall{call("c2", tool.FetchURLTool, `{"url":"`+srv.URL+`/docs/ports"}`)}, check: has(srv.URL + "/docs/ports")},
		turn{calls: []ToolCall{call("c3", tool.FetchURLTool, `{"url":"`+srv.URL+`/manual.pdf"}`)}, check: has("listens on port 8417")},
		turn{calls: []ToolCall{call("c4", tool.FetchURLTool, `{"url":"`+srv.URL+`/manual.pdf","pages":"30-40"}`)}, check: has(`call fetch_url with this URL and pages \"`)},
		turn{calls: []ToolCall{call("c5", "write_file", `{"path":"answer.txt","content":"port 8417, admin port 31337\n"}`)}, check: has("admin port is 31337")},
		turn{text: "The widget listens on 8417; its admin port is 31337."},
	)
	mode := policy.ModeAuto
	p, err := policy.Load(policy.Options{Workspace: ws, Home: t.TempDir(), NoFiles: true, Mode: &mode,
		Rules: []policy.Rule{{Act: policy.ActNet, Effect: policy.Allow, Pattern: host}}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := Contract{Goal: "find the widget's port and admin port on the web, and write them to answer.txt", Workspace: ws, Web: true, Verify: &Gate{Line: "cat answer.txt"}}
	out, err := Run(context.Background(), c, Options{Provider: chatFor(cs), Tool: tool.Config{Policy: p, Store: store, WebSearchURL: srv.URL + "/search",
		Profile: sandbox.Profile{Env: []string{"PATH=" + os.Getenv("PATH")}}}})
	if err != nil || out.Kind != Succeeded {
		t.Fatalf("%+v %v", out, err)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "answer.txt")); string(data) != "port 8417, admin port 31337\n" {
		t.Fatalf("answer.txt: %q", data)
	}
	steps, _ := store.Steps(context.Background(), out.Run)
	var web int
	for _, st := range steps {
		if st.Tool == tool.FetchURLTool || st.Tool == tool.SearchTool {
			web++
			if st.Status != "ok" || !strings.Contains(st.Observation, "[rein: untrusted data from the web") {
				t.Errorf("%s: %s %.200s", st.Tool, st.Status, st.Observation)
			}
		}
	}
	if web != 4 {
		t.Errorf("%d web steps", web)
	}

	// Without Web, the tools are not offered.
	cs2 := newChatServer(t, turn{text: "no web", check: func(t *testing.T, req map[string]any) {
		tools, _ := json.Marshal(req["tools"])
		if strings.Contains(string(tools), "fetch_url") || strings.Contains(string(tools), "search_internet") {
			t.Errorf("the web tools are offered to a run without Web")
		}
	}})
	c.Web, c.Verify = false, nil
	if _, err := Run(context.Background(), c, Options{Provider: chatFor(cs2), Tool: tool.Config{Policy: p, Store: store, WebSearchURL: srv.URL + "/search"}}); err != nil {
		t.Fatal(err)
	}
}
