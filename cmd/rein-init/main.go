// Command rein-init is the sandbox's init on its own: a small program that
// starts in a fraction of the time rein's whole binary takes, which a cold
// run pays once per call. rein uses the rein-init installed beside its own
// binary (sandbox.UseInit); an embedding program may do the same. It does
// nothing when started by hand.
//
// It is also a launched session's relay (launch/relay registers it).
//
// cmd/rein-init imports only package sandbox and launch/relay (and what
// they import): the policy, the trace, the router and the vendors' SDKs
// stay out of it.
package main

import (
	"fmt"
	"os"

	_ "github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/sandbox"
)

func main() {
	sandbox.Main()
	fmt.Fprintln(os.Stderr, "rein-init is rein's sandbox init; rein starts it, and it does nothing on its own")
	os.Exit(2)
}
