package sandbox

// checkPlatform accepts: Linux has the mechanisms; preflight says whether
// this host has them.
func checkPlatform() error { return nil }
