package sqlstore

import "os"

// processExists reports whether a process pid exists: Windows opens a
// handle to it, which fails for an ended one.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
