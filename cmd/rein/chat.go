package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/trace/sqlstore"
)

// chatFlags are what rein chat and its subcommands share: the provider
// flags of rein run, the approver, the trace.
type chatFlags struct {
	cf      commonFlags
	tf      traceFlag
	pc      agent.ProviderChoice
	approve string
	asJSON  bool
}

func (f *chatFlags) register(cmd *cobra.Command, provider bool) {
	f.cf.register(cmd)
	f.tf.register(cmd)
	fl := cmd.Flags()
	if provider {
		fl.StringVar(&f.pc.Name, "provider", "", "the provider preset or [[provider]] entry (default: the conversation's, or the first entry)")
		fl.StringVar(&f.pc.Model, "model", "", "the model")
		fl.StringVar(&f.pc.BaseURL, "base-url", "", "the provider's base URL, over the preset's")
		fl.StringVar(&f.pc.KeyEnv, "api-key-env", "", "the variable the key is read from, over the preset's")
		fl.StringVar(&f.approve, "approve", "terminal", "who answers asked actions and the model's questions: terminal, all or none (a conversation's turn cannot be deferred)")
	}
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
}

// newChatCmd is rein chat: conversations with the agent, one run a turn.
func newChatCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "chat [flags] [CONV]",
		Short: "Talk to the agent over several turns: each line a turn, each turn a run that goes on from the one before",
		Long: `A conversation is a chain of runs over one transcript, one run a turn: a
turn's run begins with the transcript the turn before ended with, then
your message, and ends when the model replies without calling a tool
(there is no gate). Every turn is a durable run of the trace, decided by
the policy and confined by the sandbox like any other.

rein chat with no subcommand reads a line at a time from the terminal
and runs each as a turn of CONV (a new conversation when none is given,
configured by the provider flags), printing the steps and the reply; an
empty line or end of input ends it.

Exit status: 0, or as rein run's when a turn does not finish.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := ""
			if len(args) == 1 {
				conv = args[0]
			} else {
				id, err := newConversation(cmd, sf, &f)
				if err != nil {
					return err
				}
				conv = id
				fmt.Fprintf(cmd.OutOrStdout(), "conversation %s\n", conv)
			}
			lines := policy.TerminalLines(cmd.InOrStdin())
			for {
				fmt.Fprint(cmd.ErrOrStderr(), "> ")
				line, ok := <-lines
				line = strings.TrimSpace(line)
				if !ok || line == "" {
					return nil
				}
				if err := sendTurn(cmd, sf, &f, conv, line); err != nil {
					return err
				}
			}
		},
	}
	f.register(cmd, true)
	cmd.AddCommand(newChatNewCmd(sf), newChatSendCmd(sf), newChatShowCmd(sf), newChatBranchCmd(sf), newChatListCmd(sf))
	return cmd
}

func newChatNewCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "new [flags]",
		Short: "Start a conversation, configured by the provider flags of rein run; prints its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := newConversation(cmd, sf, &f)
			if err != nil {
				return err
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]string{"conversation": id}, 0)
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

// newConversation starts a conversation with f's provider and policy
// flags, kept with it as a run's configuration is.
func newConversation(cmd *cobra.Command, sf *scopeFlags, f *chatFlags) (string, error) {
	p, store, _, err := loadWithTrace(&f.cf, sf, &f.tf)
	if err != nil {
		return "", err
	}
	defer store.Close()
	pc, _ := providerFrom(f.pc, p.Providers)
	_, preset, err := agent.ChooseProvider(cmd.Context(), pc, os.Getenv)
	if err != nil {
		return "", &exitError{exitUsage, err.Error()}
	}
	if err := agent.CheckProviderHost(p, preset.BaseURL); err != nil {
		return "", &exitError{exitUsage, err.Error()}
	}
	switch f.approve {
	case "terminal", "all", "none":
	default:
		return "", &exitError{exitUsage, fmt.Sprintf("--approve %q: a conversation's turn is answered at once: use terminal, all or none", f.approve)}
	}
	rc := &agent.RunConfig{Provider: preset.Name, Model: pc.Model, BaseURL: cmp.Or(pc.BaseURL, preset.BaseURL), KeyEnv: cmp.Or(pc.KeyEnv, preset.KeyEnv),
		Family: cmp.Or(string(pc.Family), string(preset.Family)), Mode: p.Mode.String(), Network: p.Sandbox.Network,
		Allow: f.cf.allow, Ask: f.cf.ask, Deny: f.cf.deny, ReadPaths: f.cf.readPaths, Approve: f.approve}
	id, err := agent.NewConversation(cmd.Context(), store, rc)
	if err != nil {
		return "", &exitError{exitUsage, err.Error()}
	}
	return id, nil
}

func newChatSendCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "send [flags] CONV MESSAGE",
		Short: "Run the next turn of a conversation: MESSAGE, then the model until it replies without a tool call",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sendTurn(cmd, sf, &f, args[0], args[1])
		},
	}
	f.register(cmd, true)
	return cmd
}

// sendTurn runs one turn of conv with message, under the conversation's
// configuration (a flag may narrow it), printing its steps and reply.
func sendTurn(cmd *cobra.Command, sf *scopeFlags, f *chatFlags, conv, message string) error {
	pre, store, red, err := loadWithTrace(&f.cf, sf, &f.tf)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), stopSignals...)
	defer stop()
	rc, err := agent.ConversationConfig(ctx, store, conv)
	if err != nil {
		return &exitError{exitUsage, strings.TrimPrefix(err.Error(), "agent: ")}
	}
	if cmd.Flags().Changed("approve") && f.approve == "defer" {
		return &exitError{exitUsage, "--approve defer: a conversation's turn is answered at once: use terminal, all or none"}
	}
	c := agent.Contract{Goal: message, Workspace: pre.Workspace, Config: rc}
	cf := f.cf
	provider, p, approver, red, err := runnerFor(ctx, cmd, sf, &cf, f.pc, f.approve, c, nil, red)
	if err != nil {
		return err
	}
	c.Budget = agent.Budget{Steps: p.Run.MaxSteps, Tokens: p.Run.MaxTokens, WallClock: p.Run.MaxTime, Cost: p.Run.MaxCost}
	c.ResponseMaxTokens, c.ContextTokens, c.Recovery, c.Web, c.Children = p.Run.ResponseMaxTokens, p.Run.ContextTokens, p.Run.Recovery, p.Run.Web, childLimits(p)
	out := cmd.OutOrStdout()
	o := agentOptions(provider, p, approver, store, red, out, f.asJSON)
	o.PolicyFor = worktreePolicy(cf, *sf, p)
	res, err := agent.Send(ctx, conv, c, o)
	defer exportRun(cmd.ErrOrStderr(), p, store, red, res.Run)
	if err == nil && !f.asJSON {
		if reply := lastReply(ctx, store, res.Run); reply != "" {
			fmt.Fprintf(out, "\n%s\n\n", red.Redact(reply))
		}
	}
	return outcomeExit(out, res, err, red, f.asJSON)
}

// lastReply is the last text the model wrote in run, or "".
func lastReply(ctx context.Context, store *sqlstore.Store, run string) string {
	st, err := agent.LoadState(ctx, store, run)
	if err != nil {
		return ""
	}
	for i := len(st.Transcript) - 1; i >= 0; i-- {
		if m := st.Transcript[i]; m.Role == agent.RoleAssistant && strings.TrimSpace(m.Text) != "" {
			return m.Text
		}
	}
	return ""
}

func newChatShowCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "show [flags] CONV",
		Short: "Show a conversation's turns: each message, the run it was, and the reply",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, store, red, err := loadWithTrace(&f.cf, sf, &f.tf)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx, conv := cmd.Context(), args[0]
			turns, err := store.ConversationTurns(ctx, conv)
			if err != nil || len(turns) == 0 {
				return &exitError{exitUsage, fmt.Sprintf("no conversation %s in %s", conv, store.Path())}
			}
			type shown struct {
				Turn    int    `json:"turn"`
				Run     string `json:"run,omitempty"`
				Message string `json:"message,omitempty"`
				Reply   string `json:"reply,omitempty"`
				Outcome string `json:"outcome,omitempty"`
			}
			var all []shown
			for _, t := range turns[1:] {
				s := shown{Turn: t.Turn, Run: t.RunID}
				if st, err := agent.LoadState(ctx, store, t.RunID); err == nil {
					s.Message = st.Contract.Goal
					if st.Done != nil {
						s.Outcome = string(st.Done.Kind)
					}
				}
				s.Reply = lastReply(ctx, store, t.RunID)
				all = append(all, s)
			}
			out := cmd.OutOrStdout()
			if f.asJSON {
				return writeJSON(out, map[string]any{"conversation": conv, "from": turns[0].From, "from_turn": turns[0].FromTurn, "turns": all}, 0)
			}
			fmt.Fprintf(out, "conversation %s", conv)
			if turns[0].From != "" {
				fmt.Fprintf(out, " (branched from %s at turn %d)", turns[0].From, turns[0].FromTurn)
			}
			fmt.Fprintf(out, ", %d turns\n", len(all))
			for _, s := range all {
				fmt.Fprintf(out, "\nturn %d (run %s, %s)\n> %s\n%s\n", s.Turn, s.Run, s.Outcome, red.Redact(s.Message), red.Redact(s.Reply))
			}
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}

func newChatBranchCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "branch [flags] CONV TURN",
		Short: "Start a new conversation that goes on from TURN of CONV (CONV keeps its turns); prints its id",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := strconv.Atoi(args[1])
			if err != nil || turn < 0 {
				return &exitError{exitUsage, fmt.Sprintf("turn %q is not a turn number", args[1])}
			}
			_, store, _, err := loadWithTrace(&f.cf, sf, &f.tf)
			if err != nil {
				return err
			}
			defer store.Close()
			id, err := agent.BranchConversation(cmd.Context(), store, args[0], turn)
			if err != nil {
				return &exitError{exitUsage, strings.TrimPrefix(err.Error(), "agent: ")}
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"conversation": id, "from": args[0], "from_turn": turn}, 0)
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}

func newChatListCmd(sf *scopeFlags) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the conversations of the workspace's trace, with their heads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, store, _, err := loadWithTrace(&f.cf, sf, &f.tf)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx := cmd.Context()
			starts, err := store.ConversationStarts(ctx)
			if err != nil {
				return &exitError{exitUsage, err.Error()}
			}
			type listed struct {
				Conversation string `json:"conversation"`
				Head         int    `json:"head"`
				From         string `json:"from,omitempty"`
				FromTurn     int    `json:"from_turn,omitempty"`
				Started      string `json:"started"`
			}
			var all []listed
			for _, s := range starts {
				turns, _ := store.ConversationTurns(ctx, s.Conv)
				all = append(all, listed{Conversation: s.Conv, Head: turns[len(turns)-1].Turn, From: s.From, FromTurn: s.FromTurn, Started: s.At.Format("2006-01-02 15:04:05")})
			}
			out := cmd.OutOrStdout()
			if f.asJSON {
				return writeJSON(out, all, 0)
			}
			for _, l := range all {
				from := ""
				if l.From != "" {
					from = fmt.Sprintf("  (from %s at turn %d)", l.From, l.FromTurn)
				}
				fmt.Fprintf(out, "%s  %s  %d turns%s\n", l.Conversation, l.Started, l.Head, from)
			}
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}
