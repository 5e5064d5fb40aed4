package otlp

import (
	"context"
	"testing"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// synthetic builds a trace of n stream-ordered allocate/free pairs, each in
// an NVTX range, on two threads: 5n spans (2n calls, n ranges, n lifetimes,
// and the process).
func synthetic(n int) *trace.Trace {
	tr := &trace.Trace{Strings: []string{""}}
	tr.Meta = trace.Meta{Host: "bench", WallStart: 1_700_000_000_000_000_000, Command: []string{"bench"}}
	tr.Processes = []trace.Process{{PID: 1, Cmdline: []string{"bench"}, ExitCode: -1}}
	step := tr.Intern("step")
	var t0 int64 = 1000
	for i := 0; i < n; i++ {
		tid := uint32(1 + i%2)
		h := uint64(0x7f0000000000 + i*0x1000)
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Device: -1, Start: t0, End: t0, Name: step},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemAllocAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 10, End: t0 + 500, Handle: h, Stream: 0x10, Size: 4096, Caller: 0x401000},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemFreeAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 600, End: t0 + 700, Handle: h, Stream: 0x10},
			trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Device: -1, Start: t0 + 800, End: t0 + 800},
		)
		t0 += 1000
	}
	trace.SortEvents(tr.Events)
	return tr
}

// BenchmarkBuild measures building and sizing OTLP spans, without sending.
func BenchmarkBuild(b *testing.B) {
	tr := synthetic(50000)
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
	tr := synthetic(50000)
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
	tr := synthetic(50000)
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
