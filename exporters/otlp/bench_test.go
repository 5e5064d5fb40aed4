package otlp

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"io"
	"iter"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
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

// BenchmarkBuildStream measures building the spans of a streamed loop
// trace (the bench/memory mix) against replaying it through the analysis
// alone, in CPU time per trace event (all threads: the collector's too):
// what the span builder adds to the replay.
func BenchmarkBuildStream(b *testing.B) {
	const n = 1_000_000
	tables, events := tracetest.LoopStream(n)
	seq := func() iter.Seq[*trace.Event] { return events }
	b.Run("analysis", func(b *testing.B) {
		k := 0
		cpu := cpuNs()
		for i := 0; i < b.N; i++ {
			analysis.Run(tables, events, analysis.Forget(), analysis.OnEvent(func(*analysis.Event) { k++ }))
		}
		b.ReportMetric(float64(cpuNs()-cpu)/float64(k), "cpu-ns/event")
	})
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"build", nil},
		{"build-inline", []Option{withInlineEncoding()}}, // the encoding's cost without the pipe's
	} {
		b.Run(bc.name, func(b *testing.B) {
			k, spans, bytes := 0, 0, 0
			cpu := cpuNs()
			for i := 0; i < b.N; i++ {
				s, err := BuildStream(tables, seq, func(b Batch) error {
					bytes += b.Bytes
					b.release()
					return nil
				}, append([]Option{WithIdentity("bench")}, bc.opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				spans += s
				k += n
			}
			b.ReportMetric(float64(cpuNs()-cpu)/float64(k), "cpu-ns/event")
			b.ReportMetric(float64(spans)/float64(k), "spans/event")
			b.ReportMetric(float64(bytes)/float64(k), "bytes/event")
		})
	}
}

// BenchmarkRequestGzip compresses one full request of the bench/memory
// loop mix (about 3 MiB) with compress/gzip at its fastest level and at its
// default (the SDK otlptracehttp client's), and with klauspost/compress at
// the level the sender uses (httpGzipLevel) and its default, reporting
// megabytes of request per CPU second and the compression ratio.
func BenchmarkRequestGzip(b *testing.B) {
	var body []byte
	if _, err := Build(tracetest.LoopTrace(400_000), func(bt Batch) error {
		if body == nil {
			for _, p := range bt.body {
				body = append(body, p...)
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	type writer interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	std := func(level int) writer { w, _ := stdgzip.NewWriterLevel(io.Discard, level); return w }
	fast := func(level int) writer { w, _ := gzip.NewWriterLevel(io.Discard, level); return w }
	for _, c := range []struct {
		name string
		w    writer
	}{
		{"compress-gzip-1", std(stdgzip.BestSpeed)},
		{"compress-gzip-6-sdk", std(stdgzip.DefaultCompression)},
		{"klauspost-1-cuprof", fast(httpGzipLevel)},
		{"klauspost-6", fast(gzip.DefaultCompression)},
	} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			b.SetBytes(int64(len(body)))
			cpu := cpuNs()
			for i := 0; i < b.N; i++ {
				out.Reset()
				c.w.Reset(&out)
				c.w.Write(body)
				c.w.Close()
			}
			b.ReportMetric(float64(len(body))*float64(b.N)/(float64(cpuNs()-cpu)/1e9)/1e6, "MB/cpu-s")
			b.ReportMetric(float64(len(body))/float64(out.Len()), "ratio")
		})
	}
}
