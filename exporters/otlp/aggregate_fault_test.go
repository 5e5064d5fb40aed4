package otlp

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/internal/tracetest"
)

// metricsSink is an OTLP/HTTP metrics endpoint that sums the calls it
// received, answering as fail says for each request (nil: 200).
type metricsSink struct {
	calls    atomic.Int64
	requests atomic.Int64
	fail     func(n int64, w http.ResponseWriter, r *http.Request) bool
}

func (s *metricsSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if s.fail != nil && s.fail(n, w, r) {
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != MetricCallDuration {
					continue
				}
				for _, dp := range m.GetExponentialHistogram().GetDataPoints() {
					s.calls.Add(int64(dp.Count))
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Write(out)
}

// faultAggregator aggregates into srv over OTLP/HTTP every 50 ms.
func faultAggregator(t *testing.T, url string) *Aggregator {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "")
	a, err := NewAggregator(context.Background(), tracetest.Random(1, 10).Meta,
		[]Option{WithEndpoint(url), WithProtocol(ProtocolHTTP), WithTimeout(500 * time.Millisecond), WithRetryFor(time.Second)},
		WithInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAggregatorFaults: whatever the collector does (refuses with 429 or
// 503 and a Retry-After, holds requests, resets connections), Observe
// goes on without it, and at the end the calls it received plus those
// reported lost are every call aggregated.
func TestAggregatorFaults(t *testing.T) {
	release := make(chan struct{}) // lets held requests go before the server closes
	var releaseOnce sync.Once
	for _, tc := range []struct {
		name string
		fail func(n int64, w http.ResponseWriter, r *http.Request) bool
	}{
		{"429 with Retry-After", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if n%3 == 0 {
				return false
			}
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}},
		{"503 with a huge Retry-After", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "99999999999999999999")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}},
		{"held", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}},
		{"reset", func(n int64, w http.ResponseWriter, r *http.Request) bool {
			if n%2 == 0 {
				return false
			}
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &metricsSink{fail: tc.fail}
			srv := httptest.NewServer(sink)
			defer srv.Close()
			defer releaseOnce.Do(func() { close(release) })
			a := faultAggregator(t, srv.URL)
			tr := tracetest.Random(3, 30000)
			done := make(chan struct{})
			go func() {
				// fed in 30 pieces, over several intervals
				for i := 0; i < 30; i++ {
					part := *tr
					part.Events = tr.Events[i*len(tr.Events)/30 : (i+1)*len(tr.Events)/30]
					feed(a, &part, 500)
					time.Sleep(10 * time.Millisecond)
				}
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("Observe waited on the collector")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			st, _ := a.Close(ctx)
			if st.Calls == 0 {
				t.Fatal("no calls aggregated")
			}
			if got := sink.calls.Load() + st.LostCalls; got != st.Calls {
				t.Errorf("received %d + lost %d = %d, aggregated %d (exports %d, failed %d)",
					sink.calls.Load(), st.LostCalls, got, st.Calls, st.Exports, st.FailedExports)
			}
			if sink.requests.Load() == 0 {
				t.Error("nothing was sent")
			}
			t.Logf("calls %d: received %d, lost %d; exports %d, failed %d, requests %d",
				st.Calls, sink.calls.Load(), st.LostCalls, st.Exports, st.FailedExports, sink.requests.Load())
		})
	}
}
