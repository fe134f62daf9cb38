// Package gateway is a launched session's way to its model: an HTTP
// handler, served inside the session on its own loopback, that takes the
// agent's model requests with a placeholder key worth nothing outside the
// session, checks the key, the path and the body, and forwards each
// request from rein's process to the one upstream its configuration names
// (over TLS, or plain HTTP to a loopback address only), with the real key,
// which never enters the session. Responses, streamed or not, pass through
// as they arrive; their usage is read on the way to record each call and
// to bound the session's tokens and cost.
//
// gateway imports the standard library only: what a host may be reached
// by the provider, what a call costs, and where a call is recorded are
// its caller's (launch).
package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Family is the wire format of a provider's API.
type Family string

// The families a gateway speaks.
const (
	// Messages is Anthropic's Messages API.
	Messages Family = "messages"
	// Responses is OpenAI's API: Responses and Chat Completions.
	Responses Family = "responses"
)

// Config is one session's gateway.
type Config struct {
	// Provider names the provider in each call's record (anthropic,
	// openai); Family is its API.
	Provider string
	Family   Family
	// Upstream is the provider's base URL (https://api.anthropic.com,
	// https://api.openai.com/v1): https, or http to a loopback address.
	// The session's base URL has the same path.
	Upstream string
	// Header and Key are how the real key is sent upstream: Header
	// "Authorization" sends "Bearer Key", any other header Key itself.
	Header, Key string
	// Placeholder is the key the session is given; a request without it
	// is refused.
	Placeholder string
	// Host decides a host the provider itself would reach for a request
	// (an MCP server, a URL it fetches): allowed, or why not.
	Host func(ctx context.Context, host string, port uint16) (ok bool, why string)
	// MaxTokens and MaxCost bound the session (0: no bound); Price is a
	// model's price, per million tokens.
	MaxTokens int64
	MaxCost   float64
	Price     func(model string) (Price, bool)
	// Record records each call, refused ones included, once it ends; once
	// it fails, every later call is refused (rein makes no call it cannot
	// record).
	Record func(Call) error
	// Spent is called once, when a request is refused because a bound
	// was reached: the session ends.
	Spent func(why string)
	// Transport carries the requests upstream; nil is a transport of the
	// gateway's own that takes no proxy from the environment.
	Transport http.RoundTripper
	// MaxBody bounds a request's body (0: 32 MiB), and MaxCalls the
	// calls served at once (0: 16): past it a call is refused with 429,
	// which agents retry. Together they bound the memory anything in the
	// session can make rein hold.
	MaxBody  int64
	MaxCalls int
}

// Price is a model's price per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is what usage u costs at p, in dollars.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output + float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// Usage is a call's tokens: Input those not read from the cache.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Total is every token of the call.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// Call is one request through the gateway, as it is recorded.
type Call struct {
	Seq      int
	Method   string
	Path     string
	Model    string
	Stream   bool
	Status   int
	Usage    Usage
	Cost     float64
	Priced   bool
	Finish   string
	Latency  time.Duration
	First    time.Duration
	Bytes    int64
	Refused  string // why the gateway refused it, or ""
	Error    string // what failed upstream, or ""
	Started  time.Time
	ReqBytes int
	// Estimated says that the answer gave no final usage: Usage counts
	// the request's and the answer's bytes, a quarter token each.
	Estimated bool
}

// Gateway serves one session's model requests.
type Gateway struct {
	c        Config
	upstream *url.URL
	client   *http.Client
	ctx      context.Context
	cancel   context.CancelFunc
	slots    chan struct{}

	mu       sync.Mutex
	seq      int
	tokens   int64
	cost     float64
	spent    string
	unpriced map[string]bool
	// held are the tokens and dollars the calls in flight may spend at
	// most, by their estimate: a call is let through only while what was
	// spent and what is held stay under the bounds.
	heldTokens int64
	heldCost   float64
	lost       string // why the trace took no more, or ""
	bytes      *semaphore.Weighted
}

