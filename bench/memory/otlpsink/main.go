// Command otlpsink is an OTLP/HTTP collector that accepts every request and
// keeps nothing, for measuring cuprof export (bench/memory/run.sh): it
// listens on ADDR, answers POST /v1/traces with an empty success response
// and counts the requests and bytes it was sent, printed on SIGTERM.
//
// With -digest it also decompresses each gzip request and prints, with the
// count of uncompressed bytes, a digest of the request bodies that does
// not depend on the order they came in (the sum of each body's SHA-256):
// two exports that sent the same requests, in any order and with any
// compression, print the same digest.
//
//	go run ./bench/memory/otlpsink -addr 127.0.0.1:4318 [-digest]
package main

import (
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to listen on")
	digest := flag.Bool("digest", false, "decompress the requests and print a digest of their bodies")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
	var (
		requests, bytes, plain atomic.Int64
		mu                     sync.Mutex
		sum                    = new(big.Int)
		bad                    atomic.Int64
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		if !*digest {
			n, _ := io.Copy(io.Discard, r.Body)
			requests.Add(1)
			bytes.Add(n)
		} else {
			cr := &countReader{r: r.Body}
			var body io.Reader = cr
			if r.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(cr)
				if err != nil {
					bad.Add(1)
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				body = zr
			}
			h := sha256.New()
			n, err := io.Copy(h, body)
			if err != nil {
				bad.Add(1)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			requests.Add(1)
			bytes.Add(cr.n)
			plain.Add(n)
			mu.Lock()
			sum.Add(sum, new(big.Int).SetBytes(h.Sum(nil)))
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	go http.Serve(ln, mux)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("otlpsink: %d requests, %d bytes\n", requests.Load(), bytes.Load())
	if *digest {
		mu.Lock()
		fmt.Printf("otlpsink: %d bytes uncompressed, %d bad requests, digest %x\n", plain.Load(), bad.Load(), sum)
		mu.Unlock()
	}
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
