package sqlite

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/tracetest"
)

// TestMain runs the helper processes of TestFirstOpenProcesses and of
// the durable stores' conformance suite.
func TestMain(m *testing.M) {
	if code, ok := tracetest.Child(openConformance); ok {
		os.Exit(code)
	}
	if path := os.Getenv("REIN_TEST_STORE"); path != "" {
		s, err := Open(path, nil)
		if err == nil {
			_, err = s.Append(context.Background(), trace.Audit{RunID: fmt.Sprint(os.Getpid()), Kind: "k", At: time.Now()})
			s.Close()
		}
		if err != nil {
			fmt.Print(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFirstOpenProcesses: processes opening a store none has made yet, at
// once (an agent's parallel calls, each a rein process, on a new
// workspace), all open it and write: the first open's change to WAL is
// waited for, not failed on.
func TestFirstOpenProcesses(t *testing.T) {
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "t.db")
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := osexec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "REIN_TEST_STORE="+path)
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Sprintf("%v: %s", err, out)
				}
			}()
		}
		wg.Wait()
		close(errs)
		var failed []string
		for e := range errs {
			failed = append(failed, e)
		}
		if len(failed) > 0 {
			t.Fatalf("round %d: %d of 8 processes failed: %s", round, len(failed), strings.Join(failed, "; "))
		}
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		s.DB().QueryRow(`SELECT COUNT(*) FROM audit`).Scan(&n)
		s.Close()
		if n != 8 {
			t.Fatalf("round %d: %d records, want 8", round, n)
		}
	}
}
