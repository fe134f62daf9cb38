package web

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxLinks bounds the links an HTML page's text keeps as references.
const maxLinks = 200

// Bounds of reading an HTML page into a tree: a page of more elements
// or bytes is read as a stream of tokens instead (tokenText), whose cost
// is its length. A tree costs far more than its bytes (a gzip of a few
// KiB of "<p>x" is millions of nodes).
const (
	maxElements  = 50_000
	maxHTMLBytes = 2 << 20
)

// HTMLText is an HTML page as readable text: its main content (as
// Mozilla's Readability finds it; the whole body, less navigation and
// scripts, where it finds none), headings, list items and paragraphs on
// lines of their own, and each link as its text with a reference number,
// the links listed at the end resolved against base. No markup of the
// page survives: what comes back is text.
func HTMLText(body []byte, base *url.URL) string {
	if len(body) > maxHTMLBytes || startTags(body, maxElements) > maxElements {
		return tokenText(body, base)
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		// Nested too deep for the parser: read as tokens, still without
		// markup, scripts or navigation.
		return tokenText(body, base)
	}
	title := ""
	var root *html.Node
	p := readability.NewParser()
	p.MaxElemsToParse = maxElements
	if art, err := p.ParseDocument(doc, base); err == nil && art.Node != nil {
		root, title = art.Node, art.Title()
	} else {
		root = find(doc, atom.Body)
		if root == nil {
			root = doc
		}
		if t := find(doc, atom.Title); t != nil {
			title = strings.TrimSpace(textOf(t))
		}
	}
	r := &renderer{base: base}
	r.walk(root, false)
	return r.text(title)
}

// text is what r rendered, headed by title, its links listed.
func (r *renderer) text(title string) string {
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "# %s\n\n", oneLine(title))
	}
	b.WriteString(strings.TrimSpace(collapseBlank(r.b.String())))
	b.WriteString("\n")
	if len(r.links) > 0 {
		b.WriteString("\nLinks:\n")
		for i, l := range r.links {
			fmt.Fprintf(&b, "[%d] %s\n", i+1, l)
		}
		if r.dropped > 0 {
			fmt.Fprintf(&b, "(%d more links not listed)\n", r.dropped)
		}
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

type renderer struct {
	b       strings.Builder
	base    *url.URL
	links   []string
	seen    map[string]int
	dropped int
}

// skipped are the elements whose content is never text for a reader.
var skipped = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Canvas: true, atom.Nav: true, atom.Head: true, atom.Button: true,
	atom.Form: true, atom.Select: true, atom.Math: true}

// headings are h1 to h6.
var headings = map[atom.Atom]bool{atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true}

// blocks are the elements that begin a line of their own.
var blocks = map[atom.Atom]bool{atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Blockquote: true, atom.Ul: true, atom.Ol: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Table: true, atom.Tr: true, atom.Figure: true, atom.Figcaption: true,
	atom.Details: true, atom.Summary: true, atom.Hr: true, atom.Address: true, atom.Caption: true}

func (r *renderer) walk(n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		if pre {
			r.b.WriteString(n.Data)
			return
		}
		r.inline(n.Data)
		return
	case html.ElementNode:
	case html.DocumentNode:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			r.walk(c, pre)
		}
		return
	default:
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	switch n.DataAtom {
	case atom.Br:
		r.b.WriteString("\n")
		return
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		r.b.WriteString("\n\n" + strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		r.children(n, pre)
		r.b.WriteString("\n\n")
		return
	case atom.Li:
		r.b.WriteString("\n- ")
		r.children(n, pre)
		r.b.WriteString("\n")
		return
	case atom.Pre:
		r.b.WriteString("\n\n```\n")
		r.children(n, true)
		r.b.WriteString("\n```\n\n")
		return
	case atom.Td, atom.Th:
		r.children(n, pre)
		r.b.WriteString(" | ")
		return
	case atom.Img:
		if alt := strings.TrimSpace(attr(n, "alt")); alt != "" {
			r.inline("[image: " + alt + "]")
		}
		return
	case atom.A:
		href := strings.TrimSpace(attr(n, "href"))
		r.children(n, pre)
		if ref := r.link(href); ref > 0 {
			fmt.Fprintf(&r.b, " [%d]", ref)
		}
		return
	}
	if blocks[n.DataAtom] {
		r.b.WriteString("\n\n")
		r.children(n, pre)
		r.b.WriteString("\n\n")
		return
	}
	r.children(n, pre)
}

func (r *renderer) children(n *html.Node, pre bool) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.walk(c, pre)
	}
}

