package relay

import (
	"fmt"
	"io"
	"net"
	"os"
)

// run connects to rein through Socket, names the service, and copies
// stdin there and the answer to stdout.
func run(args []string) int {
	service := args[0]
	if service != "hook" && service != "mcp" {
		fmt.Fprintf(os.Stderr, "rein relay: %q: hook or mcp\n", service)
		return 2
	}
	c, err := net.Dial("unix", Socket)
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
