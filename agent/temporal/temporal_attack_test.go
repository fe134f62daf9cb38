package temporal

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
)

// TestAttackDecisionFieldsAmbiguous: the MAC's fields are joined by NUL
// with no length: a signature of one (run, request, answer) must not be
// one of another whose fields hold the NUL elsewhere.
func TestAttackDecisionFieldsAmbiguous(t *testing.T) {
	secret := []byte("the fleet's trace key")
	SetKey(secret)
	defer SetKey(nil)

	// A signed answer whose text holds a NUL (an answer's text is the
	// operator's, rein answer's note).
	signed := Decision{Request: "q1", Answer: "yes\x00q2"}
	signed.Sign("run-a", secret)
	for name, c := range map[string]struct {
		d   Decision
		run string
	}{
		"request moved into the answer": {Decision{Request: "q1\x00yes", Answer: "q2", Sig: signed.Sig}, "run-a"},
		"another run":                   {Decision{Request: "yes", Answer: "q2", Sig: signed.Sig}, "run-a\x00q1"},
	} {
		if err := c.d.verify(c.run); err == nil {
			t.Errorf("%s: the signature of %q/%q on run-a verified for %q/%q on %q", name, signed.Request, signed.Answer, c.d.Request, c.d.Answer, c.run)
		}
	}
	// An empty request, or an answer no request takes, is signed and
	// taken all the same: the validator checks only the signature.
	empty := Decision{}
	empty.Sign("run-a", secret)
	if err := empty.verify("run-a"); err == nil {
		t.Logf("an empty request with an empty answer is taken by the validator")
	}
}

// TestAttackDecisionIsAKeySum: the decision's MAC is the trace key's Sum
// for the label "decision" over run, request and answer: a sum made for
// another purpose under that label (or a label holding NUL) is a
// decision's signature. Purposes must not share the form.
func TestAttackDecisionIsAKeySum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "trace.key")
	k, err := trace.LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	SetKey(secret)
	defer SetKey(nil)
	// A sum for some other purpose, labelled "decision\x00run-a".
	sig := k.Sum("decision\x00run-a", []byte("q1\x00yes"))
	d := Decision{Request: "q1", Answer: "yes", Sig: sig}
	if err := d.verify("run-a"); err == nil {
		t.Errorf("a trace.Key.Sum of another label verified as a decision: the decision's MAC is not separated from Key.Sum's")
	}
}
