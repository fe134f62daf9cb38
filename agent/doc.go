// Package agent puts a model in front of rein's substrate: one run is one
// goal given to one model in one workspace, driven step by step until its
// gate passes, a budget runs out, or a person is needed. Every action of
// the model goes through tool.Router, so every guarantee of the substrate
// holds for it unchanged; the agent adds no second path to a file, a
// process or a host.
//
// The loop is a step function over the run's state (State.Next names the
// next effect: a model call, the tool calls of a response, a gate attempt,
// the end; State.Apply folds the effect's result in), and a driver (Run)
// carries the effects out; with a durable store it commits a checkpoint
// per step under the run's lease, so that Resume continues a run whose
// process died without repeating an effect or a charge. The providers speak the vendors' wire formats
// through the vendors' own SDKs, with their retries off.
//
// agent imports tool, trace, policy and shell; never the sandbox's
// internals, and nothing below it imports agent.
package agent