// New checks c and makes its gateway; ctx ends every request in flight
// when it is done, as Close does.
func New(ctx context.Context, c Config) (*Gateway, error) {
	u, err := url.Parse(c.Upstream)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("the model's base URL %q is not a plain http(s) URL", c.Upstream)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !Loopback(u.Hostname()) {
			return nil, fmt.Errorf("the model's base URL %q is plain http to a host that is not loopback: rein sends the key only over TLS (https), or to this machine", c.Upstream)
		}
	default:
		return nil, fmt.Errorf("the model's base URL %q is not http(s)", c.Upstream)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if u.Path != "" && path.Clean(u.Path) != u.Path {
		return nil, fmt.Errorf("the model's base URL %q has an unclean path", c.Upstream)
	}
	if c.Family != Messages && c.Family != Responses {
		return nil, fmt.Errorf("unknown API family %q", c.Family)
	}
	if len(c.Placeholder) < 32 || c.Key == "" || c.Header == "" {
		return nil, errors.New("a gateway needs the real key, its header, and a placeholder of 32 characters or more")
	}
	if c.MaxBody == 0 {
		c.MaxBody = 32 << 20
	}
	if c.MaxCalls == 0 {
		c.MaxCalls = 16
	}
	tr := c.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 nil, // never one from the environment
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 10 * time.Minute,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Gateway{c: c, upstream: u, ctx: ctx, cancel: cancel, unpriced: map[string]bool{}, slots: make(chan struct{}, c.MaxCalls),
		bytes:  semaphore.NewWeighted(maxHeldBodies),
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Close cancels every request in flight upstream.
func (g *Gateway) Close() { g.cancel() }

// Spent is why the session's bound was reached, or "".
func (g *Gateway) Spent() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spent
}

// Totals are the session's tokens and cost so far, and the models it
// used that have no price.
func (g *Gateway) Totals() (tokens int64, cost float64, unpriced []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for m := range g.unpriced {
		unpriced = append(unpriced, m)
	}
	return g.tokens, g.cost, unpriced
}

// maxHeldBodies bounds the request bodies held at once, in bytes.
const maxHeldBodies = 96 << 20

// generates are the paths whose calls the model answers, and bills.
var generates = map[string]bool{"/v1/messages": true, "/responses": true, "/chat/completions": true}

// writeWait bounds each write of an answer to the session's client.
const writeWait = 2 * time.Minute

// Loopback says whether host is a loopback address or localhost.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// paths are the API paths (below the base URL) a family forwards: a
// method and a path, where a trailing "/*" is one more segment.
var paths = map[Family][][2]string{
	Messages: {{"POST", "/v1/messages"}, {"POST", "/v1/messages/count_tokens"}, {"GET", "/v1/models"}, {"GET", "/v1/models/*"}},
	Responses: {{"POST", "/responses"}, {"POST", "/chat/completions"}, {"GET", "/models"}, {"GET", "/models/*"},
		{"POST", "/responses/input_tokens"}},
}

// apiPath is the request's path below the base URL, if the family
// forwards it.
func (g *Gateway) apiPath(r *http.Request) (string, bool) {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "//") || (p != "/" && path.Clean(p) != p) {
		return "", false
	}
	rest, ok := strings.CutPrefix(p, g.upstream.Path)
	if !ok || !strings.HasPrefix(rest, "/") {
		return "", false
	}
	for _, allowed := range paths[g.c.Family] {
		if r.Method != allowed[0] {
			continue
		}
		if prefix, one := strings.CutSuffix(allowed[1], "/*"); one {
			if seg, ok := strings.CutPrefix(rest, prefix+"/"); ok && seg != "" && !strings.Contains(seg, "/") {
				return rest, true
			}
		} else if rest == allowed[1] {
			return rest, true
		}
	}
	return "", false
}

