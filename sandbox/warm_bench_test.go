//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/shell"
)

// BenchmarkColdRunTrue times sandbox.Run of true on the bwrap rung,
// interleaved with bare bubblewrap running /bin/true with the same
// namespaces, and reports both medians and their ratio.
func BenchmarkColdRunTrue(b *testing.B) { coldRunTrue(b) }

// BenchmarkColdRunTrueLean is BenchmarkColdRunTrue with the init built
// from cmd/rein-init instead of the test binary.
func BenchmarkColdRunTrueLean(b *testing.B) {
	useLeanInit(b)
	coldRunTrue(b)
}

func coldRunTrue(b *testing.B) {
	requireRung(b, RungBwrap)
	ws := b.TempDir()
	line, _ := shell.Parse("true")
	bw, _ := bwrap.Find()
	p := Profile{Workspace: ws, Rung: RungBwrap, Env: []string{"PATH=/usr/bin:/bin"}}
	var cold, bare []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := Run(context.Background(), line, p, nil, nil)
		if err != nil || res.Status != OK {
			b.Fatal(err, res)
		}
		cold = append(cold, time.Since(t0))
		t0 = time.Now()
		if err := exec.Command(bw, testenv.BareBwrapArgs()...).Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	b.ReportMetric(testenv.MedianMS(cold), "run-ms")
	b.ReportMetric(testenv.MedianMS(bare), "bare-ms")
	b.ReportMetric(testenv.MedianMS(cold)/testenv.MedianMS(bare), "ratio")
}

// BenchmarkWarmRunTrue times a run of true through a pool, whose sandbox
// was started before the call, interleaved with bare bubblewrap.
func BenchmarkWarmRunTrue(b *testing.B) {
	bw, _ := bwrap.Find()
	warmRunTrue(b, RungBwrap, bw, testenv.BareBwrapArgs())
}

// BenchmarkWarmLandlockTrue times a run of true through a pool on the
// landlock rung, interleaved with a bare spawn of /bin/true from this
// process; it reports the time added (goal: at most 1 ms).
func BenchmarkWarmLandlockTrue(b *testing.B) {
	warmRunTrue(b, RungLandlock, "/bin/true", nil)
}

func warmRunTrue(b *testing.B, rung Rung, bare0 string, bareArgv []string) {
	requireRung(b, rung)
	ws := b.TempDir()
	line, _ := shell.Parse("true")
	p := Profile{Workspace: ws, Rung: rung, Env: []string{"PATH=/usr/bin:/bin"}}
	pool := NewPool()
	defer pool.Close()
	var warm, bare []time.Duration
	warmRuns := 0
	for b.Loop() {
		// The pool makes the next sandbox ready behind each call, as a
		// model's next call comes after it has read the result.
		for deadline := time.Now().Add(5 * time.Second); pool.Warm() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		t0 := time.Now()
		res, err := pool.Run(context.Background(), line, p, nil, nil)
		if err != nil || res.Status != OK {
			b.Fatal(err, res)
		}
		warm = append(warm, time.Since(t0))
		if res.Warm {
			warmRuns++
		}
		// Bare bubblewrap is timed once the next sandbox is ready, not
		// beside its start.
		for deadline := time.Now().Add(5 * time.Second); pool.Warm() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		t0 = time.Now()
		if err := exec.Command(bare0, bareArgv...).Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	b.ReportMetric(testenv.MedianMS(warm), "run-ms")
	b.ReportMetric(testenv.MedianMS(bare), "bare-ms")
	b.ReportMetric(testenv.MedianMS(warm)/testenv.MedianMS(bare), "ratio")
	b.ReportMetric(testenv.MedianMS(warm)-testenv.MedianMS(bare), "added-ms")
	b.ReportMetric(float64(warmRuns)/float64(len(warm)), "warm-share")
}
