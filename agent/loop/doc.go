// Package loop is the agent's loop as a step function, and nothing else:
// a run's durable state (State), the effects the loop asks its driver to
// carry out (call the model, run tool calls, run the gate, await an
// operator's decision, sleep, end), each with a typed idempotency key
// and a recovery class, and the inputs that fold an effect's result back
// in. State.Next only reads; State.Apply is the only writer; every input
// is plain data (a model's response or its failure class, a call's
// result, a deferral, a decision, a resumption with the workspace's
// change), never an error value or a clock, and the retry jitter is drawn
// from a hash of the effect's key. So any driver (rein's in-process one,
// a workflow engine's) runs the same loop, and a run replays exactly.
//
// loop imports the standard library only, and of it never os, net,
// math/rand, time.Now or anything else that reads the world: the
// layering test enforces it. Nothing of rein below agent imports it.
package loop
