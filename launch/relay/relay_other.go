//go:build !linux

package relay

import (
	"fmt"
	"os"
)

// run refuses: a launched session runs on Linux only.
func run([]string) int {
	fmt.Fprintln(os.Stderr, "rein relay: a launched session runs on Linux only")
	return 125
}
