package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchEvent is one streamed event of about 1 KiB.
var benchEvent = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
	strings.Repeat("x", 940) + "\"}}\n\n"

// BenchmarkGateway measures, in one run, what the gateway adds to a
// streamed model call against a direct connection to the same provider
// over TLS: the time to the first byte of a small answer, and the
// throughput of a 10 MB streamed one (each event flushed as it is
// written). Both clients keep their connections alive, as agents do. The
// metrics: added_first_byte_us (goal: under 1000) and throughput_ratio.
func BenchmarkGateway(b *testing.B) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Metadata struct {
				UserID string `json:"user_id"`
			} `json:"metadata"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		size, _ := strconv.Atoi(req.Metadata.UserID)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, messagesStream[:strings.Index(messagesStream, "\n\n")+2])
		f.Flush()
		for n := 0; n < size; n += len(benchEvent) {
			io.WriteString(w, benchEvent)
			f.Flush()
		}
	}))
	defer up.Close()
	roots := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	g, err := New(context.Background(), Config{Provider: "anthropic", Family: Messages, Upstream: up.URL, Header: "X-Api-Key", Key: realKey,
		Placeholder: placeholder, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 4}})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	gw := httptest.NewServer(g)
	defer gw.Close()
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 4}}
	local := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	// call makes one call and returns the time to its first byte, the
	// whole call's time and its bytes.
	call := func(c *http.Client, base string, size int) (time.Duration, time.Duration, int64) {
		// The answer's size rides in the metadata, which the gateway
		// forwards as it is.
		body := `{"model":"claude-test","stream":true,"max_tokens":10,"metadata":{"user_id":"` + strconv.Itoa(size) + `"},"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", placeholder)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 64<<10)
		n, err := resp.Body.Read(buf)
		first := time.Since(start)
		total := int64(n)
		for err == nil {
			n, err = resp.Body.Read(buf)
			total += int64(n)
		}
		if err != io.EOF || resp.StatusCode != 200 {
			b.Fatalf("%d %v", resp.StatusCode, err)
		}
		return first, time.Since(start), total
	}
	// Warm both paths' connections.
	call(direct, up.URL, 0)
	call(local, gw.URL, 0)

	var dFirst, gFirst, dTime, gTime time.Duration
	var dBytes, gBytes int64
	const big = 10 << 20
	b.ResetTimer()
	for range b.N {
		f, _, _ := call(direct, up.URL, 0)
		dFirst += f
		f, _, _ = call(local, gw.URL, 0)
		gFirst += f
		_, d, n := call(direct, up.URL, big)
		dTime, dBytes = dTime+d, dBytes+n
		_, d, n = call(local, gw.URL, big)
		gTime, gBytes = gTime+d, gBytes+n
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(dFirst.Microseconds())/n, "direct_first_byte_us")
	b.ReportMetric(float64(gFirst.Microseconds())/n, "gateway_first_byte_us")
	b.ReportMetric(float64((gFirst-dFirst).Microseconds())/n, "added_first_byte_us")
	dRate, gRate := float64(dBytes)/dTime.Seconds()/1e6, float64(gBytes)/gTime.Seconds()/1e6
	b.ReportMetric(dRate, "direct_MB/s")
	b.ReportMetric(gRate, "gateway_MB/s")
	b.ReportMetric(gRate/dRate, "throughput_ratio")
	if testing.Verbose() {
		fmt.Printf("first byte: direct %v, gateway %v; 10 MB: direct %.0f MB/s, gateway %.0f MB/s\n", dFirst/time.Duration(b.N), gFirst/time.Duration(b.N), dRate, gRate)
	}
}
