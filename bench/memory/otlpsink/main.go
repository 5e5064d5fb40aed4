// Command otlpsink is an OTLP/HTTP collector that accepts every request and
// keeps nothing, for measuring cuprof export (bench/memory/run.sh): it
// listens on ADDR, answers POST /v1/traces with an empty success response
// and counts the requests and bytes it was sent, printed on SIGTERM.
//
//	go run ./bench/memory/otlpsink -addr 127.0.0.1:4318
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
	var requests, bytes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	go http.Serve(ln, mux)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("otlpsink: %d requests, %d bytes\n", requests.Load(), bytes.Load())
}
