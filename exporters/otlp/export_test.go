package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the receiver must decode gzip
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// receiver is a local OTLP receiver over gRPC or HTTP whose behaviour tests
// choose: fail the first requests, stall, or accept.
type receiver struct {
	collectorpb.UnimplementedTraceServiceServer
	failFirst  int           // requests answered Unavailable / 503 first
	failAll    bool          // answer every request Unavailable / 503
	stall      time.Duration // sleep before answering
	stallUntil chan struct{} // block until closed

	mu       sync.Mutex
	attempts int
	requests []*collectorpb.ExportTraceServiceRequest
	count    atomic.Int64
	keep     bool
	header   http.Header // HTTP: headers of the last request
	encoding []string    // the compression of each request ("" for none)
	discard  bool        // HTTP: read the body, decode nothing (measures the sender alone)
}

func (r *receiver) take(req *collectorpb.ExportTraceServiceRequest) bool {
	r.mu.Lock()
	r.attempts++
	n := r.attempts
	r.mu.Unlock()
	if r.stall > 0 {
		time.Sleep(r.stall)
	}
	if r.stallUntil != nil {
		<-r.stallUntil
	}
	if r.failAll || n <= r.failFirst {
		return false
	}
	var c int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c += int64(len(ss.Spans))
		}
	}
	r.count.Add(c)
	if r.keep {
		r.mu.Lock()
		r.requests = append(r.requests, req)
		r.mu.Unlock()
	}
	return true
}

