//go:build unix

package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/launch/gateway"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/trace"
)

// GatewayPort is the port of the model gateway on a session's own
// loopback.
const GatewayPort = 3129

// Model is where a launched agent's model is: its provider, the API it
// speaks, and its base URL, which only rein's process reaches; the
// session reaches the model through the gateway alone.
type Model struct {
	Provider string
	Family   gateway.Family
	Base     string
}

// Local is the model's base URL inside the session: the gateway on the
// session's loopback, with the base URL's path.
func (m Model) Local() string {
	p := ""
	if u, err := url.Parse(m.Base); err == nil {
		p = strings.TrimSuffix(u.Path, "/")
	}
	return "http://127.0.0.1:" + strconv.Itoa(GatewayPort) + p
}

// AnthropicModel is Anthropic's Messages API as an agent finds it:
// ANTHROPIC_BASE_URL, else Anthropic's own.
func AnthropicModel(getenv func(string) string) (Model, error) {
	base := getenv("ANTHROPIC_BASE_URL")
	if base == "" {
		base = "https://api.anthropic.com"
	}
	u, err := ModelURL("ANTHROPIC_BASE_URL", base)
	return Model{Provider: "anthropic", Family: gateway.Messages, Base: u}, err
}

// ModelURL reads the model's base URL from a variable (what names it),
// as rein forwards to it: https, or plain http to this machine only.
func ModelURL(what, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q is not a plain http(s) URL", what, base)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && gateway.Loopback(u.Hostname()):
	default:
		return "", fmt.Errorf("%s %q: rein sends the model's key only over https (or plain http to this machine)", what, base)
	}
	if p := strings.TrimSuffix(u.Path, "/"); p != "" && path.Clean(p) != p {
		return "", fmt.Errorf("%s %q has an unclean path", what, base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}

// Budget bounds a session's model calls: tokens, and dollars by the
// policy's prices (0: no bound).
type Budget struct {
	Tokens int64
	Cost   float64
}

// Prices is the price of a model of provider by the policy's [[provider]]
// entries of that name: a price row whose model (a glob) matches, or the
// entry's own prices for its model.
func Prices(pol *policy.Policy, provider string) func(model string) (gateway.Price, bool) {
	return func(model string) (gateway.Price, bool) {
		for _, p := range pol.Providers {
			if p.Name != provider {
				continue
			}
			for _, row := range p.Prices {
				if ok, _ := path.Match(row.Model, model); ok {
					return gateway.Price{Input: row.Input, Output: row.Output, CacheRead: row.CacheRead, CacheWrite: row.CacheWrite}, true
				}
			}
			if p.Model == model && p.PriceInput+p.PriceOutput+p.PriceCacheRead+p.PriceCacheWrite > 0 {
				return gateway.Price{Input: p.PriceInput, Output: p.PriceOutput, CacheRead: p.PriceCacheRead, CacheWrite: p.PriceCacheWrite}, true
			}
		}
		return gateway.Price{}, false
	}
}

// placeholder is a session's key: random, worth nothing outside it.
func placeholder() string {
	var b [24]byte
	rand.Read(b[:])
	return "rein-session-" + hex.EncodeToString(b[:])
}

// modelKey is the real key from the first of the variables that is set,
// and the header it is sent upstream in.
func modelKey(family gateway.Family, vars []string) (key, header, name string) {
	for _, v := range vars {
		if k := os.Getenv(v); k != "" {
			header = "Authorization"
			if family == gateway.Messages && !strings.Contains(v, "TOKEN") {
				header = "X-Api-Key"
			}
			return k, header, v
		}
	}
	return "", "", ""
}

// startGateway makes the session's gateway and the service that serves
// it on the session's loopback; every call is recorded under runID, and
// a refusal as a policy event too.
func (s *Session) startGateway(ctx context.Context, runID string, store trace.Store, key, header, placeholder string, spent func(string)) (*gateway.Gateway, sandbox.Service, error) {
	m, pol := s.Model, s.Policy
	g, err := gateway.New(ctx, gateway.Config{
		Provider: m.Provider, Family: m.Family, Upstream: m.Base, Header: header, Key: key, Placeholder: placeholder,
		MaxTokens: s.Budget.Tokens, MaxCost: s.Budget.Cost, Price: Prices(pol, m.Provider), Spent: spent,
		Host: func(_ context.Context, host string, port uint16) (bool, string) {
			v := pol.CheckNet(net.JoinHostPort(host, strconv.Itoa(int(port))))
			switch {
			case v.Decision == policy.Allow:
				return true, ""
			case v.Decision == policy.Ask:
				return false, "the policy asks, and nobody is asked for what the model's provider reaches"
			}
			return false, v.Reason
		},
		Record: func(c gateway.Call) error {
			_, err := store.AppendAll(context.Background(), callRecords(runID, m.Provider, c)...)
			return err
		},
	})
	if err != nil {
		return nil, sandbox.Service{}, err
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute, MaxHeaderBytes: 1 << 20}
	return g, sandbox.Service{Port: GatewayPort, Serve: func(l net.Listener) {
		go func() {
			<-ctx.Done()
			srv.Close()
		}()
		srv.Serve(l)
		// The session has ended: its requests in flight are cancelled
		// upstream.
		srv.Close()
		g.Close()
	}}, nil
}

// callRecords are a gateway call's records: a provider call, and a
// policy event when the gateway refused it.
func callRecords(runID, provider string, c gateway.Call) []trace.Record {
	pc := trace.ProviderCall{RunID: runID, Step: c.Seq, Attempt: 1, Provider: provider, Model: c.Model,
		Input: c.Usage.Input, Output: c.Usage.Output, CacheRead: c.Usage.CacheRead, CacheWrite: c.Usage.CacheWrite,
		LatencyMS: ms(c.Latency), FirstMS: ms(c.First), Finish: c.Finish, Error: c.Error, At: c.Started,
		Request: toJSON(map[string]any{"method": c.Method, "path": c.Path, "model": c.Model, "stream": c.Stream, "bytes": c.ReqBytes})}
	switch {
	case c.Refused != "":
		pc.Failure, pc.Error = "refused", c.Refused
	case c.Error != "":
		pc.Failure = "error"
	case c.Status >= 400:
		pc.Failure = "http_" + strconv.Itoa(c.Status)
		pc.Error = fmt.Sprintf("the provider answered %d", c.Status)
	}
	if pc.Failure == "" || pc.Failure == "error" && c.Status != 0 {
		resp := map[string]any{"status": c.Status, "bytes": c.Bytes, "usage": c.Usage, "usage_estimated": c.Estimated}
		if c.Priced {
			resp["cost_usd"] = c.Cost
		}
		pc.Response = toJSON(resp)
	}
	out := []trace.Record{pc}
	if c.Refused != "" {
		out = append(out, trace.PolicyEvent{RunID: runID, Kind: "model", Decision: "deny", Layer: "launch",
			Reason: fmt.Sprintf("%s %s: %s", c.Method, c.Path, c.Refused), At: c.Started})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
