// Command searchfiles runs rein's search_files once over a directory, as
// a whole process, for bench/search.sh to time against ripgrep.
//
//	searchfiles DIR PATTERN
//
// It lifts the match and output limits so that the search covers the whole
// tree, like `rg --count`, and prints the number of matching lines, the
// files searched and the files skipped.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/reinhq/rein/files"
	"github.com/reinhq/rein/workspace"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: searchfiles DIR PATTERN")
		os.Exit(2)
	}
	ws, err := workspace.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchfiles:", err)
		os.Exit(1)
	}
	defer ws.Close()
	t := &files.Tools{WS: ws, Limits: files.Limits{MaxMatches: 1 << 30, MaxOutputBytes: 1 << 40}}
	res, err := t.SearchFiles(context.Background(), files.SearchFilesArgs{Pattern: os.Args[2]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchfiles:", err)
		os.Exit(1)
	}
	if res.Truncated {
		fmt.Fprintln(os.Stderr, "searchfiles: truncated by", res.TruncatedBy)
		os.Exit(1)
	}
	fmt.Printf("matches %d files_searched %d files_skipped %d\n", len(res.Matches), res.FilesSearched, res.FilesSkipped)
}
