package perfetto

import (
	"io"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// synthetic builds a trace of n stream-ordered allocate/free pairs, each in
// an NVTX range, on two threads.
func synthetic(n int) *trace.Trace {
	tr := &trace.Trace{Strings: []string{""}}
	tr.Processes = []trace.Process{{PID: 1, Cmdline: []string{"bench"}, ExitCode: -1}}
	step := tr.Intern("step")
	var t0 int64 = 1000
	for i := 0; i < n; i++ {
		tid := uint32(1 + i%2)
		h := uint64(0x7f0000000000 + i*0x1000)
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Device: -1, Start: t0, End: t0, Name: step},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemAllocAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 10, End: t0 + 500, Handle: h, Stream: 0x10, Size: 4096},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemFreeAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 600, End: t0 + 700, Handle: h, Stream: 0x10},
			trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Device: -1, Start: t0 + 800, End: t0 + 800},
		)
		t0 += 1000
	}
	trace.SortEvents(tr.Events)
	return tr
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func benchWrite(b *testing.B, write func(io.Writer, *trace.Trace) error) {
	tr := synthetic(50000) // 200k events: 100k calls, 50k ranges, 50k lifetimes
	var w countWriter
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := write(&w, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tr.Events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(w.n)/float64(b.N)/float64(len(tr.Events)), "bytes/event")
}

func BenchmarkWritePerfetto(b *testing.B)   { benchWrite(b, Write) }
func BenchmarkWriteChromeJSON(b *testing.B) { benchWrite(b, WriteChromeJSON) }

// benchStream writes the timeline of a LoopStream of 1M events (made as
// they are read) in format, through the analysis replay, to a counter.
func benchStream(b *testing.B, format string) {
	const n = 1_000_000
	var w countWriter
	cpu := cpuNs()
	for i := 0; i < b.N; i++ {
		tables, events := tracetest.LoopStream(n)
		tw := NewWriter(&w, tables)
		if format == "chrome-json" {
			tw = NewChromeJSONWriter(&w, tables)
		}
		analysis.Run(tables, events, tw.Options()...)
		if err := tw.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(n)*float64(b.N)/(float64(cpuNs()-cpu)/1e9), "events/cpu-s")
	b.ReportMetric(float64(w.n)/float64(b.N)/n, "bytes/event")
}

// BenchmarkStreamPerfetto and BenchmarkStreamChromeJSON measure the
// replay and the writer together (no decoding, no file).
func BenchmarkStreamPerfetto(b *testing.B)   { benchStream(b, "perfetto") }
func BenchmarkStreamChromeJSON(b *testing.B) { benchStream(b, "chrome-json") }

// BenchmarkReplayOnly is the replay of the same stream with no consumer,
// the floor under both.
func BenchmarkReplayOnly(b *testing.B) {
	const n = 1_000_000
	cpu := cpuNs()
	for i := 0; i < b.N; i++ {
		tables, events := tracetest.LoopStream(n)
		analysis.Run(tables, events, analysis.Forget())
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(n)*float64(b.N)/(float64(cpuNs()-cpu)/1e9), "events/cpu-s")
}
