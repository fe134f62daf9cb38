package temporal

import (
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
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

// TestCodec: a payload sealed with the fleet's key opens as it was; one
// not sealed, sealed with another key, or changed, is refused; the
// sealed bytes do not hold the plain ones.
func TestCodec(t *testing.T) {
	c, err := Codec([]byte("the fleet's payload key, 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Codec([]byte("another fleet's payload key....."))
	if _, err := Codec([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
	plain := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"goal":"fix the secret bug"}`)}
	sealed, err := c.Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed[0].Data), "secret bug") {
		t.Fatal("the sealed payload holds the plain text")
	}
	opened, err := c.Decode(sealed)
	if err != nil || !proto.Equal(opened[0], plain) {
		t.Fatalf("opened %v %v", opened, err)
	}
	if _, err := other.Decode(sealed); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("opened with another key: %v", err)
	}
	if _, err := c.Decode([]*commonpb.Payload{plain}); err == nil || !strings.Contains(err.Error(), "not sealed") {
		t.Errorf("a plain payload was taken: %v", err)
	}
	// No plain payload is taken, whatever its shape (the SDK's session
	// creation's among them: the driver uses no sessions).
	json := map[string][]byte{"encoding": []byte("json/plain")}
	for _, data := range []string{`{"Taskqueue":"host-a@1","HostName":"host-a","ResourceID":"r1"}`, `{"Taskqueue":"q","HostName":"h","ResourceID":"r","Contract":{}}`, `{"Taskqueue":"q"}`, `{"run":"x"}`} {
		if _, err := c.Decode([]*commonpb.Payload{{Metadata: json, Data: []byte(data)}}); err == nil {
			t.Errorf("a plain payload %s was taken", data)
		}
	}
	changed := proto.Clone(sealed[0]).(*commonpb.Payload)
	changed.Data[len(changed.Data)-1] ^= 1
	if _, err := c.Decode([]*commonpb.Payload{changed}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("a changed payload was taken: %v", err)
	}
}

// TestCodecRedacts: with WithRedact, a JSON payload is redacted before it
// is sealed (a secret of the host's is not in what the server keeps,
// even for whoever holds the payload key), and stays JSON.
func TestCodecRedacts(t *testing.T) {
	secret := "s3cr3t-value-of-the-host"
	c, err := Codec([]byte("the fleet's payload key, 32 bytes"), WithRedact(func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }))
	if err != nil {
		t.Fatal(err)
	}
	in := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"goal":"use ` + secret + `"}`)}
	bin := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: []byte(secret)}
	sealed, err := c.Encode([]*commonpb.Payload{in, bin})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out[0].Data); got != `{"goal":"use [redacted]"}` {
		t.Errorf("the JSON payload opens as %s", got)
	}
	if !proto.Equal(out[1], bin) {
		t.Error("a payload that is not JSON was changed")
	}
}
