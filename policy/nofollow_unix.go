//go:build unix

package policy

import "syscall"

// noFollow makes an open refuse a final symbolic link.
const noFollow = syscall.O_NOFOLLOW
