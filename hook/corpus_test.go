package hook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// agentLine is one entry of the corpus of real agents' command lines.
type agentLine struct {
	Agent  string `json:"agent"`
	Source string `json:"source"`
	Line   string `json:"line"`
}

// corpusPath is the corpus of command lines real coding agents issued in
// public trajectories (testdata/agentlines/SOURCES.md says which).
const corpusPath = "../testdata/agentlines/lines.jsonl"

func readAgentLines(t testing.TB) []agentLine {
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agentLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l agentLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", corpusPath, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusTally counts what rein made of a set of lines.
type corpusTally struct {
	lines, exact, opaque, malformed int
	hookDeny, hookGrammarDeny       int
	// hookMissingDir counts denials of a cd into a directory of the
	// agent's own machine that this one lacks (/testbed, a home).
	hookMissingDir int
	constructs     map[shell.Construct]int
}

func (c *corpusTally) pct(n int) float64 { return 100 * float64(n) / float64(max(c.lines, 1)) }

// TestAgentLinesCorpus runs every line of the corpus through the grammar
// (as the shell tool parses it: globs over the workspace) and through the
// Claude Code hook that confines Bash (as a PreToolUse Bash input, in ask
// mode, from an empty project) and holds rein to what real agents write:
// at most 2% of the lines are not seen as an exact plan (opaque or
// refused), and the hook denies under 0.5% of them for their syntax (a
// line bash would reject too).
func TestAgentLinesCorpus(t *testing.T) {
	lines := readAgentLines(t)
	if len(lines) < 5000 {
		t.Fatalf("the corpus has %d lines, want at least 5000", len(lines))
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home := filepath.Join(root, "proj"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.Load(policy.Options{Workspace: ws, Home: home, OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, OnHost: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workspace.Open(p.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	all := &corpusTally{constructs: map[shell.Construct]int{}}
	byAgent := map[string]*corpusTally{}
	denyReasons := map[string]int{}
	for _, l := range lines {
		a := byAgent[l.Agent]
		if a == nil {
			a = &corpusTally{constructs: map[shell.Construct]int{}}
			byAgent[l.Agent] = a
		}
		for _, c := range []*corpusTally{all, a} {
			c.lines++
		}
		plan, err := p.LineParser(ws).Plan(l.Line)
		var r *shell.Refusal
		switch {
		case errors.As(err, &r):
			for _, c := range []*corpusTally{all, a} {
				c.malformed++
				c.constructs[r.Construct]++
			}
		case err != nil:
			t.Fatalf("Plan(%q): %v", l.Line, err)
		case plan.Opaque != nil:
			for _, c := range []*corpusTally{all, a} {
				c.opaque++
				c.constructs[plan.Opaque.Construct]++
			}
		default:
			for _, c := range []*corpusTally{all, a} {
				c.exact++
			}
		}
		d := (&Engine{Policy: p, Workspace: w, Cwd: ws, Confined: true}).Decide(Action{Kind: Run, Tool: "Bash", Command: l.Line})
		if d.Answer != Deny {
			continue
		}
		for _, c := range []*corpusTally{all, a} {
			c.hookDeny++
		}
		reason := d.Reason
		if strings.Contains(reason, "cd target") && strings.Contains(reason, "does not exist") {
			for _, c := range []*corpusTally{all, a} {
				c.hookMissingDir++
			}
		}
		if strings.HasPrefix(reason, "bash would not run it either") {
			for _, c := range []*corpusTally{all, a} {
				c.hookGrammarDeny++
			}
			reason = "bash would not run it either"
		} else if i := strings.Index(reason, "): "); i >= 0 {
			reason = reason[i+3:]
		}
		if len(reason) > 70 {
			reason = reason[:70]
		}
		denyReasons[reason]++
	}
	report := func(name string, c *corpusTally) string {
		return fmt.Sprintf("%-16s %6d lines: exact plan %5.1f%%, opaque %4.1f%%, refused %4.1f%% (not seen as a plan %4.1f%%); hook denies %4.1f%% (%4.2f%% for syntax, %4.2f%% but for a cd into a directory this machine lacks)",
			name, c.lines, c.pct(c.exact), c.pct(c.opaque), c.pct(c.malformed), c.pct(c.opaque+c.malformed), c.pct(c.hookDeny), c.pct(c.hookGrammarDeny), c.pct(c.hookDeny-c.hookMissingDir))
	}
	var agents []string
	for a := range byAgent {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		t.Log(report(a, byAgent[a]))
	}
	t.Log(report("all", all))
	var cs []string
	for c, n := range all.constructs {
		cs = append(cs, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(cs)
	t.Logf("not seen as a plan, by construct: %s", strings.Join(cs, ", "))
	var rs []string
	for r, n := range denyReasons {
		rs = append(rs, fmt.Sprintf("%5d  %s", n, r))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rs)))
	if len(rs) > 12 {
		rs = rs[:12]
	}
	t.Logf("the hook's denials, by reason:\n%s", strings.Join(rs, "\n"))

	if got := all.pct(all.opaque + all.malformed); got > 2 {
		t.Errorf("%.1f%% of the corpus is not seen as a plan, want at most 2%%", got)
	}
	if got := all.pct(all.hookGrammarDeny); got >= 0.5 {
		t.Errorf("the hook denies %.2f%% of the corpus for its syntax, want under 0.5%%", got)
	}
	if got := all.pct(all.hookDeny - all.hookMissingDir); got >= 0.5 {
		t.Errorf("the hook denies %.2f%% of the corpus (a cd into a directory this machine lacks aside), want under 0.5%%", got)
	}
}
