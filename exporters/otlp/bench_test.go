package otlp

import (
	"context"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/internal/tracetest"
)

// BenchmarkBuild measures building and sizing OTLP spans, without sending.
func BenchmarkBuild(b *testing.B) {
	tr := tracetest.AllocFreePairs(50000)
	spans := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, err := Build(tr, func(Batch) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		spans += n
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkExport measures spans per second from a trace to a local OTLP
// receiver that decodes every request (as a collector does).
func BenchmarkExport(b *testing.B) {
	tr := tracetest.AllocFreePairs(50000)
	for _, p := range protocols {
		for _, comp := range []string{"gzip", "none"} {
			b.Run(string(p)+"/"+comp, func(b *testing.B) {
				r := &receiver{}
				ep := r.start(b, p)
				spans := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p),
						WithCompression(comp), WithTimeout(time.Minute))
					if err != nil {
						b.Fatal(err)
					}
					spans += st.Sent
				}
				b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
			})
		}
	}
}

// BenchmarkExportSenderOnly is BenchmarkExport over HTTP to a receiver that
// reads and discards each request: the exporter's own throughput (build,
// encode, compress, send) without a collector's decoding.
func BenchmarkExportSenderOnly(b *testing.B) {
	tr := tracetest.AllocFreePairs(50000)
	for _, comp := range []string{"gzip", "none"} {
		b.Run(comp, func(b *testing.B) {
			r := &receiver{discard: true}
			ep := r.start(b, ProtocolHTTP)
			spans := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(ProtocolHTTP),
					WithCompression(comp), WithTimeout(time.Minute))
				if err != nil {
					b.Fatal(err)
				}
				spans += st.Sent
			}
			b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

// BenchmarkSpanSize measures sizing the spans of BenchmarkBuild's trace:
// spanSize (field by field) against proto.Size.
func BenchmarkSpanSize(b *testing.B) {
	rs, err := Collect(tracetest.AllocFreePairs(5000))
	if err != nil {
		b.Fatal(err)
	}
	var spans []*tracepb.Span
	for _, r := range rs {
		for _, ss := range r.ScopeSpans {
			spans = append(spans, ss.Spans...)
		}
	}
	for _, bc := range []struct {
		name string
		size func(*tracepb.Span) int
	}{{"spanSize", spanSize}, {"proto.Size", func(s *tracepb.Span) int { return proto.Size(s) }}} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				n += bc.size(spans[i%len(spans)])
			}
			if n == 0 {
				b.Fatal("no bytes")
			}
		})
	}
}