// forwardHeaders are the request headers passed upstream; every other
// (the client's keys, cookies, its proxy's) is dropped.
var forwardHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "User-Agent", "Openai-Beta",
	"X-App", "Originator", "Session_id", "Session-Id", "Thread-Id", "Version", "X-Client-Request-Id", "X-Codex-Beta-Features",
	"X-Codex-Turn-Metadata", "X-Codex-Window-Id"}

// ServeHTTP serves one request of the session.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := Call{Method: r.Method, Path: clip(r.URL.Path), Started: time.Now()}
	g.mu.Lock()
	g.seq++
	call.Seq = g.seq
	g.mu.Unlock()
	if !g.keyOK(r) {
		// Not recorded as a call: anything in the session can knock.
		g.fail(w, http.StatusUnauthorized, "authentication_error", "rein's gateway: the request does not carry this session's key")
		return
	}
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	default:
		g.fail(w, http.StatusTooManyRequests, "rate_limit_error", fmt.Sprintf("rein's gateway: more than %d calls at once from the session", g.c.MaxCalls))
		return
	}
	api, ok := g.apiPath(r)
	if !ok {
		call.Refused = fmt.Sprintf("%s %s is not a model API path rein forwards", r.Method, clip(r.URL.Path))
		g.refuse(w, http.StatusNotFound, "not_found_error", call)
		return
	}
	if why := g.query(r.URL.Query()); why != "" {
		call.Refused = why
		g.refuse(w, http.StatusForbidden, "permission_error", call)
		return
	}
	var body []byte
	var req map[string]any
	if r.Method == "POST" {
		// The bodies held at once are bounded, each by its length.
		hold := g.c.MaxBody
		if r.ContentLength >= 0 && r.ContentLength < hold {
			hold = r.ContentLength
		}
		hold = max(hold, 1)
		if err := g.bytes.Acquire(r.Context(), hold); err != nil {
			return
		}
		defer g.bytes.Release(hold)
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, min(g.c.MaxBody, hold)+1))
		if err != nil {
			call.Error = "reading the request: " + err.Error()
			g.record(call)
			return
		}
		call.ReqBytes = len(body)
		if int64(len(body)) > hold {
			call.Refused = fmt.Sprintf("the request's body is over %d bytes (its length said %d; at most %d MiB)", hold, r.ContentLength, g.c.MaxBody>>20)
			g.refuse(w, http.StatusRequestEntityTooLarge, "request_too_large", call)
			return
		}
		if why := strict(body); why != "" {
			call.Refused = why
			g.refuse(w, http.StatusBadRequest, "invalid_request_error", call)
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil || dec.More() {
			call.Refused = "the request's body is not one JSON object"
			g.refuse(w, http.StatusBadRequest, "invalid_request_error", call)
			return
		}
		call.Model, _ = req["model"].(string)
		call.Stream, _ = req["stream"].(bool)
		if why := g.inspect(r.Context(), api, req); why != "" {
			call.Refused = why
			g.refuse(w, http.StatusForbidden, "permission_error", call)
			return
		}
	}
	est, estCost, why, final := g.admit(call.Model, len(body), req)
	if why != "" {
		call.Refused = why
		if final {
			g.refuse(w, http.StatusForbidden, "permission_error", call)
		} else {
			// Held by the calls in flight: the agent retries.
			call.Status = http.StatusTooManyRequests
			g.record(call)
			g.fail(w, http.StatusTooManyRequests, "rate_limit_error", "rein's gateway: "+why)
		}
		return
	}
	defer g.release(est, estCost)
	g.forward(w, r, api, body, call)
}

// clip bounds what of the request a record keeps.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}

// queries are the query parameters a family's paths take; any other
// could change what the provider does, and is refused.
var queries = map[Family]map[string]bool{
	Messages:  {"beta": true, "limit": true, "after_id": true, "before_id": true},
	Responses: {"limit": true, "after": true},
}

