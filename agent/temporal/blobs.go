package temporal

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/trace"
)

// OffloadOver is the size of a payload, sealed, past which it goes into
// the trace's blob store by its content's address, and the history holds
// the address only.
const OffloadOver = 4 << 10

// blobDriver is the SDK's external storage over the trace's blob store:
// a payload (already sealed by the codec: the trace holds nothing the
// history would not) is kept as a blob of the run's payload bucket
// (payloadRun), addressed by its SHA-256, and checked against the address
// when it is read back.
type blobDriver struct{ store trace.Durable }

// ExternalStorage is the external storage every client and worker of a
// fleet is given with its data converter: payloads over OffloadOver go
// into store's blob store (the trace every host writes), so that no
// history event nears the server's limits.
func ExternalStorage(store trace.Durable) converter.ExternalStorage {
	return converter.ExternalStorage{Drivers: []converter.StorageDriver{blobDriver{store}}, PayloadSizeThreshold: OffloadOver}
}

func (blobDriver) Name() string { return "rein-trace-blobs" }
func (blobDriver) Type() string { return "rein-trace-blobs" }

// payloadRun is the bucket of the trace's blobs a workflow's payloads are
// kept in: beside the run's own blobs, never among them.
func payloadRun(target converter.StorageDriverTargetInfo) string {
	id := ""
	switch t := target.(type) {
	case converter.StorageDriverWorkflowInfo:
		id = t.WorkflowID
	case converter.StorageDriverActivityInfo:
		id = "activity-" + t.ActivityID
	}
	return "temporal:" + strings.TrimPrefix(id, "rein-run-")
}

func (d blobDriver) Store(ctx converter.StorageDriverStoreContext, ps []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	run := payloadRun(ctx.Target)
	claims := make([]converter.StorageDriverClaim, len(ps))
	recs := make([]trace.Record, len(ps))
	for i, p := range ps {
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		addr := "sha256:" + hex.EncodeToString(sum[:])
		recs[i] = trace.Blob{RunID: run, Hash: addr, Data: base64.StdEncoding.EncodeToString(data), At: time.Now()}
		claims[i] = converter.StorageDriverClaim{ClaimData: map[string]string{"run": run, "address": addr}}
	}
	if err := ctx.GetLimiter().Permit(ctx.Context, ps[0], func() error {
		_, err := d.store.AppendAll(ctx.Context, recs...)
		return err
	}); err != nil {
		return nil, fmt.Errorf("temporal: keeping a payload in the trace's blob store: %w", err)
	}
	return claims, nil
}

func (d blobDriver) Retrieve(ctx converter.StorageDriverRetrieveContext, claims []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(claims))
	read := map[string]map[string]string{}
	for i, c := range claims {
		run, addr := c.ClaimData["run"], c.ClaimData["address"]
		if !strings.HasPrefix(run, "temporal:") || !strings.HasPrefix(addr, "sha256:") {
			return nil, errors.New("temporal: a payload's address is not one of the trace's blob store: refused")
		}
		blobs, ok := read[run]
		if !ok {
			if err := ctx.GetLimiter().Permit(ctx.Context, c, func() (err error) {
				blobs, err = d.store.Blobs(ctx.Context, run)
				return err
			}); err != nil {
				return nil, fmt.Errorf("temporal: reading a payload from the trace's blob store: %w", err)
			}
			read[run] = blobs
		}
		enc, ok := blobs[addr]
		if !ok {
			return nil, fmt.Errorf("temporal: the trace's blob store has no payload %s", addr)
		}
		data, err := base64.StdEncoding.DecodeString(enc)
		sum := sha256.Sum256(data)
		if err != nil || "sha256:"+hex.EncodeToString(sum[:]) != addr {
			return nil, fmt.Errorf("temporal: the payload %s in the trace's blob store is not what its address says: refused", addr)
		}
		var p commonpb.Payload
		if err := proto.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		out[i] = &p
	}
	return out, nil
}
