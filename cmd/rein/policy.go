package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/shell"
)

func newPolicyCmd(sf *scopeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Decide lines and show the merged policy, without running anything",
	}
	cmd.AddCommand(newPolicyCheckCmd(sf), newPolicyShowCmd(sf), newPolicySuggestCmd(sf))
	return cmd
}

// commonFlags are the flags of every command that loads a policy.
type commonFlags struct {
	workspace string
	mode      string
	allow     []string
	ask       []string
	deny      []string
	// extraRules and networkFlag come from a command's own flags
	// (--allow-host, --network).
	extraRules  []policy.Rule
	networkFlag string
	readPaths   []string
	// verification are an agent run's protect globs (rein run --protect).
	verification []string
}

func (c *commonFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.workspace, "workspace", "", "workspace root (default: the current directory)")
	f.StringVar(&c.mode, "mode", "", "mode: safe, ask or auto (default: the policy files' mode, else ask)")
	f.StringArrayVar(&c.allow, "allow", nil, "add an exec allow rule to the flags layer (repeatable)")
	f.StringArrayVar(&c.ask, "ask", nil, "add an exec ask rule to the flags layer (repeatable)")
	f.StringArrayVar(&c.deny, "deny", nil, "add an exec deny rule to the flags layer (repeatable)")
	f.StringArrayVar(&c.readPaths, "read-path", nil, "let commands read this host directory at its own path, as [sandbox] read_paths does (repeatable; never a protected path)")
}

// load builds the policy from the scope files and the flags. Any error is
// a configuration error (exit 2) naming file, line and key.
func (c *commonFlags) load(sf *scopeFlags) (*policy.Policy, error) {
	ws := c.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, &exitError{exitUsage, fmt.Sprintf("cannot find the current directory: %v; pass --workspace", err)}
		}
		ws = wd
	}
	o := policy.Options{Workspace: ws, OrgFile: sf.org, UserFile: sf.user, ProjectFile: sf.project}
	if c.mode != "" {
		m, err := policy.ParseMode(c.mode)
		if err != nil {
			return nil, &exitError{exitUsage, "--mode: " + err.Error()}
		}
		o.Mode = &m
	}
	for _, r := range []struct {
		eff  policy.Decision
		pats []string
	}{{policy.Allow, c.allow}, {policy.Ask, c.ask}, {policy.Deny, c.deny}} {
		for _, p := range r.pats {
			o.Rules = append(o.Rules, policy.Rule{Act: policy.ActExec, Effect: r.eff, Pattern: p})
		}
	}
	o.Rules = append(o.Rules, c.extraRules...)
	o.Network = c.networkFlag
	o.ReadPaths = c.readPaths
	o.Verification = c.verification
	p, err := policy.Load(o)
	if err != nil {
		return nil, &exitError{exitUsage, err.Error()}
	}
	useTraceKey(p)
	return p, nil
}

func newPolicyCheckCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf      commonFlags
		asJSON  bool
		argvMod bool
	)
	cmd := &cobra.Command{
		Use:   "check [flags] -- LINE | check --argv [flags] -- PROGRAM ARG...",
		Short: "Decide a command line without running it",
		Long: `Decide a command line (or, with --argv, one argv) without running anything.

Exit status: 0 allow, 10 ask, 11 deny, 12 refused by the grammar,
2 for a usage or configuration error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !argvMod && len(args) != 1 {
				return &exitError{exitUsage, fmt.Sprintf("policy check takes the line as one argument (got %d); quote it, or use --argv to pass an argv", len(args))}
			}
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			var line *shell.Line
			dir := p.Workspace
			if argvMod {
				line, err = shell.FromArgv(args)
				if err != nil {
					return &exitError{exitUsage, err.Error()}
				}
			} else {
				// ~ is the HOME of the sandbox rein shell runs the line
				// in, as the policy decides it.
				// From where rein shell would start it (the current
				// directory when it is inside the workspace), its globs
				// expanded over the workspace as rein shell expands them.
				if d, derr := startDir("", p.Workspace); derr == nil && d != "" {
					dir = d
				}
				lp := p.LineParser(dir)
				lp.Home = p.SandboxHome
				line, err = lp.Plan(args[0])
			}
			out := cmd.OutOrStdout()
			var ref *shell.Refusal
			if errors.As(err, &ref) {
				if asJSON {
					return writeJSON(out, checkJSON{Decision: "refused", Refusal: ref, Stages: []policy.StageVerdict{}}, exitRefuse)
				}
				printRefusal(out, args[0], ref)
				return &exitError{code: exitRefuse}
			}
			// The programs as the sandbox's PATH finds them, as rein shell
			// decides them.
			sandbox.ResolvePrograms(line, sandbox.Profile{Workspace: p.Workspace, Env: runEnv(os.Environ(), p), HostReadPaths: p.Sandbox.ReadPaths})
			v := p.CheckIn(line, dir)
			code := map[policy.Decision]int{policy.Allow: exitOK, policy.Ask: exitAsk, policy.Deny: exitDeny}[v.Decision]
			if asJSON {
				return writeJSON(out, checkJSON{
					Decision: v.Decision.String(), Class: v.Class.String(), Reason: v.Reason,
					Mode: p.Mode.String(), Workspace: p.Workspace, Stages: v.Stages,
					Opaque: v.Opaque != nil, Refusal: v.Opaque, Notes: v.Notes,
				}, code)
			}
			printVerdict(out, v)
			if code != exitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (schema in docs/policy.md)")
	cmd.Flags().BoolVar(&argvMod, "argv", false, "take PROGRAM ARG... as an argv, used verbatim, instead of a line")
	return cmd
}

// checkJSON is the stable output of `rein policy check --json`.
type checkJSON struct {
	Decision string `json:"decision"`
	// Opaque says the line is outside the grammar, and Refusal names the
	// construct that made it so; for a line refused outright, Refusal
	// names why.
	Opaque    bool                  `json:"opaque"`
	Refusal   *shell.Refusal        `json:"refusal"`
	Notes     []string              `json:"notes,omitempty"`
	Class     string                `json:"class,omitempty"`
	Reason    string                `json:"reason,omitempty"`
	Mode      string                `json:"mode,omitempty"`
	Workspace string                `json:"workspace,omitempty"`
	Stages    []policy.StageVerdict `json:"stages"`
}

func writeJSON(w io.Writer, v any, code int) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// printRefusal shows the refusal under the line, with a caret at the
// construct. Everything printed from the line goes through
// policy.Printable: the line is the agent's, the terminal is a person's.
func printRefusal(w io.Writer, line string, r *shell.Refusal) {
	fmt.Fprintf(w, "refused: %s at byte %d\n", r.Construct, r.Offset)
	if shown := policy.Printable(line); shown == line && len(line) <= 200 && r.Offset <= len(line) {
		fmt.Fprintf(w, "  %s\n  %s^\n", line, strings.Repeat(" ", len([]rune(line[:r.Offset]))))
	}
	fmt.Fprintf(w, "  %s\n", policy.Printable(r.Message))
}

func printVerdict(w io.Writer, v *policy.Verdict) {
	fmt.Fprintf(w, "%s: %s\n", v.Decision, policy.Printable(v.Reason))
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note: %s\n", policy.Printable(n))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range v.Stages {
		shown := quoteArgv(s.Argv)
		for i := len(s.Env) - 1; i >= 0; i-- {
			n, val, _ := strings.Cut(s.Env[i], "=")
			shown = n + "=" + shell.Quote(val) + " " + shown
		}
		if s.Venv != "" {
			shown = "(venv " + s.Venv + ") " + shown
		}
		if s.Source != "" && !strings.HasPrefix(s.Source, shown) && v.Opaque == nil {
			// The words were expanded (~, braces): as written, then as
			// they will be spawned.
			shown = s.Source + "  =>  " + shown
		}
		fmt.Fprintf(tw, "  stage %d\t%s\t%s\t%s\n", s.Index, s.Decision, s.Class, policy.Printable(shown))
		fmt.Fprintf(tw, "  \t\t\t%s\n", policy.Printable(s.Reason))
		for _, p := range s.Paths {
			fmt.Fprintf(tw, "  \t\t\t%s %s -> %s: %s (%s)\n", p.Access, policy.Printable(p.Path), policy.Printable(p.Resolved), p.Decision, policy.Printable(p.Reason))
		}
	}
	tw.Flush()
}

// quoteArgv prints an argv as the words of a line would be written.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shell.Quote(a)
	}
	return strings.Join(q, " ")
}

func newPolicyShowCmd(sf *scopeFlags) *cobra.Command {
	var (
		cf     commonFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the merged policy with the file each rule and setting came from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := cf.load(sf)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, showJSON(p), exitOK)
			}
			printShow(out, p)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

type ruleJSON struct {
	Act     policy.Act      `json:"act"`
	Effect  policy.Decision `json:"effect"`
	Pattern string          `json:"pattern"`
	Layer   policy.Layer    `json:"layer"`
	File    string          `json:"file,omitempty"`
	Line    int             `json:"line,omitempty"`
}

func showJSON(p *policy.Policy) any {
	rules := []ruleJSON{}
	for _, r := range p.Rules {
		rules = append(rules, ruleJSON{r.Act, r.Effect, r.Pattern, r.Layer, r.File, r.Line})
	}
	return struct {
		Workspace string           `json:"workspace"`
		Sources   []policy.Source  `json:"sources"`
		Settings  []policy.Setting `json:"settings"`
		Rules     []ruleJSON       `json:"rules"`
	}{p.Workspace, p.Sources, p.Settings, rules}
}

func printShow(w io.Writer, p *policy.Policy) {
	fmt.Fprintf(w, "workspace: %s\n\nfiles:\n", p.Workspace)
	for _, s := range p.Sources {
		fmt.Fprintf(w, "  %-8s %-9s %s\n", s.Layer, s.State, s.Path)
		if s.Note != "" {
			fmt.Fprintf(w, "           %s\n", s.Note)
		}
	}
	fmt.Fprintln(w, "\nsettings:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range p.Settings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Key, s.Value, origin(s.Layer, s.File, 0))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nrules:")
	if len(p.Rules) == 0 {
		fmt.Fprintln(w, "  (none: the mode and the class table decide)")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range p.Rules {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Act, r.Effect, policy.Printable(shell.Quote(r.Pattern)), origin(r.Layer, r.File, r.Line))
	}
	tw.Flush()
}

func origin(l policy.Layer, file string, line int) string {
	switch {
	case file == "":
		return l.String()
	case line > 0:
		return fmt.Sprintf("%s  %s:%d", l, file, line)
	}
	return fmt.Sprintf("%s  %s", l, file)
}
