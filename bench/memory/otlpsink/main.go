// Command otlpsink is an OTLP/HTTP collector that accepts every request and
// keeps nothing, for measuring cuprof export (bench/memory/run.sh): it
// listens on ADDR, answers POST /v1/traces (and /v1/metrics, for record
// --otlp-signals=metrics) with an empty success response
// and counts the requests and bytes it was sent, printed on SIGTERM.
//
// With -digest it also decompresses each gzip request and prints, with the
// count of uncompressed bytes, a digest of the request bodies that does
// not depend on the order they came in (the sum of each body's SHA-256):
// two exports that sent the same requests, in any order and with any
// compression, print the same digest.
//
// With -grpc ADDR it also serves OTLP/gRPC there (any compression the
// grpc package knows), counting the requests and their spans.
//
// It reads each body in pieces of up to 1 MiB (io.Copy to io.Discard reads
// 8 KiB at a time: on the 2-core bench machine that sink spent 0.9 CPU s,
// a quarter of a million read calls, taking the 2 GB of a 5M-event export,
// beside the 1.65 s of the export itself), so that what it costs the
// machine is mostly the kernel's copy.
//
//	go run ./bench/memory/otlpsink -addr 127.0.0.1:4318 [-digest] [-grpc 127.0.0.1:4317]
package main

import (
	"compress/gzip"
	"context"
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

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // requests may come gzip-compressed
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to listen on")
	digest := flag.Bool("digest", false, "decompress the requests and print a digest of their bodies")
	grpcAddr := flag.String("grpc", "", "also serve OTLP/gRPC on this address")
	flag.Parse()
	var grpcSink *traceSink
	if *grpcAddr != "" {
		gl, err := net.Listen("tcp", *grpcAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "otlpsink:", err)
			os.Exit(1)
		}
		grpcSink = &traceSink{}
		srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
		collectorpb.RegisterTraceServiceServer(srv, grpcSink)
		go srv.Serve(gl)
	}
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
	sink := func(w http.ResponseWriter, r *http.Request) {
		if !*digest {
			buf := bufs.Get().(*[]byte)
			n, _ := io.CopyBuffer(discard{}, r.Body, *buf)
			bufs.Put(buf)
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
	}
	// Spans, and the aggregates of record --otlp-signals (metrics; the
	// profiles signal's development path): counted alike.
	for _, path := range []string{"/v1/traces", "/v1/metrics", "/v1development/profiles"} {
		mux.HandleFunc(path, sink)
	}
	go http.Serve(ln, mux)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("otlpsink: %d requests, %d bytes\n", requests.Load(), bytes.Load())
	if grpcSink != nil {
		fmt.Printf("otlpsink: grpc: %d requests, %d spans\n", grpcSink.requests.Load(), grpcSink.spans.Load())
	}
	if *digest {
		mu.Lock()
		fmt.Printf("otlpsink: %d bytes uncompressed, %d bad requests, digest %x\n", plain.Load(), bad.Load(), sum)
		mu.Unlock()
	}
}

// bufs are the sink's read buffers.
var bufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// discard is io.Discard without its ReadFrom, which would read in its own
// 8 KiB pieces instead of CopyBuffer's.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

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

// traceSink is the OTLP/gRPC trace service: it counts and keeps nothing.
type traceSink struct {
	collectorpb.UnimplementedTraceServiceServer
	requests, spans atomic.Int64
}

func (t *traceSink) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	var n int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += int64(len(ss.Spans))
		}
	}
	t.requests.Add(1)
	t.spans.Add(n)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}