func (r *receiver) Export(ctx context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	if !r.take(req) {
		return nil, status.Error(codes.Unavailable, "try later")
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, q *http.Request) {
	if r.discard {
		io.Copy(io.Discard, q.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	body, err := requestBody(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.header = q.Header.Clone()
	r.encoding = append(r.encoding, q.Header.Get("Content-Encoding"))
	r.mu.Unlock()
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &collectorpb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(data, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !r.take(req) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// start serves r on a loopback port and returns its endpoint.
func (r *receiver) start(t testing.TB, p Protocol) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch p {
	case ProtocolGRPC:
		srv := grpc.NewServer(grpc.StatsHandler(grpcEncodings{r}))
		collectorpb.RegisterTraceServiceServer(srv, r)
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
	default:
		srv := &http.Server{Handler: r}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	return "http://" + ln.Addr().String()
}

// grpcEncodings records the compression of each gRPC request in its
// receiver's encoding (grpc keeps the grpc-encoding header from the
// handler's metadata).
type grpcEncodings struct{ r *receiver }

func (g grpcEncodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (g grpcEncodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (g grpcEncodings) HandleConn(context.Context, stats.ConnStats)                       {}
func (g grpcEncodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		g.r.mu.Lock()
		g.r.encoding = append(g.r.encoding, h.Compression)
		g.r.mu.Unlock()
	}
}

var _ stats.Handler = grpcEncodings{}

// closedPort returns an endpoint nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var protocols = []Protocol{ProtocolGRPC, ProtocolHTTP}

func TestExportArrivesOnce(t *testing.T) {
	tr := readFixture(t, "small.txt")
	want, _ := Collect(tr)
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			r := &receiver{keep: true, failFirst: 1}
			ep := r.start(t, p)
			st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p),
				WithBatchBytes(1500), WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if st.Failed != 0 || st.Sent != st.Spans || st.Batches < 2 {
				t.Errorf("stats %+v: want every span sent in several batches", st)
			}
			var got []*tracepb.ResourceSpans
			for _, req := range r.requests {
				got = append(got, req.ResourceSpans...)
			}
			ids := spanIndex(t, got) // fails on duplicates and dangling parents/links
			if n := len(ids); n != st.Spans {
				t.Errorf("receiver got %d spans, exporter says %d", n, st.Spans)
			}
			if dump(got) != dump(want) {
				t.Error("received spans differ from the built ones")
			}
			if r.attempts != st.Batches+1 {
				t.Errorf("%d attempts for %d batches and one transient failure", r.attempts, st.Batches)
			}
		})
	}
}

// TestCompressionDefaultsToNone: without WithCompression requests go
// uncompressed over both transports, as the OpenTelemetry SDKs send them
// (the specification's exporter section gives the compression variables
// no default value; the Go SDK's clients default to none), and gzip when
// OTEL_EXPORTER_OTLP_COMPRESSION or its TRACES_ form says so, the TRACES_
// form winning; the option wins over both.
func TestCompressionDefaultsToNone(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, p := range protocols {
		for _, tc := range []struct {
			name, general, traces string
			opts                  []Option
			want                  string
		}{
			{"default", "", "", nil, ""},
			{"variable gzip", "gzip", "", nil, "gzip"},
			{"traces variable gzip", "none", "gzip", nil, "gzip"},
			{"traces variable none", "gzip", "none", nil, ""},
			{"option gzip", "", "", []Option{WithCompression("gzip")}, "gzip"},
		} {
			t.Run(string(p)+"/"+tc.name, func(t *testing.T) {
				t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", tc.general)
				t.Setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", tc.traces)
				r := &receiver{}
				ep := r.start(t, p)
				st, err := Export(context.Background(), tr, append([]Option{WithEndpoint(ep), WithProtocol(p),
					WithBatchBytes(1500), WithTimeout(5 * time.Second)}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				if len(r.encoding) != st.Batches || st.Batches < 2 {
					t.Fatalf("%d requests seen, %d batches sent", len(r.encoding), st.Batches)
				}
				for _, e := range r.encoding {
					if e != tc.want {
						t.Fatalf("request compressed %q, want %q", e, tc.want)
					}
				}
			})
		}
	}
}

func TestCollectorDown(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			ep := closedPort(t)
			st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p),
				WithTimeout(2*time.Second), WithRetryFor(300*time.Millisecond))
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v, want ErrUnreachable", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "cannot reach OTLP collector at "+ep) ||
				!strings.Contains(msg, "start one or set OTEL_EXPORTER_OTLP_ENDPOINT") || strings.Contains(msg, "\n") {
				t.Errorf("message not one clear line: %q", msg)
			}
			if st.Sent != 0 || st.Failed != st.Spans || st.Spans == 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestCollectorRefusingIsRetriedBoundedly(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			r := &receiver{failAll: true}
			ep := r.start(t, p)
			st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p),
				WithBatchBytes(1500), WithTimeout(5*time.Second), WithRetryFor(400*time.Millisecond))
			// 503 over HTTP is an answer (the collector is there);
			// gRPC's Unavailable is also what a connection that failed
			// gives, so it reads as unreachable
			want := ErrUnreachable
			if p == ProtocolHTTP {
				want = ErrRefused
			}
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
			if r.attempts < 2 || r.attempts > 40 {
				t.Errorf("%d attempts: want a few retries of the first batch, then stop", r.attempts)
			}
			if st.Sent != 0 || st.Failed != st.Spans {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestCollectorSlow(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			r := &receiver{stall: 2 * time.Second}
			ep := r.start(t, p)
			_, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p),
				WithTimeout(200*time.Millisecond), WithRetryFor(200*time.Millisecond))
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestEndpointAndProtocolFromEnvironment(t *testing.T) {
	tr := readFixture(t, "small.txt")
	r := &receiver{}
	ep := r.start(t, ProtocolHTTP)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ep)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=a")
	st, err := Export(context.Background(), tr, WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if int(r.count.Load()) != st.Spans {
		t.Errorf("receiver got %d of %d spans", r.count.Load(), st.Spans)
	}
	if h := r.header.Get("X-Tenant"); h != "a" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: x-tenant=%q", h)
	}
	if h := r.header.Get("Content-Encoding"); h != "" {
		t.Errorf("Content-Encoding %q, want none by default", h)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")
	if _, err := Export(context.Background(), tr); err == nil || !strings.Contains(err.Error(), "unsupported OTLP protocol") {
		t.Errorf("bad protocol: %v", err)
	}
}

var _ = bytes.Equal

func TestTLSCertificateFromEnvironment(t *testing.T) {
	tr := readFixture(t, "small.txt")
	r := &receiver{}
	srv := httptest.NewTLSServer(r)
	defer srv.Close()
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	// without the certificate the server is not trusted
	_, err := Export(context.Background(), tr, WithEndpoint(srv.URL), WithProtocol(ProtocolHTTP),
		WithTimeout(2*time.Second), WithRetryFor(100*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted TLS server: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", certFile)
	st, err := Export(context.Background(), tr, WithEndpoint(srv.URL), WithProtocol(ProtocolHTTP),
		WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if int(r.count.Load()) != st.Spans {
		t.Errorf("receiver got %d of %d spans over TLS", r.count.Load(), st.Spans)
	}
}

// requestBody is an OTLP/HTTP request's body, gunzipped when its
// Content-Encoding says gzip.
func requestBody(q *http.Request) (io.Reader, error) {
	if q.Header.Get("Content-Encoding") != "gzip" {
		return q.Body, nil
	}
	return gzip.NewReader(q.Body)
}
