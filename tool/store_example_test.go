package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// memStore is a trace.Store of a program's own, in memory: the router
// records through it, and nothing of SQLite is linked.
type memStore struct {
	mu   sync.Mutex
	recs []trace.Record
}

func (m *memStore) Append(ctx context.Context, r trace.Record) (int64, error) {
	ids, err := m.AppendAll(ctx, r)
	return ids[0], err
}

// AppendAll gives each record its index as its id, and a record after a
// Step without a StepID the step's, as trace.Store asks.
func (m *memStore) AppendAll(_ context.Context, recs ...trace.Record) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]int64, len(recs))
	var step int64
	for i, r := range recs {
		id := int64(len(m.recs) + 1)
		switch v := r.(type) {
		case trace.Step:
			v.ID, step = id, id
			r = v
		case trace.PolicyEvent:
			if v.StepID == 0 {
				v.StepID = step
			}
			v.ID = id
			r = v
		}
		m.recs = append(m.recs, r)
		ids[i] = id
	}
	return ids, nil
}

func (m *memStore) Steps(_ context.Context, run string) ([]trace.Step, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []trace.Step
	for _, r := range m.recs {
		if s, ok := r.(trace.Step); ok && s.RunID == run {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memStore) Handles(context.Context, string) ([]trace.Handle, error) { return nil, nil }
func (m *memStore) ProviderCalls(context.Context, string) ([]trace.ProviderCall, error) {
	return nil, nil
}
func (m *memStore) GateAttempts(context.Context, string) ([]trace.GateAttempt, error) {
	return nil, nil
}
func (m *memStore) Close() error { return nil }

// A router recording into a store of the program's own.
func ExampleConfig_store() {
	dir, err := os.MkdirTemp("", "rein-tool-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	mode := policy.ModeAsk
	p, err := policy.Load(policy.Options{Workspace: ws, Home: filepath.Join(dir, "home"), NoFiles: true, Mode: &mode})
	if err != nil {
		log.Fatal(err)
	}
	store := &memStore{}
	reg, _ := tool.Builtin()
	r, err := tool.NewRouter(reg, tool.Config{Policy: p, Store: store, Source: "example"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	r.Call(ctx, "read_file", json.RawMessage(`{"path":"hello.txt"}`))
	r.Call(ctx, "shell", json.RawMessage(`{"line":"git push origin main"}`))
	r.Close("done")
	for _, rec := range store.recs {
		switch v := rec.(type) {
		case trace.Step:
			fmt.Println(trace.Table(v), v.Tool, v.Status)
		case trace.PolicyEvent:
			fmt.Println(trace.Table(v), v.Kind, v.Decision, "step", v.StepID)
		default:
			fmt.Println(trace.Table(v))
		}
	}
	// Output:
	// runs
	// audit
	// steps read_file ok
	// steps shell denied
	// policy_events approval deny step 4
	// policy_events refusal deny step 4
	// run_ends
	// audit
}
