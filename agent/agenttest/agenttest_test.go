package agenttest_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agenttest"
	"github.com/reinhq/rein/agent/loop"
	"github.com/reinhq/rein/sandbox"
)

// inProcess is rein's own driver.
var inProcess = agenttest.Driver{Name: "in-process", Run: agent.Run, Resume: agent.Resume}

// stepper is a second driver, written outside package agent against
// agent/loop and agent's exported executors alone, as a workflow
// engine's driver is: it takes each effect the loop names, calls its
// executor, applies the result and commits. It passes the same suite.
var stepper = agenttest.Driver{
	Name: "stepper",
	Run: func(ctx context.Context, c agent.Contract, o agent.Options) (agent.Outcome, error) {
		x, err := agent.Open(ctx, c, o)
		if err != nil {
			return agent.Outcome{}, err
		}
		return step(ctx, x)
	},
	Resume: func(ctx context.Context, run string, o agent.Options) (agent.Outcome, error) {
		x, err := agent.Reopen(ctx, run, o)
		var ended *agent.EndedError
		if errors.As(err, &ended) {
			return ended.Outcome, err
		}
		if err != nil {
			return agent.Outcome{}, err
		}
		return step(ctx, x)
	},
}

// step drives x's run to its end, or to the end of this process's part
// of it (a decision awaited, a commit fenced out).
func step(ctx context.Context, x *agent.Executors) (agent.Outcome, error) {
	bounded, done := x.Bound(ctx)
	s := x.State()
	x.Begin(bounded)
	var out agent.Outcome
	for {
		in, stop := x.Halt(bounded)
		if stop != nil {
			out = *stop
			break
		}
		if in != nil {
			s.Apply(in, x.Now())
		}
		now := x.Now()
		effect := s.Next(now)
		if _, ok := effect.(loop.End); ok {
			s.Apply(loop.Ended{}, now)
			out = *s.Done
			break
		}
		var recs agent.Records
		switch e := effect.(type) {
		case loop.CallModel:
			in, recs = x.Model(bounded, e)
		case loop.RunTools:
			in, recs = x.Tools(bounded, e)
		case loop.RunGate:
			in, recs = x.Gate(bounded, e)
		case loop.Summarize:
			in, recs = x.Summarize(bounded, e)
		case loop.Wait:
			in = x.Sleep(bounded, e)
		case loop.AwaitDecision:
			var parked *agent.Outcome
			if in, parked = x.Await(bounded, e); parked != nil {
				out = *parked
			}
		}
		if out.Kind != "" {
			break
		}
		if in == nil {
			continue
		}
		s.Apply(in, x.Now())
		if _, ok := effect.(loop.Wait); !ok {
			x.Commit(bounded, effect, recs)
		}
	}
	done()
	return x.Finish(ctx, out)
}

func TestMain(m *testing.M) {
	sandbox.Main()
	if code, ok := agenttest.Child(inProcess, stepper); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestInProcessDriver(t *testing.T) { agenttest.Run(t, inProcess) }

func TestStepperDriver(t *testing.T) { agenttest.Run(t, stepper) }
