package temporal

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// TestBlobDriver: a payload kept in the trace's blob store comes back
// byte for byte by its claim; a claim outside the payloads' buckets, an
// address the store does not hold, or a blob whose bytes are not what
// its address says is refused.
func TestBlobDriver(t *testing.T) {
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "trace.db"), trace.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	d := blobDriver{store}
	target := converter.StorageDriverWorkflowInfo{WorkflowID: WorkflowID("r1")}
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte(codecEncoding)}, Data: []byte(strings.Repeat("sealed bytes ", 1000))}
	claims, err := d.Store(converter.StorageDriverStoreContext{Context: ctx, Target: target}, []*commonpb.Payload{p})
	if err != nil || len(claims) != 1 || claims[0].ClaimData["run"] != "temporal:r1" {
		t.Fatalf("store: %v %v", claims, err)
	}
	rctx := converter.StorageDriverRetrieveContext{Context: ctx}
	got, err := d.Retrieve(rctx, claims)
	if err != nil || len(got) != 1 || !proto.Equal(got[0], p) {
		t.Fatalf("retrieve: %v", err)
	}

	other := &commonpb.Payload{Data: []byte("another payload")}
	data, _ := proto.Marshal(other)
	forged := "sha256:" + strings.Repeat("0", 64)
	if _, err := store.Append(ctx, trace.Blob{RunID: "temporal:r1", Hash: forged, Data: base64.StdEncoding.EncodeToString(data), At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]map[string]string{
		"another bucket":    {"run": "r1", "address": claims[0].ClaimData["address"]},
		"no such address":   {"run": "temporal:r1", "address": "sha256:" + strings.Repeat("1", 64)},
		"bytes not its own": {"run": "temporal:r1", "address": forged},
	} {
		if _, err := d.Retrieve(rctx, []converter.StorageDriverClaim{{ClaimData: c}}); err == nil {
			t.Errorf("%s: retrieved", name)
		}
	}
}
