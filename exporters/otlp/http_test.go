package otlp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// sdkHTTPClient is the SDK's otlptracehttp client configured from c as
// newClient configured it before cuprof sent OTLP/HTTP itself (main at
// 84d765d), less the gzip it forced when no compression was set: what the
// sender must match, its default compression included.
func sdkHTTPClient(c *config) otlptrace.Client {
	o := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
	if c.endpoint != "" {
		u, _ := endpointURL(c.endpoint)
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		o = append(o, otlptracehttp.WithEndpointURL(u.String()))
	}
	if c.timeout >= 0 {
		o = append(o, otlptracehttp.WithTimeout(c.timeout))
	}
	switch c.compression { // unset: the client's own default (none) or the variables
	case "gzip":
		o = append(o, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	case "none":
		o = append(o, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	}
	if len(c.headers) > 0 {
		headers := envHeaders()
		for k, v := range c.headers {
			headers[k] = v
		}
		o = append(o, otlptracehttp.WithHeaders(headers))
	}
	return otlptracehttp.NewClient(o...)
}

// seen is what a receiver saw of one request.
type seen struct {
	path, contentType, encoding, tenant, team string
	req                                       *collectorpb.ExportTraceServiceRequest
}

// TestHTTPSenderAsSDKClient: cuprof's OTLP/HTTP requests go where the SDK's
// client sent them (endpoint options and variables, paths), with the same
// headers, compression and body, decoded, for each configuration of the
// endpoint, headers and compression.
func TestHTTPSenderAsSDKClient(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []seen
		errs []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		body, err := requestBody(q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		data, err := io.ReadAll(body)
		req := &collectorpb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(data, req)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err.Error())
		}
		got = append(got, seen{q.URL.Path, q.Header.Get("Content-Type"), q.Header.Get("Content-Encoding"),
			q.Header.Get("X-Tenant"), q.Header.Get("X-Team"), req})
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	var batch Batch
	tr := readFixture(t, "small.txt")
	if _, err := Build(tr, func(b Batch) error {
		if batch.Spans == 0 {
			batch = b
		}
		return nil
	}, WithBatchBytes(4000)); err != nil {
		t.Fatal(err)
	}
	base := srv.URL
	for _, tc := range []struct {
		name string
		env  map[string]string
		opts []Option
	}{
		{"option endpoint", nil, []Option{WithEndpoint(base)}},
		{"option endpoint with a path", nil, []Option{WithEndpoint(base + "/custom/v1/traces")}},
		{"option host:port", nil, []Option{WithEndpoint(strings.TrimPrefix(base, "http://"))}},
		{"endpoint variable", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base}, nil},
		{"endpoint variable with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base + "/base/"}, nil},
		{"traces endpoint variable", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base + "/x/traces"}, nil},
		{"traces endpoint variable without a path", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base}, nil},
		{"header variables", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base,
			"OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=a,x-team=b", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-tenant=c%20d"}, nil},
		{"header option and variable", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=a,x-team=b"},
			[]Option{WithEndpoint(base), WithHeaders(map[string]string{"x-tenant": "opt"})}},
		{"compression variable gzip", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, nil},
		{"compression variable none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_COMPRESSION": "none"}, nil},
		{"traces compression variable", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base,
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}, nil},
		{"compression option over the variable", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			[]Option{WithEndpoint(base), WithCompression("none")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c := newConfig(append([]Option{WithProtocol(ProtocolHTTP), WithTimeout(5 * time.Second), WithRetryFor(0)}, tc.opts...))
			mu.Lock()
			got, errs = nil, nil
			mu.Unlock()
			sdk := sdkHTTPClient(c)
			if err := sdk.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := sdk.UploadTraces(context.Background(), batch.rs); err != nil {
				t.Fatalf("SDK client: %v", err)
			}
			sdk.Stop(context.Background())
			cl, err := newClient(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close(context.Background())
			if err := cl.upload(context.Background(), batch); err != nil {
				t.Fatalf("cuprof: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 || len(got) != 2 {
				t.Fatalf("%d requests, errors %v; want one from each client", len(got), errs)
			}
			a, b := got[0], got[1]
			if !proto.Equal(a.req, b.req) {
				t.Error("the request bodies decode differently")
			}
			a.req, b.req = nil, nil
			if a != b {
				t.Errorf("the SDK client's request %+v, cuprof's %+v", a, b)
			}
		})
	}
}

