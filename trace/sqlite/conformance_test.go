package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/tracetest"
)

// openConformance opens the SQLite store of the conformance suite.
func openConformance(_ context.Context, dir string) (trace.Durable, error) {
	return Open(filepath.Join(dir, "trace.db"), trace.NewRedactor())
}

func TestDurableConformance(t *testing.T) { tracetest.Run(t, openConformance) }