func (g *Gateway) query(q url.Values) string {
	for k := range q {
		if !queries[g.c.Family][k] {
			return fmt.Sprintf("the query parameter %q is not one rein knows to be safe to forward", clip(k))
		}
	}
	return ""
}

// keyOK says whether r carries the placeholder, as an x-api-key or a
// bearer token.
func (g *Gateway) keyOK(r *http.Request) bool {
	var got []string
	got = append(got, r.Header.Values("X-Api-Key")...)
	for _, a := range r.Header.Values("Authorization") {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			got = append(got, t)
		}
	}
	for _, k := range got {
		if subtle.ConstantTimeCompare([]byte(k), []byte(g.c.Placeholder)) == 1 {
			return true
		}
	}
	return false
}

// admit lets a call through, holding its estimate, or says why not:
// final when a bound was reached (the session ends the first time) or
// cannot be kept, not final while calls in flight hold what is left.
func (g *Gateway) admit(model string, body int, req map[string]any) (int64, float64, string, bool) {
	est := int64(body)/4 + maxOutput(req)
	var price Price
	priced := false
	if g.c.Price != nil && model != "" {
		price, priced = g.c.Price(model)
	}
	estCost := 0.0
	if priced {
		estCost = price.Cost(Usage{Input: int64(body) / 4, Output: maxOutput(req)})
	}
	g.mu.Lock()
	var why string
	final := true
	switch {
	case g.lost != "":
		why = g.lost
	case g.spent != "":
		why = g.spent
	case g.c.MaxTokens > 0 && g.tokens >= g.c.MaxTokens:
		why = fmt.Sprintf("the session reached its token budget: %d tokens of %d (rein launch --max-tokens)", g.tokens, g.c.MaxTokens)
	case g.c.MaxCost > 0 && g.cost >= g.c.MaxCost:
		why = fmt.Sprintf("the session reached its cost budget: $%.4f of $%.4f (rein launch --max-cost)", g.cost, g.c.MaxCost)
	case g.c.MaxCost > 0 && g.c.MaxTokens == 0 && model != "" && !priced:
		why = fmt.Sprintf("the model %s has no price in the policy ([[provider.price]]): with --max-cost alone rein cannot bound its calls (add a price, or --max-tokens)", clip(model))
	case g.c.MaxTokens > 0 && g.tokens+g.heldTokens >= g.c.MaxTokens, g.c.MaxCost > 0 && g.cost+g.heldCost >= g.c.MaxCost:
		why, final = "what is left of the session's budget is held by its calls in flight; retry when they end", false
	}
	first := why != "" && final && g.spent == "" && g.lost == ""
	if first && !strings.Contains(why, "has no price") {
		g.spent = why
	} else {
		first = false
	}
	if why == "" {
		g.heldTokens += est
		g.heldCost += estCost
	}
	g.mu.Unlock()
	if first && g.c.Spent != nil {
		g.c.Spent(why)
	}
	return est, estCost, why, final
}

// release lets go of a call's estimate once it has been accounted.
func (g *Gateway) release(est int64, estCost float64) {
	g.mu.Lock()
	g.heldTokens -= est
	g.heldCost -= estCost
	g.mu.Unlock()
}

// maxOutput is the most a request asks the model to write, or a
// generous default when it does not say.
func maxOutput(req map[string]any) int64 {
	for _, k := range []string{"max_tokens", "max_output_tokens", "max_completion_tokens"} {
		if n, ok := req[k].(json.Number); ok {
			if v, err := n.Int64(); err == nil && v > 0 {
				return v
			}
		}
	}
	return 32000
}

func (g *Gateway) refuse(w http.ResponseWriter, status int, kind string, call Call) {
	call.Status = status
	g.record(call)
	g.fail(w, status, kind, "rein's gateway refused this request: "+call.Refused)
}

// fail answers with an error in the family's own format, which the agent
// shows its user.
func (g *Gateway) fail(w http.ResponseWriter, status int, kind, msg string) {
	var v any
	if g.c.Family == Messages {
		v = map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": "rein_refused", "param": nil}}
	}
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	w.Write(data)
}

