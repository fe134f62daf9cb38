package trace

import (
	"regexp"
	"strings"
	"testing"
)

// TestSecretRulesExamples: every rule of secrets.toml redacts each of its
// examples (its own expression matches it, and the redactor's output
// differs and says [redacted]) and leaves each of its not_examples as it
// is; a replacement keeps only groups and says [redacted].
func TestSecretRulesExamples(t *testing.T) {
	rules, err := secretRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 14 {
		t.Fatalf("only %d rules", len(rules))
	}
	r := NewRedactor()
	for _, rule := range rules {
		if len(rule.Examples) == 0 {
			t.Errorf("%s: no example", rule.ID)
		}
		if rule.Replace != "" && !strings.Contains(rule.Replace, Redacted) {
			t.Errorf("%s: the replacement %q does not say %s", rule.ID, rule.Replace, Redacted)
		}
		re := regexp.MustCompile(rule.Regex)
		for _, ex := range rule.Examples {
			if !re.MatchString(ex) {
				t.Errorf("%s: its expression does not match its example %q", rule.ID, ex)
			}
			if got := r.Redact(ex); got == ex || !strings.Contains(got, Redacted) {
				t.Errorf("%s: %q was not redacted: %q", rule.ID, ex, got)
			}
		}
		for _, nx := range rule.NotExamples {
			if got := r.Redact(nx); got != nx {
				t.Errorf("%s: %q was changed: %q", rule.ID, nx, got)
			}
		}
	}
}

// TestRedactRound3: the misses the third attack round found reach the
// trace no more: a kubeconfig's client-key-data, an Azure connection
// string's AccountKey, a .pgpass password.
func TestRedactRound3(t *testing.T) {
	r := NewRedactor()
	for in, secret := range map[string]string{
		"    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF\n":                                                                             "LS0tLS1CRUdJTiBSU0Eg",
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==": "Eby8vdM02xNO",
		"db.internal:5432:orders:svc_orders:Tr0ub4dor&3xyz\n":                                                                                                 "Tr0ub4dor",
		"conn=AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq%2FK1SZFPTOtr%2FKBHBeksoGMGw%3D%3D;x=y":                                "KBHBeksoGMGw",
		"config:\n    \"client-key-data\": \"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF\",\n":                                                           "LS0tLS1CRUdJTiBSU0Eg",
	} {
		if got := r.Redact(in); strings.Contains(got, secret) {
			t.Errorf("%q kept its secret: %q", in, got)
		}
	}
}
