package temporal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// codecEncoding marks a payload the codec sealed.
const codecEncoding = "binary/rein-aes-256-gcm"

// codecKeyID is the metadata key of the id of the key that sealed a
// payload.
const codecKeyID = "rein-key-id"

// Codec seals every payload that leaves a client or a worker (a run's
// start, each activity's arguments and result, each Update, each query's
// answer) with AES-256-GCM under a key derived from secret, the key the
// operator gives every host: the Temporal server, and whoever reads its
// database or reaches its namespace, sees none of it. It opens only
// payloads sealed with the same key, and refuses any other: a workflow
// started, or an activity's result written, by whoever holds no key is
// never acted on.
func Codec(secret []byte, opts ...Option) (converter.PayloadCodec, error) {
	if len(secret) < 16 {
		return nil, errors.New("temporal: the payload key is shorter than 16 bytes")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("rein temporal payloads\x00"))
	key := m.Sum(nil)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(append([]byte("rein temporal payload key id\x00"), key...))
	c := &codec{aead: aead, id: hex.EncodeToString(id[:8])}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Option is an option of Codec and DataConverter.
type Option func(*codec)

// WithRedact redacts every payload's JSON (the run's goal, its events,
// its outcome) with redact before it is sealed: what leaves rein for the
// Temporal server holds no secret this host knows, as the trace does not.
func WithRedact(redact func(string) string) Option {
	return func(c *codec) { c.redact = redact }
}

// DataConverter is the SDK's default converter with Codec(secret): a
// client and the workers of one fleet are given the same.
func DataConverter(secret []byte, opts ...Option) (converter.DataConverter, error) {
	c, err := Codec(secret, opts...)
	if err != nil {
		return nil, err
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c), nil
}

// FailureConverter is the SDK's failure converter with the messages and
// stack traces of failures sealed by dc as payloads are (a failure's
// text can quote a gate line, a path, a provider's answer): a client
// and the workers of one fleet are given it with DataConverter's.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return sdktemporal.NewDefaultFailureConverter(sdktemporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}

type codec struct {
	aead   cipher.AEAD
	id     string
	redact func(string) string
}

func (c *codec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if c.redact != nil && string(p.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingJSON {
			p = &commonpb.Payload{Metadata: p.Metadata, Data: []byte(c.redact(string(p.Data)))}
		}
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, c.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(codecEncoding), codecKeyID: []byte(c.id)},
			Data:     c.aead.Seal(nonce, nonce, plain, []byte(c.id)),
		}
	}
	return out, nil
}

func (c *codec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != codecEncoding {
			return nil, fmt.Errorf("temporal: a payload not sealed by rein's codec (encoding %q): refused", p.GetMetadata()[converter.MetadataEncoding])
		}
		if id := string(p.GetMetadata()[codecKeyID]); id != c.id {
			return nil, fmt.Errorf("temporal: a payload sealed with another key (id %s, this host's is %s): refused", id, c.id)
		}
		n := c.aead.NonceSize()
		if len(p.Data) < n {
			return nil, errors.New("temporal: a sealed payload too short to open")
		}
		plain, err := c.aead.Open(nil, p.Data[:n], p.Data[n:], []byte(c.id))
		if err != nil {
			return nil, errors.New("temporal: a sealed payload that does not open with this host's key: refused")
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(plain, &q); err != nil {
			return nil, err
		}
		out[i] = &q
	}
	return out, nil
}
