// Package servertest runs rein's Temporal driver (agent/temporal)
// against a real Temporal server started in the test process
// (go.temporal.io/server's temporaltest, on SQLite in memory): the
// driver conformance suite of agent/agenttest, its kill matrix with the
// driver's workers killed with SIGKILL and a second worker taking the run
// over. It is a module of its own so that rein's module never depends
// on the Temporal server; nothing imports it.
package servertest
