package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/tracetest"
)

// TestAttackPasswordNeverShown: no message of Open (a URL that does not
// parse, one pgx refuses, a server refused or unreachable) holds the
// password, wherever the URL put it.
func TestAttackPasswordNeverShown(t *testing.T) {
	const pw = "Zq9SecretPw"
	dsns := []string{
		"postgres://u:" + pw + "@/db?host=/nonexistent-dir",
		"postgres://u@/db?host=/nonexistent-dir&password=" + pw,
		"postgres://u@/db?host=/nonexistent-dir&PassWord=" + pw,
		"postgres://u:" + pw + "@/db?host=/nonexistent-dir&sslmode=bogus",
		"postgres://u@/db?host=/nonexistent-dir&password=" + pw + "&sslmode=bogus",
		"postgres://u@/db?host=/nonexistent-dir&sslpassword=" + pw + "&sslmode=bogus",
		"postgres://u@/db?password=" + pw + "&connect_timeout=abc",
		"postgres://u:" + pw + "@localhost:notaport/db",
		"postgres://u:Zq9/SecretPw@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:Zq9#SecretPw@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:Zq9?SecretPw@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:Zq9%zzSecretPw@127.0.0.1:1/db?connect_timeout=1",
		"postgres://u:Zq9 SecretPw@127.0.0.1:1/db?connect_timeout=1",
		"postgresql://u:" + pw + "@127.0.0.1:1,127.0.0.1:2/db?connect_timeout=1",
		"postgres://nosuchrole_attack:" + pw + "@/postgres?host=/var/run/postgresql",
		"postgres:///postgres?host=/var/run/postgresql&user=nosuchrole_attack&password=" + pw,
	}
	for _, dsn := range dsns {
		where := Where(dsn)
		s, err := Open(dsn, nil)
		if err == nil {
			s.Close()
			t.Errorf("%q opened", dsn)
			continue
		}
		for _, leak := range []string{"SecretPw", "Zq9"} {
			if strings.Contains(where, leak) {
				t.Errorf("Where(%q) = %q shows the password", dsn, where)
			}
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Open(%q) error shows the password: %v", dsn, err)
				break
			}
		}
	}
}

// hostile are texts that might trip placeholders, quoting or encoding.
var hostile = []string{
	`it's "quoted" \ back`,
	`$1 $2 ? ?? ?| ?& $$ $tag$`,
	`'); DROP TABLE steps; --`,
	"tab\tnl\ncr\r",
	"emoji \U0001F600 and \uFFFD",
	strings.Repeat("long ", 400_000), // 2 MB
}

