//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
)

// relayMain connects to rein through RelaySocket, names the service, and
// copies stdin there and the answer to stdout.
func relayMain(service string) int {
	if service != "hook" && service != "mcp" {
		fmt.Fprintf(os.Stderr, "rein relay: %q: hook or mcp\n", service)
		return 2
	}
	c, err := net.Dial("unix", RelaySocket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rein relay:", err)
		return 1
	}
	defer c.Close()
	if _, err := io.WriteString(c, service+"\n"); err != nil {
		fmt.Fprintln(os.Stderr, "rein relay:", err)
		return 1
	}
	go func() {
		io.Copy(c, os.Stdin)
		c.(*net.UnixConn).CloseWrite()
	}()
	n, err := io.Copy(os.Stdout, c)
	if err != nil || (service == "hook" && n == 0) {
		fmt.Fprintln(os.Stderr, "rein relay: no answer from rein")
		return 1
	}
	return 0
}
