// Command blobserver serves zeros over HTTP on a loopback port, for the
// network benchmark: GET /blob?size=N answers N bytes. It prints its
// address on stdout and serves until killed. It imports nothing of rein.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "blobserver:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	http.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "size=N", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.CopyN(w, zeros{}, n)
	})
	http.Serve(l, nil)
}