// inline writes text with its runs of white space as one blank.
func (r *renderer) inline(s string) {
	f := strings.Fields(s)
	if len(f) == 0 {
		if s != "" && !endsBlank(r.b.String()) {
			r.b.WriteString(" ")
		}
		return
	}
	if (s[0] == ' ' || s[0] == '\n' || s[0] == '\t') && !endsBlank(r.b.String()) {
		r.b.WriteString(" ")
	}
	r.b.WriteString(strings.Join(f, " "))
	if last := s[len(s)-1]; last == ' ' || last == '\n' || last == '\t' {
		r.b.WriteString(" ")
	}
}

// link numbers href (resolved), or says 0 for one that is no page to
// follow (a script, a fragment of this page, too many).
func (r *renderer) link(href string) int {
	if href == "" || strings.HasPrefix(href, "#") {
		return 0
	}
	u, err := url.Parse(href)
	if err != nil {
		return 0
	}
	if r.base != nil {
		u = r.base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return 0
	}
	s := u.String()
	if r.seen == nil {
		r.seen = map[string]int{}
	}
	if i, ok := r.seen[s]; ok {
		return i
	}
	if len(r.links) >= maxLinks {
		r.dropped++
		return 0
	}
	r.links = append(r.links, s)
	r.seen[s] = len(r.links)
	return len(r.links)
}

func endsBlank(s string) bool {
	if s == "" {
		return true
	}
	c := s[len(s)-1]
	return c == ' ' || c == '\n'
}

// collapseBlank keeps at most one empty line between lines, and trims
// each line's trailing blanks.
func collapseBlank(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	empty := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			empty++
			if empty > 1 {
				continue
			}
			l = ""
		} else {
			empty = 0
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func find(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// PlainText is a text body as a model reads it: valid UTF-8 (what is not
// is replaced), or, for a body that is not text, nothing and false.
func PlainText(body []byte) (string, bool) {
	if bytes.IndexByte(body, 0) >= 0 {
		return "", false
	}
	if !utf8.Valid(body) {
		return strings.ToValidUTF8(string(body), "\uFFFD"), true
	}
	return string(body), true
}

// startTags counts the start tags of body, stopping past limit.
func startTags(body []byte, limit int) int {
	z := html.NewTokenizer(bytes.NewReader(body))
	n := 0
	for n <= limit {
		switch z.Next() {
		case html.ErrorToken:
			return n
		case html.StartTagToken, html.SelfClosingTagToken:
			n++
		}
	}
	return n
}

// tokenText is body's text read as a stream of tokens, in one pass and
// with nothing kept but the text: what is inside a skipped element
// (scripts, styles, navigation) is left out, block elements begin lines,
// links are numbered as HTMLText numbers them. Its text is at most
// maxHTMLBytes.
func tokenText(body []byte, base *url.URL) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	r := &renderer{base: base}
	skip := 0
	var hrefs []string
	title, inTitle := "", false
	for r.b.Len() < maxHTMLBytes {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		name, _ := z.TagName()
		a := atom.Lookup(name)
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case skipped[a]:
				if tt == html.StartTagToken {
					skip++
				}
			case skip > 0:
			case a == atom.Br:
				r.b.WriteString("\n")
			case a == atom.Li:
				r.b.WriteString("\n- ")
			case a == atom.A && tt == html.StartTagToken:
				href := ""
				for {
					k, v, more := z.TagAttr()
					if string(k) == "href" {
						href = strings.TrimSpace(string(v))
					}
					if !more {
						break
					}
				}
				hrefs = append(hrefs, href)
			case blocks[a] || a == atom.Pre || headings[a]:
				r.b.WriteString("\n\n")
			}
		case html.EndTagToken:
			switch {
			case a == atom.Title:
				inTitle = false
			case skipped[a]:
				if skip > 0 {
					skip--
				}
			case skip > 0:
			case a == atom.A && len(hrefs) > 0:
				if ref := r.link(hrefs[len(hrefs)-1]); ref > 0 {
					fmt.Fprintf(&r.b, " [%d]", ref)
				}
				hrefs = hrefs[:len(hrefs)-1]
			case blocks[a] || a == atom.Pre:
				r.b.WriteString("\n\n")
			}
		case html.TextToken:
			switch {
			case inTitle:
				title += string(z.Text())
			case skip == 0:
				r.inline(string(z.Text()))
			}
		}
	}
	return strings.ToValidUTF8(r.text(strings.TrimSpace(title)), "\uFFFD")
}
