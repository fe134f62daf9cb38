package trace

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

//go:embed secrets.toml
var secretsTOML []byte

// secretRule is one rule of secrets.toml.
type secretRule struct {
	ID            string   `toml:"id"`
	Description   string   `toml:"description"`
	Regex         string   `toml:"regex"`
	Keywords      []string `toml:"keywords"`
	CaseSensitive bool     `toml:"case_sensitive"`
	Replace       string   `toml:"replace"`
	Examples      []string `toml:"examples"`
	NotExamples   []string `toml:"not_examples"`
}

// secretRules are the rules of secrets.toml, read and checked once.
var secretRules = sync.OnceValues(func() ([]secretRule, error) {
	var f struct {
		Rule []secretRule `toml:"rule"`
	}
	d := toml.NewDecoder(strings.NewReader(string(secretsTOML)))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("trace: secrets.toml: %w", err)
	}
	for _, r := range f.Rule {
		if _, err := regexp.Compile(r.Regex); err != nil {
			return nil, fmt.Errorf("trace: secrets.toml: rule %s: %w", r.ID, err)
		}
		for _, k := range r.Keywords {
			if len(k) < 2 || (!r.CaseSensitive && k != strings.ToLower(k)) {
				return nil, fmt.Errorf("trace: secrets.toml: rule %s: keyword %q must be two bytes or more, and in lower case unless the rule is case_sensitive", r.ID, k)
			}
		}
		if len(r.Keywords) == 0 {
			return nil, fmt.Errorf("trace: secrets.toml: rule %s has no keywords", r.ID)
		}
	}
	return f.Rule, nil
})

// dataPatterns are secrets.toml's rules as patterns. The file is rein's
// own and checked by its tests: one that does not load is a build that
// must not redact less, so it stops the program.
func dataPatterns() []pattern {
	rules, err := secretRules()
	if err != nil {
		panic(err)
	}
	out := make([]pattern, 0, len(rules))
	for _, r := range rules {
		repl := r.Replace
		if repl == "" {
			repl = Redacted
		}
		out = append(out, pattern{re: lazyRegexp(r.Regex), literals: r.Keywords, lower: !r.CaseSensitive, repl: repl})
	}
	return out
}
