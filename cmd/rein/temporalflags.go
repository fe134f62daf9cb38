package main

import (
	"time"

	"github.com/spf13/cobra"
)

// temporalFlags name a Temporal server, how to reach it, and the task
// queue of the workers that run a run's effects. TLS and the API key are
// taken as Temporal's own clients take them (TEMPORAL_TLS_CERT,
// TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA, TEMPORAL_API_KEY); the API key never
// from a flag, where other users of the host would see it.
type temporalFlags struct {
	addr, namespace, queue      string
	tlsCert, tlsKey, tlsCA, sni string
	payloadKey                  string
	heartbeat                   time.Duration
}

func (t *temporalFlags) register(cmd *cobra.Command, starts bool) {
	f := cmd.Flags()
	f.StringVar(&t.addr, "temporal", "", "the Temporal server, HOST:PORT: the run is a workflow there, its effects carried out by rein worker processes")
	f.StringVar(&t.namespace, "temporal-namespace", "", "the Temporal namespace (default: TEMPORAL_NAMESPACE, else default)")
	f.StringVar(&t.tlsCert, "temporal-tls-cert", "", "a client certificate for the Temporal server (default: TEMPORAL_TLS_CERT)")
	f.StringVar(&t.tlsKey, "temporal-tls-key", "", "the client certificate's key (default: TEMPORAL_TLS_KEY)")
	f.StringVar(&t.tlsCA, "temporal-tls-ca", "", "the CA certificate the Temporal server's is checked against (default: TEMPORAL_TLS_CA, else the host's)")
	f.StringVar(&t.sni, "temporal-tls-server-name", "", "the name the Temporal server's certificate is checked for (default: its host)")
	f.StringVar(&t.payloadKey, "payload-key", "", "the file of the key that seals every payload the Temporal server sees (default: REIN_PAYLOAD_KEY, else a key derived from the trace key); every host of the fleet has the same")
	if starts {
		f.StringVar(&t.queue, "task-queue", "rein", "the task queue of the workers that run the run's effects (hosts that can run rein's sandbox over its workspace)")
		f.DurationVar(&t.heartbeat, "temporal-heartbeat", 10*time.Second, "how long a worker may be silent before the run is taken from it and opened again on another")
	}
}

// on says a Temporal server was named.
func (t *temporalFlags) on() bool { return t != nil && t.addr != "" }
