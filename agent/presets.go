package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/reinhq/rein/policy"
)

// Family is a provider's wire format.
type Family string

// The wire families.
const (
	FamilyChat      Family = "chat"
	FamilyResponses Family = "responses"
	FamilyMessages  Family = "messages"
)

// Preset is a row of the provider table.
type Preset struct {
	Name    string
	Family  Family
	BaseURL string
	// KeyEnv is the variable the key is read from; "" sends none.
	KeyEnv string
}

// presets is the provider table.
var presets = []Preset{
	{"openai", FamilyResponses, "https://api.openai.com/v1", "OPENAI_API_KEY"},
	{"anthropic", FamilyMessages, "https://api.anthropic.com", "ANTHROPIC_API_KEY"},
	{"openrouter", FamilyChat, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
	{"groq", FamilyChat, "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
	{"together", FamilyChat, "https://api.together.xyz/v1", "TOGETHER_API_KEY"},
	{"deepseek", FamilyChat, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
	{"mistral", FamilyChat, "https://api.mistral.ai/v1", "MISTRAL_API_KEY"},
	{"gemini", FamilyChat, "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"},
	{"ollama", FamilyChat, "http://127.0.0.1:11434/v1", ""},
	{"vllm", FamilyChat, "http://127.0.0.1:8000/v1", ""},
	{"llamacpp", FamilyChat, "http://127.0.0.1:8080/v1", ""},
	{"lmstudio", FamilyChat, "http://127.0.0.1:1234/v1", ""},
}

// Presets are the provider table's rows.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// presetNamed is the preset of that name.
func presetNamed(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// ProviderChoice is what a run is told about its provider, from flags or
// configuration; empty fields take the preset's. A name no preset has
// needs a base URL (and takes the chat family unless Family says).
type ProviderChoice struct {
	Name, Model, BaseURL, KeyEnv string
	Family                       Family
}

// ChooseProvider makes the provider a choice names. With no name it takes
// anthropic when ANTHROPIC_API_KEY is set, else openai when OPENAI_API_KEY
// is, else ollama when it answers on its port, else it refuses naming the
// three ways. getenv reads the environment; the key is read from the
// variable the choice names, never from a file.
func ChooseProvider(ctx context.Context, c ProviderChoice, getenv func(string) string) (Provider, Preset, error) {
	name := c.Name
	if name == "" {
		switch {
		case getenv("ANTHROPIC_API_KEY") != "":
			name = "anthropic"
		case getenv("OPENAI_API_KEY") != "":
			name = "openai"
		case answers(ctx, "127.0.0.1:11434"):
			name = "ollama"
		default:
			return nil, Preset{}, fmt.Errorf("agent: no provider: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or start ollama on 127.0.0.1:11434, or name one with --provider (%s)", presetNames())
		}
	}
	pr, ok := presetNamed(name)
	switch {
	case !ok && c.BaseURL == "":
		return nil, Preset{}, fmt.Errorf("agent: unknown provider %q: use one of %s, or give it a base URL", name, presetNames())
	case !ok:
		pr = Preset{Name: name, Family: FamilyChat}
	}
	if c.Family != "" {
		pr.Family = c.Family
	}
	if c.BaseURL != "" {
		pr.BaseURL = c.BaseURL
	}
	if c.KeyEnv != "" {
		pr.KeyEnv = c.KeyEnv
	}
	if c.Model == "" {
		return nil, pr, fmt.Errorf("agent: provider %s needs a model: name one with --model", name)
	}
	if u, err := url.Parse(pr.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, pr, fmt.Errorf("agent: provider %s: base URL %q is not an http(s) URL", name, pr.BaseURL)
	}
	key := ""
	if pr.KeyEnv != "" {
		if key = getenv(pr.KeyEnv); key == "" {
			return nil, pr, fmt.Errorf("agent: provider %s reads its key from %s, which is not set", name, pr.KeyEnv)
		}
	}
	cfg := ChatConfig{Name: name, BaseURL: pr.BaseURL, APIKey: key, Model: c.Model, HTTPClient: &http.Client{}}
	switch pr.Family {
	case FamilyChat:
		return NewChat(cfg), pr, nil
	case FamilyMessages:
		return NewMessages(cfg), pr, nil
	case FamilyResponses:
		return NewResponses(cfg), pr, nil
	}
	return nil, pr, fmt.Errorf("agent: provider %s speaks the %s wire family, which this rein does not build yet", name, pr.Family)
}

// CheckProviderHost refuses a provider whose host the policy's net rules
// deny: the provider's client runs in rein's process, but its host is
// decided all the same.
func CheckProviderHost(p *policy.Policy, baseURL string) error {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("agent: provider base URL %q has no host", baseURL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	target := net.JoinHostPort(u.Hostname(), port)
	if v := p.CheckNet(target); v.Decision == policy.Deny && v.Rule != nil {
		return fmt.Errorf("agent: the provider's host %s is denied by %s: %s", target, v.Rule, policy.Printable(v.Reason))
	}
	return nil
}

func answers(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func presetNames() string {
	var n []string
	for _, p := range presets {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}
