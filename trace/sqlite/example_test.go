package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// A trace of one run with one step: the redactor keeps a secret out of it,
// and the keyed chain verifies.
func Example() {
	dir, err := os.MkdirTemp("", "rein-trace-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	key, err := trace.LoadKey(filepath.Join(dir, "keys", "trace.key")) // made 0600 on first use
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(dir, "trace.db"), trace.NewRedactor("hunter2"), sqlite.WithKey(key))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	store.Append(ctx, trace.Run{ID: "run-1", StartedAt: time.Now(), Workspace: dir, Source: "example"})
	store.Append(ctx, trace.Step{RunID: "run-1", Tool: "shell", Args: `{"line":"mysql -phunter2 shop"}`, Status: "ok", StartedAt: time.Now()})
	steps, _ := store.Steps(ctx, "run-1")
	fmt.Println(steps[0].Args)
	chain, err := store.VerifyChain(ctx, nil)
	fmt.Println(err, chain.Keyed)
	// Output:
	// {"line":"mysql -p[redacted] shop"}
	// <nil> 2
}