func (g *Gateway) record(c Call) {
	if g.c.Record == nil {
		return
	}
	if err := g.c.Record(c); err != nil {
		g.mu.Lock()
		if g.lost == "" {
			g.lost = "the session's trace takes no more records (" + err.Error() + "): rein makes no call it cannot record"
		}
		g.mu.Unlock()
	}
}

// hopHeaders are the response headers not passed back.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Set-Cookie": true, "Content-Length": true, "Alt-Svc": true}

// forward sends the request upstream with the real key and streams the
// answer back, reading its usage on the way.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, api string, body []byte, call Call) {
	target := *g.upstream
	target.Path = g.upstream.Path + api
	target.RawQuery = r.URL.RawQuery
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	up, err := http.NewRequestWithContext(ctx, r.Method, target.String(), rd)
	if err != nil {
		call.Error = err.Error()
		g.record(call)
		g.fail(w, http.StatusBadGateway, "api_error", "rein's gateway: "+err.Error())
		return
	}
	for _, h := range forwardHeaders {
		if vs := r.Header.Values(h); len(vs) > 0 {
			up.Header[h] = vs
		}
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(k, "X-Stainless-") {
			up.Header[k] = vs
		}
	}
	if g.c.Header == "Authorization" {
		up.Header.Set("Authorization", "Bearer "+g.c.Key)
	} else {
		up.Header.Set(g.c.Header, g.c.Key)
	}
	resp, err := g.client.Do(up)
	if err != nil {
		call.Error = err.Error()
		call.Latency = time.Since(call.Started)
		g.record(call)
		g.fail(w, http.StatusBadGateway, "api_error", "rein's gateway could not reach the model's API: "+err.Error())
		return
	}
	defer resp.Body.Close()
	call.Status = resp.StatusCode
	for k, vs := range resp.Header {
		if !hopHeaders[k] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	// A client that stops reading holds a call slot no longer than a
	// write's deadline.
	rc := http.NewResponseController(w)
	deadlineSet := time.Now()
	rc.SetWriteDeadline(deadlineSet.Add(writeWait))
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	u := newUsageReader(g.c.Family, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if call.First == 0 {
				call.First = time.Since(call.Started)
			}
			call.Bytes += int64(n)
			u.Write(buf[:n])
			if now := time.Now(); now.Sub(deadlineSet) > time.Second {
				rc.SetWriteDeadline(now.Add(writeWait))
				deadlineSet = now
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				call.Error = "the session's client went away: " + werr.Error()
				break
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			if rerr != io.EOF {
				call.Error = "reading the model's answer: " + rerr.Error()
			}
			break
		}
	}
	call.Latency = time.Since(call.Started)
	usage, model, finish, whole := u.result()
	if model != "" && call.Model == "" {
		call.Model = model
	}
	call.Usage, call.Finish = usage, finish
	if !whole && resp.StatusCode < 300 && generates[api] {
		// The answer's final usage never came (cut short, too long to
		// read, or a stream that does not report it): count what it may
		// have cost, from the bytes each way.
		call.Usage.Input = max(call.Usage.Input, int64(len(body))/4-call.Usage.CacheRead-call.Usage.CacheWrite)
		call.Usage.Output = max(call.Usage.Output, call.Bytes/4)
		call.Estimated = true
	}
	g.account(&call)
	g.record(call)
}

// account adds a call's usage to the session's totals.
func (g *Gateway) account(c *Call) {
	var price Price
	if g.c.Price != nil && c.Model != "" {
		price, c.Priced = g.c.Price(c.Model)
	}
	if c.Priced {
		c.Cost = price.Cost(c.Usage)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens += c.Usage.Total()
	g.cost += c.Cost
	if !c.Priced && c.Usage.Total() > 0 {
		g.unpriced[c.Model] = true
	}
}