// TestHTTPPartialSuccessFailsTheBatch: a collector that answers 200 with
// rejected spans fails the batch, as the SDK client did, saying how many;
// Client.Upload (messages, marshalled) reaches the same receiver.
func TestHTTPPartialSuccessFailsTheBatch(t *testing.T) {
	var reject atomic.Bool
	reject.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		io.Copy(io.Discard, q.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		if reject.Load() {
			out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{PartialSuccess: &collectorpb.ExportTracePartialSuccess{
				RejectedSpans: 3, ErrorMessage: "too old"}})
			w.Write(out)
		}
	}))
	defer srv.Close()
	tr := readFixture(t, "small.txt")
	st, err := Export(context.Background(), tr, WithEndpoint(srv.URL), WithProtocol(ProtocolHTTP), WithTimeout(5*time.Second))
	if err == nil || !strings.Contains(err.Error(), "too old (3 spans rejected)") || st.Sent != 0 || st.Failed != st.Spans {
		t.Errorf("partial success: %+v, %v", st, err)
	}
	reject.Store(false)
	cl, err := NewClient(context.Background(), WithEndpoint(srv.URL), WithProtocol(ProtocolHTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(context.Background())
	rs, err := Collect(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Upload(context.Background(), rs); err != nil {
		t.Errorf("Upload: %v", err)
	}
}

// TestHTTPBodyFromItsBuffers: a request whose body is several buffers (a
// batch of several processes), large, small or empty, written from them by
// bodyConn, arrives as their concatenation with the Content-Length of
// their sum, over a kept-alive connection and over the new one after the
// collector closed the first.
func TestHTTPBodyFromItsBuffers(t *testing.T) {
	var (
		mu    sync.Mutex
		got   [][]byte
		conns = map[string]bool{}
	)
	closeNext := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		data, err := io.ReadAll(q.Body)
		if err != nil || int64(len(data)) != q.ContentLength {
			http.Error(w, "short body", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, data)
		conns[q.RemoteAddr] = true
		mu.Unlock()
		select {
		case <-closeNext:
			w.Header().Set("Connection", "close") // the client drops this connection
		default:
		}
	}))
	defer srv.Close()
	s, err := newHTTPSender(newConfig([]Option{WithEndpoint(srv.URL), WithTimeout(10 * time.Second)}), nil, "none",
		retryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	part := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	bodies := [][][]byte{
		{part(3<<20, 1)},
		{part(1, 2), part(200<<10, 3), part(3<<20, 4)},
		{part(10, 5), part(0, 6), part(5, 7)},
	}
	for i, body := range bodies {
		if i == 1 {
			closeNext <- true
		}
		if err := s.send(context.Background(), body); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(bodies) {
		t.Fatalf("%d requests arrived, want %d", len(got), len(bodies))
	}
	for i, body := range bodies {
		if want := bytes.Join(body, nil); !bytes.Equal(got[i], want) {
			t.Errorf("request %d: %d bytes arrived, not the %d of its buffers", i, len(got[i]), len(want))
		}
	}
	if len(conns) != 2 {
		t.Errorf("%d connections; want 2 (one closed after the second request)", len(conns))
	}
}

// TestHTTPKeepsAConnectionPerParallelRequest: WithParallel requests in
// flight at once, round after round, go over as many connections, kept
// alive between rounds; the transport's default of two idle connections
// per host closed the others after each round and dialled again.
func TestHTTPKeepsAConnectionPerParallelRequest(t *testing.T) {
	const parallel, rounds = 4, 5
	var (
		mu      sync.Mutex
		dialled int
		waiting int
		all     = make(chan struct{})
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		io.Copy(io.Discard, q.Body)
		// answer once every request of the round has arrived: all of
		// them are in flight together
		mu.Lock()
		if waiting++; waiting == parallel {
			close(all)
			all, waiting = make(chan struct{}), 0
			mu.Unlock()
			return
		}
		wait := all
		mu.Unlock()
		select {
		case <-wait:
		case <-time.After(10 * time.Second):
			http.Error(w, "the round's other requests did not come", http.StatusBadRequest)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dialled++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	s, err := newHTTPSender(newConfig([]Option{WithEndpoint(srv.URL), WithParallel(parallel), WithTimeout(20 * time.Second)}),
		nil, "none", retryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, parallel)
		for i := range parallel {
			wg.Go(func() { errs[i] = s.send(context.Background(), [][]byte{[]byte("spans")}) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, request %d: %v", r, i, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dialled != parallel {
		t.Errorf("%d connections for %d rounds of %d requests at once; want %d", dialled, rounds, parallel, parallel)
	}
}
