// Package apicheck owns rein's public Go surface as a file: api/rein.txt
// lists every exported name of every package an embedder can import (not
// internal, not a command) with its signature, one line each, sorted, as
// Go's own api/*.txt do. Its test regenerates the list from the code and
// fails when the two differ, so that an export is added, changed or
// removed on purpose, in the same change as the file.
//
// It reads the packages' compiled export data (go list -export) with
// go/importer: exact types, and no source of a dependency type-checked.
// It must not be imported by any package of rein.
package apicheck
