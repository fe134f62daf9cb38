package policy

import (
	"fmt"
	"math"
	"net/url"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/reinhq/rein/workspace"
)

// RunSettings are an agent run's defaults from the policy files' [run]
// section: budgets, the gate, protect globs. Flags override them; a
// project file can only narrow them (lower budgets, more protect globs).
type RunSettings struct {
	MaxSteps          int
	MaxTokens         int64
	MaxTime           time.Duration
	ResponseMaxTokens int
	GateRetries       int
	// ContextTokens is the model's window the transcript is folded to
	// fit (zero: the agent's default).
	ContextTokens int
	// MaxCost bounds what a run's tokens cost by its provider's prices.
	MaxCost float64
	// Verify is the default gate line; a project file sets it only when
	// trusted.
	Verify  string
	Protect []string
	// Web puts the web tools (fetch_url, and search_internet when a
	// search backend is set) on the agent's surface and rein mcp's. A
	// project file that is not trusted can only turn it off.
	Web bool
	// Recovery is what a resumed run does with a call that was running
	// when its driver died and is not safe to repeat: "tell" the model
	// (the default), or "wait" for an operator. A project file can only
	// ask for "wait".
	Recovery string
	// ChildDepth, ChildConcurrency and Children bound an agent run's tree
	// of child runs (spawn_agent): how deep it goes, how many children of
	// one run run at once, how many it starts in all; nil is the agent's
	// default (2, 4, 16), zero none. A project file can only lower them.
	ChildDepth, ChildConcurrency, Children *int
}

// ProviderSetting is one [[provider]] entry: a provider by name, over the
// preset of that name when there is one. Only org and user files may
// have them: a project file would choose where the user's key is sent.
type ProviderSetting struct {
	Name      string
	Family    string
	BaseURL   string
	Model     string
	APIKeyEnv string
	// Prices per million tokens: input, output, cache read, cache write.
	PriceInput, PriceOutput, PriceCacheRead, PriceCacheWrite float64
	// Prices are per model ([[provider.price]] rows), for a provider
	// whose sessions use several models.
	Prices []ModelPrice
	Layer  Layer
	File   string
}

// ModelPrice is one [[provider.price]] row: the prices per million
// tokens of the models whose names match Model (a glob: claude-sonnet-4*).
type ModelPrice struct {
	Model                                string
	Input, Output, CacheRead, CacheWrite float64
}

type runConfig struct {
	MaxSteps          *int     `toml:"max_steps"`
	MaxTokens         *int64   `toml:"max_tokens"`
	MaxTime           string   `toml:"max_time"`
	ResponseMaxTokens *int     `toml:"response_max_tokens"`
	GateRetries       *int     `toml:"gate_retries"`
	ContextTokens     *int     `toml:"context_tokens"`
	MaxCost           *float64 `toml:"max_cost"`
	Verify            string   `toml:"verify"`
	Protect           []string `toml:"protect"`
	Recovery          string   `toml:"recovery"`
	Web               *bool    `toml:"web"`
	ChildDepth        *int     `toml:"child_depth"`
	ChildConcurrency  *int     `toml:"child_concurrency"`
	Children          *int     `toml:"children"`
}

type providerConfig struct {
	Name      string `toml:"name"`
	Family    string `toml:"family"`
	BaseURL   string `toml:"base_url"`
	Model     string `toml:"model"`
	APIKeyEnv string `toml:"api_key_env"`
	// Prices per million tokens.
	PriceInput      float64 `toml:"price_input"`
	PriceOutput     float64 `toml:"price_output"`
	PriceCacheRead  float64 `toml:"price_cache_read"`
	PriceCacheWrite float64 `toml:"price_cache_write"`
	Price           []struct {
		Model      string  `toml:"model"`
		Input      float64 `toml:"input"`
		Output     float64 `toml:"output"`
		CacheRead  float64 `toml:"cache_read"`
		CacheWrite float64 `toml:"cache_write"`
	} `toml:"price"`
}

