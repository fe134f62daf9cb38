// Command devserver is a Temporal server for a try of rein's fleet on
// one machine: Temporal's own test server (go.temporal.io/server's
// temporaltest, in memory), started in this process until SIGINT or
// SIGTERM. It prints the address and namespace to give rein worker and
// rein run --temporal. A fleet runs a Temporal cluster of its own, or
// Temporal Cloud, instead.
//
//	cd agent/temporal/servertest && go run ./devserver
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

func main() {
	ts := temporaltest.NewServer()
	fmt.Printf("a Temporal server at %s, namespace %s (in memory: it ends with this process). For rein:\n", ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	fmt.Printf("  export REIN_TEMPORAL=%s TEMPORAL_NAMESPACE=%s\n", ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	ts.Stop()
}
