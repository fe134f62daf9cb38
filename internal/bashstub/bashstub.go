// Package bashstub holds the stand-in programs that rein's tests run under
// real bash and under rein's own plan runner, so that both sides of a
// cross-check see the same programs. It is for tests only and imports
// nothing of rein.
package bashstub

import (
	"fmt"
	"os"
	"path/filepath"
)

// Programs are the program names a corpus line may use. "fail" exits 1;
// every other exits 0.
var Programs = []string{
	"cmd", "run", "grep", "git", "go", "make", "ls", "cat", "sort", "head",
	"tail", "rm", "find", "sed", "awk", "tr", "wc", "xargs", "diff", "tee",
	"python3", "npm", "curl", "docker", "jq", "rg", "café", "my cmd", "fail",
}

// script records, in a file named by its pid under $REIN_TEST_LOG, the
// time, its working directory, what it read on stdin, its name and its
// arguments, NUL-separated; then prints one line to stdout and one to
// stderr.
const script = `#!%s
trap '' PIPE
IFS= read -r -d '' in
printf '%%s\0' "$EPOCHREALTIME" "$PWD" "$in" "${0##*/}" "$@" > "$REIN_TEST_LOG/$$"
printf '1 %%s\n' "${0##*/}" 2>/dev/null
printf '2 %%s\n' "${0##*/}" >&2 2>/dev/null
exit %d
`

// Write puts every stand-in program, run by the bash at bashPath, into
// dir.
func Write(dir, bashPath string) error {
	for _, name := range Programs {
		status := 0
		if name == "fail" {
			status = 1
		}
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, script, bashPath, status), 0o755); err != nil {
			return err
		}
	}
	return nil
}