// run applies a file's [run] section and [[provider]] entries.
func (a *applier) run(c *fileConfig) error {
	p, r := a.p, c.Run
	ints := []struct {
		key string
		v   *int
		dst *int
	}{{"run.max_steps", r.MaxSteps, &p.Run.MaxSteps}, {"run.response_max_tokens", r.ResponseMaxTokens, &p.Run.ResponseMaxTokens}, {"run.gate_retries", r.GateRetries, &p.Run.GateRetries},
		{"run.context_tokens", r.ContextTokens, &p.Run.ContextTokens}}
	for _, n := range ints {
		if n.v == nil {
			continue
		}
		if *n.v < 1 {
			return a.fail(n.key, fmt.Errorf("must be at least 1, not %d", *n.v))
		}
		if !a.narrowOnly || *n.dst == 0 || *n.v < *n.dst {
			*n.dst = *n.v
			p.setting(n.key, strconv.Itoa(*n.v), a.layer, a.file)
		}
	}
	// The agent's defaults (agent/loop.ChildLimits), which a project file
	// can only lower.
	for _, n := range []struct {
		key string
		v   *int
		dst **int
		def int
	}{{"run.child_depth", r.ChildDepth, &p.Run.ChildDepth, 2}, {"run.child_concurrency", r.ChildConcurrency, &p.Run.ChildConcurrency, 4}, {"run.children", r.Children, &p.Run.Children, 16}} {
		if n.v == nil {
			continue
		}
		if *n.v < 0 || *n.v > 64 {
			return a.fail(n.key, fmt.Errorf("must be from 0 (none) to 64, not %d", *n.v))
		}
		now := n.def
		if *n.dst != nil {
			now = **n.dst
		}
		if !a.narrowOnly || *n.v < now {
			v := *n.v
			*n.dst = &v
			p.setting(n.key, strconv.Itoa(v), a.layer, a.file)
		}
	}
	if r.MaxTokens != nil {
		if *r.MaxTokens < 1 {
			return a.fail("run.max_tokens", fmt.Errorf("must be at least 1, not %d", *r.MaxTokens))
		}
		if !a.narrowOnly || p.Run.MaxTokens == 0 || *r.MaxTokens < p.Run.MaxTokens {
			p.Run.MaxTokens = *r.MaxTokens
			p.setting("run.max_tokens", strconv.FormatInt(*r.MaxTokens, 10), a.layer, a.file)
		}
	}
	if r.MaxTime != "" {
		d, err := time.ParseDuration(r.MaxTime)
		if err != nil || d <= 0 {
			return a.fail("run.max_time", fmt.Errorf("%q is not a positive duration such as \"30m\"", r.MaxTime))
		}
		if !a.narrowOnly || p.Run.MaxTime == 0 || d < p.Run.MaxTime {
			p.Run.MaxTime = d
			p.setting("run.max_time", d.String(), a.layer, a.file)
		}
	}
	if r.MaxCost != nil {
		if !(*r.MaxCost > 0) || math.IsInf(*r.MaxCost, 0) {
			return a.fail("run.max_cost", fmt.Errorf("must be more than 0, not %g", *r.MaxCost))
		}
		if !a.narrowOnly || p.Run.MaxCost == 0 || *r.MaxCost < p.Run.MaxCost {
			p.Run.MaxCost = *r.MaxCost
			p.setting("run.max_cost", strconv.FormatFloat(*r.MaxCost, 'g', -1, 64), a.layer, a.file)
		}
	}
	if r.Verify != "" && !a.narrowOnly {
		p.Run.Verify = r.Verify
		p.setting("run.verify", r.Verify, a.layer, a.file)
	}
	switch r.Recovery {
	case "":
	case "tell", "wait":
		if !a.narrowOnly || r.Recovery == "wait" {
			p.Run.Recovery = r.Recovery
			p.setting("run.recovery", r.Recovery, a.layer, a.file)
		}
	default:
		return a.fail("run.recovery", fmt.Errorf("%q is neither \"tell\" (the model is told of an interrupted call) nor \"wait\" (an operator decides)", r.Recovery))
	}
	if r.Web != nil && (!a.narrowOnly || !*r.Web) {
		p.Run.Web = *r.Web
		p.setting("run.web", strconv.FormatBool(*r.Web), a.layer, a.file)
	}
	if u := c.Web.SearchURL; u != "" {
		if err := a.refuseRepository("web.search_url", "set the search backend: it would choose where the model's queries go", "put it in the user's policy file"); err != nil {
			return err
		}
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || pu.User != nil {
			return a.fail("web.search_url", fmt.Errorf("%q is not an http(s) URL without a user", u))
		}
		p.WebSearchURL = u
		p.setting("web.search_url", u, a.layer, a.file)
	}
	if f := c.Trace.KeyFile; f != "" {
		if err := a.refuseRepository("trace.key_file", "choose the trace key: it would choose what the trace is sealed with", "put it in the org or user policy file"); err != nil {
			return err
		}
		if !filepath.IsAbs(f) {
			return a.fail("trace.key_file", fmt.Errorf("%q is not an absolute path", f))
		}
		p.TraceKeyFile = filepath.Clean(f)
		p.setting("trace.key_file", p.TraceKeyFile, a.layer, a.file)
	}
	if u := c.Trace.OTLPEndpoint; u != "" {
		if err := a.refuseRepository("trace.otlp_endpoint", "choose where runs are exported: it would send the trace's contents elsewhere", "put it in the org or user policy file"); err != nil {
			return err
		}
		// The URL is not repeated when it may hold a credential.
		switch pu, err := url.Parse(u); {
		case err != nil:
			return a.fail("trace.otlp_endpoint", fmt.Errorf("is not an http(s) URL such as \"http://127.0.0.1:4318/v1/traces\""))
		case pu.User != nil || pu.RawQuery != "" || pu.Fragment != "":
			return a.fail("trace.otlp_endpoint", fmt.Errorf("is not an http(s) URL without a user, a query or a fragment"))
		case (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "":
			return a.fail("trace.otlp_endpoint", fmt.Errorf("%q is not an http(s) URL such as \"http://127.0.0.1:4318/v1/traces\"", u))
		}
		p.OTLPEndpoint = u
		p.setting("trace.otlp_endpoint", u, a.layer, a.file)
	}
	if c.Trace.OTLPContent != nil {
		if err := a.refuseRepository("trace.otlp_content", "choose what is exported of a run", "put it in the org or user policy file"); err != nil {
			return err
		}
		p.OTLPContent = *c.Trace.OTLPContent
		p.setting("trace.otlp_content", strconv.FormatBool(p.OTLPContent), a.layer, a.file)
	}
	for _, g := range r.Protect {
		if !slices.Contains(p.Run.Protect, g) {
			p.Run.Protect = append(p.Run.Protect, g)
		}
	}
	for i, pc := range c.Provider {
		key := fmt.Sprintf("provider[%d]", i)
		if err := a.refuseRepository(key, "configure a provider: it would choose where the user's key is sent", "put it in the user's policy file"); err != nil {
			return err
		}
		if pc.Name == "" {
			return a.fail(key+".name", fmt.Errorf("a provider needs a name"))
		}
		switch pc.Family {
		case "", "chat", "messages", "responses":
		default:
			return a.fail(key+".family", fmt.Errorf("unknown family %q: use chat, messages or responses", pc.Family))
		}
		if pc.BaseURL != "" {
			if u, err := url.Parse(pc.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return a.fail(key+".base_url", fmt.Errorf("%q is not an http(s) URL", pc.BaseURL))
			}
		}
		for _, v := range []float64{pc.PriceInput, pc.PriceOutput, pc.PriceCacheRead, pc.PriceCacheWrite} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return a.fail(key, fmt.Errorf("a price is %v: prices are numbers of 0 or more", v))
			}
		}
		var prices []ModelPrice
		for j, row := range pc.Price {
			rkey := fmt.Sprintf("%s.price[%d]", key, j)
			if _, err := path.Match(row.Model, ""); err != nil || row.Model == "" {
				return a.fail(rkey+".model", fmt.Errorf("%q is not a model name or glob", row.Model))
			}
			for _, v := range []float64{row.Input, row.Output, row.CacheRead, row.CacheWrite} {
				if !(v >= 0) || math.IsInf(v, 0) {
					return a.fail(rkey, fmt.Errorf("a price is %v: prices are numbers of 0 or more", v))
				}
			}
			prices = append(prices, ModelPrice{Model: row.Model, Input: row.Input, Output: row.Output, CacheRead: row.CacheRead, CacheWrite: row.CacheWrite})
		}
		p.Providers = append(p.Providers, ProviderSetting{Name: pc.Name, Family: pc.Family, BaseURL: pc.BaseURL, Model: pc.Model, APIKeyEnv: pc.APIKeyEnv,
			PriceInput: pc.PriceInput, PriceOutput: pc.PriceOutput, PriceCacheRead: pc.PriceCacheRead, PriceCacheWrite: pc.PriceCacheWrite, Prices: prices, Layer: a.layer, File: a.file})
	}
	return nil
}

