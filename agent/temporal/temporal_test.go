package temporal

import (
	"strings"
	"testing"
)

// TestDecisionSigned: a decision's Update is taken only signed with the
// trace key the worker holds, for that run, request and answer: a
// signature of another key, run, request or answer, none, or a worker
// with no key, refuses it.
func TestDecisionSigned(t *testing.T) {
	secret, other := []byte("the fleet's trace key"), []byte("another key")
	defer SetKey(nil)
	good := Decision{Request: "r1", Answer: "yes"}
	good.Sign("run-a", secret)

	SetKey(nil)
	if err := good.verify("run-a"); err == nil || !strings.Contains(err.Error(), "no trace key") {
		t.Fatalf("a worker with no key: %v", err)
	}
	SetKey(secret)
	if err := good.verify("run-a"); err != nil {
		t.Fatalf("a signed decision: %v", err)
	}
	for name, d := range map[string]struct {
		d   Decision
		run string
	}{
		"another run":     {good, "run-b"},
		"another answer":  {Decision{Request: "r1", Answer: "no", Sig: good.Sig}, "run-a"},
		"another request": {Decision{Request: "r2", Answer: "yes", Sig: good.Sig}, "run-a"},
		"no signature":    {Decision{Request: "r1", Answer: "yes"}, "run-a"},
		"not hex":         {Decision{Request: "r1", Answer: "yes", Sig: "zz"}, "run-a"},
	} {
		if err := d.d.verify(d.run); err == nil || !strings.Contains(err.Error(), "not signed with the trace key") {
			t.Errorf("%s: %v", name, err)
		}
	}
	forged := Decision{Request: "r1", Answer: "yes"}
	forged.Sign("run-a", other)
	if err := forged.verify("run-a"); err == nil {
		t.Error("a decision signed with another key was taken")
	}
}