// TestAttackHostileTextRoundTrip: texts of every kind are stored, read
// back as they were written (NUL and invalid UTF-8 as U+FFFD), by a run
// id of the same kind, and the chain verifies.
func TestAttackHostileTextRoundTrip(t *testing.T) {
	server(t)
	ctx := context.Background()
	s, err := openIn(t.TempDir(), nil, tracetest.TestKey(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, h := range hostile {
		run := fmt.Sprintf("run-%d-%s", i, h[:min(len(h), 40)])
		if _, err := s.Append(ctx, trace.Run{ID: run, StartedAt: time.Now(), Workspace: h}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if _, err := s.AppendAll(ctx, trace.Step{RunID: run, Tool: h, Args: h, Status: "ok", Observation: h, StartedAt: time.Now()},
			trace.PolicyEvent{RunID: run, Kind: "refusal", Reason: h, At: time.Now()}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if _, err := s.Append(ctx, trace.ConversationTurn{Conv: run, Turn: 0, RunID: run, Config: h, At: time.Now()}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		steps, err := s.Steps(ctx, run)
		if err != nil || len(steps) != 1 || steps[0].Observation != h || steps[0].Args != h || steps[0].Tool != h {
			t.Fatalf("%d: steps %d, %v", i, len(steps), err)
		}
		if ok, err := s.HasRun(ctx, run); !ok || err != nil {
			t.Errorf("%d: HasRun %v %v", i, ok, err)
		}
		turns, err := s.ConversationTurns(ctx, run)
		if err != nil || len(turns) != 1 || turns[0].Config != h {
			t.Errorf("%d: turns %d %v", i, len(turns), err)
		}
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAttackNULAndInvalidRunID: a run id holding NUL or invalid UTF-8,
// which PostgreSQL's text cannot hold, is refused rather than stored
// otherwise (two ids would become one); the same bytes in a text are
// stored as U+FFFD, the chain linking what is stored; a lookup by such
// an id finds nothing, and errs nowhere.
func TestAttackNULAndInvalidRunID(t *testing.T) {
	server(t)
	ctx := context.Background()
	s, err := openIn(t.TempDir(), nil, tracetest.TestKey(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := "run-\x00-a", "run-\xff-a"
	for _, run := range []string{a, b} {
		if _, err := s.AppendAll(ctx, trace.Run{ID: run, StartedAt: time.Now()}); err == nil || !strings.Contains(err.Error(), "cannot store") {
			t.Errorf("a run id %q: %v", run, err)
		}
	}
	if _, err := s.AppendAll(ctx, trace.Run{ID: "run-c", StartedAt: time.Now()},
		trace.Step{RunID: "run-c", Tool: "t\x00", Args: "a\xfe\xff", Observation: "o\x00b", StartedAt: time.Now()}); err != nil {
		t.Fatalf("texts with NUL and invalid UTF-8: %v", err)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if steps, err := s.Steps(ctx, "run-c"); err != nil || len(steps) != 1 || steps[0].Observation != "o\uFFFDb" {
		t.Errorf("the step: %+v %v", steps, err)
	}
	for _, id := range []string{a, b, "run-\uFFFD-a"} {
		if steps, err := s.Steps(ctx, id); err != nil || len(steps) != 0 {
			t.Errorf("Steps(%q): %d %v", id, len(steps), err)
		}
		if ok, err := s.HasRun(ctx, id); ok || err != nil {
			t.Errorf("HasRun(%q): %v %v", id, ok, err)
		}
	}
}

// TestAttackConcurrentKeyedWriters: two stores (two pools) with the same
// key append at once; a store with another key and one with none are
// refused all along; the chain has one head and verifies.
func TestAttackConcurrentKeyedWriters(t *testing.T) {
	server(t)
	ctx := context.Background()
	dir := t.TempDir()
	key := tracetest.TestKey(t)
	other, err := trace.LoadKey(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	var stores []*Store
	for _, k := range []*trace.Key{key, key, other, nil} {
		s, err := openIn(dir, nil, k)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	// The keyed chain starts first: the rest race against it.
	if _, err := stores[0].Append(ctx, trace.Run{ID: "r", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	var good, refused int
	for i, s := range stores {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range n {
					_, err := s.AppendAll(ctx, trace.Step{RunID: "r", Index: j, Tool: fmt.Sprintf("s%d-g%d", i, g), StartedAt: time.Now()},
						trace.SandboxEvent{RunID: "r", Kind: "x", At: time.Now()})
					mu.Lock()
					switch {
					case err == nil && i < 2:
						good++
					case err != nil && i >= 2:
						refused++
					default:
						t.Errorf("store %d: %v", i, err)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	c, err := stores[1].VerifyChain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Links != int64(1+2*good) || c.Unkeyed != 0 || refused != 4*n {
		t.Fatalf("links %d unkeyed %d good %d refused %d", c.Links, c.Unkeyed, good, refused)
	}
	var forks int
	stores[0].DB().QueryRow(`SELECT COUNT(*) FROM (SELECT prev FROM chain GROUP BY prev HAVING COUNT(*) > 1) AS f`).Scan(&forks)
	if forks != 0 {
		t.Fatalf("%d links share a prev: the chain forked", forks)
	}
}

// replica is a connection of db on which no trigger fires (the tests'
// role is a superuser); without one the test fails where the
// mechanisms are required (CI) and skips elsewhere.
func replica(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `SET session_replication_role = replica`); err != nil {
		testenv.Missing(t, "the tests' role cannot bypass triggers (it is no superuser): %v", err)
	}
	return conn
}

// TestAttackReplicaRoleTamper: the role rein connects as owns the tables
// (and, here, is a superuser): it can switch the append-only triggers off
// for its session. The keyed chain must then find what was changed.
func TestAttackReplicaRoleTamper(t *testing.T) {
	server(t)
	ctx := context.Background()
	dir := t.TempDir()
	key := tracetest.TestKey(t)
	s, err := openIn(dir, nil, key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tracetest.Fill(t, s, "r1")
	if _, err := s.Append(ctx, trace.Step{RunID: "r1", Tool: "last", Observation: "the newest", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c0, err := s.VerifyChain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := c0.Head

	// The owner needs no superuser: ALTER TABLE ... DISABLE TRIGGER.
	if _, err := s.DB().Exec(`ALTER TABLE steps DISABLE TRIGGER steps_append_only`); err != nil {
		t.Logf("the owner cannot disable the guard: %v", err)
	} else {
		t.Logf("the connecting role disabled the append-only trigger of steps (it owns the table)")
		s.DB().Exec(`ALTER TABLE steps ENABLE TRIGGER steps_append_only`)
	}

	var orig string
	if err := s.DB().QueryRow(`SELECT observation FROM steps WHERE rowid = (SELECT MIN(rowid) FROM steps)`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	conn := replica(t, s.DB())
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `UPDATE steps SET observation = 'forged' WHERE rowid = (SELECT MIN(rowid) FROM steps)`); err != nil {
		t.Fatalf("replica role: the update was refused: %v", err)
	}
	if _, err := s.VerifyChain(ctx, nil); err == nil {
		t.Fatal("an edited step verified")
	} else {
		t.Logf("edit found: %v", err)
	}
	// Undo, then remove the newest record and its link: only the kept
	// head finds that.
	conn.ExecContext(ctx, `UPDATE steps SET observation = $1 WHERE rowid = (SELECT MIN(rowid) FROM steps)`, orig)
	if _, err := conn.ExecContext(ctx, `DELETE FROM steps WHERE rowid = (SELECT MAX(rowid) FROM steps)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM chain WHERE seq = (SELECT MAX(seq) FROM chain)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyChain(ctx, nil); err != nil {
		t.Fatalf("the edit undone and the end cut, without a kept head: %v", err)
	}
	if _, err := s.VerifyChain(ctx, &kept); err == nil {
		t.Fatal("a chain cut at its end verified against the kept head")
	}
}

// TestAttackKeyedChainDowngrade: whoever can write the database but has
// no key empties a keyed trace (triggers off) and writes a history of its
// own, unkeyed, with a decision nobody made. A store opened with the key
// (as rein's CLI and workers always open a PostgreSQL one) must not take
// that history as its own: it was never unkeyed.
func TestAttackKeyedChainDowngrade(t *testing.T) {
	server(t)
	ctx := context.Background()
	dir := t.TempDir()
	key := tracetest.TestKey(t)
	s, err := openIn(dir, nil, key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AppendAll(ctx, trace.Run{ID: "r", StartedAt: time.Now()},
		trace.ApprovalRequest{RunID: "r", Request: "q1", Kind: "approval", Tool: "bash", Args: `{"cmd":"rm -rf /"}`, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, trace.ApprovalDecision{RunID: "r", Request: "q1", Answer: "no", By: "operator"}); err != nil {
		t.Fatal(err)
	}

	// The forger: no key.
	conn := replica(t, s.DB())
	for _, tbl := range []string{"chain", "runs", "approval_requests", "approval_decisions"} {
		if _, err := conn.ExecContext(ctx, `DELETE FROM `+tbl); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	u, _ := testenv.PostgresDatabase(dir)
	forger, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	if _, err := forger.AppendAll(ctx, trace.Run{ID: "r", StartedAt: time.Now()},
		trace.ApprovalRequest{RunID: "r", Request: "q1", Kind: "approval", Tool: "bash", Args: `{"cmd":"rm -rf /"}`, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := forger.Decide(ctx, trace.ApprovalDecision{RunID: "r", Request: "q1", Answer: "yes", By: "operator"}); err != nil {
		t.Fatal(err)
	}

	d, err := s.Decision(ctx, "r", "q1")
	var unlinked *trace.UnlinkedError
	switch {
	case errors.As(err, &unlinked):
		t.Logf("refused: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		t.Errorf("the keyed store read a forged, unkeyed decision %q as the trace's", d.Answer)
	}
	c, err := s.VerifyChain(ctx, nil)
	if err == nil {
		t.Errorf("the keyed store verified a chain rewritten without its key (form: %s)", c.Form())
	}
	// The next keyed append seals the forgery.
	if _, err := s.Append(ctx, trace.RunEnd{RunID: "r", Status: "done", EndedAt: time.Now()}); err == nil {
		if c, err := s.VerifyChain(ctx, nil); err == nil {
			t.Errorf("after a keyed append the forgery verifies: %s", c.Form())
		}
	}
}
