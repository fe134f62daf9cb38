package otlp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// requestTimeout bounds one request to the collector, and all of an
// export's retries, whatever the caller's context allows.
const requestTimeout = 10 * time.Second

// send posts the spans to the collector in one export: the SDK's
// exporter turns them into OTLP, and client posts that.
func send(ctx context.Context, spans tracetest.SpanStubs, o Options) error {
	u, err := endpoint(o.Endpoint)
	if err != nil {
		return err
	}
	c := newClient(u)
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	err = exp.ExportSpans(ctx, spans.Snapshots())
	if serr := exp.Shutdown(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("otlp: exporting to %s: %w", u.Redacted(), err)
	}
	return nil
}

// endpoint is the URL the spans are posted to: Options.Endpoint, with
// /v1/traces when it has no path, as the OTLP specification adds to a
// collector's base URL.
func endpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("otlp: the endpoint is not an http(s) URL")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u, nil
}

// client is OTLP/HTTP with protobuf, posting to one URL.
//
// It is rein's own rather than the SDK's otlptracehttp because that one
// reads the OTEL_EXPORTER_OTLP_* variables before its options (and logs
// to stderr what it cannot use of them), and a repository can set them
// through an agent's settings. This one reads no variable of its own: its
// transport takes no proxy from the environment and it follows no
// redirect, so where the spans go, and with what, is the policy's alone.
// The one variable read is Go's: an https collector's certificate is
// verified against the system's roots, which SSL_CERT_FILE and
// SSL_CERT_DIR replace on Unix systems other than macOS. Loading the
// roots from fixed paths instead would be a copy of crypto/x509's list,
// differing by system; docs/opentelemetry.md states it instead.
type client struct {
	url  string
	http *http.Client
}

func newClient(u *url.URL) *client {
	return &client{url: u.String(), http: &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: requestTimeout}).DialContext,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   requestTimeout,
			ResponseHeaderTimeout: requestTimeout,
			ForceAttemptHTTP2:     true,
		},
		Timeout:       requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (c *client) Start(context.Context) error { return nil }

func (c *client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts the spans, retrying the answers the specification
// calls retryable (429, 502, 503, 504) with backoff, or after the
// Retry-After the collector asks for, until requestTimeout or ctx ends.
func (c *client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := exportRequest(spans)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	wait := 200 * time.Millisecond
	for {
		retry, after, err := c.post(ctx, body)
		if !retry {
			return err
		}
		if after > 0 {
			wait = after
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (and gave up: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// post posts one request and says whether to try again, and after how
// long the collector asked.
func (c *client) post(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "rein")
	resp, err := c.http.Do(req)
	if err != nil {
		// A collector that cannot be reached is not waited for: the
		// export runs as a run ends, and would hold up rein's exit.
		return false, 0, err
	}
	defer resp.Body.Close()
	// The answer is read to a bound: a collector is not trusted with
	// rein's memory.
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		if n, msg := rejected(data); n > 0 {
			return false, 0, fmt.Errorf("the collector rejected %d spans: %s", n, clip(msg))
		}
		return false, 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, fmt.Errorf("the collector answered %s", resp.Status)
	}
	return false, 0, fmt.Errorf("the collector answered %s", resp.Status)
}

// clip bounds a collector's message in rein's.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// The collector's messages are encoded here rather than with the
// generated package (go.opentelemetry.io/proto/otlp/collector/trace/v1),
// which also holds the gRPC service and would link gRPC into rein.

// exportRequest is an ExportTraceServiceRequest: its one field,
// resource_spans (1), repeated.
func exportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// rejected is what an ExportTraceServiceResponse's partial_success (1)
// says: its rejected_spans (1) and error_message (2). An answer that is
// not one says nothing.
func rejected(b []byte) (n int64, msg string) {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, ""
		}
		b = b[l:]
		if num == 1 && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return 0, ""
			}
			b = b[l:]
			n, msg = partial(v)
			continue
		}
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return 0, ""
		}
		b = b[l:]
	}
	return n, msg
}

func partial(b []byte) (n int64, msg string) {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, ""
		}
		b = b[l:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return 0, ""
			}
			n, b = int64(v), b[l:]
		case num == 2 && typ == protowire.BytesType:
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return 0, ""
			}
			msg, b = string(v), b[l:]
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
			if l < 0 {
				return 0, ""
			}
			b = b[l:]
		}
	}
	return n, msg
}