// refuseRepository refuses key, which only the person running rein may
// set, in a file that is the repository's: the project file, and a file
// of any layer that lies inside the workspace. The org and user files
// are found through REIN_ORG_POLICY, REIN_USER_POLICY, XDG_CONFIG_HOME
// and HOME, which a repository can set through an agent's settings
// (Claude Code's .claude/settings.json env, for one): their layer says
// how a file was named, not whose it is, and a file the repository can
// write is the repository's. may is what the key would let the
// repository do, put where the key belongs.
func (a *applier) refuseRepository(key, may, put string) error {
	if a.layer == LayerProject {
		return a.fail(key, fmt.Errorf("a project file may not %s; %s", may, put))
	}
	ws := a.p.Workspace
	if ws == "" || holdsHome(ws) {
		// A workspace that holds the account's home (rein run from ~)
		// holds the user's own policy file too: the person chose it.
		return nil
	}
	inside, err := insideWorkspace(ws, a.file)
	switch {
	case err != nil:
		return a.fail(key, fmt.Errorf("cannot tell whether the file lies inside the workspace %s, whose files are the repository's: %w; name a policy file that can be resolved", ws, err))
	case inside:
		return a.fail(key, fmt.Errorf("a policy file inside the workspace (%s) is the repository's, whatever layer names it (here the %s layer), and may not %s; %s, outside the workspace", ws, a.layer, may, put))
	}
	return nil
}

// insideWorkspace says whether the policy file lies inside ws (a cleaned,
// symlink-resolved absolute path): the file it reaches, or the place it
// is named at, since a link there is the repository's too and could
// point anywhere.
func insideWorkspace(ws, file string) (bool, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false, err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return false, err
	}
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false, err
	}
	return workspace.Within(ws, filepath.Join(dir, filepath.Base(abs))) || workspace.Within(ws, target), nil
}

// holdsHome says whether ws holds the account's home directory, as the
// system's account database names it (not HOME, which a repository can
// set).
func holdsHome(ws string) bool {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return false
	}
	home, err := filepath.EvalSymlinks(u.HomeDir)
	if err != nil {
		return false
	}
	return workspace.Within(ws, home)
}
