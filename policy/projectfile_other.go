//go:build !linux

package policy

import "os"

func openBeneath(root, rel string) (*os.File, error) { return openBeneathWalk(root, rel) }
