package runplan

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/shell"
)

func run(t *testing.T, ctx context.Context, line string) (*Result, string, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := shell.Parser{Home: dir}.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	outF, errF := tempFile(t), tempFile(t)
	res, err := Run(ctx, l, Options{Dir: dir, Home: dir, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: outF, Stderr: errF})
	if err != nil {
		t.Fatal(err)
	}
	return res, string(readBack(t, outF)), string(readBack(t, errF))
}

func statuses(r *Result) string {
	var s []string
	for _, st := range r.Stages {
		s = append(s, string(st.Status))
	}
	return strings.Join(s, ",")
}

// TestSemantics pins the places where rein means to differ from a shell,
// and the outcomes a shell would report in words.
func TestSemantics(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		line     string
		statuses string
		exit     int
		stdout   string
	}{
		// A failed cd ends the line, even after ;: the rest would run in a
		// directory the policy did not check.
		{"cd missing ; echo ran", "cd_failed,not_run", 1, ""},
		{"cd missing || echo ran", "cd_failed,not_run", 1, ""},
		{"echo a && cd missing; echo b", "ok,cd_failed,not_run", 1, "a\n"},
		// A missing program is unavailable (127) and the line goes on.
		{"no-such-program-rein ; echo next", "unavailable,ok", 0, "next\n"},
		{"no-such-program-rein || echo fallback", "unavailable,ok", 0, "fallback\n"},
		{"./not-executable", "unavailable", 127, ""},
		// A redirect that cannot be opened fails the stage without running it.
		{"echo x > missing-dir/f && echo y", "redirect_failed,not_run", 1, ""},
		{"cat < nope || echo z", "redirect_failed,ok", 0, "z\n"},
		{"true | false", "ok,failed", 1, ""},
		{"false | true", "failed,ok", 0, ""},
		{"printf 'a\\nb\\n' | sort -r | head -1", "ok,ok,ok", 0, "b\n"},
		{"sh -c 'kill -9 $$'", "failed", 137, ""},
		// A here-document is standard input, in whole, whatever its size;
		// a stage that never reads it, or never starts, does not hold the
		// line up.
		{"cat <<'EOF' | wc -c\n" + strings.Repeat("0123456789abcdef\n", 16<<10) + "EOF", "ok,ok", 0, "278528\n"},
		{"true <<'EOF' && echo done\n" + strings.Repeat("x\n", 200<<10) + "EOF", "ok,ok", 0, "done\n"},
		{"no-such-program-rein <<'EOF' ; echo next\n" + strings.Repeat("x\n", 200<<10) + "EOF", "unavailable,ok", 0, "next\n"},
		{"cat <<< 'a b' <<'EOF'\nlast wins\nEOF", "ok", 0, "last wins\n"},
	}
	for _, c := range cases {
		r, out, _ := run(t, ctx, c.line)
		if statuses(r) != c.statuses || r.ExitCode != c.exit || out != c.stdout {
			t.Errorf("%q: statuses %s exit %d stdout %q; want %s %d %q", c.line, statuses(r), r.ExitCode, out, c.statuses, c.exit, c.stdout)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, _, _ := run(t, ctx, "sleep 30 | cat ; echo after")
	if time.Since(start) > 10*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
	if got := statuses(r); got != "cancelled,ok,cancelled" && got != "cancelled,cancelled,cancelled" {
		t.Fatalf("statuses %s", got)
	}
	if r.ExitCode != 130 {
		t.Fatalf("exit %d", r.ExitCode)
	}
}

func TestRelativeDirRequired(t *testing.T) {
	l, _ := shell.Parse("true")
	if _, err := Run(context.Background(), l, Options{Dir: "rel", Stdout: os.Stdout, Stderr: os.Stderr}); err == nil {
		t.Fatal("a relative working directory was accepted")
	}
}
