// Command gentree writes the deterministic tree of text files that
// bench/search.sh searches: source-like lines of common words, with a
// sprinkling of lines the benchmark's pattern matches, and some files both
// searchers must skip (ignored by .gitignore, binary).
//
//	gentree [-files N] [-size BYTES] [-seed S] DIR
//
// The tree is laid out as DIR/dNN/eNN/fNNNNNN.go, 100 files a directory.
// DIR must not exist: the tree is written afresh or not at all.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// words are the filler; none of them holds "Timeout", so only the
// sprinkled lines match the benchmark's pattern.
var words = strings.Fields(`func return if else for range struct type var const package import
error nil string int byte len cap make append copy ctx err ok value index result buffer
request response handler server client config options reader writer close open read write
Context Error String Handle Serve Config Reader Writer Close Open Read Write Len`)

// sprinkled are the matching lines, one of them every matchEvery lines on
// average.
var sprinkled = []string{
	"\treturn nil, ErrDeadlineTimeout",
	"func handleReadTimeout(w Writer, err error) {",
	"\tcase errors.Is(err, ErrIdleTimeout):",
}

const (
	matchEvery = 2000
	perDir     = 100
)

func main() {
	files := flag.Int("files", 100000, "number of files")
	size := flag.Int("size", 5000, "approximate size of each file in bytes")
	seed := flag.Uint64("seed", 1, "seed of the content")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gentree [-files N] [-size BYTES] [-seed S] DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if err := os.Mkdir(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err, "(remove it to write the tree again)")
		os.Exit(1)
	}
	// Both searchers honour .gitignore files; the ignored files hold
	// matches, so a searcher that read them would count more.
	must(os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n/d00/e00/\n"), 0o644))

	dirs := (*files + perDir - 1) / perDir
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) * 2 {
		wg.Go(func() {
			for d := range next {
				writeDir(dir, d, min(perDir, *files-d*perDir), *size, *seed)
			}
		})
	}
	for d := range dirs {
		next <- d
	}
	close(next)
	wg.Wait()
}

// writeDir writes the n files of directory number d; its content depends
// only on the seed and d, so the tree is the same whatever the order.
func writeDir(root string, d, n, size int, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, uint64(d)))
	dir := filepath.Join(root, fmt.Sprintf("d%02d", d/10), fmt.Sprintf("e%02d", d%10))
	must(os.MkdirAll(dir, 0o755))
	var b strings.Builder
	for i := range n {
		b.Reset()
		for b.Len() < size {
			if rnd.IntN(matchEvery) == 0 {
				b.WriteString(sprinkled[rnd.IntN(len(sprinkled))])
			} else {
				b.WriteByte('\t')
				for k := range 2 + rnd.IntN(9) {
					if k > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(words[rnd.IntN(len(words))])
				}
			}
			b.WriteByte('\n')
		}
		name := fmt.Sprintf("f%06d.go", d*perDir+i)
		content := b.String()
		switch i {
		case 7:
			name = strings.TrimSuffix(name, ".go") + ".log"
			content = sprinkled[0] + "\n" + content
		case 13:
			name = strings.TrimSuffix(name, ".go") + ".bin"
			content = "\x00" + sprinkled[0] + "\n" + content
		case 21:
			name = "." + name
		}
		must(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
}
