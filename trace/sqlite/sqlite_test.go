package sqlite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	for range 2 {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		s.DB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v)
		if v != len(migrations) {
			t.Fatalf("version %d", v)
		}
		s.Close()
	}
	if _, err := Open(filepath.Join(t.TempDir(), "a?b"), nil); err == nil {
		t.Fatal("a path with ? was accepted")
	}
}

// BenchmarkAppendStep is the trace's cost of one recorded step, its link
// keyed.
func BenchmarkAppendStep(b *testing.B) {
	k, err := trace.LoadKey(filepath.Join(b.TempDir(), "keys", "trace.key"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(b.TempDir(), "t.db"), trace.NewRedactor("some-secret-value"), WithKey(k))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Append(ctx, trace.Run{ID: "r", StartedAt: time.Now()})
	obs := strings.Repeat("output line of a tool call\n", 40)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Append(ctx, trace.Step{RunID: "r", Index: i, Tool: "read_file", Args: `{"path":"main.go"}`, Status: "ok", Observation: obs, StartedAt: time.Now(), DurationMS: 0.1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactJSON is a write_file call's arguments: a JSON document
// whose content is a file of 1 KiB holding JSON.
func BenchmarkRedactJSON(b *testing.B) {
	r := trace.NewRedactor("some-secret-value")
	content := strings.Repeat(`{"name": "a tool call", "count": 3, "tags": ["x", "y"]}`+"\n", 18)
	data, _ := json.Marshal(map[string]string{"path": "testdata/cases.json", "content": content})
	args := string(data)
	for b.Loop() {
		r.Redact(args)
	}
}

func BenchmarkRedact(b *testing.B) {
	r := trace.NewRedactor("some-secret-value")
	obs := strings.Repeat("output line of a tool call\n", 40)
	for b.Loop() {
		r.Redact(obs)
	}
}

// TestOpenRefusesLinks: a store that is a link, or a file with another
// name, is refused: SQLite would write through it.
func TestOpenRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("not yours"), 0o644)
	link := filepath.Join(dir, "link.db")
	os.Symlink(victim, link)
	if _, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "not a plain file") {
		t.Fatalf("a linked store was opened: %v", err)
	}
	hard := filepath.Join(dir, "hard.db")
	os.Link(victim, hard)
	if _, err := Open(hard, nil); err == nil {
		t.Fatal("a store with another name was opened")
	}
	wal := filepath.Join(dir, "w.db")
	os.Symlink(victim, wal+"-wal")
	if _, err := Open(wal, nil); err == nil {
		t.Fatal("a store whose WAL is a link was opened")
	}
	if data, _ := os.ReadFile(victim); string(data) != "not yours" {
		t.Fatal("the link's target was written")
	}
}
